"""scontrol update JobId=...: which fields may change, by whom, in which state, in Slurm's words.

Rules, as slurmctld's _update_job (22.05):
    TimeLimit   the owner may lower it, only an operator may raise it (Access/permission
                denied); over the partition's MaxTime only for an operator
    Nice        a negative value is an operator's
    Partition, NumNodes, QOS, Account, Dependency, StartTime, MinMemoryNode, Features, ReqNodeList,
    ExcNodeList: the job must be pending ("Job is no longer pending execution"); QOS and
                Account are checked against its association as at submit (assoc_policy), and
                against the submit limits of where it goes (MaxSubmitJobs of the association,
                MaxSubmitJobsPerUser of the QOS), the job itself not counted there
    Name, Comment, TimeLimit, Nice, ArrayTaskThrottle, Priority: pending or running
    Priority    an operator sets any value, kept from then on (multifactor leaves it); the
                owner may only lower it, and is told "Changes to job priority are not
                persistent, change nice instead" though the value is set (as Slurm does:
                multifactor's next pass recomputes it). 0 holds the job; on a held job any
                other value is refused ("Job is in held state, pending scheduler release");
                4294967295 (Slurm's INFINITE) releases it, or gives an operator's job back to
                the computed priority
    Deadline    an operator's, on a job not running, never in the past ("Invalid time
                specified")
    a finished job changes no more ("Job has already finished")

Worked example: a user's pending job 7 has TimeLimit=10. `TimeLimit=5 Partition=debug` lowers
the limit and moves it; `TimeLimit=20` is refused for him, done for root. Every change of one
request is checked before any is made: a refused field leaves the job as it was.

Pure: works on one Job and the configuration; the caller holds the lock and commits.
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidRequest, PermissionDenied, StaleState
from ..model import UNLIMITED, Job, JobState, Reason
from ..units import parse_begin_time, parse_memory, parse_time_limit
from .validate import _CONTROL, INVALID_TIME_LIMIT, MAX_TIME_LIMIT, NICE_LIMIT, validate_spec

DENIED = "Access/permission denied"
NOT_PENDING = "Job is no longer pending execution"
FINISHED = "Job has already finished"
PRIO_RESET_FAIL = "Changes to job priority are not persistent, change nice instead"
JOB_HELD = "Job is in held state, pending scheduler release"
INFINITE = 0xFFFFFFFF  # Priority=INFINITE: release, or back to the computed priority


class AppliedWithError(InvalidRequest):
    """The change is made, and still answered with an error, as slurmctld does for a
    non-operator's lower priority (ESLURM_PRIO_RESET_FAIL): the caller saves the job and
    reports the error."""

# Slurm's field names (as scontrol spells them) -> the canonical one we handle. The CLI maps
# the user's spelling (any case, Slurm's aliases) to these; the controller accepts only these.
FIELDS = {
    "timelimit": "TimeLimit", "partition": "Partition", "numnodes": "NumNodes",
    "reqnodes": "NumNodes", "dependency": "Dependency", "nice": "Nice", "qos": "QOS",
    "name": "JobName", "jobname": "JobName", "comment": "Comment", "starttime": "StartTime",
    "begintime": "StartTime", "eligibletime": "StartTime",
    "arraytaskthrottle": "ArrayTaskThrottle", "minmemorynode": "MinMemoryNode",
    "features": "Features", "reqnodelist": "ReqNodeList", "nodelist": "ReqNodeList",
    "excnodelist": "ExcNodeList", "priority": "Priority", "deadline": "Deadline",
    "account": "Account",
}
PENDING_ONLY = {"Partition", "NumNodes", "Dependency", "QOS", "StartTime", "MinMemoryNode",
                "Features", "ReqNodeList", "ExcNodeList", "Account"}


@dataclasses.dataclass(frozen=True)
class Context:
    """What a change is judged against."""

    cfg: object
    operator: bool
    now: float
    reservations: dict
    accounts: object = None  # assoc.Accounts: Account= and QOS= checked against associations
    # check_move(job, changed): the submit limits of the association and QOS the job moves to
    # (MaxSubmitJobs, MaxSubmitJobsPerUser), counted by the caller, who holds the jobs
    check_move: object = None


def apply(job: Job, changes: dict[str, str], ctx: Context) -> list[str]:
    """Make every change to job, or none (SlurmError naming the first refusal). Returns the
    fields changed. `changes`: canonical field name -> value text."""
    unknown = [k for k in changes if k not in FIELDS.values()]
    if unknown:
        raise InvalidRequest(f"Update of this parameter is not supported: {unknown[0]}")
    if job.state.is_final:
        raise StaleState(FINISHED)
    if job.state != JobState.PENDING and PENDING_ONLY & set(changes):
        raise StaleState(NOT_PENDING)
    priority_before = job.priority
    spec = dataclasses.replace(job.spec, environment={}, script="")
    new = dataclasses.replace(job, spec=spec)
    for name, value in changes.items():
        _SETTERS[name](new, value.strip(), ctx)
    if PENDING_ONLY & set(changes):
        _revalidate(new, ctx)
        moved = (new.spec.account, new.spec.qos) != (job.spec.account, job.spec.qos)
        if moved and ctx.check_move is not None:
            ctx.check_move(job, new)
    elif "TimeLimit" in changes and not ctx.operator:
        _check_max_time(new, ctx)
    _copy_back(job, new)
    if "Priority" in changes and not ctx.operator and job.priority != priority_before:
        raise AppliedWithError(PRIO_RESET_FAIL)
    return list(changes)


def _copy_back(job: Job, new: Job) -> None:
    """The checked result into the live job (its script and environment stay in the store)."""
    script, env = job.spec.script, job.spec.environment
    for f in dataclasses.fields(Job):
        if f.name != "spec":
            setattr(job, f.name, getattr(new, f.name))
    for f in dataclasses.fields(type(job.spec)):
        if f.name not in ("script", "environment"):
            setattr(job.spec, f.name, getattr(new.spec, f.name))
    job.spec.script, job.spec.environment = script, env


def _revalidate(job: Job, ctx: Context) -> None:
    """The changed request against partitions and nodes, as at submit. An operator's time
    limit may exceed the partition's MaxTime, so it is left out of the check for him."""
    explicit = job.spec.time_limit
    spec = dataclasses.replace(job.spec, time_limit=0 if ctx.operator else explicit)
    if ctx.accounts is not None:  # the association and its QOS list, as at submit
        from .assoc_policy import admit
        admit(ctx.accounts, ctx.cfg.accounting_storage_enforce, spec)
        job.spec.account, job.spec.qos = spec.account, spec.qos
    part, limit = validate_spec(ctx.cfg, spec, ctx.reservations, operator=ctx.operator)
    job.partition = part.name
    job.time_limit = explicit if ctx.operator and explicit else limit


