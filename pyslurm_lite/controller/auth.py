"""Who the caller is, and what they may do: the one table of authorization.

The caller's uid comes from a checked token (rpc/tokens.py); everything else comes from this
host's user database, never from the request: the user name from passwd, the groups from
getgrouplist (a job's gid must be one of them). Operators are root, SlurmUser and the users in
AdminUsers= (ours: it stands in for sacctmgr's AdminLevel=Administrator until accounting holds
users).

| action          | who                                                     |
| --------------- | ------------------------------------------------------- |
| submit          | anyone (not root with DisableRootJobs=YES); the job runs as the caller, in one of the caller's groups; only operators submit for another user |
| view            | anyone; with PrivateData=jobs only the owner or an operator |
| cancel, signal, hold, release, requeue, update, step | the owner or an operator |
| admin hold, release of an admin hold | operators                     |
| negative nice   | operators                                               |
| nodes, reservations, partitions | operators                               |
| accounting (sacctmgr add, modify, delete) | operators; sacctmgr show: anyone |
"""

from __future__ import annotations

import os
import pwd
import threading
import time
from dataclasses import dataclass, field

from ..errors import PermissionDenied

ANYONE, OWNER, OPERATOR = "anyone", "owner or operator", "operator"

TABLE = {
    "submit": ANYONE,
    "submit_for_other": OPERATOR,
    "view": ANYONE,  # OWNER with PrivateData=jobs; squeue, scontrol and sacct (GetJobHistory)
    "cancel": OWNER, "signal": OWNER, "hold": OWNER, "release": OWNER, "requeue": OWNER,
    "update": OWNER, "step": OWNER,
    "admin_hold": OPERATOR, "release_admin_hold": OPERATOR,
    "negative_nice": OPERATOR,
    "update_node": OPERATOR, "reservation": OPERATOR, "partition": OPERATOR,
    "accounting": OPERATOR,  # sacctmgr add/modify/delete; show is anyone's
}
DENIED = "Access/permission denied"
CACHE_SECONDS = 30.0  # how long a user's passwd entry and groups are reused


@dataclass(frozen=True)
class Caller:
    uid: int
    user: str = ""
    gid: int = -1
    groups: tuple[int, ...] = field(default=())
    operator: bool = False

    @property
    def is_operator(self) -> bool:
        return self.operator


def allowed(action: str, caller: Caller, owner_uid: int | None = None, private: bool = False) -> bool:
    rule = TABLE[action]
    if action == "view" and private:
        rule = OWNER
    if rule == ANYONE or caller.operator:
        return True
    return rule == OWNER and owner_uid is not None and owner_uid == caller.uid


def require(action: str, caller: Caller, owner_uid: int | None = None) -> None:
    if not allowed(action, caller, owner_uid):
        raise PermissionDenied(DENIED)


class Users:
    """uid -> (name, primary gid, groups) from the system, briefly cached; and operators."""

    def __init__(self, cfg):
        self.cfg = cfg
        self._cache: dict[int, tuple[float, tuple[str, int, tuple[int, ...]]]] = {}
        self._lock = threading.Lock()

    def lookup(self, uid: int) -> tuple[str, int, tuple[int, ...]]:
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(uid)
        if hit is not None and now - hit[0] < CACHE_SECONDS:
            return hit[1]
        try:
            pw = pwd.getpwuid(uid)
        except KeyError:
            raise PermissionDenied(f"Invalid user id: {uid} is not a user on the controller's host") from None
        try:
            groups = tuple(sorted(set(os.getgrouplist(pw.pw_name, pw.pw_gid))))
        except OSError:
            groups = (pw.pw_gid,)
        entry = (pw.pw_name, pw.pw_gid, groups)
        with self._lock:
            self._cache[uid] = (now, entry)
        return entry

    def is_operator(self, uid: int, name: str) -> bool:
        return uid == 0 or name == self.cfg.slurm_user or name in self.cfg.admin_users

    def caller(self, uid: int, gid: int) -> Caller:
        """The caller a checked token names: its gid must be one of the user's groups (else
        the primary group is used, as a setgid program's caller is still that user)."""
        name, primary, groups = self.lookup(uid)
        return Caller(uid=uid, user=name, gid=gid if gid in groups else primary, groups=groups,
                      operator=self.is_operator(uid, name))

    def bind_submission(self, spec, caller: Caller) -> None:
        """The identity a job runs with, from the system: the caller's own (an operator may name
        another uid). A stated uid or gid other than that is refused, never believed."""
        if spec.uid != caller.uid:
            require("submit_for_other", caller)
        name, primary, groups = self.lookup(spec.uid) if spec.uid != caller.uid else \
            (caller.user, self.lookup(caller.uid)[1], caller.groups)
        if spec.uid == 0 and self.cfg.disable_root_jobs:
            raise PermissionDenied("Invalid user id: jobs of root are disabled (DisableRootJobs=YES)")
        if spec.gid not in groups:
            raise PermissionDenied(f"{DENIED}: group {spec.gid} is not one of {name}'s groups")
        spec.user = name
        spec.groups = sorted(set(groups) | {spec.gid})
