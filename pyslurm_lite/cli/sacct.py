"""sacct: accounting records of every job ever run, from the controller's database.

Each run of a job prints one line, followed (unless -X) by its steps: `ID.batch`, then its srun
steps `ID.0`, `ID.1` ... (cli/acctfields.py). Fixed-width output puts a space after every field
and cuts a value too long for its column to width-1 characters plus '+' (CANCELLED by 0 ->
"CANCELLED+"), as sacct does; -p/-P print '|'-separated values instead. A negative width means
left-justified, as in sacct's own table.

Which jobs: the time window -S/-E (cli/slurmtime.py formats) with Slurm's defaults (none given:
since 00:00 today; -j: all time; -s: the current second), -s states, -D every run of a requeued
job; the window's meaning is the controller's (controller/accounting.py). What a job asked for
and got (-q, -g, -N, -i, -I, -k/-K) and -T's cut of its times: cli/acctfilter.py.
"""

from __future__ import annotations

import os
import re
import sys
import time

from . import acctfields as af
from . import acctfilter
from .common import SlurmArgParser, fail, run, split_list
from .slurmtime import TimeSpecError, midnight, parse_time

PROG = "sacct"
DEFAULT_FIELDS = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
BRIEF_FIELDS = "JobID,State,ExitCode"
LONG_FIELDS = ("JobID,JobIDRaw,JobName,Partition,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,"
               "MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,"
               "MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,AllocCPUS,Elapsed,State,ExitCode,"
               "AveCPUFreq,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ReqMem,ConsumedEnergy,"
               "MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,"
               "MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite,ReqTRES,AllocTRES,TRESUsageInAve,"
               "TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,"
               "TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutMax,"
               "TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutAve,TRESUsageOutTot")
STATE_CODES = {"BF": "BOOT_FAIL", "CA": "CANCELLED", "CD": "COMPLETED", "DL": "DEADLINE",
               "F": "FAILED", "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY", "PD": "PENDING",
               "PR": "PREEMPTED", "R": "RUNNING", "RQ": "REQUEUED", "S": "SUSPENDED",
               "TO": "TIMEOUT", "CG": "COMPLETING"}
ALIASES = {"COMPLETE": "COMPLETED", "CANCELED": "CANCELLED"}


def build_parser() -> SlurmArgParser:
    p = SlurmArgParser(prog=PROG, add_help=False)
    a = p.add_argument
    a("-A", "--accounts", action="append")
    a("-a", "--allusers", action="store_true")
    a("-b", "--brief", action="store_true")
    a("-c", "--completion", action="store_true")
    a("-D", "--duplicates", action="store_true")
    a("--delimiter", default="|")
    a("-E", "--endtime")
    a("-e", "--helpformat", "--help-fields", action="store_true")
    a("-g", "--gid", "--group", action="append", dest="group")
    a("-i", "--nnodes")
    a("-I", "--ncpus")
    a("-j", "--jobs", action="append")
    a("--json", action="store_true")
    a("-k", "--timelimit-min")
    a("-K", "--timelimit-max")
    a("-L", "--allclusters", action="store_true")  # one cluster: the same as without it
    # a filter on the database's cluster names, as Slurm's: a name it does not know lists nothing
    a("-M", "--clusters", action="append")
    a("-l", "--long", action="store_true")
    a("-n", "--noheader", action="store_true")
    a("--noconvert", action="store_true")
    a("-N", "--nodelist", action="append")
    a("--name", action="append")
    a("-o", "--format", "--fields", action="append")
    a("-p", "--parsable", action="store_true")
    a("-P", "--parsable2", action="store_true")
    a("-q", "--qos", action="append")
    a("-r", "--partition", action="append")
    a("-S", "--starttime")
    a("-s", "--state", action="append")
    a("-T", "--truncate", action="store_true")
    a("--units")
    a("-u", "--user", "--uid", action="append")
    a("-X", "--allocations", action="store_true")
    a("--yaml", action="store_true")
    p.add_argument("-h", "--help", action="help")
    return p


# ---- options ----------------------------------------------------------------------------------
def parse_fields(text: str) -> list[tuple[str, int]]:
    """'JobID,jobname%30' -> [('JobID', -12), ('JobName', 30)]; unknown names are an error."""
    out = []
    for item in filter(None, text.split(",")):
        name, _, width = item.partition("%")
        canon = af.known_field(name)
        if canon is None:
            fail(PROG, f'Invalid field requested: "{name}"')
        if width and not re.fullmatch(r"-?\d+", width):
            fail(PROG, f'Invalid field width: "{item}"')
        out.append((canon, int(width) if width and int(width) else af.WIDTHS[canon]))
    return out


