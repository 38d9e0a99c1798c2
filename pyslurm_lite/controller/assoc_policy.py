"""AccountingStorageEnforce at submit (and scontrol update) and the limits handed to the scheduler.

  associations  the job's account is -A, else its user's DefaultAccount; (account, user) must be
                an association: Slurm's "Invalid account or account/partition combination
                specified" otherwise, nothing queued. Without it, a job without -A still gets
                its user's DefaultAccount when there is one (as Slurm's).
  qos           the job's QOS (--qos, else the association's DefaultQOS, else normal) must be
                in the association's QOS list, inherited up the tree: "Invalid qos
                specification".
  limits        MaxSubmitJobs at submit ("Job violates accounting/QOS policy ..."); the rest by
                the scheduler (sched/limits.py), from the AssocLimits built here.
A job that enters the queue otherwise is checked the same way (job_mgr): scontrol update
Account=/QOS= runs the submit limits of where it goes, requeueing an ended job runs admit and
the submit limits. With associations enforced the scheduler gets the set of associations too,
and a job whose own is gone waits with InvalidAccount.

Pure apart from reading the Accounts it is given; callers hold the state lock when counting.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from ..errors import InvalidRequest, PermissionDenied
from ..model import UNLIMITED, Association, JobSpec, TresLimits
from ..sched.limits import AssocLimits
from .assoc import Accounts
from .validate import ACCOUNTING_POLICY

INVALID_ACCOUNT = "Invalid account or account/partition combination specified"
INVALID_QOS = "Invalid qos specification"


def admit(accounts: Accounts, enforce, spec: JobSpec) -> None:
    """Resolve and check spec.account and spec.qos (spec.user is the bound submitter)."""
    if not spec.account:
        spec.account = accounts.users.get(spec.user, "")
    assoc = accounts.get(spec.account, spec.user) if spec.account else None
    if assoc is None:
        if "associations" in enforce:
            raise PermissionDenied(INVALID_ACCOUNT)
        return
    if not spec.qos:
        spec.qos = accounts.default_qos(assoc)
    if "qos" in enforce and spec.qos not in accounts.allowed_qos(assoc):
        raise InvalidRequest(INVALID_QOS)


def check_submit_limits(accounts: Accounts, enforce, specs: list[JobSpec], active_jobs) -> None:
    """MaxSubmitJobs (pending and running) of each association the specs go to, up the tree;
    `active_jobs` is called only when some association has that limit."""
    if "limits" not in enforce:
        return
    capped = {}
    for key in Counter((s.account, s.user) for s in specs):
        assoc = accounts.get(*key)
        limit = _nearest(accounts, assoc, "max_submit_jobs") if assoc is not None else UNLIMITED
        if limit != UNLIMITED:
            capped[key] = limit
    if not capped:
        return
    held = Counter((j.spec.account, j.spec.user) for j in active_jobs())
    wanted = Counter((s.account, s.user) for s in specs)
    for key, limit in capped.items():
        if held.get(key, 0) + wanted[key] > limit:
            raise InvalidRequest(ACCOUNTING_POLICY)


def _nearest(accounts: Accounts, assoc: Association, field: str):
    """A Max* limit as Slurm applies it: the association's own, else the nearest above it."""
    empty = getattr(TresLimits(), field)
    for a in accounts.lineage(assoc):
        value = getattr(a.limits, field)
        if value != empty:
            return value
    return empty


class LimitsCache:
    """The scheduler's AssocLimits, rebuilt when the tree changes; the GrpTRESMins usage is
    summed each pass, and only when some association has such a limit."""

    def __init__(self):
        self._version: tuple = ()
        self._base = AssocLimits()
        self._mins_levels: set[tuple[str, str]] = set()

    def view(self, accounts: Accounts, enforce, usage: dict) -> AssocLimits | None:
        limits, assocs = "limits" in enforce, "associations" in enforce
        if not limits and not assocs:
            return None
        # read first: a change made while building is seen next time
        version = (accounts.version, limits, assocs)
        if version != self._version:
            self._base, self._mins_levels = _build(accounts) if limits else (AssocLimits(), set())
            if assocs:
                self._base = dataclasses.replace(self._base, assocs=frozenset(
                    key for key, a in accounts.assocs.items() if a.user))
            self._version = version
        if not self._mins_levels or not usage:
            return self._base
        return dataclasses.replace(self._base, used_mins=_used_mins(accounts, usage, self._mins_levels))


def _build(accounts: Accounts) -> tuple[AssocLimits, set]:
    grp, maxes, mins_levels = {}, {}, set()
    for key, assoc in accounts.assocs.items():
        if not assoc.user:
            continue
        chain = tuple(((a.account, a.user), a.limits.grp_tres, a.limits.grp_tres_mins)
                      for a in accounts.lineage(assoc) if a.limits.grp_tres or a.limits.grp_tres_mins)
        if chain:
            grp[key] = chain
            mins_levels.update(level for level, _g, m in chain if m)
        limits = TresLimits(max_tres_per_job=_nearest(accounts, assoc, "max_tres_per_job"),
                            max_tres_per_user=_nearest(accounts, assoc, "max_tres_per_user"),
                            max_jobs=_nearest(accounts, assoc, "max_jobs"),
                            max_wall=_nearest(accounts, assoc, "max_wall"))
        if limits != TresLimits():
            maxes[key] = limits
    return AssocLimits(grp, maxes), mins_levels


def _used_mins(accounts: Accounts, usage: dict, levels: set) -> dict:
    """Decayed TRES-minutes of each limited level's subtree, from users' usage."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for key, tres in usage.items():
        assoc = accounts.get(*key) if isinstance(key, tuple) and len(key) == 2 else None
        if assoc is None or not assoc.user:
            continue
        for a in accounts.lineage(assoc):
            level = (a.account, a.user)
            if level in levels:
                total = out.setdefault(level, {})
                for name, minutes in tres.items():
                    total[name] = total.get(name, 0.0) + minutes
    return out
