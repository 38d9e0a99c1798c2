"""job.usage stays bounded: the batch step's samples and those of the MAX_USAGE_STEPS steps
sampled last (job.usage travels in every Job message, squeue's replies too)."""

from __future__ import annotations

from factories import model_job
from pyslurm_lite import config
from pyslurm_lite.controller.job_mgr import JobManager
from pyslurm_lite.controller.node_mgr import MAX_USAGE_STEPS, NodeManager, kept_usage
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.model import UsageSample


def _sample(step, node="node1", restart_count=0, **kw) -> UsageSample:
    return UsageSample(step=step, node=node, restart_count=restart_count, job_id=42, **kw)


def _steps(usage) -> list[tuple[str, str]]:
    return [(u.step, u.node) for u in usage]


def test_a_new_sample_replaces_its_step_and_node_and_goes_last():
    usage = [_sample("batch"), _sample("0"), _sample("0", "node2")]
    out = kept_usage(usage, _sample("0", rss=5), 0)
    assert _steps(out) == [("batch", "node1"), ("0", "node2"), ("0", "node1")]
    assert out[-1].rss == 5


def test_samples_of_an_earlier_run_are_dropped():
    out = kept_usage([_sample("batch", restart_count=0), _sample("0", restart_count=0)],
                     _sample("batch", restart_count=1), 1)
    assert _steps(out) == [("batch", "node1")]


def test_older_steps_go_beyond_the_limit_and_batch_and_the_running_step_stay():
    usage = [_sample("batch"), _sample("0")]  # step 0 runs all along, next to short steps
    for step in range(1, MAX_USAGE_STEPS + 20):
        usage = kept_usage(usage, _sample(str(step)), 0)
        usage = kept_usage(usage, _sample(str(step), "node2"), 0)  # a step on two nodes counts once
        usage = kept_usage(usage, _sample("0"), 0)  # its next heartbeat
    last = MAX_USAGE_STEPS + 19  # the short steps sampled last, and step 0, fill the limit
    short = {str(s) for s in range(last - MAX_USAGE_STEPS + 2, last + 1)}
    assert {u.step for u in usage} == {"batch", "0"} | short
    assert len(usage) == 1 + 1 + 2 * (MAX_USAGE_STEPS - 1)


def test_a_job_looping_over_srun_keeps_batch_and_the_last_steps_in_the_controller(tmp_path):
    cfg = config.parse("NodeName=node1 CPUs=2 RealMemory=100\nPartitionName=main Nodes=node1\n")
    state = ClusterState(cfg, Store(f"sqlite:///{tmp_path / 'state.db'}"), clock=lambda: 100.0)
    job = model_job(42)
    state.jobs[42] = job
    nodes = NodeManager(state, JobManager(state))
    nodes.record_usage("node1", [_sample("batch", user_cpu=1.0)])
    for step in range(200):  # one heartbeat per step, as a job running srun in a loop
        nodes.record_usage("node1", [_sample(str(step), user_cpu=step),
                                     _sample("batch", user_cpu=2.0)])
    assert len(job.usage) == 1 + MAX_USAGE_STEPS
    last_steps = {str(s) for s in range(200 - MAX_USAGE_STEPS, 200)}
    assert {u.step for u in job.usage} == {"batch"} | last_steps
    assert [u.user_cpu for u in job.usage if u.step == "batch"] == [2.0]
