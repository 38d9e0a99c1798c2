"""sacct: accounting records for jobs, finished or not, in Slurm's columns.

Each job prints one line, followed (unless -X) by its "ID.batch" step once it has started.
Fixed-width output puts a space after every field and cuts a value too long for its column to
width-1 characters plus '+' (CANCELLED by 0 -> "CANCELLED+"), as sacct does; -p/-P print
'|'-separated values instead. A negative width means left-justified, as in sacct's own table.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from datetime import datetime

from ..model import JobSpec
from .common import SlurmArgParser, fail, run, split_list

PROG = "sacct"
DEFAULT_FIELDS = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
BRIEF_FIELDS = "JobID,State,ExitCode"
# name -> width (negative: left-justified), as in Slurm's sacct field table
WIDTHS = {
    "Account": 10, "AllocCPUS": 10, "AllocNodes": 10, "AllocTRES": -12, "Elapsed": 10,
    "ElapsedRaw": 10, "End": 19, "ExitCode": 8, "JobID": -12, "JobIDRaw": -12, "JobName": 10,
    "NCPUS": 10, "NNodes": 8, "NodeList": -15, "Partition": 10, "Priority": 10, "QOS": 10,
    "ReqCPUS": 8, "ReqMem": 10, "ReqNodes": 8, "RestartCnt": 10, "Start": 19, "State": 10,
    "Submit": 19, "Timelimit": 10, "UID": 6, "User": 9, "WorkDir": -15,
}
CANONICAL = {name.lower(): name for name in WIDTHS}
STATE_CODES = {"CA": "CANCELLED", "CD": "COMPLETED", "F": "FAILED", "NF": "NODE_FAIL",
               "OOM": "OUT_OF_MEMORY", "PD": "PENDING", "PR": "PREEMPTED", "R": "RUNNING",
               "S": "SUSPENDED", "TO": "TIMEOUT", "BF": "BOOT_FAIL", "DL": "DEADLINE",
               "CG": "COMPLETING"}


def build_parser() -> SlurmArgParser:
    p = SlurmArgParser(prog=PROG, add_help=False)
    a = p.add_argument
    a("-a", "--allusers", action="store_true")
    a("-b", "--brief", action="store_true")
    a("-j", "--jobs", action="append")
    a("-n", "--noheader", action="store_true")
    a("-o", "--format", action="append")
    a("-p", "--parsable", action="store_true")
    a("-P", "--parsable2", action="store_true")
    a("--delimiter", default="|")
    a("-r", "--partition", action="append")
    a("--name", action="append")
    a("-s", "--state", action="append")
    a("-u", "--user", action="append")
    a("-X", "--allocations", action="store_true")
    p.add_argument("-h", "--help", action="help")
    return p


def parse_fields(text: str) -> list[tuple[str, int]]:
    """'JobID,jobname%30' -> [('JobID', -12), ('JobName', 30)]; unknown names are an error."""
    out = []
    for item in filter(None, text.split(",")):
        name, _, width = item.partition("%")
        canon = CANONICAL.get(name.strip().lower())
        if canon is None:
            fail(PROG, f'Invalid field requested: "{name}"')
        if width and not re.fullmatch(r"-?\d+", width):
            fail(PROG, f'Invalid field width: "{item}"')
        out.append((canon, int(width) if width and int(width) else WIDTHS[canon]))
    return out


def _job_ids(values) -> list[int]:
    ids = []
    for v in split_list(values):
        head = v.split(".")[0].split("_")[0]
        if not head.isdigit():
            fail(PROG, f"Bad job/step specified: {v}")
        ids.append(int(head))
    return ids


def _states(values) -> set[str]:
    wanted = set()
    for s in split_list(values):
        s = s.upper()
        state = STATE_CODES.get(s, s)
        if state not in STATE_CODES.values():
            fail(PROG, f"Invalid state: {s}")
        wanted.add(state)
    return wanted


# ---- one record (a job, or its batch step) ----------------------------------------------------
def started(job) -> float:
    """When the current run began; 0 while pending (a requeued job keeps its old start)."""
    return 0.0 if job.state == "PENDING" else job.start_time


def step_state(job) -> str:
    """The batch step's state: a step killed by a signal (or by cancel/timeout) is CANCELLED."""
    if job.state in ("CANCELLED", "TIMEOUT") or (job.state == "FAILED" and job.exit_signal):
        return "CANCELLED"
    return job.state


def _tres(items: dict[str, int]) -> str:
    from ..units import format_memory
    shown = {k: (format_memory(v) if k == "mem" else str(v)) for k, v in items.items() if v}
    return ",".join(f"{k}={shown[k]}" for k in sorted(shown))  # sacct sorts TRES by name


def alloc_tres(job, step: bool) -> str:
    allocs = job.allocations[:1] if step else list(job.allocations)
    if not allocs or not started(job):
        return ""
    cpus = sum(a.cpus for a in allocs)
    items = {"cpu": cpus, "mem": sum(a.mem for a in allocs), "node": len(allocs),
             "gres/gpu": sum(len(a.gpus) for a in allocs)}
    if not step:
        items["billing"] = cpus
    return _tres(items)


def alloc_cpus(rec: "Record", step: bool) -> int:
    job = rec.job
    if job.allocations and started(job):
        return job.allocations[0].cpus if step else sum(a.cpus for a in job.allocations)
    return sum(rec.spec.cpus_on_node(i) for i in range(max(rec.spec.num_nodes, 1)))


def req_mem(rec: "Record") -> str:
    """Memory asked for on each node (22.05 prints it without the old c/n suffix)."""
    from ..units import format_memory
    mem = rec.spec.mem_on_node(0, rec.cfg.def_mem_per_cpu, rec.cfg.def_mem_per_node)
    return format_memory(mem) if mem else "0"


