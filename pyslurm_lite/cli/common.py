"""What every CLI shares: the error boundary (clear message, exit code, never a traceback) and
Slurm-style argument parsing that prints Slurm's messages."""

from __future__ import annotations

import argparse
import os
import re
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


# Slurm's exit status for a bad option: the job commands share slurm_opt.c (255); the others
# exit(1) from their own getopt loop.
OPTION_ERROR_EXIT = {"sbatch": 255, "srun": 255, "salloc": 255}
NO_TRY_HELP = frozenset({"sacct"})  # its getopt loop adds no 'Try "sacct --help"' line
# argparse's words for an option given without its argument ("argument -p/--partition: ...")
_MISSING_ARGUMENT = re.compile(r"argument (-\S+): expected one argument$")
# -M's input variables: the command's own, else SLURM_CLUSTERS (the command line wins). sbatch's
# and salloc's own (SBATCH_CLUSTERS, SALLOC_CLUSTERS) come in with their other variables.
CLUSTERS_VARIABLES = {"squeue": "SQUEUE_CLUSTERS", "sinfo": "SINFO_CLUSTERS"}


class SlurmArgParser(argparse.ArgumentParser):
    """argparse that parses and reports like Slurm's getopt_long: a long option may be given by
    any unambiguous prefix (`sacct --job 3`, which workflow tools rely on); "prog: unrecognized
    option '--x'" and Slurm's exit status. Every command also gets what all of Slurm's share:
    --usage, -V/--version, -M/--clusters, and --help in Slurm's layout (usage.py)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", True)
        super().__init__(*args, **kwargs)
        self._slurm_options_added = False

    def parse_known_args(self, args=None, namespace=None):
        self._add_slurm_options()
        self._argv = list(sys.argv[1:] if args is None else args)  # for error(): what was typed
        ns, rest = super().parse_known_args(args, namespace)
        if getattr(ns, "clusters", None) is None and \
                isinstance(self._option_string_actions.get("--clusters"), _ClustersAction):
            names = os.environ.get(CLUSTERS_VARIABLES.get(self.prog, ""), "") or \
                os.environ.get("SLURM_CLUSTERS", "")
            if names:
                ns.clusters = resolve_clusters(self.prog, names)
        return ns, rest

    def format_help(self) -> str:
        from .usage import help_text
        self._add_slurm_options()
        return help_text(self) or super().format_help()

    def _add_slurm_options(self) -> None:
        """Added last, at the first parse, so a command's own use of a letter wins."""
        if self._slurm_options_added:
            return
        self._slurm_options_added = True
        free = lambda *names: [n for n in names if n not in self._option_string_actions]
        if free("--usage"):
            self.add_argument("--usage", action=_UsageAction)
        if free("-V", "--version"):
            self.add_argument(*free("-V", "--version"), action=_VersionAction)
        if "--clusters" not in self._option_string_actions:
            self.add_argument(*free("-M", "--clusters", "--cluster"), action=_ClustersAction,
                              dest="clusters", metavar="names")

    def _get_option_tuples(self, option_string):
        """Prefix matches, one per option: getopt_long finds no ambiguity among names of one
        option (`--clus` is --cluster and --clusters, both -M); argparse would."""
        seen, unique = set(), []
        for match in super()._get_option_tuples(option_string):
            if id(match[0]) not in seen:
                seen.add(id(match[0]))
                unique.append(match)
        return unique

    def error(self, message: str):
        try_help = "" if self.prog in NO_TRY_HELP else \
            f'Try "{self.prog} --help" for more information\n'
        if message.startswith("unrecognized arguments:"):
            bad = message.split(":", 1)[1].strip().split()[0]
            what = f"invalid option -- '{bad[1]}'" if re.match(r"-[^-]", bad) \
                else f"unrecognized option '{bad}'"  # glibc's two wordings
            sys.stderr.write(f"{self.prog}: {what}\n{try_help}")
        elif message.startswith("ambiguous option:"):  # glibc getopt_long's words
            bad, _, matches = message.split(":", 1)[1].strip().partition(" could match ")
            names = " ".join(f"'{m.strip()}'" for m in matches.split(","))
            sys.stderr.write(f"{self.prog}: option '{bad.split('=')[0]}' is ambiguous; "
                             f"possibilities: {names}\n{try_help}")
        elif _MISSING_ARGUMENT.match(message):
            names = _MISSING_ARGUMENT.match(message).group(1).split("/")
            sys.stderr.write(f"{self.prog}: {self._missing_argument(names)}\n{try_help}")
        else:
            sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(OPTION_ERROR_EXIT.get(self.prog, 1))

    def _missing_argument(self, names: list[str]) -> str:
        """glibc getopt's words for the option the user typed without its argument: the
        letter of a short one (also last in a cluster, -vp), else the long option's full name
        (getopt_long prints the name, not the prefix that was typed)."""
        longs = [n for n in names if n.startswith("--")]
        letters = {n[1] for n in names if re.fullmatch(r"-[^-]", n)}
        for token in reversed(getattr(self, "_argv", [])):
            typed = token.split("=", 1)[0]
            if typed.startswith("--"):
                full = typed if typed in longs else next(
                    (n for n in longs if n.startswith(typed) and len(typed) > 2), None)
                if full:
                    return f"option '{full}' requires an argument"
            elif re.fullmatch(r"-[^-].*", token) and token[-1] in letters:
                return f"option requires an argument -- '{token[-1]}'"
        if longs:
            return f"option '{longs[0]}' requires an argument"
        return f"option requires an argument -- '{names[0].lstrip('-')[:1]}'"


class _UsageAction(argparse.Action):
    """--usage: Slurm's short usage block, exit 0."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from .usage import usage_text
        sys.stdout.write(usage_text(parser))
        parser.exit(0)


class _VersionAction(argparse.Action):
    """-V/--version: "slurm 22.05.8", the one line clients parse (see usage.SLURM_VERSION)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from .usage import VERSION_LINE
        sys.stdout.write(VERSION_LINE)
        parser.exit(0)


class _ClustersAction(argparse.Action):
    """-M/--clusters NAMES: the names that are this cluster (ClusterName), 'all' being all of
    them; refused as Slurm's slurmdb_get_info_cluster() refuses names its database lacks."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, resolve_clusters(parser.prog, values))


def resolve_clusters(prog: str, names: str) -> list[str]:
    """'all', or a comma-separated list: the cluster names among them that are ours. A name we
    do not know gets Slurm's "No cluster 'x' known by database."; none known: Slurm's error and
    exit 1."""
    from ..config import load_shared as load
    ours = load().cluster_name
    if names.strip().lower() == "all":
        return [ours]
    found = []
    for name in dict.fromkeys(n.strip().lower() for n in names.split(",") if n.strip()):
        if name == ours.lower():
            found.append(ours)
        else:
            sys.stderr.write(f"{prog}: error: No cluster '{name}' known by database.\n")
    if not found:
        fail(prog, f"'{names}' can't be reached now, or it is an invalid entry for --cluster.  "
                   "Use 'sacctmgr list clusters' to see available clusters.")
    return found


def cluster_banner(ns) -> list[str]:
    """Slurm's "CLUSTER: name" line, one per cluster named by -M, unless headers are off."""
    if not getattr(ns, "clusters", None) or getattr(ns, "noheader", False):
        return []
    return [f"CLUSTER: {name}" for name in ns.clusters]


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
