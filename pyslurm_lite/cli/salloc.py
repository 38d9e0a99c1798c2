"""salloc: get an allocation, run a command (or your shell) with its environment, release it."""

from __future__ import annotations

import os
import subprocess
import sys

from .common import SlurmArgParser, run
from .jobopts import (SALLOC_VARIABLES, JobArgParser, add_batch_options, add_job_options,
                      env_arguments, unsupported)

PROG = "salloc"


def build_parser() -> SlurmArgParser:
    p = JobArgParser(prog=PROG, add_help=True)
    add_job_options(p)
    add_batch_options(p)
    a = p.add_argument
    a("--no-shell", action="store_true", default=None)
    a("--no-bell", action="store_true", default=None)  # no bell is ever rung here
    unsupported(p, "--bell", flag=True)
    unsupported(p, "-K", "--kill-command", optional=True)
    a("command", nargs="?")
    a("args", nargs="...")
    return p


def parse_options(argv: list[str], environ=None):
    """The command line over the SALLOC_* input variables, option by option."""
    parser = build_parser()
    ns = parser.parse_args(env_arguments("SALLOC_", SALLOC_VARIABLES, environ))
    for key, value in vars(parser.parse_args(argv)).items():
        if value is not None and value != []:
            setattr(ns, key, value)
    return ns


def main_args(argv: list[str]) -> int:
    ns = parse_options(argv)
    from ..client import Client
    from .allocation import allocate, allocation_environment, release
    from .sbatch import spec_from_args
    client = Client()
    command = [ns.command, *ns.args] if ns.command else [os.environ.get("SHELL", "/bin/sh")]
    ns.script, ns.script_args, ns.name = None, [], ns.name or os.path.basename(command[0])
    spec = spec_from_args(ns, "", os.getcwd())
    job = allocate(client, spec, PROG, quiet=bool(ns.quiet), immediate=ns.immediate)
    code = 0
    try:  # from here on, whatever goes wrong, the allocation is given back
        env = dict(os.environ, **allocation_environment(job, client.cfg))
        if not ns.no_shell:
            code = subprocess.call(command, env=env)
    except FileNotFoundError:
        sys.stderr.write(f"{PROG}: error: {command[0]}: command not found\n")
        code = 127
    finally:
        if not ns.quiet:
            sys.stderr.write(f"{PROG}: Relinquishing job allocation {job.job_id}\n")
        release(client, job.job_id, exit_code=max(code, 0), exit_signal=-code if code < 0 else 0)
    return code if code >= 0 else 128 - code


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