def chosen_fields(ns) -> list[tuple[str, int]]:
    text = ",".join(ns.format) if ns.format else os.environ.get("SACCT_FORMAT") or (
        BRIEF_FIELDS if ns.brief else LONG_FIELDS if ns.long else DEFAULT_FIELDS)
    fields = parse_fields(text)
    unrecorded = sorted({n for n, _ in fields} & af.NOT_RECORDED)
    if unrecorded:
        sys.stderr.write(f"{PROG}: warning: {', '.join(unrecorded)} not recorded by pyslurm-lite, "
                         f"printed empty\n")
    return fields


def parse_job_ids(values) -> tuple[list[int], list[str], dict[str, set[str]]]:
    """-j: (job or array ids, "A_T" array tasks, id text -> steps asked for ("batch", "0"...);
    an empty set: the whole job)."""
    from ..errors import InvalidRequest
    from .jobids import filter_fields, parse
    try:
        named = parse(values or [])
    except InvalidRequest as e:
        fail(PROG, e.message)
    steps: dict[str, set[str]] = {}
    for j in named:
        key = str(j.job_id) if j.array_task is None else j.task_text
        if j.step is None:
            steps[key] = set()
        elif steps.get(key) != set():
            steps.setdefault(key, set()).add(j.step)
    ids, tasks = filter_fields(named)
    return ids, tasks, steps


def parse_states(values) -> list[str]:
    wanted = []
    for s in split_list(values):
        s = s.upper()
        state = ALIASES.get(s, STATE_CODES.get(s, s))
        if state not in STATE_CODES.values():
            fail(PROG, f"Invalid state: {s}")
        wanted.append(state)
    return wanted


def time_window(ns, now: float, by_job: bool, by_state: bool) -> tuple[float, float]:
    """(start, end) as Slurm's slurmdb_job_cond_def_start_end sets them; end 0 = now."""
    try:
        start = parse_time(ns.starttime, now) if ns.starttime else 0.0
        end = parse_time(ns.endtime, now) if ns.endtime else 0.0
    except TimeSpecError as e:
        sys.stderr.write(f"{e}\n")
        sys.exit(1)
    if by_state:
        if not start and not by_job:
            start = now
        if start and not end:
            end = start
    elif not by_job and not start:
        start = midnight(now)
    if end and end == start:
        end += 1  # Slurm's window is [S, E): E == S must still hold S
    return start, end


def default_users(ns) -> list[str]:
    """A user sees their own jobs unless -a, -u, -j, -N or root (the controller applies
    PrivateData): sacct looks for every user's jobs when it is given jobs or nodes."""
    users = split_list(ns.user)
    if not users and not ns.allusers and not ns.jobs and not ns.nodelist and os.getuid() != 0:
        import pwd
        users = [pwd.getpwuid(os.getuid()).pw_name]
    return users


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


def help_format() -> str:
    """-e: the field names in the order of sacct's table, four to a line, each in 19 columns
    and a space apart, as sacct prints them."""
    names = list(af.WIDTHS)
    rows = [" ".join(f"{n:<19}" for n in names[i:i + 4]) for i in range(0, len(names), 4)]
    return "\n".join(rows) + "\n"


def wanted_steps(job, asked: dict[str, set[str]]) -> set[str] | None:
    """The steps -j named for this job (None: every step, and the job's own line)."""
    keys = [str(job.job_id)]
    if job.array_job_id:
        keys += [f"{job.array_job_id}_{job.array_task_id}", str(job.array_job_id)]
    named = [asked[k] for k in keys if k in asked]
    if not named or any(not s for s in named):
        return None
    return set().union(*named)


def lines_for(run_msg, ns, fields, steps_asked, now, cfg, window=None, flt=None) -> list[str]:
    """The run's lines; none when a filter (cli/acctfilter.py) leaves its job out."""
    job = run_msg.job
    only = wanted_steps(job, steps_asked) if steps_asked else None
    rec = af.Rec(job, None, run_msg.state, None, now, cfg, window)
    if flt is not None and not acctfilter.keep(rec, flt):
        return []
    out = [] if only else [render([af.getter(n, False)(rec) for n, _ in fields], fields, ns)]
    if ns.allocations and not only:
        return out
    for step in af.run_steps(job, job.spec, run_msg.state):  # the spec's `batch` only
        if only and step.suffix not in only:
            continue
        step_rec = rec.for_step(step)
        out.append(render([af.getter(n, True)(step_rec) for n, _ in fields], fields, ns))
    return out


