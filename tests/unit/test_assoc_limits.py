"""Association and QOS limits in a scheduling pass (sched/limits.py), table-driven; and how the
controller builds them from the account tree (assoc_policy: inheritance, submit checks)."""

from __future__ import annotations

import pytest

from pyslurm_lite.config import Config
from pyslurm_lite.controller.assoc import Accounts
from pyslurm_lite.controller.assoc_cmds import Request, execute
from pyslurm_lite.controller.assoc_policy import LimitsCache, admit, check_submit_limits
from pyslurm_lite.controller.store import Store
from pyslurm_lite.errors import InvalidRequest, PermissionDenied
from pyslurm_lite.model import UNLIMITED, JobSpec, Qos, Reason, TresLimits
from pyslurm_lite.sched import schedule
from pyslurm_lite.sched.limits import AssocLimits, Tally, format_tres, parse_tres

from factories import job, node, running, snapshot

NOW = 1000.0
PHYS = ("physics", "")
ALICE, BOB = ("physics", "alice"), ("physics", "bob")


def _running(job_id, user="alice", account="physics", cpus=1, gpus=0, qos="normal", nodes=1):
    from dataclasses import replace
    r = running(job_id, "n1", cpus=cpus, gpus=tuple(range(gpus)), user=user, qos=qos)
    if nodes > 1:
        r = replace(r, allocations=r.allocations * nodes)
    return replace(r, account=account)


def _grp(**tres):
    return {ALICE: ((PHYS, tres, {}),), BOB: ((PHYS, tres, {}),)}


# (what, association limits, QOS, running jobs, the pending job, the reason expected)
CASES = [
    ("no limits", AssocLimits(), [], [], job(1, account="physics"), None),
    ("GrpTRES gres/gpu over the account", AssocLimits(grp=_grp(**{"gres/gpu": 2})), [],
     [_running(9, gpus=1)], job(1, gpus=2, account="physics"), Reason.ASSOC_GRP_GRES),
    ("GrpTRES gres/gpu within it", AssocLimits(grp=_grp(**{"gres/gpu": 2})), [],
     [_running(9, gpus=1)], job(1, gpus=1, account="physics"), None),
    ("GrpTRES cpu counts the whole account (bob's job)", AssocLimits(grp=_grp(cpu=3)), [],
     [_running(9, user="bob", cpus=2)], job(1, cpus=2, account="physics"), Reason.ASSOC_GRP_CPU),
    ("GrpTRES mem", AssocLimits(grp=_grp(mem=1000)), [],
     [_running(9)], job(1, mem=950, account="physics"), Reason.ASSOC_GRP_MEM),
    ("GrpTRES node", AssocLimits(grp=_grp(node=1)), [],
     [_running(9)], job(1, account="physics"), Reason.ASSOC_GRP_NODE),
    ("another account is not limited", AssocLimits(grp=_grp(cpu=1)), [],
     [_running(9)], job(1, account="bio"), None),
    ("GrpTRESMins used up", AssocLimits(grp={ALICE: ((PHYS, {}, {"cpu": 100}),)}, used_mins={PHYS: {"cpu": 100.0}}),
     [], [], job(1, account="physics"), Reason.ASSOC_GRP_CPU_MIN),
    ("GrpTRESMins gres: a CPU job still runs",
     AssocLimits(grp={ALICE: ((PHYS, {}, {"gres/gpu": 10}),)}, used_mins={PHYS: {"gres/gpu": 50.0}}),
     [], [], job(1, account="physics"), None),
    ("GrpTRESMins gres used up", AssocLimits(grp={ALICE: ((PHYS, {}, {"gres/gpu": 10}),)},
                                             used_mins={PHYS: {"gres/gpu": 50.0}}),
     [], [], job(1, gpus=1, account="physics"), Reason.ASSOC_GRP_GRES_MIN),
    ("MaxJobs", AssocLimits(max={ALICE: TresLimits(max_jobs=1)}), [], [_running(9)],
     job(1, account="physics"), Reason.ASSOC_MAX_JOBS),
    ("MaxJobs is per association: bob's job does not count",
     AssocLimits(max={ALICE: TresLimits(max_jobs=1)}), [], [_running(9, user="bob")],
     job(1, account="physics"), None),
    ("MaxWall", AssocLimits(max={ALICE: TresLimits(max_wall=60)}), [], [],
     job(1, limit=120, account="physics"), Reason.ASSOC_MAX_WALL),
    ("MaxWall, no --time", AssocLimits(max={ALICE: TresLimits(max_wall=60)}), [], [],
     job(1, account="physics"), Reason.ASSOC_MAX_WALL),
    ("MaxTRES node per job", AssocLimits(max={ALICE: TresLimits(max_tres_per_job={"node": 1})}), [], [],
     job(1, nodes=2, account="physics"), Reason.ASSOC_MAX_NODE_PER_JOB),
    ("MaxTRES gres per job", AssocLimits(max={ALICE: TresLimits(max_tres_per_job={"gres/gpu": 1})}),
     [], [], job(1, gpus=2, account="physics"), Reason.ASSOC_MAX_GRES_PER_JOB),
    ("QOS GrpTRES gres", None, [Qos("normal", grp_tres={"gres/gpu": 1})],
     [_running(9, user="bob", gpus=1)], job(1, gpus=1), Reason.QOS_GRP_GRES),
    ("QOS MaxTRESPerUser cpu", None, [Qos("normal", max_tres_per_user={"cpu": 2})],
     [_running(9, cpus=2)], job(1), Reason.QOS_MAX_CPU_PER_USER),
    ("QOS MaxTRESPerUser cpu, another user", None, [Qos("normal", max_tres_per_user={"cpu": 2})],
     [_running(9, user="bob", cpus=2)], job(1), None),
    ("QOS MaxTRES per job", None, [Qos("normal", max_tres_per_job={"gres/gpu": 1})],
     [], job(1, gpus=2), Reason.QOS_MAX_GRES_PER_JOB),
    ("QOS before association", AssocLimits(max={ALICE: TresLimits(max_jobs=0)}),
     [Qos("normal", max_jobs_per_user=0)], [], job(1, account="physics"), Reason.QOS_MAX_JOBS_PER_USER),
]


