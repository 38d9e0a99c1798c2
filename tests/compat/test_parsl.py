"""parsl, unchanged, against our cluster: a HighThroughputExecutor whose SlurmProvider submits one
block with `sbatch` (its own script template: --job-name/--output/--error/--nodes/--time/
--ntasks-per-node), where SrunLauncher starts the worker pool with `srun --ntasks 1 -l`; the
provider follows the block with `sacct -X --noheader --format=jobid,state%20 --job ID` and
cancels it with `scancel` at cleanup. The workers connect back to the interchange in the test
process on loopback. python_apps must return their values, the provider must read the block as
RUNNING from our sacct, and cleanup must leave nothing queued."""

from __future__ import annotations

import pytest

from compat_cluster import assert_queue_drains, compat_cluster, job_output, queue_ids
from compat_work import node_and_square, slurm_job_id

parsl = pytest.importorskip("parsl", reason="parsl is not installed (.ci/run installs it)")
from parsl.config import Config  # noqa: E402
from parsl.executors import HighThroughputExecutor  # noqa: E402
from parsl.launchers import SrunLauncher  # noqa: E402
from parsl.jobs.states import JobState  # noqa: E402
from parsl.providers import SlurmProvider  # noqa: E402

APP_TIMEOUT = 60.0  # seconds for the block to start and the apps to return


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from compat_cluster(tmp_path_factory, "parsl")


def _config(run_dir: str) -> Config:
    provider = SlurmProvider(
        partition="main", nodes_per_block=1, init_blocks=1, min_blocks=0, max_blocks=1,
        walltime="00:05:00", launcher=SrunLauncher(), cmd_timeout=30)
    executor = HighThroughputExecutor(
        label="slurm_htex", address="127.0.0.1",  # the workers call back on loopback only
        max_workers_per_node=1, cores_per_worker=1, provider=provider)
    return Config(executors=[executor], run_dir=run_dir, strategy="none",
                  initialize_logging=False, usage_tracking=0)


def test_python_apps_run_in_a_slurm_block_and_cleanup_ends_it(cluster):
    run_dir = cluster.dir / "work" / "runinfo"
    square, job_of = parsl.python_app(node_and_square), parsl.python_app(slurm_job_id)
    dfk = parsl.load(_config(str(run_dir)))
    try:
        futures = [square(x) for x in range(1, 5)]
        try:
            results = [f.result(timeout=APP_TIMEOUT) for f in futures]
        except Exception as e:
            pytest.fail(f"apps did not return within {APP_TIMEOUT:.0f}s ({type(e).__name__}: {e}); "
                        f"queue {queue_ids(cluster)}\n{job_output(run_dir, '*.std*')}\n"
                        f"{job_output(run_dir, '*.submit')}\n{cluster.log_tails()}")
        assert [r[1] for r in results] == [1, 4, 9, 16]
        assert len({r[0] for r in results}) == 1  # one block of one node ran them all
        block_job = job_of().result(timeout=APP_TIMEOUT)
        assert queue_ids(cluster) == [block_job]  # one block, one job, still running
        # the provider's own view, parsed from our sacct's fixed-width columns
        provider = dfk.executors["slurm_htex"].provider
        assert [s.state for s in provider.status([block_job])] == [JobState.RUNNING]
    finally:
        dfk.cleanup()
        parsl.clear()
    assert_queue_drains(cluster)
