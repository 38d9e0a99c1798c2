"""squeue: list jobs in Slurm's default columns, by -o/--format or -O/--Format, sorted by
-S/--sort, repeated by -i/--iterate; SQUEUE_* variables stand for flags not given
(squeue_opts.py). -j takes Slurm's job ids: 12, 12_3, 12_[1-3] (cli/jobids.py)."""

from __future__ import annotations

import sys
import time

from . import fmt
from .common import SlurmArgParser, cluster_banner, fail, run, split_list, write_lines
from .jobfields import COMPACT, FIELDS, HEADERS, _blank, fold_pending_tasks

PROG = "squeue"
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"


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
    a("-O", "--Format", dest="Format")
    a("-A", "--account", action="append")
    a("-q", "--qos", action="append")
    a("-l", "--long", action="store_true")
    a("-a", "--all", action="store_true")
    a("-r", "--array", action="store_true")
    a("-i", "--iterate")
    a("-S", "--sort")
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


def _job_ids(values) -> tuple[list[int], list[str]]:
    """(job ids, task names): an array's id (12) names all its tasks, 12_3 only that one."""
    from ..errors import InvalidRequest
    from .jobids import filter_fields, parse
    try:
        return filter_fields(parse(values or []))
    except InvalidRequest as e:
        fail(PROG, e.message)


def main_args(argv: list[str]) -> int:
    import os
    from . import squeue_opts
    ns = build_parser().parse_args(argv)
    squeue_opts.env_defaults(ns, os.environ)
    period = _iterate(ns.iterate)
    if ns.long and ns.format:
        fail(PROG, "Options -o(--format) and -l(--long) are mutually exclusive. "
                   "Please remove one and retry.")
    view = _view(ns)
    while True:
        if not ns.noheader and (period or ns.long):
            sys.stdout.write(time.strftime("%a %b %d %H:%M:%S %Y\n"))
        write_lines(cluster_banner(ns))  # -M: below the date, every pass (Slurm's _multi_cluster)
        code = _list_once(ns, view)
        if not period:
            return code
        sys.stdout.write("\n")
        sys.stdout.flush()
        time.sleep(period)


def _iterate(text: str | None) -> int:
    """-i/--iterate seconds: a positive whole number, as squeue's atoi check."""
    if text is None:
        return 0
    if not text.strip().isdigit() or int(text) <= 0:
        fail(PROG, f"--iterate={text}")
    return int(text)


def _view(ns):
    """(tokens, headers, fields, sort keys) from -o/-O/-l/--start and -S, checked once."""
    from ..errors import InvalidRequest
    from . import squeue_opts
    try:
        if ns.Format is not None and ns.format is None:
            tokens, headers = squeue_opts.parse_long(ns.Format)
            fields = squeue_opts.long_fields(tokens)
        else:
            form = ns.format or (START_FORMAT if ns.start else LONG_FORMAT if ns.long else DEFAULT_FORMAT)
            tokens, headers, fields = fmt.parse(form), HEADERS, FIELDS
            bad = [t[0] for t in tokens if not isinstance(t, str) and t[0] not in FIELDS]
            if bad:
                raise InvalidRequest(f"Invalid job format specification: {bad[0]}")
        keys = squeue_opts.parse_sort(ns.sort if ns.sort is not None else
                                      ("S" if ns.start else squeue_opts.DEFAULT_SORT))
    except InvalidRequest as e:
        fail(PROG, e.message)
    return tokens, headers, fields, keys


def _list_once(ns, view) -> int:
    from . import squeue_opts
    tokens, headers, fields, keys = view
    ids, tasks = _job_ids(ns.jobs)
    states, users = _states(ns.states), split_list(ns.user)
    if ns.me:
        import pwd, os
        users.append(pwd.getpwuid(os.getuid()).pw_name)
    from ..client import Client
    from ..errors import NotFound
    try:
        jobs, now = Client().jobs(job_ids=ids, array_tasks=tasks, states=states, users=users,
                                  partitions=split_list(ns.partition), names=split_list(ns.name),
                                  nodes=split_list(ns.nodelist))
    except NotFound as e:
        sys.stderr.write(f"slurm_load_jobs error: {e.message}\n")  # Slurm's words, no prefix
        return 1
    jobs = _client_filters(jobs, ns)
    if ns.steps is not None:
        return _print_steps(jobs, now, ns)
    jobs = squeue_opts.sort_jobs(jobs, keys, now)
    if not ns.array:
        jobs = fold_pending_tasks(jobs)
    if ns.start:  # pending jobs only, as Slurm's --start
        jobs = [j for j in jobs if j.state == "PENDING"]
    out = [] if ns.noheader else [fmt.render(tokens, headers)]
    row = fmt.compile_row(tokens, fields, _blank)
    out += [row(job, now) for job in jobs]
    write_lines(out)
    return 0


def _client_filters(jobs: list, ns) -> list:
    """-A/--account and -q/--qos: filters the controller's JobFilter has no field for."""
    accounts, qos = set(split_list(ns.account)), set(split_list(ns.qos))
    if accounts:
        jobs = [j for j in jobs if j.spec.account in accounts]
    if qos:
        jobs = [j for j in jobs if (j.spec.qos or "normal") in qos]
    return jobs


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