@pytest.mark.parametrize("what, assoc, qos, run, pending, expected", CASES, ids=[c[0] for c in CASES])
def test_reason(what, assoc, qos, run, pending, expected):
    tally = Tally({q.name: q for q in qos}, assoc, run)
    assert tally.reason(pending) == expected


def test_starts_of_the_pass_count():
    """Two GPU jobs of physics, GrpTRES=gres/gpu=1: the pass starts one, holds the other."""
    from dataclasses import replace
    snap = snapshot([job(1, gpus=1, account="physics"), job(2, gpus=1, account="physics", user="bob")],
                    [node("n1", gpus=4)])
    snap = replace(snap, limits=AssocLimits(grp=_grp(**{"gres/gpu": 1})))
    plan = schedule(snap, NOW)
    assert [s.job_id for s in plan.starts] == [1] and plan.reasons[2] == Reason.ASSOC_GRP_GRES


@pytest.mark.parametrize("text, parsed", [
    ("cpu=4,mem=10G,gres/gpu=2", {"cpu": 4, "mem": 10240, "gres/gpu": 2}),
    ("node=1,billing=100", {"node": 1, "billing": 100}), ("mem=500", {"mem": 500}),
    ("cpu=-1", {"cpu": UNLIMITED}),
])
def test_parse_tres(text, parsed):
    assert parse_tres(text) == parsed


@pytest.mark.parametrize("bad", ["gpu=1", "cpu", "cpu=x", "gres/gpu=1.5"])
def test_parse_tres_refuses(bad):
    with pytest.raises(ValueError):
        parse_tres(bad)


def test_format_tres_in_slurm_order():
    assert format_tres({"gres/gpu": 2, "cpu": 4, "mem": 2048}) == "cpu=4,mem=2G,gres/gpu=2"


# ---- built from the tree (a real Store on a temporary SQLite file) --------------------------------
@pytest.fixture
def accounts(tmp_path):
    acc = Accounts(Config(), Store(f"sqlite:///{tmp_path}/acct.db"))

    def run(verb, entity, names, **settings):
        return execute(acc, Request(verb, entity, names, {}, settings), operator=True)[1]
    run("add", "account", ["physics"], Fairshare="3", MaxJobs="2", GrpTRES="gres/gpu=4")
    run("add", "account", ["theory"], Parent="physics", MaxWall="60")
    run("add", "user", ["alice"], Account="theory")
    run("add", "user", ["bob"], Account="physics", MaxJobs="5")
    run("add", "qos", ["high"])
    acc.run = run
    return acc


def test_max_limits_are_inherited_and_grp_limits_chain(accounts):
    view = LimitsCache().view(accounts, ["limits"], {})
    assert view.max[("theory", "alice")] == TresLimits(max_jobs=2, max_wall=60)  # physics', theory's
    assert view.max[("physics", "bob")].max_jobs == 5  # his own wins
    assert [level for level, _, _ in view.grp[("theory", "alice")]] == [("physics", "")]
    only_assocs = LimitsCache().view(accounts, ["associations"], {})  # limits not enforced
    assert not only_assocs.grp and not only_assocs.max and ("theory", "alice") in only_assocs.assocs
    assert view.assocs is None and LimitsCache().view(accounts, [], {}) is None


def test_grp_tres_mins_sums_the_subtree(accounts):
    accounts.run("modify", "account", ["physics"], GrpTRESMins="cpu=100")
    view = LimitsCache().view(accounts, ["limits"], {("theory", "alice"): {"cpu": 60.0},
                                                     ("physics", "bob"): {"cpu": 50.0},
                                                     ("physics", ""): {"cpu": 110.0}})
    assert view.used_mins[("physics", "")] == {"cpu": 110.0}


