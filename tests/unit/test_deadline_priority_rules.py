"""--priority and --deadline as Slurm 22.05 has them: scontrol update Priority= (job_update),
the deadline rule (job_timers.deadline_passed / limit_to_deadline), submit-time checks, and the
commands' parsing. Table-driven over the pure parts; tests/e2e/test_priority_deadline.py drives
the daemons."""

from __future__ import annotations

import pytest

from pyslurm_lite import config
from pyslurm_lite.cli.sbatch import PRIORITY_TOP, parse_priority
from pyslurm_lite.controller.job_timers import deadline_passed, limit_to_deadline
from pyslurm_lite.controller.job_update import (INFINITE, JOB_HELD, PRIO_RESET_FAIL,
                                                AppliedWithError, Context, apply)
from pyslurm_lite.controller.validate import check_deadline
from pyslurm_lite.errors import InvalidRequest, PermissionDenied, StaleState
from pyslurm_lite.model import UNLIMITED, Job, JobSpec, JobState, Reason

CFG = config.parse("NodeName=n1 CPUs=4 RealMemory=4000\n"
                   "PartitionName=main Nodes=n1 Default=YES MaxTime=60\n")
NOW = 1000.0


def job(state=JobState.PENDING, priority=100, held=False, admin=False, direct=False, nice=0,
        limit=10, deadline=0.0) -> Job:
    return Job(job_id=7, spec=JobSpec(time_limit=limit, uid=1000, nice=nice, deadline=deadline),
               state=state, time_limit=limit, partition="main", priority=priority, held=held,
               held_by_admin=admin, direct_priority=direct)


def ctx(operator=False) -> Context:
    return Context(CFG, operator, now=NOW, reservations={})


# ---- scontrol update Priority= ----------------------------------------------------------------
@pytest.mark.parametrize("before, value, operator, after", [
    # an operator: any value, kept from then on (direct)
    (dict(), "500", True, dict(priority=500, direct_priority=True)),
    (dict(), "5", True, dict(priority=5, direct_priority=True)),
    (dict(state=JobState.RUNNING), "500", True, dict(priority=500, direct_priority=True)),
    (dict(nice=30), "500", True, dict(priority=500, nice=0)),  # a set priority resets nice
    # 0 holds: the owner's is a user hold, an operator's an admin hold
    (dict(), "0", False, dict(held=True, held_by_admin=False, reason=Reason.HELD_USER)),
    (dict(), "0", True, dict(held=True, held_by_admin=True, reason=Reason.HELD_ADMIN)),
    # INFINITE: releases a held job; gives an operator's job back to the computed priority
    (dict(held=True), str(INFINITE), False, dict(held=False, reason=Reason.NONE)),
    (dict(held=True, admin=True), str(INFINITE), True, dict(held=False)),
    (dict(direct=True, priority=9), str(INFINITE), True, dict(direct_priority=False)),
    (dict(held=True), "0", False, dict(held=True)),  # the value it has: nothing changes
    (dict(), "100", False, dict(priority=100)),
])
def test_priority_changes(before, value, operator, after):
    j = job(**before)
    apply(j, {"Priority": value}, ctx(operator))
    got = {k: (j.spec.nice if k == "nice" else getattr(j, k)) for k in after}
    assert got == after


def test_owner_lowers_priority_but_is_told_it_does_not_last():
    j = job(priority=100, nice=20)
    with pytest.raises(AppliedWithError) as e:
        apply(j, {"Priority": "40"}, ctx(False))
    assert e.value.message == PRIO_RESET_FAIL
    assert (j.priority, j.direct_priority, j.spec.nice) == (40, False, 0)


