"""sacct's fields: Slurm 22.05's names and widths, and each one's value for a job run or a step.

A run of a job prints one line, then (unless -X) one per step: `ID.batch` for the batch script,
`ID.0`, `ID.1` ... for srun steps, each with its own State, ExitCode, times, nodes and tasks.
There is no `ID.extern` step: pyslurm-lite does not adopt processes outside steps (Slurm's
PrologFlags=contain), so there is nothing to account for there.

Resource usage (MaxRSS, AveCPU, TotalCPU, TRESUsageIn*...) comes from what the agents sampled
(cli/acctusage.py); the usage fields nothing samples here (virtual memory, pages, disk I/O, CPU
frequency, energy, TRESUsageOut*) print empty, as Slurm's do without the plugin that gathers
them. Fields we do not record at all are in NOT_RECORDED: they print empty and sacct warns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..config import collect
from ..model import JobSpec
from ..units import format_hms, format_limit_hms, format_memory, format_timestamp
from . import acctusage
from .nodefields import alloc_shares as shares_held, share_request, whole_gpus

# name -> width (negative: left-justified), in the order of Slurm 22.05's sacct field table.
WIDTHS = {
    "Account": 10, "AdminComment": 15, "AllocCPUS": 10, "AllocNodes": 10, "AllocTRES": 10,
    "AssocID": 7, "AveCPU": 10, "AveCPUFreq": 10, "AveDiskRead": 14, "AveDiskWrite": 14,
    "AvePages": 10, "AveRSS": 10, "AveVMSize": 10, "BlockID": 16, "Cluster": 10, "Comment": 14,
    "Constraints": 19, "ConsumedEnergy": 14, "ConsumedEnergyRaw": 17, "Container": 19,
    "CPUTime": 10, "CPUTimeRAW": 10, "DBIndex": -21, "DerivedExitCode": 15, "Elapsed": 10,
    "ElapsedRaw": 10, "Eligible": 19, "End": 19, "ExitCode": 8, "Flags": 19, "GID": 6,
    "Group": 9, "JobID": -12, "JobIDRaw": -12, "JobName": 10, "Layout": 9, "MaxDiskRead": 12,
    "MaxDiskReadNode": 15, "MaxDiskReadTask": 15, "MaxDiskWrite": 12, "MaxDiskWriteNode": 16,
    "MaxDiskWriteTask": 16, "MaxPages": 8, "MaxPagesNode": 12, "MaxPagesTask": 14, "MaxRSS": 10,
    "MaxRSSNode": 10, "MaxRSSTask": 10, "MaxVMSize": 10, "MaxVMSizeNode": 14,
    "MaxVMSizeTask": 14, "McsLabel": 12, "MinCPU": 10, "MinCPUNode": 10, "MinCPUTask": 10,
    "NCPUS": 10, "NNodes": 8, "NodeList": 15, "NTasks": 8, "Priority": 10, "Partition": 10,
    "QOS": 10, "QOSRAW": 6, "Reason": 22, "ReqCPUFreq": 10, "ReqCPUFreqGov": 13,
    "ReqCPUFreqMax": 13, "ReqCPUFreqMin": 13, "ReqCPUS": 8, "ReqMem": 10, "ReqNodes": 8,
    "ReqTRES": 10, "Reservation": 20, "ReservationId": 8, "Reserved": 10, "ResvCPU": 10,
    "ResvCPURAW": 10, "Start": 19, "State": 10, "Submit": 19, "SubmitLine": 20,
    "Suspended": 10, "SystemComment": 15, "SystemCPU": 10, "Timelimit": 10, "TimelimitRaw": 10,
    "TotalCPU": 10, "TRESUsageInAve": 14, "TRESUsageInMax": 14, "TRESUsageInMaxNode": 18,
    "TRESUsageInMaxTask": 18, "TRESUsageInMin": 14, "TRESUsageInMinNode": 18,
    "TRESUsageInMinTask": 18, "TRESUsageInTot": 14, "TRESUsageOutAve": 15,
    "TRESUsageOutMax": 15, "TRESUsageOutMaxNode": 19, "TRESUsageOutMaxTask": 19,
    "TRESUsageOutMin": 15, "TRESUsageOutMinNode": 19, "TRESUsageOutMinTask": 19,
    "TRESUsageOutTot": 15, "UID": 6, "User": 9, "UserCPU": 10, "WCKey": 10, "WCKeyID": 10,
    "WorkDir": 20,
}
CANONICAL = {name.lower(): name for name in WIDTHS}
# Resource usage (jobacct_gather's, energy's): empty unless cli/acctusage.py fills it.
USAGE = {n for n in WIDTHS if n.startswith(("Ave", "Max", "Min", "TRESUsage", "ConsumedEnergy"))
         } | {"SystemCPU", "TotalCPU", "UserCPU"}
# Never recorded by pyslurm-lite: printed empty, with a warning naming them.
NOT_RECORDED = {"AssocID", "DBIndex", "Flags", "Layout", "QOSRAW", "ReqCPUFreq", "ReqCPUFreqGov",
                "ReqCPUFreqMax", "ReqCPUFreqMin", "ReservationId", "SubmitLine", "WCKeyID"}
# Slurm sets these only through features we do not have (sacctmgr, MCS, containers): empty there too.
NEVER_SET = {"BlockID", "Container", "McsLabel", "SystemComment", "WCKey"}
# A step's line leaves these empty: they describe the job as submitted, not the step.
JOB_ONLY = {"Partition", "QOS", "User", "UID", "Group", "GID", "Timelimit", "TimelimitRaw",
            "Priority", "Reason", "ReqTRES", "DerivedExitCode", "Comment", "Constraints",
            "Eligible", "Reserved", "ResvCPU", "ResvCPURAW", "Reservation", "ReqMem",
            "AdminComment"}


@dataclass
class StepRec:
    """One step of a run: the batch script ("batch") or an srun step ("0", "1", ...)."""

    suffix: str
    name: str
    state: str
    exit_code: int
    exit_signal: int
    start: float
    end: float
    nodes: list
    tasks: int
    cpus: int
    mem: int = 0
    gpus: int = 0
    shares: dict = field(default_factory=dict)  # {'gres/shard': 3}: a GPU's shares it holds


class Rec:
    """One output line's inputs: a job message (as recorded for this run), its spec, the run's
    state, the step this line is for (None: the job's own line), the controller's now, the
    configuration, and -T's (start, end) the times are cut to (None: not cut).

    spec None: the JobSpec is converted from the job's message when a field first needs more
    than its scalars (which the getters read off job.spec as they are): sacct prints tens of
    thousands of lines, most of which never need it."""

    __slots__ = ("job", "_spec", "state", "step", "now", "cfg", "window")

    def __init__(self, job, spec: JobSpec | None, state: str, step: StepRec | None, now: float,
                 cfg, window: tuple[float, float] | None = None):
        self.job, self._spec, self.state, self.step = job, spec, state, step
        self.now, self.cfg, self.window = now, cfg, window

    @property
    def spec(self) -> JobSpec:
        if self._spec is None:
            from ..rpc import wire
            self._spec = wire.from_msg(self.job.spec, JobSpec)
        return self._spec

    def for_step(self, step: StepRec) -> Rec:
        """This run's line for one of its steps, sharing the spec if it was converted."""
        return Rec(self.job, self._spec, self.state, step, self.now, self.cfg, self.window)


# ---- steps of a run ---------------------------------------------------------------------------
def batch_state(job, run_state: str) -> str:
    """The batch step's state: a script killed by a signal (cancel, time limit, requeue) is
    CANCELLED."""
    if run_state in ("CANCELLED", "TIMEOUT", "REQUEUED", "PREEMPTED") or \
            (run_state == "FAILED" and job.exit_signal):
        return "CANCELLED"
    return run_state


def run_steps(job, spec, run_state: str) -> list[StepRec]:
    """The steps of this run, batch first: srun steps that began during it (a requeued job's
    record keeps its earlier runs' steps; they belong to those). spec: its JobSpec or the
    message's, whose `batch` only is read."""
    if run_state == "PENDING" or not job.start_time or not job.allocations:
        return []
    out = []
    if spec.batch:
        a = job.allocations[0]
        out.append(StepRec("batch", "batch", batch_state(job, run_state), job.exit_code,
                           job.exit_signal, job.start_time, job.end_time, [a.node], 1, a.cpus,
                           a.mem, len(whole_gpus(a)), shares_held([a])))
    for s in job.steps:
        if s.start_time < job.start_time or (job.end_time and s.start_time > job.end_time):
            continue
        out.append(StepRec(str(s.step_id), s.name, s.state, s.exit_code, s.exit_signal,
                           s.start_time, s.end_time, list(s.nodes), s.num_tasks, sum(s.cpus_per_node)))
    return out


# ---- values -----------------------------------------------------------------------------------
def _tres(items: dict[str, int]) -> str:
    shown = {k: (format_memory(v) if k == "mem" else str(v)) for k, v in items.items() if v}
    return ",".join(f"{k}={shown[k]}" for k in sorted(shown))  # sacct sorts TRES by name


def alloc_tres(rec: Rec) -> str:
    job, step = rec.job, rec.step
    if step is not None:
        return _tres({"cpu": step.cpus, "mem": step.mem, "node": len(step.nodes),
                      "gres/gpu": step.gpus, **step.shares})
    if not job.start_time or not job.allocations:
        return ""
    cpus = sum(a.cpus for a in job.allocations)
    # Slurm keeps billing as a whole count (its weighted sum, truncated); without weights, CPUs
    return _tres({"billing": int(job.billing) if job.billing else cpus, "cpu": cpus,
                  "mem": sum(a.mem for a in job.allocations), "node": len(job.allocations),
                  "gres/gpu": sum(len(whole_gpus(a)) for a in job.allocations),
                  **shares_held(job.allocations)})  # a shard job's GPU is no gres/gpu


def req_cpus(rec: Rec) -> int:
    return sum(rec.spec.cpus_on_node(i) for i in range(max(rec.spec.num_nodes, 1)))


def req_mem_per_node(rec: Rec) -> int:
    return rec.spec.mem_on_node(0, rec.cfg.def_mem_per_cpu, rec.cfg.def_mem_per_node)


def req_tres(rec: Rec) -> str:
    cpus, nodes = req_cpus(rec), max(rec.spec.num_nodes, 1)
    counts = {"cpu": cpus, "mem": req_mem_per_node(rec) * nodes, "node": nodes,
              "gres/gpu": rec.spec.gpus_needed_per_node() * nodes}
    name, count = share_request(rec.spec.gres)
    counts.update({f"gres/{name}": count * nodes} if name else {})
    return _tres({"billing": req_billing(rec, counts), **counts})


def req_billing(rec: Rec, counts: dict[str, int]) -> int:
    """What the request bills under its partition's TRESBillingWeights (Slurm computes the
    requested billing the same way as the allocated one)."""
    from ..controller.usage import billing
    part = rec.cfg.partitions.get(rec.job.partition)
    weights = part.tres_billing_weights if part is not None else {}
    return int(billing(counts, weights, rec.cfg.priority_flags))


def alloc_cpus(rec: Rec) -> int:
    if rec.step is not None:
        return rec.step.cpus
    if rec.job.start_time and rec.job.allocations:
        return sum(a.cpus for a in rec.job.allocations)
    return req_cpus(rec)


def times(rec: Rec) -> tuple[float, float, float]:
    """(start, end, elapsed seconds): a job that ended without starting starts when it ended,
    as Slurm stamps it; one still running has no end and counts to now."""
    src = rec.step or rec.job
    start = src.start if rec.step else src.start_time
    end = src.end if rec.step else (src.end_time if rec.state not in ("PENDING", "RUNNING") else 0.0)
    if rec.window and (rec.step is None or rec.window[0]):
        return truncated(start, end, rec.window, rec.step is not None)
    start = start or end
    elapsed = ((end or rec.now) - start) if start else 0.0
    return start, end, max(elapsed, 0.0)


def truncated(start: float, end: float, window: tuple[float, float], step: bool):
    """-T, as slurmdbd cuts a job: starts before the window start at it, runs past the window
    end (or still running) end at it, and one that never started starts at its end. (A step
    is cut only when the window has a start; one wholly outside it has no times.)"""
    low, high = window
    if start and start < low:
        start = low
    if not start and step and end:
        start = end
    if not end or end > high:
        end = high
    if step and start and start > end:
        start = end = 0.0
    start = start or end
    return start, end, max(end - start, 0.0)


def node_list(rec: Rec) -> str:
    nodes = rec.step.nodes if rec.step else ([a.node for a in rec.job.allocations] if rec.job.start_time else [])
    return collect(nodes) if nodes else "None assigned"


def job_id(rec: Rec, raw: bool = False) -> str:
    job = rec.job
    shown = str(job.job_id) if raw or not job.array_job_id else f"{job.array_job_id}_{job.array_task_id}"
    return f"{shown}.{rec.step.suffix}" if rec.step else shown


def derived_exit_code(rec: Rec) -> str:
    """The highest exit code of the job's srun steps, with the signal of that step."""
    steps = [s for s in run_steps(rec.job, rec.job.spec, rec.state) if s.suffix != "batch"]
    worst = max(steps, key=lambda s: (s.exit_code, s.exit_signal), default=None)
    return f"{worst.exit_code}:{worst.exit_signal}" if worst else "0:0"


def group_name(gid: int) -> str:
    import grp
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _getters():
    j = lambda rec: rec.job  # noqa: E731 - a table of one-liners reads best as lambdas
    s = lambda rec: rec.job.spec  # noqa: E731 - the spec's scalars, as recorded (see Rec)
    return {
        "Account": lambda r: s(r).account,
        "AllocCPUS": lambda r: str(alloc_cpus(r)), "NCPUS": lambda r: str(alloc_cpus(r)),
        "AllocNodes": lambda r: str(len(r.step.nodes)) if r.step else
        str(len(j(r).allocations) if j(r).start_time else 0),
        "AdminComment": lambda r: j(r).admin_comment,
        "AllocTRES": alloc_tres, "ReqTRES": req_tres,
        "Cluster": lambda r: r.cfg.cluster_name, "Comment": lambda r: s(r).comment,
        "Constraints": lambda r: s(r).constraint,
        "CPUTime": lambda r: format_hms(times(r)[2] * alloc_cpus(r)),
        "CPUTimeRAW": lambda r: str(int(times(r)[2]) * alloc_cpus(r)),
        "DerivedExitCode": derived_exit_code,
        "Elapsed": lambda r: format_hms(times(r)[2]), "ElapsedRaw": lambda r: str(int(times(r)[2])),
        "Eligible": lambda r: format_timestamp(j(r).eligible_time),
        "End": lambda r: format_timestamp(times(r)[1]), "Start": lambda r: format_timestamp(times(r)[0]),
        "Submit": lambda r: format_timestamp(r.step.start if r.step else j(r).submit_time),
        "ExitCode": lambda r: f"{r.step.exit_code}:{r.step.exit_signal}" if r.step else
        f"{j(r).exit_code}:{j(r).exit_signal}",
        "GID": lambda r: str(s(r).gid), "Group": lambda r: group_name(s(r).gid),
        "UID": lambda r: str(s(r).uid), "User": lambda r: s(r).user,
        "JobID": job_id, "JobIDRaw": lambda r: job_id(r, raw=True),
        "JobName": lambda r: r.step.name if r.step else s(r).name,
        "NNodes": lambda r: str(len(r.step.nodes)) if r.step else
        str(len(j(r).allocations) if j(r).start_time and j(r).allocations else s(r).num_nodes),
        "NodeList": node_list,
        "NTasks": lambda r: str(r.step.tasks) if r.step else "",
        "Partition": lambda r: j(r).partition, "Priority": lambda r: str(0 if j(r).held else j(r).priority),
        "QOS": lambda r: s(r).qos or "normal",
        "Reason": lambda r: j(r).reason or "None",
        "ReqCPUS": lambda r: str(r.step.cpus if r.step else req_cpus(r)),
        "ReqMem": lambda r: format_memory(req_mem_per_node(r)) if req_mem_per_node(r) else "0",
        "ReqNodes": lambda r: str(len(r.step.nodes) if r.step else s(r).num_nodes),
        "Reservation": lambda r: s(r).reservation,
        "Reserved": lambda r: format_hms(reserved(r)),
        "ResvCPU": lambda r: format_hms(reserved(r) * alloc_cpus(r)),
        "ResvCPURAW": lambda r: str(int(reserved(r)) * alloc_cpus(r)),
        "State": lambda r: r.step.state if r.step else job_state(r),
        "Suspended": lambda r: "00:00:00",  # jobs are never suspended here
        "Timelimit": lambda r: format_limit_hms(j(r).time_limit),
        "TimelimitRaw": lambda r: "UNLIMITED" if j(r).time_limit < 0 else str(j(r).time_limit),
        "WorkDir": lambda r: s(r).work_dir,
    }


def job_state(rec: Rec) -> str:
    """The run's state; a job someone cancelled says who, as Slurm does ("CANCELLED by 0")."""
    if rec.state == "CANCELLED" and rec.job.cancelled_by:
        return f"CANCELLED by {rec.job.cancelled_by}"
    return rec.state


def reserved(rec: Rec) -> float:
    """Seconds the run waited between becoming eligible and starting (Slurm's Reserved)."""
    job = rec.job
    if not job.eligible_time:
        return 0.0
    until = job.start_time or (times(rec)[1] if rec.state != "PENDING" else rec.now)
    return max(until - job.eligible_time, 0.0)


GETTERS = _getters()


def value(name: str, rec: Rec) -> str:
    return getter(name, rec.step is not None)(rec)


def _empty(rec: Rec) -> str:
    return ""


@lru_cache(maxsize=None)
def getter(name: str, step: bool):
    """f(rec) -> the field's text on a job's line (step False) or a step's, resolved once per
    name: sacct prints tens of thousands of lines."""
    if name in acctusage.GETTERS:
        return acctusage.GETTERS[name]
    if name in USAGE or name in NOT_RECORDED or name in NEVER_SET or (step and name in JOB_ONLY):
        return _empty
    return GETTERS[name]


def known_field(name: str) -> str | None:
    return CANONICAL.get(name.strip().lower())
