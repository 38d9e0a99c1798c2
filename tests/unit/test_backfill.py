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


def test_easy_delays_the_second_job_conservative_does_not():
    """One node, 4 CPUs; A holds 3 until t=100 (1 free). Pending in order:
    J1 (3 CPUs, 100 s): reserved at 100 by both (extra at 100: 1 CPU).
    J2 (4 CPUs, 100 s): conservative books [200, 300); EASY books nothing for it.
    J3 (1 CPU, 250 s): EASY starts it on the extra CPU, so J2 cannot start before 250 (delayed
    by a later job); conservative sees [200, 250) short of a CPU for J2 and keeps J3 waiting."""
    nodes = [node("n1", cpus=4, free_cpus=1)]
    run = [running(9, "n1", cpus=3, end=100)]
    jobs = [job(1, cpus=3, limit=100 / 60), job(2, cpus=4, limit=100 / 60), job(3, cpus=1, limit=250 / 60)]
    easy = schedule(snapshot(jobs, nodes, running=run), NOW)
    cons = schedule(snapshot(jobs, nodes, running=run), NOW, SchedConfig(conservative=True))
    assert starts(easy) == [3] and easy.reservations == {1: 100}
    assert starts(cons) == [] and cons.reservations == {1: 100, 2: 200, 3: 300}
    assert cons.reasons == {1: Reason.RESOURCES, 2: Reason.PRIORITY, 3: Reason.PRIORITY}


def test_conservative_still_backfills_what_delays_nobody():
    """Same queue plus J4 (1 CPU, 90 s): it ends before J1's reservation: both start it."""
    nodes = [node("n1", cpus=4, free_cpus=1)]
    run = [running(9, "n1", cpus=3, end=100)]
    jobs = [job(1, cpus=3, limit=100 / 60), job(2, cpus=4, limit=100 / 60), job(4, cpus=1, limit=1.5)]
    for config in (SchedConfig(), SchedConfig(conservative=True)):
        assert starts(schedule(snapshot(jobs, nodes, running=run), NOW, config)) == [4]


def test_bf_max_job_test_stops_trying():
    nodes = [node("n1", cpus=4, free_cpus=2)]
    run = [running(9, "n1", cpus=2, end=100)]
    jobs = [job(1, cpus=4), job(2, cpus=4, limit=1), job(3, cpus=1, limit=1)]
    plan = schedule(snapshot(jobs, nodes, running=run), NOW, SchedConfig(max_job_test=1))
    assert plan.starts == [] and plan.reasons[3] == Reason.PRIORITY
    plan = schedule(snapshot(jobs, nodes, running=run), NOW, SchedConfig(max_job_test=2))
    assert [s.job_id for s in plan.starts] == [3]


def test_shadow_counts_every_job_ending_at_it():
    """Two jobs end at t=100 together; the head needs 3 of 4 CPUs. Extra at 100 is 1 CPU,
    counting both ends, so a long 1-CPU job may start now."""
    nodes = [node("n1", cpus=4, free_cpus=1)]
    run = [running(8, "n1", cpus=2, end=100), running(9, "n1", cpus=1, end=100)]
    plan = schedule(snapshot([job(1, cpus=3), job(2, cpus=1)], nodes, running=run), NOW)
    assert [s.job_id for s in plan.starts] == [2] and plan.reservations == {1: 100}
