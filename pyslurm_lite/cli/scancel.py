"""scancel: cancel or signal jobs by id or by filter (-u, -t, -p, -n, -w)."""

from __future__ import annotations

import sys

from .common import SlurmArgParser, fail, run, split_list

PROG = "scancel"


def parse_signal(name: str) -> int:
    from ..errors import InvalidRequest
    from ..units import parse_signal_name
    try:
        return parse_signal_name(name)
    except InvalidRequest:
        fail(PROG, f"Invalid job signal: {name}")


def main_args(argv: list[str]) -> int:
    p = SlurmArgParser(prog=PROG, add_help=False)  # Slurm's scancel has --help but no -h
    a = p.add_argument
    a("--help", action="help")
    a("job_ids", nargs="*")
    a("-u", "--user", action="append")
    a("--me", action="store_true")
    a("-t", "--state", action="append")
    a("-p", "--partition", action="append")
    a("-n", "--name", "--jobname", dest="name", action="append")
    a("-w", "--nodelist", action="append")
    a("-s", "--signal")
    a("-b", "--batch", action="store_true")
    a("-f", "--full", action="store_true")
    a("-q", "--quiet", action="store_true")
    a("-v", "--verbose", action="store_true")
    ns = p.parse_args(argv)
    ids, tasks = _job_ids(ns.job_ids)
    users = split_list(ns.user)
    if ns.me:
        import os, pwd
        users.append(pwd.getpwuid(os.getuid()).pw_name)
    states = [s.upper() for s in split_list(ns.state)]
    from .jobfields import COMPACT
    long_of = {v: k for k, v in COMPACT.items()}
    states = [long_of.get(s, s) for s in states]
    if not (ids or tasks or users or states or ns.partition or ns.name or ns.nodelist):
        fail(PROG, "No job identification provided")
    signo = parse_signal(ns.signal) if ns.signal else 0
    from ..client import Client
    client = Client()
    done, errors = client.cancel(job_ids=ids, array_tasks=tasks, signal=signo, batch_only=ns.batch,
                                 full=ns.full, states=states, users=users,
                                 partitions=split_list(ns.partition), names=split_list(ns.name),
                                 nodes=split_list(ns.nodelist))
    for job_id, message in errors:
        if "Kill job error" in message:
            sys.stderr.write(f"{PROG}: error: {message}\n")
        else:
            sys.stderr.write(f"{PROG}: error: Kill job error on job id {job_id}: {message}\n")
    return 1 if errors else 0


def _job_ids(values) -> tuple[list[int], list[str]]:
    """Job ids and array task names (12_3, 12_[1-3]). A step (12.0) is refused: cancelling
    one step alone is not implemented, and the whole job is not what was asked for."""
    from ..errors import InvalidRequest
    from .jobids import filter_fields, parse
    try:
        refs = parse(values or [])
    except InvalidRequest as e:
        fail(PROG, e.message.replace("Invalid job id: ", "Invalid job id "))
    steps = sorted({str(r) for r in refs if r.step is not None})
    if steps:
        fail(PROG, f"cancelling a job step ({', '.join(steps)}) is not supported here; "
                   "name the job to cancel all of it")
    return filter_fields(refs)


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