def _check_max_time(job: Job, ctx: Context) -> None:
    part = ctx.cfg.partitions.get(job.partition)
    if part is not None and part.max_time != UNLIMITED and \
            (job.time_limit == UNLIMITED or job.time_limit > part.max_time):
        raise InvalidRequest(INVALID_TIME_LIMIT)


def _time_limit(job: Job, value: str, ctx: Context) -> None:
    try:
        minutes = parse_time_limit(value)
    except InvalidRequest:
        raise InvalidRequest("Invalid time limit specification") from None
    if minutes == 0 or minutes != UNLIMITED and not 0 < minutes <= MAX_TIME_LIMIT:  # as at submit
        raise InvalidRequest(INVALID_TIME_LIMIT)
    raising = minutes == UNLIMITED and job.time_limit != UNLIMITED or \
        job.time_limit != UNLIMITED and minutes > job.time_limit
    if raising and not ctx.operator:
        raise PermissionDenied(DENIED)
    job.time_limit = job.spec.time_limit = minutes


def _partition(job: Job, value: str, ctx: Context) -> None:
    if value not in ctx.cfg.partitions:
        raise InvalidRequest("Invalid partition name specified")
    job.spec.partition = value


def _num_nodes(job: Job, value: str, ctx: Context) -> None:
    low = value.split("-")[0]
    if not low.isdigit() or not 1 <= int(low) <= 2**31 - 1:
        raise InvalidRequest("Node count specification invalid")
    job.spec.num_nodes = int(low)
    job.spec.num_tasks = max(job.spec.num_tasks, job.spec.num_nodes)


def _dependency(job: Job, value: str, ctx: Context) -> None:
    from ..sched import dependency
    value = "" if value in ("", "0", "(null)") else value
    if value:
        dependency.parse(value)
    job.spec.dependency = value


def _nice(job: Job, value: str, ctx: Context) -> None:
    try:
        nice = int(value)
    except ValueError:
        raise InvalidRequest(f"Invalid nice value: {value[:32]}") from None
    if abs(nice) > NICE_LIMIT:
        raise InvalidRequest(f"Nice value out of range (+/- {NICE_LIMIT}). Value ignored")
    if nice < 0 and not ctx.operator:
        raise PermissionDenied(DENIED)
    # priority/basic keeps a job's priority; nice shifts it as Slurm's does (multifactor
    # recomputes it from spec.nice each pass anyway)
    if not job.direct_priority:  # an operator's priority stays as set (Slurm ignores nice then)
        job.priority = max(job.priority - (nice - job.spec.nice), 1)
    job.spec.nice = nice


