"""sched/: placement requests. One row per case, the expectation written from Slurm's rules:
-w takes every named node (and others when -N asks more), -x never its nodes, a -w node down
makes ReqNodeNotAvail, -N min-max as many as are free, --mem=0 a node's whole memory,
--exclusive=user no other user beside it, typed GPUs of several kinds one of each."""

from __future__ import annotations

import dataclasses
import math

import pytest

from factories import job, node, running, snapshot
from pyslurm_lite.model import GresRequest, JobSpec, Reason
from pyslurm_lite.sched import schedule
from pyslurm_lite.sched.placement import refine, spec_for_nodes

NOW = 1_000_000.0


def placed(view, **changes):
    return dataclasses.replace(view, **changes)


def wide(view, *counts):
    """The view with wider forms on `counts` nodes (widest first), as refine() builds them."""
    return placed(view, wider=tuple(placed(view, num_nodes=k, cpus_per_node=view.cpus_per_node[:1] * k,
                                           mem_per_node=view.mem_per_node[:1] * k) for k in counts))


def outcome(plan):
    starts = {s.job_id: [(a.node, a.cpus, a.mem, list(a.gpus)) for a in s.allocations]
              for s in plan.starts}
    return starts, dict(plan.reasons)


THREE = [node("n1"), node("n2"), node("n3")]

