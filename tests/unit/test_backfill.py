"""EASY backfill (sched/backfill), table-driven: a lower job starts ahead of a blocked one only
when that cannot delay it — by ending before the shadow time, or by using only the extra
resources left at the shadow time — on CPUs, memory and GPUs per node."""

from __future__ import annotations

import pytest

from pyslurm_lite.model import Reason
from pyslurm_lite.sched import SchedConfig, schedule

from factories import job, node, running, snapshot

NOW = 0.0


def starts(plan):
    return sorted(s.job_id for s in plan.starts)


CASES = [
    pytest.param(  # the module's worked example
        snapshot([job(1, cpus=4), job(2, cpus=2, limit=1), job(3, cpus=2)],
                 [node("n1", cpus=4, free_cpus=2)], running=[running(9, "n1", cpus=2, end=100)]),
        [2], {1: Reason.RESOURCES, 3: Reason.PRIORITY}, {1: 100}, id="short-job-fills-the-hole"),
    pytest.param(  # a 2-minute job would still run at t=100: it waits
        snapshot([job(1, cpus=4), job(2, cpus=2, limit=2)],
                 [node("n1", cpus=4, free_cpus=2)], running=[running(9, "n1", cpus=2, end=100)]),
        [], {2: Reason.PRIORITY}, {1: 100}, id="too-long-waits"),
    pytest.param(  # the head needs 2 of 4 CPUs at t=100: 1 CPU is extra, a long 1-CPU job fits it
        snapshot([job(1, cpus=3), job(2, cpus=1), job(3, cpus=1)],
                 [node("n1", cpus=4, free_cpus=2)], running=[running(9, "n1", cpus=2, end=100)]),
        [2], {3: Reason.PRIORITY}, {1: 100}, id="extra-cpus-used-once"),
    pytest.param(  # GPUs: the head wants all 4; a CPU-only long job does not touch them
        snapshot([job(1, cpus=1, gpus=4), job(2, cpus=1), job(3, cpus=1, gpus=1)],
                 [node("g1", cpus=4, gpus=4, free_gpus=(2, 3), free_cpus=3)],
                 running=[running(9, "g1", cpus=1, gpus=(0, 1), end=50)]),
        [2], {1: Reason.RESOURCES, 3: Reason.PRIORITY}, {1: 50}, id="gpu-head-cpu-backfill"),
    pytest.param(  # another node entirely: free for backfill, the reservation is on n1
        snapshot([job(1, cpus=4), job(2, cpus=4)],
                 [node("n1", cpus=4, free_cpus=0), node("n2", cpus=4)],
                 running=[running(9, "n1", cpus=4, end=100)]),
        [1], {2: Reason.RESOURCES}, {2: 100}, id="head-starts-on-the-other-node"),
    pytest.param(  # running without a limit: no shadow time, nothing may backfill (never delay)
        snapshot([job(1, cpus=4), job(2, cpus=1, limit=1)],
                 [node("n1", cpus=4, free_cpus=2)], running=[running(9, "n1", cpus=2)]),
        [], {1: Reason.RESOURCES, 2: Reason.PRIORITY}, {}, id="unlimited-blocks"),
]


@pytest.mark.parametrize("snap, want_starts, want_reasons, want_reservations", CASES)
def test_easy_backfill(snap, want_starts, want_reasons, want_reservations):
    plan = schedule(snap, NOW)
    assert starts(plan) == want_starts
    for job_id, reason in want_reasons.items():
        assert plan.reasons[job_id] == reason, (job_id, plan.reasons)
    assert plan.reservations == want_reservations


def test_builtin_never_backfills():
    snap = CASES[0].values[0]
    plan = schedule(snap, NOW, SchedConfig(backfill=False))
    assert starts(plan) == [] and plan.reasons[2] == Reason.PRIORITY


def test_backfill_never_delays_the_reservation():
    """Whatever backfills, the reserved job must still fit at its shadow time."""
    snap = snapshot([job(1, cpus=3), job(2, cpus=1), job(3, cpus=1), job(4, cpus=2, limit=1)],
                    [node("n1", cpus=4, free_cpus=2)], running=[running(9, "n1", cpus=2, end=100)])
    plan = schedule(snap, NOW)
    long_held = sum(a.cpus for s in plan.starts for a in s.allocations if s.job_id in (2, 3))
    assert long_held <= 4 - 3  # at t=100 the head gets its 3 CPUs
    assert 4 in starts(plan) or long_held == 1
