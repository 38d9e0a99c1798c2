"""AccountingStorageEnforce where a job moves or comes back, against a real controller state (a
JobManager over a temporary SQLite store): scontrol update Account=/QOS= runs the submit limits
of where the job goes, requeueing an ended job checks its association and the submit limits,
the scheduler holds a job whose association was deleted (InvalidAccount), and the controller
warns at start when accounts exist but associations are not enforced."""

from __future__ import annotations

import logging

import pytest

from pyslurm_lite import config
from pyslurm_lite.controller.assoc import Accounts
from pyslurm_lite.controller.assoc_cmds import Request, execute
from pyslurm_lite.controller.assoc_policy import LimitsCache
from pyslurm_lite.controller.auth import Caller
from pyslurm_lite.controller.job_mgr import JobManager
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.controller.validate import ACCOUNTING_POLICY as POLICY
from pyslurm_lite.model import Job, JobSpec, JobState, Reason
from pyslurm_lite.sched import schedule

NOW = 1000.0
ROOT = Caller(uid=0, user="root", operator=True)
CONF = ("NodeName=n1 CPUs=4 RealMemory=4000\nPartitionName=main Nodes=n1 Default=YES\n"
        "AccountingStorageEnforce=associations,limits,qos\n")


@pytest.fixture
def ctl(tmp_path):
    """Accounts cap (MaxSubmitJobs=1) and open, alice in both (default open); QOS one
    (MaxSubmitJobsPerUser=1) allowed to her."""
    cfg = config.parse(CONF)
    state = ClusterState(cfg, Store(f"sqlite:///{tmp_path}/state.db", clock=lambda: NOW), clock=lambda: NOW)
    mgr = JobManager(state)

    def acct(verb, entity, names, **settings):
        where, changes = (settings, {}) if verb == "delete" else ({}, settings)
        execute(state.accounts, Request(verb, entity, names, where, changes, active_jobs=state.active_jobs),
                operator=True)
    acct("add", "qos", ["one"], MaxSubmitJobsPerUser="1")
    acct("add", "account", ["cap"], MaxSubmitJobs="1", QOS="normal,one")
    acct("add", "account", ["open"], QOS="normal,one")
    acct("add", "user", ["alice"], Account="open")
    acct("add", "user", ["alice"], Account="cap")
    mgr.acct = acct
    return state, mgr


def _job(state, job_id, account, qos="normal", job_state=JobState.PENDING) -> Job:
    spec = JobSpec(user="alice", uid=1000, gid=1000, account=account, qos=qos, time_limit=10)
    job = Job(job_id=job_id, spec=spec, state=job_state, partition="main", time_limit=10,
              submit_time=NOW, priority=100)
    if job_state.is_final:
        job.start_time, job.end_time = NOW - 20, NOW - 10
    state.store.insert_jobs([job], [("#!/bin/sh\n", {})])
    state.jobs[job_id] = job
    state.touch(job)
    return job


def _update(mgr, job_id, **changes):
    done, errors, _ = mgr.update([job_id], "update", ROOT, changes=changes)
    return [message for _, message in errors]


# ---- scontrol update Account= / QOS= ------------------------------------------------------------
def test_moving_into_an_association_at_max_submit_jobs_is_refused(ctl):
    state, mgr = ctl
    _job(state, 1, "cap")
    moved = _job(state, 2, "open")
    assert _update(mgr, 2, Account="cap") == [POLICY]
    assert moved.spec.account == "open"  # nothing changed
    state.jobs[1].state = JobState.CANCELLED
    state.touch(state.jobs[1])
    assert _update(mgr, 2, Account="cap") == []  # room again
    assert moved.spec.account == "cap"


def test_moving_into_a_qos_at_max_submit_jobs_per_user_is_refused(ctl):
    state, mgr = ctl
    _job(state, 1, "open", qos="one")
    moved = _job(state, 2, "open")
    assert _update(mgr, 2, QOS="one") == [POLICY]
    assert moved.spec.qos == "normal"


def test_the_job_itself_is_not_counted_where_it_goes(ctl):
    state, mgr = ctl
    job = _job(state, 1, "cap")  # cap's one job: a QOS change keeps it in cap
    assert _update(mgr, 1, QOS="one") == []
    assert job.spec.qos == "one"


# ---- requeue of an ended job ----------------------------------------------------------------------
def _requeue(mgr, job_id, action="requeue"):
    done, errors, _ = mgr.update([job_id], action, ROOT)
    return [message for _, message in errors]


def test_requeue_checks_the_association_still_exists(ctl):
    state, mgr = ctl
    job = _job(state, 1, "cap", job_state=JobState.COMPLETED)
    mgr.acct("delete", "user", ["alice"], Account="cap")
    assert ("cap", "alice") not in state.accounts.assocs and ("open", "alice") in state.accounts.assocs
    assert _requeue(mgr, 1, "requeuehold") == ["Invalid account or account/partition combination specified"]
    assert job.state == JobState.COMPLETED and job.restart_count == 0


def test_requeue_checks_the_submit_limits(ctl):
    state, mgr = ctl
    _job(state, 1, "cap")
    job = _job(state, 2, "cap", job_state=JobState.FAILED)
    assert _requeue(mgr, 2) == [POLICY]
    assert job.state == JobState.FAILED
    _job(state, 3, "open", job_state=JobState.FAILED)
    assert _requeue(mgr, 3) == []
    assert state.jobs[3].state == JobState.PENDING


# ---- the scheduler: a deleted association holds its pending jobs --------------------------------
def test_a_job_whose_association_is_gone_waits_with_invalid_account(ctl):
    """sacctmgr refuses to delete an association with jobs queued; job 1 stands for one queued
    before associations were enforced, or requeued before that was checked."""
    state, mgr = ctl
    _job(state, 1, "gone")
    _job(state, 2, "open")
    plan = schedule(state.snapshot(), NOW)
    assert plan.reasons.get(1) == Reason.INVALID_ACCOUNT
    assert plan.reasons.get(2) != Reason.INVALID_ACCOUNT  # no node registered: it waits, no more


def test_without_associations_enforced_nothing_is_held(tmp_path):
    acc = Accounts(config.Config(), Store(f"sqlite:///{tmp_path}/acct.db"))
    assert LimitsCache().view(acc, [], {}) is None
    view = LimitsCache().view(acc, ["associations"], {})
    assert view.assocs == frozenset({("root", "root")}) and not view.grp and not view.max


# ---- a warning at start ----------------------------------------------------------------------------
def test_accounts_without_associations_enforced_are_warned_of(tmp_path, caplog):
    url = f"sqlite:///{tmp_path}/acct.db"
    acc = Accounts(config.Config(), Store(url))
    execute(acc, Request("add", "account", ["physics"], {}, {}), operator=True)
    with caplog.at_level(logging.WARNING, logger="pyslurm_lite.controller.assoc"):
        Accounts(config.Config(accounting_storage_enforce=["associations"]), Store(url))
        assert "lacks associations" not in caplog.text
        Accounts(config.Config(), Store(url))
    assert "AccountingStorageEnforce lacks associations" in caplog.text