def _qos(job: Job, value: str, ctx: Context) -> None:
    if value not in ctx.cfg.qos:
        raise InvalidRequest("Invalid qos specification")
    job.spec.qos = value


def _account(job: Job, value: str, ctx: Context) -> None:
    """Checked with the QOS by _revalidate (association and its QOS list, as at submit)."""
    if not value or len(value) > 1024 or _CONTROL.search(value):
        raise InvalidRequest("Invalid account or account/partition combination specified")
    job.spec.account = value


def _text(field: str):
    def setter(job: Job, value: str, ctx: Context) -> None:
        if len(value) > 1024 or _CONTROL.search(value):
            raise InvalidRequest(f"Invalid {field} value")
        setattr(job.spec, field, value)
    return setter


def _start_time(job: Job, value: str, ctx: Context) -> None:
    try:
        when = parse_begin_time(value, ctx.now)
    except InvalidRequest:
        raise InvalidRequest("Invalid time specified") from None
    job.spec.begin_time = when
    job.eligible_time = max(when, ctx.now)


def _throttle(job: Job, value: str, ctx: Context) -> None:
    if not job.array_job_id:
        raise InvalidRequest("ArrayTaskThrottle: the job is not an array job")
    if not value.isdigit() or int(value) > 2**31 - 1:
        raise InvalidRequest("Invalid ArrayTaskThrottle value")
    job.array_limit = int(value)


def _min_memory(job: Job, value: str, ctx: Context) -> None:
    try:
        mib = parse_memory(value)
    except InvalidRequest:
        raise InvalidRequest("Invalid MinMemoryNode value") from None
    job.spec.mem_per_node, job.spec.mem_per_cpu, job.spec.mem_per_gpu = mib, 0, 0


def _node_list(field: str):
    def setter(job: Job, value: str, ctx: Context) -> None:
        setattr(job.spec, field, "" if value in ("", "(null)") else value)
    return setter


def _priority(job: Job, value: str, ctx: Context) -> None:
    """slurmctld's _update_job, Priority: see the module's table."""
    from .job_mgr import BASE_PRIORITY
    if not value.isdigit() or int(value) > INFINITE:
        raise InvalidRequest(f"Invalid Priority value: {value[:32]}")
    prio = int(value)
    if job.held:
        _held_priority(job, prio, ctx)
    elif prio == INFINITE:
        if ctx.operator and job.direct_priority:  # back to the computed one
            job.direct_priority = False
            job.priority = max(BASE_PRIORITY - job.job_id, 1)
    elif prio == job.priority:
        return
    elif ctx.operator or prio < job.priority:
        if job.state != JobState.PENDING and prio == 0:
            raise StaleState(NOT_PENDING)  # a hold is for a pending job
        job.spec.nice = 0  # Slurm resets nice with a set priority
        if prio == 0:
            job.held, job.held_by_admin = True, ctx.operator
            job.reason = Reason.HELD_ADMIN if ctx.operator else Reason.HELD_USER
        else:
            job.priority, job.direct_priority = prio, ctx.operator or job.direct_priority
    else:
        raise PermissionDenied(DENIED)


def _held_priority(job: Job, prio: int, ctx: Context) -> None:
    """A held job: 0 again changes nothing, INFINITE releases (an admin hold only for an
    operator), any other value is refused."""
    if prio == 0:
        return
    if prio != INFINITE:
        raise StaleState(JOB_HELD)
    if job.held_by_admin and not ctx.operator:
        raise PermissionDenied(DENIED)
    job.held = job.held_by_admin = False
    job.reason = Reason.NONE


def _deadline(job: Job, value: str, ctx: Context) -> None:
    if job.state == JobState.RUNNING:
        raise StaleState(NOT_PENDING)
    try:
        when = parse_begin_time(value, ctx.now)
    except InvalidRequest:
        raise InvalidRequest("Invalid time specified") from None
    if when < ctx.now:
        raise InvalidRequest("Invalid time specified")
    if not ctx.operator:
        raise PermissionDenied(DENIED)
    job.spec.deadline = when


_SETTERS = {
    "TimeLimit": _time_limit, "Partition": _partition, "NumNodes": _num_nodes,
    "Dependency": _dependency, "Nice": _nice, "QOS": _qos, "JobName": _text("name"),
    "Comment": _text("comment"), "StartTime": _start_time, "ArrayTaskThrottle": _throttle,
    "MinMemoryNode": _min_memory, "Features": _text("constraint"),
    "ReqNodeList": _node_list("nodelist"), "ExcNodeList": _node_list("exclude"),
    "Priority": _priority, "Deadline": _deadline, "Account": _account,
}
