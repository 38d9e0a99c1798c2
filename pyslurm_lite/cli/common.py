"""What every CLI shares: the error boundary (clear message, exit code, never a traceback) and
Slurm-style argument parsing that prints Slurm's messages."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import SlurmError


class HelpFormatter(argparse.HelpFormatter):
    """argparse's layout, as wide as the terminal, found without importing shutil: argparse
    makes a formatter at every add_argument, and shutil's imports cost a CLI ~3 ms at start."""

    def __init__(self, prog, **kwargs):
        kwargs.setdefault("width", terminal_columns() - 2)
        super().__init__(prog, **kwargs)


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class SlurmArgParser(argparse.ArgumentParser):
    """argparse that parses and reports like Slurm's getopt_long: a long option may be given by
    any unambiguous prefix (`sacct --job 3`, which workflow tools rely on); "prog: unrecognized
    option '--x'" and exit 255."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", True)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        if message.startswith("unrecognized arguments:"):
            bad = message.split(":", 1)[1].strip().split()[0]
            sys.stderr.write(f"{self.prog}: unrecognized option '{bad}'\n"
                             f'Try "{self.prog} --help" for more information\n')
        elif message.startswith("ambiguous option:"):  # glibc getopt_long's words
            bad, _, matches = message.split(":", 1)[1].strip().partition(" could match ")
            names = " ".join(f"'{m.strip()}'" for m in matches.split(","))
            sys.stderr.write(f"{self.prog}: option '{bad.split('=')[0]}' is ambiguous; "
                             f"possibilities: {names}\n"
                             f'Try "{self.prog} --help" for more information\n')
        else:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(255)


def fail(prog: str, message: str, code: int = 1):
    for line in message.splitlines() or [""]:
        sys.stderr.write(f"{prog}: error: {line}\n")
    sys.exit(code)


# Commands that hold streams to agents and wait long: they keep grpcio for their controller
# calls too. The others are short-lived, and start faster on the light transport (client.py).
GRPCIO_COMMANDS = frozenset({"srun", "salloc"})


def run(prog: str, fn, argv=None) -> None:
    """Call fn(argv); map domain errors to 'prog: error: ...' and exit 1."""
    from .. import client
    previous = client.default_transport
    if prog not in GRPCIO_COMMANDS:
        client.default_transport = "h2"
    try:
        code = fn(sys.argv[1:] if argv is None else argv)
    except SlurmError as e:
        fail(prog, e.message, getattr(e, "exit_code", 1))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    finally:
        client.default_transport = previous  # a test calling run() leaves no trace
    sys.exit(code or 0)


def split_list(values) -> list[str]:
    """'-j 1,2 -j 3' style repeated, comma-separated values to one flat list."""
    out: list[str] = []
    for v in values or []:
        out += [x for x in v.split(",") if x]
    return out


def write_lines(lines: list[str]) -> None:
    """Print lines, each ended by a newline; nothing at all for none (as Slurm's listings)."""
    sys.stdout.write("\n".join(lines) + ("\n" if lines else ""))
