"""Accounting limits in a scheduling pass: may this job start now, given what already runs?

Worked example: account physics has GrpTRES=gres/gpu=2 and user alice in it has MaxJobs=3.
Alice runs one job with 1 GPU. Her next job asks 2 GPUs: physics would then hold 3 > 2, so it
waits with AssocGrpGRES; a CPU-only job of hers starts (2 jobs <= 3). Bob, also in physics,
asking 1 GPU starts (physics holds 2); the next GPU job of either waits.

Two kinds of limit, as Slurm's acct_policy:
  QOS          (always enforced here, as before accounting existed): MaxWall, MaxJobsPerUser,
               MaxTRESPerUser, MaxTRES per job, GrpTRES over all the QOS's running jobs;
  association  (AccountingStorageEnforce=limits): Grp* at every level of the account tree, over
               its whole subtree (GrpTRES on running jobs, GrpTRESMins on decayed usage); Max* of
               the nearest association up the tree that sets it (MaxTRES per job, MaxJobs,
               MaxTRESPerUser, MaxWall).
  existence    (AccountingStorageEnforce=associations): a job whose (account, user) is no
               association (deleted, or queued before associations were enforced) does not
               start: it waits with InvalidAccount, as Slurm's, once a pass tries to place it.

Pure: a Tally is built from the snapshot's running jobs, asked `quick_reason(job)` for each
pending job and `tres_reason(job)` for each job the pass tries to place, and told `add()` for
each start of the pass. Every lookup is a dict get; jobs of associations
without limits cost one miss.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import UNLIMITED, Reason, TresLimits
from .sharing import whole_gpus

TRES_NAMES = ("cpu", "mem", "node", "billing", "gres/gpu", "gres/mps", "gres/shard")

_ASSOC_GRP = {"cpu": Reason.ASSOC_GRP_CPU, "mem": Reason.ASSOC_GRP_MEM, "node": Reason.ASSOC_GRP_NODE,
              "gres/gpu": Reason.ASSOC_GRP_GRES, "billing": Reason.ASSOC_GRP_BILLING}
_ASSOC_GRP_MINS = {"cpu": Reason.ASSOC_GRP_CPU_MIN, "mem": Reason.ASSOC_GRP_MEM_MIN,
                   "node": Reason.ASSOC_GRP_NODE_MIN, "gres/gpu": Reason.ASSOC_GRP_GRES_MIN,
                   "billing": Reason.ASSOC_GRP_BILLING_MIN}
_ASSOC_PER_JOB = {"cpu": Reason.ASSOC_MAX_CPU_PER_JOB, "mem": Reason.ASSOC_MAX_MEM_PER_JOB,
                  "node": Reason.ASSOC_MAX_NODE_PER_JOB, "gres/gpu": Reason.ASSOC_MAX_GRES_PER_JOB,
                  "billing": Reason.ASSOC_MAX_BILLING_PER_JOB}
_QOS_GRP = {"cpu": Reason.QOS_GRP_CPU, "mem": Reason.QOS_GRP_MEM, "node": Reason.QOS_GRP_NODE,
            "gres/gpu": Reason.QOS_GRP_GRES, "billing": Reason.QOS_GRP_BILLING}
_QOS_PER_USER = {"cpu": Reason.QOS_MAX_CPU_PER_USER, "mem": Reason.QOS_MAX_MEM_PER_USER,
                 "node": Reason.QOS_MAX_NODE_PER_USER, "gres/gpu": Reason.QOS_MAX_GRES_PER_USER,
                 "billing": Reason.QOS_MAX_BILLING_PER_USER}
_QOS_PER_JOB = {"cpu": Reason.QOS_MAX_CPU_PER_JOB, "mem": Reason.QOS_MAX_MEM_PER_JOB,
                "node": Reason.QOS_MAX_NODE_PER_JOB, "gres/gpu": Reason.QOS_MAX_GRES_PER_JOB,
                "billing": Reason.QOS_MAX_BILLING_PER_JOB}
# gres/shard and gres/mps are gres as gres/gpu is: their limits give the GRES reasons
for _reasons in (_ASSOC_GRP, _ASSOC_GRP_MINS, _ASSOC_PER_JOB, _QOS_GRP, _QOS_PER_USER,
                 _QOS_PER_JOB):
    _reasons.update({name: _reasons["gres/gpu"] for name in ("gres/mps", "gres/shard")})


@dataclass(frozen=True)
class AssocLimits:
    """The association limits a pass enforces, keyed by a job's (account, user); empty when
    AccountingStorageEnforce lacks `limits`. Built by the controller when the tree changes."""

    # (account, user) -> ((association key, its GrpTRES, its GrpTRESMins), ...): the
    # associations from the user's up to root that set a Grp limit
    grp: dict = field(default_factory=dict)
    # (account, user) -> TresLimits: the Max* limits in force (nearest up the tree)
    max: dict = field(default_factory=dict)
    # association key -> {tres: TRES-minutes of decayed usage over its subtree}
    used_mins: dict = field(default_factory=dict)
    # AccountingStorageEnforce=associations: the (account, user) associations a job may start
    # under (one deleted while its jobs wait holds them: InvalidAccount); None: not enforced
    assocs: frozenset | None = None

    def __bool__(self) -> bool:
        return bool(self.grp or self.max)


def job_tres(job) -> dict[str, int]:
    """What a pending job (a JobView) would hold, in TRES terms (mem in MiB)."""
    tres = {"cpu": sum(job.cpus_per_node), "mem": sum(job.mem_per_node), "node": job.num_nodes,
            "gres/gpu": job.gpus_per_node * job.num_nodes}
    if job.share_name:  # shards (or mps) of one GPU per node: no gres/gpu of its own
        tres[f"gres/{job.share_name}"] = job.shares_per_node * job.num_nodes
    return tres


def alloc_tres(allocations) -> dict[str, int]:
    """What a running job holds, from its allocations (a GPU it has shards of is no gres/gpu)."""
    tres = {"cpu": sum(a.cpus for a in allocations), "mem": sum(a.mem for a in allocations),
            "node": len(allocations), "gres/gpu": sum(len(whole_gpus(a)) for a in allocations)}
    for a in allocations:
        if a.share_name:
            key = f"gres/{a.share_name}"
            tres[key] = tres.get(key, 0) + sum(a.shares)
    return tres


def _over(limits: dict, held: dict | None, want: dict, reasons: dict) -> Reason | None:
    """The reason of the first TRES whose limit `held + want` would exceed."""
    for tres, cap in limits.items():
        if want.get(tres, 0) and (held.get(tres, 0) if held else 0) + want.get(tres, 0) > cap:
            return reasons.get(tres, reasons["cpu"])
    return None


def _plus(total: dict, tres: dict) -> None:
    for k, v in tres.items():
        total[k] = total.get(k, 0) + v


class Tally:
    """What runs, counted the ways the limits need, kept current through one pass."""

    def __init__(self, qos: dict, assoc: AssocLimits | None, running=()):
        self.qos = qos
        self.assoc = assoc if assoc is not None else AssocLimits()
        self.user_jobs: dict[tuple[str, str], int] = {}  # (user, qos) -> running jobs
        self.user_gpus: dict[tuple[str, str], int] = {}  # (user, qos) -> GPUs held
        self.user_tres: dict[tuple[str, str], dict] = {}  # (user, qos) -> TRES (limited QOS only)
        self.qos_tres: dict[str, dict] = {}  # qos -> TRES (QOS with GrpTRES only)
        self.assoc_jobs: dict[tuple[str, str], int] = {}  # (account, user) -> running jobs
        self.assoc_user: dict[tuple[str, str], dict] = {}  # (account, user) -> TRES
        self.assoc_grp: dict[tuple[str, str], dict] = {}  # association key -> TRES in its subtree
        # the fast path: per (account, user, qos), the least room left under any of its TRES
        # limits, (cpu, mem, node, gres/gpu, gres/mps, gres/shard, jobs, wall); forgotten at
        # every start (add)
        self._room: dict[tuple, tuple | None] = {}
        for r in running:
            self.add(r.user, r.qos, getattr(r, "account", ""), r.allocations)

    def add(self, user: str, qos_name: str, account: str, allocations) -> None:
        key = (user, qos_name)
        self._room.clear()
        self.user_jobs[key] = self.user_jobs.get(key, 0) + 1
        held = sum(len(whole_gpus(a)) for a in allocations)  # shards of a GPU are not the GPU
        self.user_gpus[key] = self.user_gpus.get(key, 0) + held
        qos = self.qos.get(qos_name)
        tres = None
        if qos is not None and (qos.max_tres_per_user or qos.grp_tres):
            tres = alloc_tres(allocations)
            _plus(self.user_tres.setdefault(key, {}), tres)
            _plus(self.qos_tres.setdefault(qos_name, {}), tres)
        akey = (account, user)
        if akey in self.assoc.max or akey in self.assoc.grp:
            tres = tres or alloc_tres(allocations)
            self.assoc_jobs[akey] = self.assoc_jobs.get(akey, 0) + 1
            _plus(self.assoc_user.setdefault(akey, {}), tres)
            for level, _grp, _mins in self.assoc.grp.get(akey, ()):
                _plus(self.assoc_grp.setdefault(level, {}), tres)

    def reason(self, job) -> Reason | None:
        """Why `job` may not start now under its QOS and association limits, or None."""
        return self.quick_reason(job) or self.tres_reason(job)

    def quick_reason(self, job) -> Reason | None:
        """The QOS's MaxWall, MaxJobsPerUser and GPUs per user: a few lookups, asked of every
        pending job (their reasons show even behind a blocked job)."""
        qos = self.qos.get(job.qos)
        if qos is None:
            return None
        if qos.max_wall != UNLIMITED and (job.time_limit <= 0 or job.time_limit > qos.max_wall):
            return Reason.QOS_MAX_WALL
        key = (job.user, job.qos)
        if qos.max_jobs_per_user != UNLIMITED and self.user_jobs.get(key, 0) >= qos.max_jobs_per_user:
            return Reason.QOS_MAX_JOBS_PER_USER
        if qos.max_gpus_per_user != UNLIMITED and job.gpus and \
                self.user_gpus.get(key, 0) + job.gpus > qos.max_gpus_per_user:
            return Reason.QOS_MAX_GRES_PER_USER
        return None

    def tres_reason(self, job) -> Reason | None:
        """The TRES limits of the QOS and of the association tree: asked only of the jobs a
        pass actually tries to place (as Slurm's schedulers do), so a long queue behind a
        blocked job costs nothing more. Most jobs fit the room left under every limit of
        their (account, user, QOS), known after one computation per start of the pass; only
        the others go through the exact checks, which name the limit."""
        key = (job.account, job.user, job.qos)
        try:
            room = self._room[key]
        except KeyError:
            room = self._room[key] = self._room_for(job)
        if room is None:
            return None  # no TRES limit anywhere above this job
        if room is _NO_ASSOC:
            return Reason.INVALID_ACCOUNT
        cpu, mem, node, gpu, mps, shard, jobs, wall = room
        n = job.num_nodes
        shares_room = shard if job.share_name == "shard" else mps if job.share_name else _INF
        if jobs >= 1 and n <= node and (wall == UNLIMITED or 0 < job.time_limit <= wall) \
                and job.gpus_per_node * n <= gpu and sum(job.cpus_per_node) <= cpu \
                and sum(job.mem_per_node) <= mem and job.shares_per_node * n <= shares_room:
            return None
        return self._qos_tres_reason(job) or self._assoc_reason(job)

    def _room_for(self, job) -> tuple | None:
        """(cpu, mem, node, gres/gpu, gres/mps, gres/shard, jobs, max wall) left under every
        limit of the job's QOS
        and association tree; None when there is none; _NO_ASSOC when associations are
        enforced and the job's is gone (checked here, once per (account, user, QOS) and start of
        the pass, not of every pending job: every start passes through tres_reason)."""
        qos = self.qos.get(job.qos)
        qos_limited = qos is not None and (qos.max_tres_per_job or qos.max_tres_per_user or qos.grp_tres)
        akey = (job.account, job.user)
        if self.assoc.assocs is not None and akey not in self.assoc.assocs:
            return _NO_ASSOC
        if not qos_limited and akey not in self.assoc.max and akey not in self.assoc.grp:
            return None
        room = [_INF] * len(_INDEX)
        if qos_limited:
            _lower(room, qos.max_tres_per_job, None)
            _lower(room, qos.max_tres_per_user, self.user_tres.get((job.user, qos.name)))
            _lower(room, qos.grp_tres, self.qos_tres.get(qos.name))
        jobs, wall = _INF, UNLIMITED
        limits = self.assoc.max.get(akey)
        if limits is not None:
            _lower(room, limits.max_tres_per_job, None)
            _lower(room, limits.max_tres_per_user, self.assoc_user.get(akey))
            if limits.max_jobs != UNLIMITED:
                jobs = limits.max_jobs - self.assoc_jobs.get(akey, 0)
            wall = limits.max_wall
        for level, grp, grp_mins in self.assoc.grp.get(akey, ()):
            _lower(room, grp, self.assoc_grp.get(level))
            used = self.assoc.used_mins.get(level) or {}
            _lower(room, {t: 0 for t, cap in grp_mins.items() if used.get(t, 0.0) >= cap}, None)
        return (*room, jobs, wall)

    def _qos_tres_reason(self, job) -> Reason | None:
        qos = self.qos.get(job.qos)
        if qos is None or not (qos.max_tres_per_job or qos.max_tres_per_user or qos.grp_tres):
            return None
        want = job_tres(job)
        return (_over(qos.max_tres_per_job, None, want, _QOS_PER_JOB)
                or _over(qos.max_tres_per_user, self.user_tres.get((job.user, job.qos)), want, _QOS_PER_USER)
                or _over(qos.grp_tres, self.qos_tres.get(job.qos), want, _QOS_GRP))

    def _assoc_reason(self, job) -> Reason | None:
        key = (job.account, job.user)
        limits: TresLimits | None = self.assoc.max.get(key)
        chain = self.assoc.grp.get(key)
        if limits is None and chain is None:
            return None
        want = job_tres(job)
        if limits is not None:
            reason = self._assoc_max(job, key, limits, want)
            if reason is not None:
                return reason
        for level, grp, grp_mins in chain or ():
            reason = _over(grp, self.assoc_grp.get(level), want, _ASSOC_GRP)
            if reason is None and grp_mins:
                reason = _used_up(grp_mins, self.assoc.used_mins.get(level), want)
            if reason is not None:
                return reason
        return None

    def _assoc_max(self, job, key, limits: TresLimits, want: dict) -> Reason | None:
        if limits.max_wall != UNLIMITED and (job.time_limit <= 0 or job.time_limit > limits.max_wall):
            return Reason.ASSOC_MAX_WALL
        if limits.max_jobs != UNLIMITED and self.assoc_jobs.get(key, 0) >= limits.max_jobs:
            return Reason.ASSOC_MAX_JOBS
        return (_over(limits.max_tres_per_job, None, want, _ASSOC_PER_JOB)
                # Slurm has no association reason of its own for a per-user TRES cap: an
                # association is one user's already, so its Grp reason says it best
                or _over(limits.max_tres_per_user, self.assoc_user.get(key), want, _ASSOC_GRP))


_INF = float("inf")
_NO_ASSOC = ("no association",)  # _room_for: the job's association is gone (InvalidAccount)
# billing: not in a job's TRES yet
_INDEX = {"cpu": 0, "mem": 1, "node": 2, "gres/gpu": 3, "gres/mps": 4, "gres/shard": 5}


def _lower(room: list, limits: dict, held: dict | None) -> None:
    """Room left under limits, given what is held, folded into room (the least wins)."""
    for tres, cap in limits.items():
        i = _INDEX.get(tres)
        if i is not None:
            room[i] = min(room[i], cap - (held.get(tres, 0) if held else 0))


def _used_up(grp_mins: dict, used: dict | None, want: dict) -> Reason | None:
    """GrpTRESMins: no new job once the subtree's decayed usage reached the limit (Slurm lets
    running jobs finish and starts none that would use that TRES)."""
    for tres, cap in grp_mins.items():
        if want.get(tres, 0) and (used.get(tres, 0.0) if used else 0.0) >= cap:
            return _ASSOC_GRP_MINS.get(tres, Reason.ASSOC_GRP_CPU_MIN)
    return None


def parse_tres(text: str) -> dict[str, int]:
    """'cpu=4,mem=10G,gres/gpu=2' -> {'cpu': 4, 'mem': 10240, 'gres/gpu': 2}; mem in MiB (a
    plain number is MiB, as Slurm's MB); -1 clears a limit (returned as UNLIMITED, the caller
    drops it). ValueError names what is wrong."""
    out: dict[str, int] = {}
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip().lower()
        if not sep or name not in TRES_NAMES:
            raise ValueError(f"Invalid TRES: {item}")
        out[name] = _tres_count(name, value.strip())
    return out


def _tres_count(name: str, value: str) -> int:
    if value in ("-1", ""):
        return UNLIMITED
    scale = 1
    if name == "mem" and value[-1:].upper() in "KMGT" and value[-1:].isalpha():
        scale = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[value[-1].upper()]
        value = value[:-1]
    if not value.isdigit():
        raise ValueError(f"Invalid TRES count: {name}={value}")
    return int(int(value) * scale)


def format_tres(tres: dict[str, int]) -> str:
    """As sacctmgr prints TRES: name=count, comma separated, in Slurm's TRES order."""
    order = {n: i for i, n in enumerate(TRES_NAMES)}
    return ",".join(f"{k}={_fmt_count(k, v)}" for k, v in sorted(tres.items(), key=lambda kv: order.get(kv[0], 99)))


def _fmt_count(name: str, value: int) -> str:
    if name == "mem" and value and value % 1024 == 0:
        return f"{value // 1024}G"
    return f"{value}M" if name == "mem" else str(value)
