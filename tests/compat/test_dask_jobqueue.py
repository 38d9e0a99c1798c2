"""dask-jobqueue, unchanged, against our cluster: SLURMCluster writes an sbatch script per worker
(`#SBATCH -J/-n/--cpus-per-task/--mem/-t/-p/-e/-o` and `python -m distributed.cli.dask_worker`),
submits it with `sbatch`, and at close cancels every job with `scancel`. scale(2) must bring up
two workers, in two jobs, that connect back to the scheduler in the test process (on loopback)
and compute; close() must leave nothing in the queue."""

from __future__ import annotations

import sys

import pytest

from compat_cluster import assert_queue_drains, compat_cluster, job_output, queue_ids
from compat_work import slurm_job_id

dask_jobqueue = pytest.importorskip("dask_jobqueue", reason="dask-jobqueue is not installed (.ci/run installs it)")
distributed = pytest.importorskip("distributed")

WORKERS_TIMEOUT = 60.0  # seconds for two worker jobs to start and connect back


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from compat_cluster(tmp_path_factory, "dask")


def test_slurmcluster_scales_to_two_workers_computes_and_cleans_up(cluster):
    logs = cluster.dir / "work" / "dask-logs"
    with dask_jobqueue.SLURMCluster(
            cores=1, processes=1, memory="512MiB", queue="main", walltime="00:05:00",
            interface="lo",  # scheduler and workers on loopback: nothing leaves this machine
            python=sys.executable, log_directory=str(logs),
            worker_extra_args=["--no-dashboard"], scheduler_options={"dashboard_address": None},
    ) as slurm, distributed.Client(slurm) as client:
        slurm.scale(2)
        try:
            client.wait_for_workers(2, timeout=WORKERS_TIMEOUT)
        except Exception:
            pytest.fail(f"two workers did not connect within {WORKERS_TIMEOUT:.0f}s; queue "
                        f"{queue_ids(cluster)}\n{slurm.job_script()}\n{job_output(logs)}\n"
                        f"{cluster.log_tails()}")
        assert len(queue_ids(cluster)) == 2  # one job per worker
        job_ids = client.run(slurm_job_id)
        assert len(set(job_ids.values())) == 2, job_ids  # each worker in its own job
        total = client.submit(sum, client.map(lambda x: x * x, range(10))).result(timeout=30)
        assert total == 285
    assert_queue_drains(cluster)