@pytest.mark.parametrize("spec, enforce, account, qos, error", [
    (JobSpec(user="alice"), ["associations"], "theory", "normal", None),
    (JobSpec(user="alice", account="physics"), ["associations"], None, None, PermissionDenied),
    (JobSpec(user="alice", account="physics"), [], "physics", "", None),  # not enforced
    (JobSpec(user="carol"), ["associations"], None, None, PermissionDenied),
    (JobSpec(user="carol"), [], "", "", None),
    (JobSpec(user="bob", qos="high"), ["associations", "qos"], None, None, InvalidRequest),
    (JobSpec(user="bob", qos="high"), ["associations"], "physics", "high", None),
])
def test_admit(accounts, spec, enforce, account, qos, error):
    if error is not None:
        with pytest.raises(error):
            admit(accounts, enforce, spec)
        return
    admit(accounts, enforce, spec)
    assert (spec.account, spec.qos) == (account, qos)


def test_qos_list_inherited_then_own(accounts):
    bob = JobSpec(user="bob", qos="high")
    accounts.run("modify", "account", ["physics"], QOS="normal,high")
    admit(accounts, ["qos"], bob)  # physics' list, inherited
    accounts.run("modify", "user", ["bob"], QOS="normal")
    with pytest.raises(InvalidRequest, match="Invalid qos specification"):
        admit(accounts, ["qos"], JobSpec(user="bob", qos="high"))


def test_max_submit_jobs(accounts):
    accounts.run("modify", "user", ["bob"], MaxSubmitJobs="1")
    spec = JobSpec(user="bob", account="physics")
    check_submit_limits(accounts, ["limits"], [spec], lambda: [])
    held = [type("J", (), {"spec": JobSpec(user="bob", account="physics")})()]
    with pytest.raises(InvalidRequest, match="accounting/QOS policy"):
        check_submit_limits(accounts, ["limits"], [spec], lambda: held)
    check_submit_limits(accounts, [], [spec], lambda: held)  # limits not enforced


def test_bad_input_changes_nothing(accounts):
    before = dict(accounts.assocs)
    for settings in ({"Bogus": "1"}, {"GrpTRES": "gpu=1"}, {"QOS": "nosuch"}, {"MaxJobs": "x"}):
        with pytest.raises(InvalidRequest):
            accounts.run("modify", "user", ["bob"], **settings)
    assert accounts.assocs == before
    with pytest.raises(PermissionDenied):
        execute(accounts, Request("add", "account", ["x"], {}, {}), operator=False)
    assert ("x", "") not in accounts.assocs


# ---- scontrol update Account= / QOS= and deletes, against the same tree --------------------------
def _pending(accounts, **spec):
    from pyslurm_lite import config
    from pyslurm_lite.model import Job, JobState
    parsed = config.parse("NodeName=n1 CPUs=4 RealMemory=4000\nPartitionName=main Nodes=n1 Default=YES\n")
    accounts.cfg.nodes, accounts.cfg.partitions = parsed.nodes, parsed.partitions
    return Job(job_id=7, spec=JobSpec(uid=1000, time_limit=10, **spec), state=JobState.PENDING,
               time_limit=10, partition="main", priority=100)


@pytest.mark.parametrize("changes, allowed", [
    ({"Account": "physics"}, True),  # bob is in physics
    ({"Account": "theory"}, False),  # not in theory: Slurm's invalid account
    ({"QOS": "high"}, False),  # not in bob's QOS list
])
def test_update_checks_the_association(accounts, changes, allowed):
    from pyslurm_lite.controller.job_update import Context, apply
    accounts.cfg.accounting_storage_enforce = ["associations", "qos"]
    j = _pending(accounts, user="bob", account="physics", qos="normal")
    ctx = Context(accounts.cfg, False, 1000.0, {}, accounts)
    if allowed:
        apply(j, changes, ctx)
        assert j.spec.account == changes["Account"]
    else:
        with pytest.raises((InvalidRequest, PermissionDenied)):
            apply(j, changes, ctx)
        assert (j.spec.account, j.spec.qos) == ("physics", "normal")


def test_delete_refused_while_a_job_uses_it(accounts):
    j = _pending(accounts, user="bob", account="physics", qos="high")
    for entity, names in (("user", ["bob"]), ("account", ["physics"]), ("qos", ["high"])):
        req = Request("delete", entity, names, {}, {}, active_jobs=lambda: [j])
        with pytest.raises(InvalidRequest, match="Job\\(s\\) active"):
            execute(accounts, req, operator=True)
    assert ("physics", "bob") in accounts.assocs and "high" in accounts.qos
    execute(accounts, Request("delete", "user", ["bob"], {}, {}, active_jobs=lambda: []), operator=True)
    assert ("physics", "bob") not in accounts.assocs and "bob" not in accounts.users


def test_other_clusters_refused(accounts):
    with pytest.raises(InvalidRequest, match="This cluster 'other' doesn't exist"):
        accounts.run("add", "account", ["x"], Cluster="other")
    assert ("x", "") not in accounts.assocs
    accounts.run("add", "account", ["x"], Cluster=accounts.cfg.cluster_name)
    assert ("x", "") in accounts.assocs