@pytest.mark.parametrize("before, value, operator, error, message", [
    (dict(), "101", False, PermissionDenied, "Access/permission denied"),  # only lower
    (dict(held=True), "50", True, StaleState, JOB_HELD),
    (dict(held=True), "50", False, StaleState, JOB_HELD),
    (dict(held=True, admin=True), str(INFINITE), False, PermissionDenied, "Access/permission denied"),
    (dict(state=JobState.COMPLETED), "50", True, StaleState, "Job has already finished"),
    (dict(), "-1", True, InvalidRequest, "Invalid Priority value: -1"),
    (dict(), "x", True, InvalidRequest, "Invalid Priority value: x"),
])
def test_priority_refusals_change_nothing(before, value, operator, error, message):
    j = job(**before)
    kept = (j.priority, j.held, j.held_by_admin, j.direct_priority)
    with pytest.raises(error) as e:
        apply(j, {"Priority": value}, ctx(operator))
    assert e.value.message == message
    assert (j.priority, j.held, j.held_by_admin, j.direct_priority) == kept


def test_nice_leaves_an_operators_priority():
    j = job(priority=500, direct=True)
    apply(j, {"Nice": "50"}, ctx(False))
    assert (j.priority, j.spec.nice) == (500, 50)


# ---- scontrol update Deadline= ----------------------------------------------------------------
@pytest.mark.parametrize("before, value, operator, error", [
    (dict(), "now+1hour", False, PermissionDenied),
    (dict(), "2000-01-01T00:00:00", True, InvalidRequest),  # in the past
    (dict(state=JobState.RUNNING), "now+1hour", True, StaleState),
])
def test_deadline_update_refusals(before, value, operator, error):
    with pytest.raises(error):
        apply(job(**before), {"Deadline": value}, Context(CFG, operator, 1.7e9, {}))


def test_deadline_update_by_operator():
    j = job()
    apply(j, {"Deadline": "now+1hour"}, ctx(True))
    assert j.spec.deadline == NOW + 3600


# ---- the deadline rule (Slurm's deadline_ok) --------------------------------------------------
@pytest.mark.parametrize("limit, deadline_in, passed", [
    (10, 600, False),          # exactly fits
    (10, 599, True),           # one second short
    (10, 3600, False),
    (UNLIMITED, 60, False),    # no limit: a minute is needed (Slurm's time_min = 1)
    (UNLIMITED, 59, True),
    (0, 30, True),
])
def test_deadline_passed(limit, deadline_in, passed):
    assert deadline_passed(job(limit=limit, deadline=NOW + deadline_in), NOW) is passed


def test_no_deadline_never_passes():
    assert deadline_passed(job(limit=10, deadline=0.0), NOW + 1e9) is False


@pytest.mark.parametrize("limit, deadline_in, started_limit", [
    (UNLIMITED, 3600, 60),   # no limit: the minutes left to the deadline
    (UNLIMITED, 150, 2),
    (10, 3600, 10),          # a limit that fits stays
])
def test_limit_to_deadline(limit, deadline_in, started_limit):
    assert limit_to_deadline(job(limit=limit, deadline=NOW + deadline_in), NOW) == started_limit


@pytest.mark.parametrize("deadline, error", [
    (NOW - 1, "Requested time limit is invalid (missing or exceeds some limit)"),
    (float("nan"), "Invalid time specified"),
    (1e15, "Invalid time specified"),
])
def test_submit_deadline_refused(deadline, error):
    with pytest.raises(InvalidRequest) as e:
        check_deadline(JobSpec(deadline=deadline), NOW)
    assert e.value.message == error


def test_submit_deadline_accepted():
    check_deadline(JobSpec(deadline=NOW + 1), NOW)  # a too-short one is the scheduler's to end
    check_deadline(JobSpec(), NOW)


# ---- the commands' --priority -----------------------------------------------------------------
@pytest.mark.parametrize("text, value", [("0", 0), ("17", 17), ("top", PRIORITY_TOP),
                                         ("TOP", PRIORITY_TOP), ("4294967293", 4294967293)])
def test_parse_priority(text, value):
    assert parse_priority(text) == value


@pytest.mark.parametrize("text, message", [
    ("-1", "Priority must be >= 0"), ("4294967294", "Priority must be < 4294967294"),
    ("high", "Invalid --priority specification: high"),
])
def test_parse_priority_refused(text, message):
    with pytest.raises(InvalidRequest) as e:
        parse_priority(text)
    assert e.value.message == message