def _ours_asked(ns, ours: str) -> bool:
    """-M/--clusters (else SACCT_CLUSTERS, else SLURM_CLUSTERS): does the list name this cluster
    ('all' does)? Without any, sacct reports the local cluster."""
    env = os.environ.get("SACCT_CLUSTERS") or os.environ.get("SLURM_CLUSTERS", "")
    given = split_list(ns.clusters or [env])
    names = {n.lower() for n in given}
    return not names or "all" in names or ours.lower() in names


def parse_command_line(argv: list[str]):
    """Options as sacct's getopt loop reads them (options after other words count too); then
    the words that are no option: "Unknown arguments:", one per line, exit 1."""
    parser = build_parser()
    ns, rest = parser.parse_known_args(argv)
    options = [w for w in rest if w.startswith("-") and w != "-"]
    if options:
        parser.error(f"unrecognized arguments: {' '.join(options)}")
    if rest:
        fail(PROG, "\n".join(["Unknown arguments:"] + [f" {w}" for w in rest]))
    return ns


def not_here(ns) -> None:
    """Options sacct has whose effect we lack: refused when the output would not be sacct's,
    warned about when it would merely differ in units."""
    for name in ("json", "yaml"):
        if getattr(ns, name):
            fail(PROG, f"--{name} is not supported by pyslurm-lite (use -p/-P for parsable output)")
    if ns.completion:  # no JobCompType here: Slurm's sacct with jobcomp/none says so and exits 1
        sys.stderr.write("Slurm job completion is disabled\n")
        sys.exit(1)
    if ns.units is not None:
        if not ns.units or ns.units[0].upper() not in "KMGTP":
            sys.stderr.write(f"{PROG}: error: Invalid unit type '{ns.units[:1]}'. "
                             f"Possible options are 'KMGTP'\n")
            acctfilter.fatal("Invalid unit type")
        sys.stderr.write(f"{PROG}: warning: --units is not supported here and is ignored\n")
    if ns.noconvert:
        sys.stderr.write(f"{PROG}: warning: --noconvert is not supported here and is ignored\n")


def main_args(argv: list[str]) -> int:
    ns = parse_command_line(argv)
    if ns.helpformat:
        sys.stdout.write(help_format())
        return 0
    not_here(ns)
    fields = chosen_fields(ns)
    ids, tasks, steps_asked = parse_job_ids(ns.jobs)
    states = parse_states(ns.state)
    by_job = bool(ids or tasks)
    start, end = time_window(ns, time.time(), by_job, bool(states))
    flt = acctfilter.build(ns)
    from ..client import Client
    client = Client()
    flt.qos = acctfilter.parse_qos(split_list(ns.qos), _known_qos(client) if ns.qos else [])
    out = [] if ns.noheader else header_lines(fields, ns)
    runs, now = [], time.time()
    if _ours_asked(ns, client.cfg.cluster_name):
        runs, now = client.job_history(
            job_ids=ids, array_tasks=tasks, users=default_users(ns), accounts=split_list(ns.accounts),
            partitions=split_list(ns.partition), names=split_list(ns.name), states=states,
            start=start, end=end, duplicates=ns.duplicates, any_eligibility=by_job)
    window = (start, min(end or now, now)) if ns.truncate else None
    for r in runs:
        out += lines_for(r, ns, fields, steps_asked, now, client.cfg, window,
                         flt if flt.active() else None)
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def _known_qos(client) -> list[str]:
    """The QOS names of the accounting database (sacctmgr adds them), as Slurm's sacct asks
    slurmdbd; slurm.conf's QOSName lines were imported into it."""
    records, _ = client.sacctmgr("show", "qos")
    names = [r.get("Name", "") for r in records if r.get("Name")]
    # the order they were made in, as slurmdbd's ids run: normal and slurm.conf's first
    made = [q for q in client.cfg.qos if q in names]
    return made + [q for q in names if q not in made] or list(client.cfg.qos)


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
