"""What every CLI shares: the error boundary (clear message, exit code, never a traceback) and
Slurm-style argument parsing that prints Slurm's messages."""

from __future__ import annotations

import argparse
import sys

from ..errors import SlurmError


class SlurmArgParser(argparse.ArgumentParser):
    """argparse that reports like Slurm: "prog: unrecognized option '--x'" and exit 255."""

    def error(self, message: str):
        if message.startswith("unrecognized arguments:"):
            bad = message.split(":", 1)[1].strip().split()[0]
            sys.stderr.write(f"{self.prog}: unrecognized option '{bad}'\n"
                             f'Try "{self.prog} --help" for more information\n')
        else:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(255)


def fail(prog: str, message: str, code: int = 1):
    for line in message.splitlines() or [""]:
        sys.stderr.write(f"{prog}: error: {line}\n")
    sys.exit(code)


def run(prog: str, fn, argv=None) -> None:
    """Call fn(argv); map domain errors to 'prog: error: ...' and exit 1."""
    try:
        code = fn(sys.argv[1:] if argv is None else argv)
    except SlurmError as e:
        fail(prog, e.message, getattr(e, "exit_code", 1))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    sys.exit(code or 0)


def split_list(values) -> list[str]:
    """'-j 1,2 -j 3' style repeated, comma-separated values to one flat list."""
    out: list[str] = []
    for v in values or []:
        out += [x for x in v.split(",") if x]
    return out
