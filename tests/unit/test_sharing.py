"""gres/shard and gres/mps in the scheduler (sched/sharing.py through schedule()): one row per
case, expectations written by hand from Slurm 22.05's rules (a job's shares on one GPU; a GPU is
whole, shard or mps, never two at once)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from factories import job, node, running, snapshot
from pyslurm_lite.model import GresRequest, NodeAllocation
from pyslurm_lite.sched import schedule, sharing
from pyslurm_lite.sched.snapshot import RunningView

NOW = 1_000_000.0


def shard_node(name="n1", gpus=2, shard=8, mps=0, free_gpus=None, use=None):
    """A node with Gres=gpu:G,shard:S[,mps:M]; use: {gpu: (name, in use)} by running jobs."""
    gres = [GresRequest("gpu", "", gpus), GresRequest("shard", "", shard)]
    gres += [GresRequest("mps", "", mps)] if mps else []
    use = use or {}
    free = tuple(g for g in range(gpus) if g not in use) if free_gpus is None else free_gpus
    return dataclasses.replace(node(name, gpus=gpus, cpus=8, free_gpus=free, idle=not use and
                                    len(free) == gpus),
                               shares=sharing.view_entries(gres, list(range(gpus)), use))


def sjob(job_id, name="shard", count=3, **kw):
    return dataclasses.replace(job(job_id, **kw), share_name=name, shares_per_node=count)


def shared_run(job_id, gpu, count, name="shard", end=math.inf, node_name="n1"):
    a = NodeAllocation(node_name, 1, 100, [gpu], [count], name)
    return RunningView(job_id, (a,), end)


def starts(plan):
    return {s.job_id: [(a.gpus, a.shares, a.share_name) for a in s.allocations]
            for s in plan.starts}


CASES = [
    pytest.param([sjob(1), sjob(2), sjob(3)], [shard_node()], (),
                 {1: [([0], [3], "shard")], 2: [([1], [3], "shard")]}, id="3-of-4-each-two-fit"),
    pytest.param([sjob(1, count=2), sjob(2, count=2)], [shard_node()], (),
                 {1: [([0], [2], "shard")], 2: [([0], [2], "shard")]}, id="fills-one-gpu-first"),
    pytest.param([sjob(1, count=1), job(2, gpus=2)], [shard_node()], (),
                 {1: [([0], [1], "shard")]}, id="shared-gpu-not-whole"),
    pytest.param([job(1, gpus=1), sjob(2, count=4)], [shard_node()], (),
                 {1: [([0], [], "")], 2: [([1], [4], "shard")]}, id="whole-gpu-has-no-shards"),
    pytest.param([sjob(1, count=5)], [shard_node()], (), {}, id="more-than-one-gpu-has"),
    pytest.param([sjob(1, count=2)], [shard_node(use={0: ("shard", 3), 1: ("shard", 1)})],
                 (shared_run(7, 0, 3), shared_run(8, 1, 1)),
                 {1: [([1], [2], "shard")]}, id="running-shares-counted"),
    pytest.param([sjob(1, name="mps", count=50)],
                 [shard_node(mps=200, use={0: ("shard", 1)})], (shared_run(7, 0, 1),),
                 {1: [([1], [50], "mps")]}, id="mps-not-on-a-shard-gpu"),
    pytest.param([sjob(1, count=1)], [shard_node(shard=0)], (), {}, id="node-without-shards"),
]


@pytest.mark.parametrize("jobs, nodes, runs, expected", CASES)
def test_shares_placed(jobs, nodes, runs, expected):
    plan = schedule(snapshot(jobs=jobs, nodes=nodes, running=runs), NOW)
    assert starts(plan) == expected


def test_shares_come_back_when_a_job_ends_for_backfill():
    # a running shard:4 job holds GPU 0 until t+100 and a gpu:2 job waits for it; a shard:1 job
    # behind it must not take GPU 1 past t+100 (it would delay the reservation)... and does
    # fit when its time limit ends first
    runs = (shared_run(7, 0, 4, end=NOW + 100),)
    nodes = [shard_node(use={0: ("shard", 4)})]
    big = job(1, gpus=2, limit=10)
    late = sjob(2, count=1, limit=10, priority=1)
    short = sjob(3, count=1, limit=1, priority=0)
    plan = schedule(snapshot(jobs=[big, late, short], nodes=nodes, running=runs), NOW)
    assert 1 not in starts(plan) and 2 not in starts(plan)
    assert starts(plan).get(3) == [([1], [1], "shard")]


@pytest.mark.parametrize("total, gpus, expected", [
    (8, [0, 1], {0: 4, 1: 4}), (9, [0, 1], {0: 5, 1: 4}), (200, [3], {3: 200}), (4, [], {}),
])
def test_even_spread(total, gpus, expected):
    assert sharing.per_gpu(total, gpus) == expected


def test_release_keeps_other_jobs_shares():
    use: dict = {}
    a = NodeAllocation("n1", 1, 1, [0], [3], "shard")
    b = NodeAllocation("n1", 1, 1, [0], [1], "shard")
    sharing.hold(use, a)
    sharing.hold(use, b)
    sharing.release(use, a)
    assert use == {0: ("shard", 1)}
    sharing.release(use, b)
    assert use == {}
    assert sharing.whole_gpus(a) == []
    assert sharing.whole_gpus(NodeAllocation("n1", 1, 1, [2])) == [2]


def test_gpu_still_shared_is_not_planned_whole():
    # GPU 0 carries two jobs' shards, one ending at t+100, the other never; GPU 1 is held whole
    # for ever: a gpu:1 job has no start to plan (at t+100 GPU 0 still has the other's shards)
    runs = (shared_run(7, 0, 1, end=NOW + 100), shared_run(8, 0, 2),
            running(9, "n1", gpus=(1,)))
    nodes = [shard_node(free_gpus=(), use={0: ("shard", 3)})]
    plan = schedule(snapshot(jobs=[job(1, gpus=1, limit=10)], nodes=nodes, running=runs), NOW)
    assert starts(plan) == {} and plan.reservations.get(1) is None


def test_controller_state_counts_shares(tmp_path):
    """ClusterState: the shares of running jobs in node_view and in the re-check of a plan."""
    from pyslurm_lite import config
    from pyslurm_lite.controller.state import ClusterState
    from pyslurm_lite.controller.store import Store
    from pyslurm_lite.model import Job, JobSpec, JobState
    cfg = config.parse("GresTypes=gpu,shard\n"
                       "NodeName=n1 CPUs=8 RealMemory=1000 Gres=gpu:2,shard:8\n"
                       "PartitionName=p Nodes=n1\n")
    state = ClusterState(cfg, Store(f"sqlite:///{tmp_path / 'state.db'}"), clock=lambda: 100.0)
    state.registered.add("n1")
    state.nodes["n1"].responding = True
    state.refresh_node("n1")
    assert state.fits_now(NodeAllocation("n1", 1, 10, [0], [4], "shard"), False)

    def run(job_id, gpu, count):
        job = Job(job_id=job_id, spec=JobSpec(gres=[GresRequest("shard", "", count)]),
                  state=JobState.RUNNING)
        job.allocations = [NodeAllocation("n1", 1, 10, [gpu], [count], "shard")]
        state.jobs[job_id] = job
        state.hold_allocations(job)
        return job

    a, b = run(1, 0, 3), run(2, 0, 1)
    view = state.node_view(state.nodes["n1"])
    assert view.free_gpus == (1,) and view.shares == ((0, "shard", 4, 4), (1, "shard", 4, 0))
    assert not state.fits_now(NodeAllocation("n1", 1, 10, [0], [1], "shard"), False)  # 4 of 4
    assert not state.fits_now(NodeAllocation("n1", 1, 10, [0]), False)  # not whole
    state.release_allocations(a)
    view = state.node_view(state.nodes["n1"])
    assert view.free_gpus == (1,) and view.shares[0] == (0, "shard", 4, 1)  # b still there
    assert state.fits_now(NodeAllocation("n1", 1, 10, [0], [3], "shard"), False)
    state.release_allocations(b)
    assert state.node_view(state.nodes["n1"]).free_gpus == (0, 1)
    assert state.job_view(Job(job_id=5, spec=JobSpec(gres=[GresRequest("shard", "", 2)]))
                          ).share_name == "shard"