@dataclass
class Record:
    """One output line's inputs: a job message, its spec as a dataclass, and whether the line
    is the job's batch step."""

    job: object
    spec: JobSpec
    step: bool
    now: float
    cfg: object


# Fields a step line leaves empty: they describe the job as submitted, not the step.
JOB_ONLY = {"Partition", "QOS", "User", "UID", "Timelimit", "RestartCnt", "Priority"}


def field_value(name: str, rec: Record) -> str:
    from ..config import collect
    from ..units import format_hms, format_limit_hms, format_timestamp
    job, step, spec, start = rec.job, rec.step, rec.spec, started(rec.job)
    if step and name in JOB_ONLY:
        return ""
    nodes = [a.node for a in job.allocations] if start else []
    ended = job.end_time if job.state not in ("PENDING", "RUNNING") else 0
    elapsed = (ended or rec.now) - start if start else 0
    shown = f"{job.array_job_id}_{job.array_task_id}" if job.array_job_id else str(job.job_id)
    job_id = f"{shown}.batch" if step else shown
    values = {
        "JobID": lambda: job_id, "JobIDRaw": lambda: job_id,
        "JobName": lambda: "batch" if step else spec.name,
        "Partition": lambda: job.partition, "Account": lambda: spec.account,
        "QOS": lambda: spec.qos or "normal",
        "AllocCPUS": lambda: str(alloc_cpus(rec, step)), "NCPUS": lambda: str(alloc_cpus(rec, step)),
        "ReqCPUS": lambda: str(alloc_cpus(rec, False)),
        "State": lambda: step_state(job) if step else job.state,
        "ExitCode": lambda: f"{job.exit_code}:{job.exit_signal}",
        "Elapsed": lambda: format_hms(elapsed), "ElapsedRaw": lambda: str(int(elapsed)),
        "Submit": lambda: format_timestamp(start if step else job.submit_time),
        # Slurm stamps a job cancelled while pending as starting when it ended.
        "Start": lambda: format_timestamp(start or ended),
        "End": lambda: format_timestamp(ended),
        "NodeList": lambda: (nodes[0] if step else collect(nodes)) if nodes else "None assigned",
        "NNodes": lambda: "1" if step else str(len(nodes) or spec.num_nodes),
        "AllocNodes": lambda: "1" if step else str(len(nodes)),
        "ReqNodes": lambda: str(spec.num_nodes),
        "User": lambda: spec.user, "UID": lambda: str(spec.uid),
        "AllocTRES": lambda: alloc_tres(job, step), "ReqMem": lambda: req_mem(rec),
        "Timelimit": lambda: format_limit_hms(job.time_limit),
        "RestartCnt": lambda: str(job.restart_count),
        "Priority": lambda: str(0 if job.held else job.priority),
        "WorkDir": lambda: spec.work_dir,
    }
    return values[name]()


# ---- rendering --------------------------------------------------------------------------------
def cell(value: str, width: int) -> str:
    size = abs(width)
    if len(value) > size:
        value = value[:size - 1] + "+"
    return (value.ljust(size) if width < 0 else value.rjust(size)) + " "


def render(values: list[str], fields, ns) -> str:
    if ns.parsable2:
        return ns.delimiter.join(values)
    if ns.parsable:
        return "".join(v + ns.delimiter for v in values)
    return "".join(cell(v, w) for v, (_, w) in zip(values, fields))


def header_lines(fields, ns) -> list[str]:
    lines = [render([name for name, _ in fields], fields, ns)]
    if not (ns.parsable or ns.parsable2):
        lines.append("".join("-" * abs(w) + " " for _, w in fields))
    return lines


def select_jobs(ns, client) -> tuple[list, float]:
    """Jobs the options ask for: by id (finished ones from the database too), user, state..."""
    import os
    import pwd
    from ..errors import NotFound
    ids, states = _job_ids(ns.jobs), _states(ns.state)
    users = split_list(ns.user)
    if not users and not ns.allusers and os.getuid() != 0:
        users = [pwd.getpwuid(os.getuid()).pw_name]  # a user sees their own jobs by default
    try:
        jobs, now = client.jobs(job_ids=ids, partitions=split_list(ns.partition),
                              names=split_list(ns.name), include_finished=True)
    except NotFound:  # unknown ids print no rows, as in Slurm
        return [], 0.0
    midnight = datetime.combine(datetime.now().date(), datetime.min.time()).timestamp()
    keep = []
    for job in jobs:
        if users and job.spec.user not in users and str(job.spec.uid) not in users:
            continue
        if states and job.state not in states:
            continue
        if not ids and not states and job.end_time and job.end_time < midnight:
            continue  # without -j, sacct reports jobs active since midnight
        keep.append(job)
    return sorted(keep, key=lambda j: j.job_id), now


def main_args(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    fields = parse_fields(",".join(ns.format) if ns.format else
                          BRIEF_FIELDS if ns.brief else DEFAULT_FIELDS)
    from ..rpc import wire
    from ..client import Client
    client = Client()
    jobs, now = select_jobs(ns, client)
    names = [name for name, _ in fields]
    out = [] if ns.noheader else header_lines(fields, ns)
    for job in jobs:
        spec = wire.from_msg(job.spec, JobSpec)
        rec = Record(job, spec, False, now, client.cfg)
        out.append(render([field_value(n, rec) for n in names], fields, ns))
        if not ns.allocations and started(job) and spec.batch and job.allocations:
            rec.step = True
            out.append(render([field_value(n, rec) for n in names], fields, ns))
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
