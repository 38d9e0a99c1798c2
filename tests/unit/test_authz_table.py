"""The authorization table (controller/auth.py), walked for every kind of caller: the owner of a
job, another user, root, the SlurmUser and a user of AdminUsers=; and bind_submission, which
takes a job's identity from the system rather than from the request."""

from __future__ import annotations

import os
import pwd
from types import SimpleNamespace

import pytest

from pyslurm_lite.controller import auth
from pyslurm_lite.controller.auth import Caller, Users
from pyslurm_lite.errors import PermissionDenied
from pyslurm_lite.model import JobSpec

# The table as the README and the brief state it, written out here rather than read from auth.py:
# a change to auth.TABLE must change this too.
ANYONE, OWNER, OPERATOR = "anyone", "owner", "operator"
EXPECTED = {
    "submit": ANYONE, "view": ANYONE, "submit_for_other": OPERATOR,
    "cancel": OWNER, "signal": OWNER, "hold": OWNER, "release": OWNER, "requeue": OWNER,
    "update": OWNER, "step": OWNER,
    "admin_hold": OPERATOR, "release_admin_hold": OPERATOR, "negative_nice": OPERATOR,
    "update_node": OPERATOR, "reservation": OPERATOR, "partition": OPERATOR,
    "accounting": OPERATOR,
}
OWNER_UID, OTHER_UID = 1001, 1002


def _system_user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pytest.skip(f"no user {name} on this machine")


def _cfg(**kw):
    base = dict(slurm_user="root", admin_users=[], disable_root_jobs=False, private_data=[])
    base.update(kw)
    return SimpleNamespace(**base)


@pytest.fixture
def callers():
    """name -> Caller, operators made by Users from a fake slurm.conf and the system's users."""
    slurm_user, admin = _system_user("daemon"), _system_user("nobody")
    users = Users(_cfg(slurm_user=slurm_user.pw_name, admin_users=[admin.pw_name]))
    return {
        "owner": Caller(uid=OWNER_UID, user="owner", gid=OWNER_UID, groups=(OWNER_UID,)),
        "other": Caller(uid=OTHER_UID, user="other", gid=OTHER_UID, groups=(OTHER_UID,)),
        "root": users.caller(0, 0),
        "slurmuser": users.caller(slurm_user.pw_uid, slurm_user.pw_gid),
        "adminuser": users.caller(admin.pw_uid, admin.pw_gid),
    }


def test_table_names_every_action_with_its_rule():
    assert set(auth.TABLE) == set(EXPECTED)
    rule = {ANYONE: auth.ANYONE, OWNER: auth.OWNER, OPERATOR: auth.OPERATOR}
    assert {a: auth.TABLE[a] for a in EXPECTED} == {a: rule[r] for a, r in EXPECTED.items()}


def test_operators_are_root_slurmuser_and_adminusers(callers):
    assert {n for n, c in callers.items() if c.is_operator} == {"root", "slurmuser", "adminuser"}
    users = Users(_cfg(slurm_user="daemon", admin_users=["nobody"]))
    assert users.is_operator(0, "root")
    assert users.is_operator(1, "daemon") and users.is_operator(65534, "nobody")
    assert not users.is_operator(1000, "alice")
    assert not users.is_operator(1000, "")  # an unnamed user is nobody's operator
    # with the defaults (SlurmUser=root, no AdminUsers) only root is
    plain = Users(_cfg())
    assert plain.caller(0, 0).operator
    assert not plain.caller(_system_user("nobody").pw_uid, _system_user("nobody").pw_gid).operator


@pytest.mark.parametrize("action", sorted(EXPECTED))
@pytest.mark.parametrize("who", ["owner", "other", "root", "slurmuser", "adminuser"])
def test_table_walk(callers, action, who):
    caller = callers[who]
    rule = EXPECTED[action]
    want = rule == ANYONE or caller.is_operator or (rule == OWNER and who == "owner")
    assert auth.allowed(action, caller, OWNER_UID) is want
    if want:
        auth.require(action, caller, OWNER_UID)
    else:
        with pytest.raises(PermissionDenied, match=auth.DENIED):
            auth.require(action, caller, OWNER_UID)


@pytest.mark.parametrize("who", ["owner", "other", "root", "slurmuser", "adminuser"])
def test_view_under_private_data(callers, who):
    caller = callers[who]
    assert auth.allowed("view", caller, OWNER_UID, private=True) is (who != "other")
    assert auth.allowed("view", caller, OWNER_UID, private=False) is True


def test_owner_rule_needs_a_known_owner(callers):
    """An action on something with no owner (owner_uid None) is for operators only."""
    assert not auth.allowed("cancel", callers["owner"], None)
    assert not auth.allowed("cancel", Caller(uid=0, user="x"), None)  # uid 0 but not an operator
    assert auth.allowed("cancel", callers["root"], None)


