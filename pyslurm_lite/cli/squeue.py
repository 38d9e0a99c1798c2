"""squeue: list jobs in Slurm's default columns, or by -o/--format."""

from __future__ import annotations

import sys
import time

from . import fmt
from .common import SlurmArgParser, fail, run, split_list, write_lines
from .jobfields import COMPACT, FIELDS, HEADERS, _blank, fold_pending_tasks

PROG = "squeue"
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
STATE_ORDER = {"PENDING": 0, "RUNNING": 1, "SUSPENDED": 2, "COMPLETING": 3}


def build_parser() -> SlurmArgParser:
    p = SlurmArgParser(prog=PROG, add_help=False)
    a = p.add_argument
    a("-j", "--jobs", action="append")
    a("-u", "--user", action="append")
    a("--me", action="store_true")
    a("-t", "--states", action="append")
    a("-p", "--partition", action="append")
    a("-n", "--name", action="append")
    a("-w", "--nodelist", action="append")
    a("-h", "--noheader", action="store_true")
    a("-o", "--format")
    a("-l", "--long", action="store_true")
    a("-a", "--all", action="store_true")
    a("-r", "--array", action="store_true")
    a("-i", "--iterate", type=int)
    a("--sort")
    a("-s", "--steps", nargs="?", const="")
    a("--start", action="store_true")
    p.add_argument("--help", action="help")
    return p


def _states(values) -> list[str]:
    wanted = []
    long_of = {v: k for k, v in COMPACT.items()}
    for s in split_list(values):
        s = s.upper()
        if s == "ALL":
            return list(COMPACT)
        if s in COMPACT:
            wanted.append(s)
        elif s in long_of:
            wanted.append(long_of[s])
        else:
            fail(PROG, f"Invalid job state specified: {s}")
    return wanted


def _job_ids(values) -> list[int]:
    """Job ids; an array's id (12) names all its tasks, 12_3 is one task (found by its array)."""
    ids = []
    for v in split_list(values):
        if not v.split("_")[0].isdigit():
            fail(PROG, f"Invalid job id: {v}")
        ids.append(int(v.split("_")[0]))
    return ids


def main_args(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    ids, states = _job_ids(ns.jobs), _states(ns.states)
    users = split_list(ns.user)
    if ns.me:
        import pwd, os
        users.append(pwd.getpwuid(os.getuid()).pw_name)
    from ..client import Client
    from ..errors import NotFound
    try:
        jobs, now = Client().jobs(job_ids=ids, states=states, users=users,
                                  partitions=split_list(ns.partition), names=split_list(ns.name),
                                  nodes=split_list(ns.nodelist))
    except NotFound as e:
        sys.stderr.write(f"slurm_load_jobs error: {e.message}\n")  # Slurm's words, no prefix
        return 1
    if ns.steps is not None:
        return _print_steps(jobs, now, ns)
    jobs.sort(key=lambda j: (STATE_ORDER.get(j.state, 4), -(0 if j.held else j.priority), j.job_id))
    if not ns.array:
        jobs = fold_pending_tasks(jobs)
    if ns.start:  # pending jobs, soonest expected first (unknown last), as Slurm's --start
        jobs = sorted((j for j in jobs if j.state == "PENDING"),
                      key=lambda j: (not j.expected_start, j.expected_start, j.job_id))
    form = ns.format or (START_FORMAT if ns.start else LONG_FORMAT if ns.long else DEFAULT_FORMAT)
    tokens = fmt.parse(form)
    out = []
    if ns.long and not ns.format:
        out.append(time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)))
    if not ns.noheader:
        out.append(fmt.render(tokens, HEADERS))
    row = fmt.compile_row(tokens, FIELDS, _blank)
    out += [row(job, now) for job in jobs]
    write_lines(out)
    return 0


def _print_steps(jobs, now: float, ns) -> int:
    from .stepfields import SQUEUE_STEPS_FORMAT, STEP_HEADERS, running_steps, step_field
    tokens = fmt.parse(ns.format or SQUEUE_STEPS_FORMAT)
    wanted = set(split_list([ns.steps])) if ns.steps else set()
    out = [] if ns.noheader else [fmt.render(tokens, STEP_HEADERS)]
    for job in sorted(jobs, key=lambda j: j.job_id):
        for step in running_steps(job):
            if not wanted or step["id"] in wanted:
                out.append(fmt.render_row(tokens, lambda letter, j=job, st=step: step_field(j, st, letter, now)))
    write_lines(out)
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
