"""Best-fit node selection (sched/select.fit_key, profile.Timeline.place): partly used nodes
fill first so whole nodes stay free for big jobs. One row per case, expectations written by hand:
a first-fit scheduler (nodes by name) gets the rows marked "first fit: ..." wrong.
"""

from __future__ import annotations

import dataclasses

import pytest

from factories import job, node, running, snapshot
from pyslurm_lite.sched import schedule
from pyslurm_lite.sched.profile import Timeline
from pyslurm_lite.sched.select import FreeNode, select_nodes

NOW = 1_000_000.0


def placed(plan):
    return {s.job_id: [a.node for a in s.allocations] for s in plan.starts}


def with_(view, **changes):
    return dataclasses.replace(view, **changes)


CASES = [
    pytest.param(  # first fit: n1
        [job(1, gpus=1)], [node("n1", gpus=4), node("n2", gpus=4, free_gpus=(1, 2, 3))],
        {1: ["n2"]}, id="1-gpu-beside-1-gpu"),
    pytest.param(  # the acceptance check's shape: then the 4-GPU job still finds a whole node
        [job(1, gpus=1), job(2, gpus=4)],
        [node("n1", gpus=4), node("n2", gpus=4, free_cpus=3, free_gpus=(1, 2, 3))],
        {1: ["n2"], 2: ["n1"]}, id="small-fills-big-keeps-whole-node"),
    pytest.param(  # first fit: n2 (alphabetically first)... and n3 for job 2
        [job(1, gpus=2), job(2, gpus=1)],
        [node("n1", gpus=8, free_gpus=(0, 1, 2)), node("n0", gpus=8),
         node("n2", gpus=8, free_gpus=tuple(range(6)))],
        {1: ["n1"], 2: ["n1"]}, id="fewest-gpus-left"),
    pytest.param(  # GPUs tie: fewest free CPUs decides (first fit: n1)
        [job(1, gpus=1)], [node("n1", gpus=2, cpus=8), node("n2", gpus=2, cpus=8, free_cpus=2)],
        {1: ["n2"]}, id="cpus-break-gpu-tie"),
    pytest.param(  # CPU-only jobs are best fit too (first fit: n1)
        [job(1, cpus=2)], [node("n1", cpus=8), node("n2", cpus=8, free_cpus=3)],
        {1: ["n2"]}, id="cpu-job"),
    pytest.param(  # a node too full to hold the job is passed over for the next best
        [job(1, cpus=2)], [node("n1", cpus=8), node("n2", cpus=8, free_cpus=1),
                           node("n3", cpus=8, free_cpus=4)],
        {1: ["n3"]}, id="next-best-when-best-too-full"),
    pytest.param(  # all equal: (weight, name) order decides
        [job(1, gpus=1)], [node("n2", gpus=4), node("n1", gpus=4)],
        {1: ["n1"]}, id="tie-by-name"),
    pytest.param(  # Weight first, as Slurm: the light empty node beats the heavy used one
        [job(1, gpus=1)], [node("n1", gpus=4, weight=1),
                           node("n2", gpus=4, free_gpus=(1, 2, 3), weight=5)],
        {1: ["n1"]}, id="weight-first"),
    pytest.param(  # within the lightest weight, best fit
        [job(1, gpus=1)], [node("n1", gpus=4, weight=1), node("n9", gpus=4, free_gpus=(3,), weight=9),
                           node("n2", gpus=4, free_gpus=(2, 3), weight=1)],
        {1: ["n2"]}, id="best-fit-within-weight"),
    pytest.param(  # two nodes: the fullest that fit, best first (first fit: n1, n2)
        [job(1, cpus=2, nodes=2)],
        [node("n1", cpus=8), node("n2", cpus=8, free_cpus=6), node("n3", cpus=8, free_cpus=2),
         node("n4", cpus=8, free_cpus=1)],
        {1: ["n3", "n2"]}, id="multi-node-best-fit"),
    pytest.param(  # -x keeps it off the best fit
        [with_(job(1, gpus=1), excluded=frozenset({"n2"}))],
        [node("n1", gpus=4), node("n2", gpus=4, free_gpus=(3,)), node("n3", gpus=4, free_gpus=(2, 3))],
        {1: ["n3"]}, id="excluded"),
    pytest.param(  # -w: that node, even when another fits better
        [with_(job(1, gpus=1), required=("n1",))],
        [node("n1", gpus=4), node("n2", gpus=4, free_gpus=(3,))],
        {1: ["n1"]}, id="required-single"),
    pytest.param(  # -w n1 and a second node: n1 first, then the best fit of the rest
        [with_(job(1, gpus=1, nodes=2), required=("n1",))],
        [node("n1", gpus=4), node("n2", gpus=4), node("n3", gpus=4, free_gpus=(2, 3))],
        {1: ["n1", "n3"]}, id="required-then-best-fit"),
    pytest.param(  # --constraint: only nodes with the feature, best fit among them
        [job(1, gpus=1, features=("nvlink",))],
        [node("n1", gpus=4, free_gpus=(3,)), node("n2", gpus=4, features=("nvlink",)),
         node("n3", gpus=4, free_gpus=(1, 2, 3), features=("nvlink",))],
        {1: ["n3"]}, id="features"),
    pytest.param(  # --exclusive wants an idle node; best fit does not send it to a used one
        [job(1, exclusive=True)], [node("n1", cpus=4, free_cpus=3), node("n2", cpus=4)],
        {1: ["n2"]}, id="exclusive"),
]


@pytest.mark.parametrize("jobs, nodes, expected", CASES)
def test_best_fit(jobs, nodes, expected):
    assert placed(schedule(snapshot(jobs, nodes), NOW)) == expected


def test_reservation_books_best_fit():
    """A blocked job's future start (backfill's earliest()) is placed best fit too: when both
    nodes free up, it books the one left fuller (first fit: n1, the whole node)."""
    nodes = {"n1": FreeNode(node("n1", gpus=4, free_gpus=())),
             "n2": FreeNode(node("n2", gpus=4, free_gpus=(3,)))}
    runs = (running(10, "n1", gpus=(0, 1, 2, 3), end=NOW + 100),
            running(11, "n2", gpus=(0, 1), end=NOW + 100))
    timeline = Timeline(nodes, runs, NOW)
    start, allocations = timeline.earliest(job(1, gpus=2, limit=10), ["n1", "n2"],
                                           lambda name, t0, t1: True)
    assert start == NOW + 100 and [a.node for a in allocations] == ["n2"]


def test_select_nodes_best_fit():
    """select_nodes (preemption's trial placement) ranks the same way."""
    free = [FreeNode(node("n1", gpus=4)), FreeNode(node("n2", gpus=4, free_gpus=(2, 3)))]
    allocations = select_nodes(job(1, gpus=1), free)
    assert [a.node for a in allocations] == ["n2"]
