"""sched/: the pure scheduler. One row per case: a snapshot in, the expected plan out.

Each row's expectation is written by hand from Slurm's rules (not computed by the code under
test): which jobs start where, with which CPUs/MiB/GPU indices, and why the others wait.
"""

from __future__ import annotations

import random

import pytest

from factories import job, node, partition, snapshot
from pyslurm_lite.model import Reason
from pyslurm_lite.sched import SchedConfig, schedule

NOW = 1_000_000.0


def outcome(plan):
    """{job_id: [(node, cpus, mem, gpus), ...]} for starts, {job_id: Reason} for waits."""
    starts = {s.job_id: [(a.node, a.cpus, a.mem, list(a.gpus)) for a in s.allocations]
              for s in plan.starts}
    return starts, dict(plan.reasons)


CASES = [
    # ---- fit by CPUs, memory and GPUs ----------------------------------------------------------
    pytest.param(
        snapshot([job(1, cpus=2, mem=300)], [node("n1", cpus=4)]),
        {1: [("n1", 2, 300, [])]}, {}, id="fits-cpus-mem"),
    pytest.param(
        snapshot([job(1, cpus=2)], [node("n1", cpus=4, free_cpus=1)]),
        {}, {1: Reason.RESOURCES}, id="cpus-busy-resources"),
    pytest.param(
        snapshot([job(1, mem=1000)], [node("n1", mem=4000, free_mem=999)]),
        {}, {1: Reason.RESOURCES}, id="mem-busy-resources"),
    pytest.param(
        snapshot([job(1, cpus=8)], [node("n1", cpus=4)]),
        {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="cpus-never-fit"),
    pytest.param(
        snapshot([job(1, gpus=2)], [node("n1", gpus=4)]),
        {1: [("n1", 1, 100, [0, 1])]}, {}, id="gpus-fit-lowest-first"),
    pytest.param(
        snapshot([job(1, gpus=2)], [node("n1", gpus=4, free_gpus=(3,))]),
        {}, {1: Reason.RESOURCES}, id="gpus-busy-resources"),
    pytest.param(
        snapshot([job(1, gpus=2)], [node("n1", gpus=4, free_gpus=(1, 3))]),
        {1: [("n1", 1, 100, [1, 3])]}, {}, id="gpus-skip-busy-indices"),
    pytest.param(
        snapshot([job(1, gpus=1)], [node("n1", gpus=0), node("n2", gpus=1)]),
        {1: [("n2", 1, 100, [0])]}, {}, id="gpus-skip-gpuless-node"),
    # ---- typed GPUs ----------------------------------------------------------------------------
    pytest.param(
        snapshot([job(1, gpus=1, gpu_type="a100")],
                 [node("n1", gpus=4, gpu_types=("v100", "v100", "a100", "a100"))]),
        {1: [("n1", 1, 100, [2])]}, {}, id="typed-gpu-picks-that-type"),
    pytest.param(
        snapshot([job(1, gpus=2, gpu_type="a100")],
                 [node("n1", gpus=2, gpu_types=("v100", "a100")),
                  node("n2", gpus=2, gpu_types=("a100", "a100"))]),
        {1: [("n2", 1, 100, [0, 1])]}, {}, id="typed-gpu-skips-node-with-too-few"),
    pytest.param(
        snapshot([job(1, gpus=1, gpu_type="a100")],
                 [node("n1", gpus=2, gpu_types=("v100", "a100"), free_gpus=(0,))]),
        {}, {1: Reason.RESOURCES}, id="typed-gpu-busy-resources"),
    pytest.param(
        snapshot([job(1, gpus=1, gpu_type="h100")],
                 [node("n1", gpus=2, gpu_types=("v100", "a100"))]),
        {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="typed-gpu-absent-never"),
    # ---- multi-node ----------------------------------------------------------------------------
    pytest.param(
        snapshot([job(1, nodes=2, cpus=2, gpus=1)], [node("n1", gpus=2), node("n2", gpus=2)]),
        {1: [("n1", 2, 100, [0]), ("n2", 2, 100, [0])]}, {}, id="two-nodes"),
    pytest.param(
        snapshot([job(1, nodes=2, cpus=2)],
                 [node("n1"), node("n2", free_cpus=1), node("n3")]),
        {1: [("n1", 2, 100, []), ("n3", 2, 100, [])]}, {}, id="two-nodes-skip-busy"),
    pytest.param(
        snapshot([job(1, nodes=2, cpus=2)], [node("n1"), node("n2", free_cpus=1)]),
        {}, {1: Reason.RESOURCES}, id="two-nodes-one-busy-resources"),
    pytest.param(
        snapshot([job(1, nodes=2)], [node("n1"), node("n2", available=False)]),
        {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="two-nodes-one-down"),
    pytest.param(
        snapshot([job(1, nodes=3)], [node("n1"), node("n2")]),
        {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="more-nodes-than-partition"),
    # a job the nodes that are up cannot hold holds back nobody (Slurm plans it no start)
    pytest.param(
        snapshot([job(1, nodes=2), job(2)], [node("n1"), node("n2", available=False)]),
        {2: [("n1", 1, 100, [])]}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="never-fits-blocks-nobody"),
    pytest.param(
        snapshot([job(1, gpus=2), job(2, gpus=1)], [node("n1", gpus=1)]),
        {2: [("n1", 1, 100, [0])]}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="too-few-gpus-blocks-nobody"),
    # ---- exclusive -----------------------------------------------------------------------------
    pytest.param(
        snapshot([job(1, exclusive=True)], [node("n1", cpus=4, mem=4000, gpus=2)]),
        {1: [("n1", 4, 4000, [0, 1])]}, {}, id="exclusive-takes-whole-node"),
    pytest.param(
        snapshot([job(1, exclusive=True)], [node("n1", cpus=4, free_cpus=3)]),
        {}, {1: Reason.RESOURCES}, id="exclusive-needs-idle-node"),
    pytest.param(
        snapshot([job(1, exclusive=True)], [node("n1", cpus=4, free_cpus=3), node("n2")]),
        {1: [("n2", 4, 4000, [])]}, {}, id="exclusive-skips-shared-node"),
    pytest.param(
        snapshot([job(1, exclusive=True), job(2)], [node("n1")]),
        {1: [("n1", 4, 4000, [])]}, {2: Reason.RESOURCES}, id="exclusive-then-nothing-fits"),
    pytest.param(
        snapshot([job(1), job(2, exclusive=True)], [node("n1"), node("n2")]),
        {1: [("n1", 1, 100, [])], 2: [("n2", 4, 4000, [])]}, {}, id="shared-then-exclusive"),
    # ---- filters: held, begin time, partition --------------------------------------------------
    pytest.param(
        snapshot([job(1, held=True)], [node("n1")]),
        {}, {1: Reason.HELD_USER}, id="held-user"),
    pytest.param(
        snapshot([job(1, held=True, held_by_admin=True)], [node("n1")]),
        {}, {1: Reason.HELD_ADMIN}, id="held-admin"),
    pytest.param(
        snapshot([job(1, held=True), job(2)], [node("n1", cpus=1)]),
        {2: [("n1", 1, 100, [])]}, {1: Reason.HELD_USER}, id="held-does-not-block"),
    pytest.param(
        snapshot([job(1, begin=NOW + 1)], [node("n1")]),
        {}, {1: Reason.BEGIN_TIME}, id="begin-in-future"),
    pytest.param(
        snapshot([job(1, begin=NOW)], [node("n1")]),
        {1: [("n1", 1, 100, [])]}, {}, id="begin-now-starts"),
    pytest.param(
        snapshot([job(1, begin=NOW + 60), job(2)], [node("n1", cpus=1)]),
        {2: [("n1", 1, 100, [])]}, {1: Reason.BEGIN_TIME}, id="begin-does-not-block"),
    pytest.param(
        snapshot([job(1)], [node("n1")], [partition("main", ["n1"], up=False)]),
        {}, {1: Reason.PARTITION_DOWN}, id="partition-down"),
    pytest.param(
        snapshot([job(1, partition="nosuch")], [node("n1")]),
        {}, {1: Reason.PARTITION_DOWN}, id="partition-unknown"),
    pytest.param(
        snapshot([job(1, partition="b")], [node("n1"), node("n2")],
                 [partition("a", ["n1"]), partition("b", ["n2"])]),
        {1: [("n2", 1, 100, [])]}, {}, id="only-partition-nodes"),
    # ---- blocking: a job that waits for resources holds back the lower ones of its partition --
    pytest.param(
        snapshot([job(1, cpus=4), job(2, cpus=1), job(3, cpus=1)], [node("n1", free_cpus=2)]),
        {}, {1: Reason.RESOURCES, 2: Reason.PRIORITY, 3: Reason.PRIORITY}, id="blocked-priority"),
    pytest.param(
        snapshot([job(1, cpus=1), job(2, cpus=4), job(3, cpus=1)], [node("n1", free_cpus=2)]),
        {1: [("n1", 1, 100, [])]}, {2: Reason.RESOURCES, 3: Reason.PRIORITY},
        id="higher-starts-then-block"),
    pytest.param(
        snapshot([job(1, cpus=4, partition="a"), job(2, partition="b")],
                 [node("n1", free_cpus=2), node("n2")],
                 [partition("a", ["n1"]), partition("b", ["n2"])]),
        {2: [("n2", 1, 100, [])]}, {1: Reason.RESOURCES}, id="block-is-per-partition"),
    # ---- deterministic tie-breaks: priority, then submit time, then job id ----------------------
    pytest.param(
        snapshot([job(1, priority=10), job(2, priority=20)], [node("n1", cpus=1)]),
        {2: [("n1", 1, 100, [])]}, {1: Reason.RESOURCES}, id="higher-priority-first"),
    pytest.param(
        snapshot([job(1, priority=10, submit=200.0), job(2, priority=10, submit=100.0)],
                 [node("n1", cpus=1)]),
        {2: [("n1", 1, 100, [])]}, {1: Reason.RESOURCES}, id="same-priority-earlier-submit"),
    pytest.param(
        snapshot([job(7, priority=10, submit=100.0), job(3, priority=10, submit=100.0)],
                 [node("n1", cpus=1)]),
        {3: [("n1", 1, 100, [])]}, {7: Reason.RESOURCES}, id="same-priority-same-submit-lower-id"),
    # ---- nodes in (weight, name) order ---------------------------------------------------------
    pytest.param(
        snapshot([job(1)], [node("n2"), node("n1")]),
        {1: [("n1", 1, 100, [])]}, {}, id="node-by-name"),
    pytest.param(
        snapshot([job(1)], [node("n1", weight=5), node("n2", weight=1)]),
        {1: [("n2", 1, 100, [])]}, {}, id="node-by-weight"),
    pytest.param(
        snapshot([job(1, features=("ib",))], [node("n1"), node("n2", features=("ib", "nvme"))]),
        {1: [("n2", 1, 100, [])]}, {}, id="features"),
    pytest.param(
        snapshot([job(1, constraint="ib&nvme")], [node("n1", features=("ib",)), node("n2", features=("ib", "nvme"))]),
        {1: [("n2", 1, 100, [])]}, {}, id="constraint-and"),
    pytest.param(
        snapshot([job(1, constraint="a100|h200")], [node("n1", features=("t4",)), node("n2", features=("h200",))]),
        {1: [("n2", 1, 100, [])]}, {}, id="constraint-or"),
    pytest.param(
        snapshot([job(1)], [node("n1", available=False), node("n2")]),
        {1: [("n2", 1, 100, [])]}, {}, id="skip-unavailable-node"),
    # ---- several jobs sharing nodes in one pass: resources are consumed as the plan grows -------
    pytest.param(
        snapshot([job(1, cpus=2), job(2, cpus=2), job(3, cpus=2)], [node("n1", cpus=2), node("n2", cpus=2)]),
        {1: [("n1", 2, 100, [])], 2: [("n2", 2, 100, [])]}, {3: Reason.RESOURCES}, id="fill-then-wait"),
    pytest.param(
        snapshot([job(1, mem=3000), job(2, mem=1500)], [node("n1", mem=4000)]),
        {1: [("n1", 1, 3000, [])]}, {2: Reason.RESOURCES}, id="memory-consumed"),
]


@pytest.mark.parametrize("snap, starts, reasons", CASES)
def test_schedule(snap, starts, reasons):
    assert outcome(schedule(snap, NOW)) == (starts, reasons)


# GPU indices: lowest free first, never shared between jobs in one plan.
@pytest.mark.parametrize("asks, free, expected", [
    ([1, 1, 1, 1], (0, 1, 2, 3), [[0], [1], [2], [3]]),
    ([2, 2], (0, 1, 2, 3), [[0, 1], [2, 3]]),
    ([1, 2], (0, 2, 3), [[0], [2, 3]]),
    ([3, 1], (0, 1, 2, 3), [[0, 1, 2], [3]]),
    ([2, 1], (1, 3), [[1, 3], None]),
])
def test_gpu_indices_lowest_first_and_disjoint(asks, free, expected):
    jobs = [job(i + 1, gpus=n) for i, n in enumerate(asks)]
    plan = schedule(snapshot(jobs, [node("n1", cpus=8, gpus=4, free_gpus=free)]), NOW)
    starts, _ = outcome(plan)
    got = [starts[j.job_id][0][3] if j.job_id in starts else None for j in jobs]
    assert got == expected
    taken = [g for gs in got if gs for g in gs]
    assert len(taken) == len(set(taken)) and set(taken) <= set(free)


def test_same_plan_whatever_the_input_order():
    jobs = [job(i, cpus=1 + i % 2, gpus=i % 3, priority=100 - i // 3, submit=float(i % 4))
            for i in range(1, 16)]
    nodes = [node(f"n{i}", cpus=3, gpus=2) for i in range(1, 5)]
    expected = outcome(schedule(snapshot(jobs, nodes), NOW))
    rng = random.Random(7)
    for _ in range(5):
        shuffled_jobs, shuffled_nodes = jobs[:], nodes[:]
        rng.shuffle(shuffled_jobs)
        rng.shuffle(shuffled_nodes)
        part = partition("main", [n.name for n in shuffled_nodes])
        assert outcome(schedule(snapshot(shuffled_jobs, shuffled_nodes, [part]), NOW)) == expected
    assert expected[0], "the case must start something to be meaningful"


def test_max_starts_caps_the_pass():
    snap = snapshot([job(i) for i in range(1, 6)], [node("n1", cpus=8)])
    starts, reasons = outcome(schedule(snap, NOW, SchedConfig(max_starts=2)))
    assert sorted(starts) == [1, 2]
    assert set(reasons) == {3, 4, 5}


def test_schedule_does_not_mutate_the_snapshot():
    n = node("n1", cpus=4, gpus=2)
    snap = snapshot([job(1, cpus=2, gpus=1)], [n])
    schedule(snap, NOW)
    assert snap.nodes[0] == n and snap.nodes[0].free_gpus == (0, 1)


def test_an_event_pass_looks_at_the_top_of_the_queue_only():
    """SchedConfig.queue_depth (the daemon's event passes: default_queue_depth, as Slurm's
    event-triggered scheduler): the jobs below it are neither started nor given a reason;
    they keep theirs until a full pass."""
    snap = snapshot([job(i, cpus=2, priority=100 - i) for i in range(1, 6)],
                    [node("n1", cpus=2), node("n2", cpus=2)])
    starts, reasons = outcome(schedule(snap, NOW, SchedConfig(queue_depth=3)))
    assert (sorted(starts), reasons) == ([1, 2], {3: Reason.RESOURCES})
    starts, reasons = outcome(schedule(snap, NOW, SchedConfig()))
    assert (sorted(starts), sorted(reasons)) == ([1, 2], [3, 4, 5])


def test_the_daemon_event_passes_take_default_queue_depth(tmp_path):
    from pyslurm_lite import config
    from pyslurm_lite.controller.daemon import Controller
    text = (f"ClusterName=c\nStateSaveLocation={tmp_path}\nNodeName=n1 CPUs=2\n"
            "PartitionName=p Nodes=n1 Default=YES\nSchedulerParameters=default_queue_depth=7\n")
    ctl = Controller(config.parse(text, str(tmp_path / "slurm.conf")))
    try:
        assert (ctl.event_config.queue_depth, ctl.sched_config.queue_depth) == (7, 0)
    finally:
        ctl.store.close()