def test_caller_takes_name_and_groups_from_the_system():
    nobody = _system_user("nobody")
    users = Users(_cfg())
    c = users.caller(nobody.pw_uid, nobody.pw_gid)
    assert (c.uid, c.user, c.gid) == (nobody.pw_uid, "nobody", nobody.pw_gid)
    assert set(c.groups) == set(os.getgrouplist("nobody", nobody.pw_gid))
    # a gid from the token that is not one of the user's groups is not believed
    assert users.caller(nobody.pw_uid, 0).gid == nobody.pw_gid
    root = users.caller(0, 0)
    assert (root.user, root.gid, root.operator) == ("root", 0, True)


def test_caller_of_an_unknown_uid_is_refused():
    users = Users(_cfg())
    unknown = next(u for u in range(4_000_000, 4_100_000) if not _uid_exists(u))
    with pytest.raises(PermissionDenied, match="Invalid user id"):
        users.caller(unknown, unknown)


def _uid_exists(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


# ---- bind_submission ----------------------------------------------------------------------------
def _spec(uid: int, gid: int, user: str = "", groups=()) -> JobSpec:
    return JobSpec(script="#!/bin/sh\ntrue\n", uid=uid, gid=gid, user=user, groups=list(groups))


@pytest.fixture
def nobody():
    return _system_user("nobody")


def test_plain_user_submits_as_itself_with_names_and_groups_from_the_system(nobody):
    users = Users(_cfg())
    caller = users.caller(nobody.pw_uid, nobody.pw_gid)
    spec = _spec(nobody.pw_uid, nobody.pw_gid, user="root", groups=[0, 27, 999])  # lies
    users.bind_submission(spec, caller)
    assert spec.user == "nobody"
    assert spec.groups == sorted(set(os.getgrouplist("nobody", nobody.pw_gid)))
    assert 0 not in spec.groups


def test_plain_user_stating_another_uid_is_refused(nobody):
    users = Users(_cfg())
    caller = users.caller(nobody.pw_uid, nobody.pw_gid)
    for victim in ("root", "daemon"):
        pw = _system_user(victim)
        spec = _spec(pw.pw_uid, pw.pw_gid)  # the victim's own uid and group: only the uid is wrong
        with pytest.raises(PermissionDenied) as e:
            users.bind_submission(spec, caller)
        assert e.value.message == auth.DENIED
        assert spec.user == ""  # nothing was filled in


def test_operator_may_submit_for_another_user(nobody):
    users = Users(_cfg())
    spec = _spec(nobody.pw_uid, nobody.pw_gid, user="root", groups=[0])
    users.bind_submission(spec, users.caller(0, 0))
    assert spec.user == "nobody" and 0 not in spec.groups
    assert nobody.pw_gid in spec.groups
    # an AdminUsers operator too, and for root
    admin = Users(_cfg(admin_users=["daemon"]))
    daemon = _system_user("daemon")
    spec = _spec(0, 0)
    admin.bind_submission(spec, admin.caller(daemon.pw_uid, daemon.pw_gid))
    assert spec.user == "root" and 0 in spec.groups


def test_gid_not_in_the_users_groups_is_refused(nobody):
    users = Users(_cfg())
    caller = users.caller(nobody.pw_uid, nobody.pw_gid)
    assert 0 not in caller.groups
    with pytest.raises(PermissionDenied, match="group 0 is not one of nobody's groups"):
        users.bind_submission(_spec(nobody.pw_uid, 0), caller)
    # an operator submitting for nobody cannot put the job in a group nobody is not in
    with pytest.raises(PermissionDenied, match="not one of nobody's groups"):
        users.bind_submission(_spec(nobody.pw_uid, 0), users.caller(0, 0))


def test_disable_root_jobs_refuses_uid_0(nobody):
    users = Users(_cfg(disable_root_jobs=True))
    with pytest.raises(PermissionDenied, match="DisableRootJobs"):
        users.bind_submission(_spec(0, 0), users.caller(0, 0))
    admin = Users(_cfg(disable_root_jobs=True, admin_users=["daemon"]))
    daemon = _system_user("daemon")
    with pytest.raises(PermissionDenied, match="DisableRootJobs"):
        admin.bind_submission(_spec(0, 0), admin.caller(daemon.pw_uid, daemon.pw_gid))
    # other users' jobs are still fine
    spec = _spec(nobody.pw_uid, nobody.pw_gid)
    users.bind_submission(spec, users.caller(0, 0))
    assert spec.user == "nobody"
    # and without DisableRootJobs root may run jobs
    spec = _spec(0, 0)
    Users(_cfg()).bind_submission(spec, Users(_cfg()).caller(0, 0))
    assert spec.user == "root"


def test_caller_is_not_an_operator_by_a_forged_caller_name():
    """Operator status comes from the passwd name of the token's uid, not from anything the
    client says: a uid whose name is not listed is not an operator."""
    nobody = _system_user("nobody")
    users = Users(_cfg(admin_users=["root2", "alice"]))
    assert not users.caller(nobody.pw_uid, nobody.pw_gid).operator