CASES = [
    # ---- -w / -x --------------------------------------------------------------------------------
    pytest.param(snapshot([placed(job(1), required=("n2",))], THREE),
                 {1: [("n2", 1, 100, [])]}, {}, id="w-runs-on-the-named-node"),
    pytest.param(snapshot([placed(job(1, nodes=2), required=("n3",))], THREE),
                 {1: [("n3", 1, 100, []), ("n1", 1, 100, [])]}, {}, id="w-plus-more-for-N"),
    pytest.param(snapshot([placed(job(1, nodes=2), required=("n2", "n3"))], THREE),
                 {1: [("n2", 1, 100, []), ("n3", 1, 100, [])]}, {}, id="w-two-nodes"),
    pytest.param(snapshot([placed(job(1, cpus=2), required=("n2",))],
                          [node("n1"), node("n2", free_cpus=1)]),
                 {}, {1: Reason.RESOURCES}, id="w-busy-waits-not-elsewhere"),
    pytest.param(snapshot([placed(job(1), required=("n2",))],
                          [node("n1"), node("n2", available=False)]),
                 {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="w-down-reqnodenotavail"),
    pytest.param(snapshot([placed(job(1), excluded=frozenset({"n1"}))], THREE),
                 {1: [("n2", 1, 100, [])]}, {}, id="x-never-there"),
    pytest.param(snapshot([placed(job(1, nodes=2), excluded=frozenset({"n1", "n2"}))], THREE),
                 {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="x-leaves-too-few"),
    pytest.param(snapshot([placed(job(1), excluded=frozenset({"n1"})), job(2)],
                          [node("n1"), node("n2", free_cpus=0)],
                          running=[running(9, "n2", cpus=4, end=NOW + 600)]),
                 {2: [("n1", 1, 100, [])]}, {1: Reason.RESOURCES}, id="x-others-still-use-it"),
    # ---- -N min-max -----------------------------------------------------------------------------
    pytest.param(snapshot([wide(job(1), 3, 2)], THREE),
                 {1: [("n1", 1, 100, []), ("n2", 1, 100, []), ("n3", 1, 100, [])]}, {},
                 id="N-range-takes-the-most"),
    pytest.param(snapshot([wide(job(1), 3, 2)], [node("n1"), node("n2", free_cpus=0), node("n3")]),
                 {1: [("n1", 1, 100, []), ("n3", 1, 100, [])]}, {}, id="N-range-what-is-free"),
    pytest.param(snapshot([wide(job(1), 3, 2)], [node("n1", free_cpus=0), node("n2", free_cpus=0),
                                                 node("n3")]),
                 {1: [("n3", 1, 100, [])]}, {}, id="N-range-at-least-min"),
    pytest.param(snapshot([wide(job(1, nodes=2), 3)], [node("n1", free_cpus=0), node("n2", free_cpus=0),
                                                       node("n3")]),
                 {}, {1: Reason.RESOURCES}, id="N-range-below-min-waits"),
    # ---- --mem=0 --------------------------------------------------------------------------------
    pytest.param(snapshot([placed(job(1, mem=0), whole_mem=True)], [node("n1", mem=4000)]),
                 {1: [("n1", 1, 4000, [])]}, {}, id="mem0-whole-memory"),
    pytest.param(snapshot([placed(job(1, mem=0), whole_mem=True)],
                          [node("n1", free_mem=3000), node("n2", mem=2000)]),
                 {1: [("n2", 1, 2000, [])]}, {}, id="mem0-where-all-is-free"),
    # ---- --exclusive=user ------------------------------------------------------------------------
    pytest.param(snapshot([placed(job(1, user="bob"), exclusive_user=True)],
                          [node("n1", free_cpus=3), node("n2")],
                          running=[running(9, "n1", user="alice")]),
                 {1: [("n2", 1, 100, [])]}, {}, id="excl-user-avoids-other-users"),
    pytest.param(snapshot([placed(job(1, user="alice"), exclusive_user=True)],
                          [node("n1", free_cpus=3), node("n2")],
                          running=[running(9, "n1", user="alice")]),
                 {1: [("n1", 1, 100, [])]}, {}, id="excl-user-shares-with-self"),
    pytest.param(snapshot([job(1, user="bob")], [node("n1", free_cpus=3), node("n2")],
                          running=[dataclasses.replace(running(9, "n1", user="alice"),
                                                       exclusive_user=True)]),
                 {1: [("n2", 1, 100, [])]}, {}, id="excl-user-keeps-others-off"),
    pytest.param(snapshot([job(1, user="bob")], [node("n1", free_cpus=3), node("n2")],
                          running=[dataclasses.replace(running(9, "n1", user="alice", end=NOW - 5),
                                                       exclusive_user=True)]),
                 {1: [("n2", 1, 100, [])]}, {}, id="excl-user-holds-past-its-planned-end"),
    pytest.param(snapshot([placed(job(1, user="bob"), exclusive_user=True), job(2, user="carol")],
                          [node("n1"), node("n2")]),
                 {1: [("n1", 1, 100, [])], 2: [("n2", 1, 100, [])]}, {},
                 id="excl-user-started-this-pass-counts"),
    # ---- typed GPUs of several kinds ------------------------------------------------------------
    pytest.param(snapshot([placed(job(1, gpus=2), gpu_types=(("a100", 1), ("t4", 1)))],
                          [node("n1", gpus=4, gpu_types=("a100", "a100", "t4", "t4"))]),
                 {1: [("n1", 1, 100, [0, 2])]}, {}, id="gpu-one-of-each-type"),
    pytest.param(snapshot([placed(job(1, gpus=2), gpu_types=(("a100", 1), ("t4", 1)))],
                          [node("n1", gpus=2, gpu_types=("a100", "a100")),
                           node("n2", gpus=2, gpu_types=("t4", "a100"))]),
                 {1: [("n2", 1, 100, [0, 1])]}, {}, id="gpu-types-skip-node-lacking-one"),
    pytest.param(snapshot([placed(job(1, gpus=2), gpu_types=(("", 1), ("t4", 1)))],
                          [node("n1", gpus=2, gpu_types=("t4", "a100"))]),
                 {1: [("n1", 1, 100, [0, 1])]}, {}, id="gpu-any-after-the-typed"),
    pytest.param(snapshot([placed(job(1, gpus=3), gpu_types=(("a100", 2), ("t4", 1)))],
                          [node("n1", gpus=4, gpu_types=("a100", "t4", "t4", "t4"))]),
                 {}, {1: Reason.REQ_NODE_NOT_AVAIL}, id="gpu-types-never"),
]


@pytest.mark.parametrize("snap, starts, reasons", CASES)
def test_placement(snap, starts, reasons):
    assert outcome(schedule(snap, NOW)) == (starts, reasons)


def test_unavailable_nodes_are_named():
    snap = snapshot([placed(job(1), required=("n1", "n2"), num_nodes=2, cpus_per_node=(1, 1),
                            mem_per_node=(100, 100))],
                    [node("n1"), node("n2", available=False)])
    assert schedule(snap, NOW).unavailable == {1: ("n2",)}


def test_backfill_reserves_on_the_named_node():
    """-w n2 while n2 is held until +600 s: reserved then, on n2, though n1 is free now; a
    later job may use n1 meanwhile."""
    snap = snapshot([placed(job(1, cpus=4, limit=10), required=("n2",)), job(2, cpus=4, limit=60)],
                    [node("n1"), node("n2", free_cpus=0)],
                    running=[running(9, "n2", cpus=4, end=NOW + 600)])
    plan = schedule(snap, NOW)
    assert plan.reservations == {1: NOW + 600}
    assert outcome(plan) == ({2: [("n1", 4, 100, [])]}, {1: Reason.RESOURCES})


def test_backfill_reservation_never_on_excluded():
    snap = snapshot([placed(job(1, cpus=4, limit=10), excluded=frozenset({"n1"}))],
                    [node("n1", free_cpus=0), node("n2", free_cpus=0)],
                    running=[running(8, "n1", cpus=4, end=NOW + 60),
                             running(9, "n2", cpus=4, end=NOW + 600)])
    assert schedule(snap, NOW).reservations == {1: NOW + 600}


# ---- refine: JobSpec -> view ----------------------------------------------------------------------

def base_view(spec: JobSpec):
    n = spec.num_nodes
    return job(1, nodes=n, cpus=spec.cpus_on_node(0), mem=spec.mem_on_node(0))


@pytest.mark.parametrize("changes, expected", [
    ({"nodelist": "n[1-2]", "num_nodes": 2}, {"required": ("n1", "n2")}),
    # more -w nodes than -N: every one of them (the controller's view of a raw request)
    ({"nodelist": "n[1-3]"}, {"num_nodes": 3, "cpus_per_node": (1, 1, 1)}),
    ({"exclude": "n3,n[5-6]"}, {"excluded": frozenset({"n3", "n5", "n6"})}),
    ({"mem_whole_node": True}, {"whole_mem": True}),
    ({"exclusive_user": True}, {"exclusive_user": True}),
    ({"min_cpus_per_node": 6, "cpus_per_task": 2}, {"cpus_per_node": (6,)}),
    # -O: -c CPUs per node, whatever the task count
    ({"overcommit": True, "num_tasks": 8, "ntasks_set": True, "cpus_per_task": 2}, {"cpus_per_node": (2,)}),
    ({"gres": [GresRequest("gpu", "a100", 1), GresRequest("gpu", "t4", 2)]},
     {"gpu_types": (("a100", 1), ("t4", 2)), "gpus_per_node": 3}),
    ({"gres": [GresRequest("gpu", "a100", 2)]}, {"gpu_types": ()}),  # one kind: the plain form
])
def test_refine(changes, expected):
    spec = dataclasses.replace(JobSpec(mem_per_node=100), **changes)
    view = refine(base_view(spec), spec)
    assert {k: getattr(view, k) for k in expected} == expected


def test_refine_node_range_views():
    """-N1-3 -n2: at most 2 nodes (each runs a task); the wider view spreads the tasks."""
    spec = JobSpec(num_nodes=1, max_nodes=3, num_tasks=2, ntasks_set=True, cpus_per_task=2,
                   mem_per_cpu=10)
    view = refine(base_view(spec), spec)
    assert view.num_nodes == 1 and view.cpus_per_node == (4,)
    assert [(w.num_nodes, w.cpus_per_node, w.mem_per_node) for w in view.wider] == [(2, (2, 2), (20, 20))]


def test_spec_for_nodes_without_ntasks_runs_one_task_per_node():
    spec = JobSpec(num_nodes=1, max_nodes=4, num_tasks=1)
    assert (spec_for_nodes(spec, 3).num_tasks, spec_for_nodes(spec, 3).max_nodes) == (3, 0)
    spec = JobSpec(num_nodes=1, max_nodes=4, ntasks_per_node=2, num_tasks=2)
    assert spec_for_nodes(spec, 3).num_tasks == 6


def test_unlimited_running_job_keeps_user_exclusive_node_forever():
    snap = snapshot([placed(job(1, user="bob", limit=5), exclusive_user=True)], [node("n1", free_cpus=3)],
                    running=[running(9, "n1", user="alice", end=math.inf)])
    plan = schedule(snap, NOW)
    assert outcome(plan)[1] == {1: Reason.RESOURCES} and plan.reservations == {}
