"""seff's report (cli/seff.py) from jobs built with agents' samples, line by line as Slurm 22.05's
contribs/seff prints it, plus our GPU lines."""

from __future__ import annotations

import grp

import pytest

from factories import model_job
from pyslurm_lite.cli import acctfields as af
from pyslurm_lite.cli.seff import kbytes2str, report, time2str
from pyslurm_lite.config import Config
from pyslurm_lite.model import JobState, UsageSample

MIB = 1 << 20


@pytest.mark.parametrize("kb, want", [(0, "0.00 MB"), (512, "512.00 KB"), (204800, "200.00 MB"),
                                      (409600, "400.00 MB"), (1536 * 1024, "1.50 GB")])
def test_kbytes2str(kb, want):
    assert kbytes2str(kb) == want


def test_time2str():
    assert (time2str(20), time2str(90061)) == ("00:00:20", "1-01:01:01")


def group() -> str:
    try:
        return grp.getgrgid(1000).gr_name
    except KeyError:
        return "1000"


def seff_of(job, state="COMPLETED", now=None, cfg=None) -> list[str]:
    rec = af.Rec(job, job.spec, state, None, now or job.end_time, cfg or Config())
    return report(rec, "cluster").splitlines()


def job_with(usage, *, gpus=(), cpus=1, nodes=("node1",), **spec):
    job = model_job(12, gpus=gpus, cpus=cpus, nodes=nodes, **spec)
    job.state, job.end_time, job.usage = JobState.COMPLETED, job.start_time + 20, usage
    return job


def test_the_briefs_example_half_the_memory():
    job = job_with([UsageSample("batch", "node1", user_cpu=0.75, system_cpu=0.25, max_rss=200 * MIB,
                                tasks=1)], mem_per_node=400)
    assert seff_of(job) == [
        "Job ID: 12", "Cluster: cluster", f"User/Group: alice/{group()}",
        "State: COMPLETED (exit code 0)", "Cores: 1", "CPU Utilized: 00:00:01",
        "CPU Efficiency: 5.00% of 00:00:20 core-walltime", "Job Wall-clock time: 00:00:20",
        "Memory Utilized: 200.00 MB", "Memory Efficiency: 50.00% of 400.00 MB"]


def test_gpus_cores_per_node_and_per_cpu_memory():
    job = job_with([UsageSample("batch", "node1", user_cpu=40, max_rss=100 * MIB, tasks=1, gpus=2,
                                ave_gpu_util=30.0, max_gpu_mem=1024 * MIB)],
                   gpus=(0, 1), cpus=2, nodes=("node1", "node2"), mem_per_cpu=100)
    job.spec.num_tasks = 2
    assert seff_of(job)[4:] == [
        "Nodes: 2", "Cores per node: 2", "CPU Utilized: 00:00:40",
        "CPU Efficiency: 50.00% of 00:01:20 core-walltime", "Job Wall-clock time: 00:00:20",
        "Memory Utilized: 100.00 MB", "Memory Efficiency: 25.00% of 400.00 MB",
        "GPU Efficiency: 30.00% of 4 GPU(s)", "GPU Memory Utilized: 1.00 GB"]


def test_running_warns_and_pending_has_no_figures():
    job = job_with([UsageSample("batch", "node1", max_rss=MIB, tasks=1)], mem_per_node=10)
    job.end_time, job.state = 0.0, JobState.RUNNING
    out = seff_of(job, "RUNNING", now=job.start_time + 10)
    assert out[3] == "State: RUNNING" and out[-1] == \
        "WARNING: Efficiency statistics may be misleading for RUNNING jobs."
    assert "Memory Efficiency: 10.00% of 10.00 MB" in out
    job.start_time, job.allocations, job.state = 0.0, [], JobState.PENDING
    assert seff_of(job, "PENDING", now=1e9)[-1] == \
        "Efficiency not available for jobs in the PENDING state."


def test_array_task_and_exit_code():
    job = job_with([])
    job.array_job_id, job.array_task_id, job.exit_code = 10, 2, 3
    out = seff_of(job, "FAILED")
    assert out[:2] == ["Job ID: 12", "Array Job ID: 10_2"]
    assert "State: FAILED (exit code 3)" in out
    # no step was sampled: 22.05's seff counts 0 tasks, not 1, and says so
    assert "Memory Utilized: 0.00 MB (estimated maximum)" in out
