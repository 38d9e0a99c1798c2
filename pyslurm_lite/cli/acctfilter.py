"""sacct's filters on what a job asked for and was given: -q QOS, -g groups, -N nodes it ran on,
-i node counts, -I CPU counts, -k/-K time limits; and -T, which cuts a run's times to the window.

Each filter keeps a run by the value sacct prints for it (NNodes, AllocCPUS, Timelimit, QOS, GID,
NodeList), so what a filter selects is what the listing shows. The option texts are read as
Slurm's sacct reads them (src/sacct/options.c, 22.05), with its messages and exit status:

    -i 2       exactly 2 nodes            -i 2-4   2 to 4 nodes        -i '*'  any
    -k 10      a limit of exactly 10 min  -k 10 -K 1:00:00   10 to 60 minutes
    -K alone   no filter (Slurm: "Ignored by itself")
    -N node[1-2]  jobs with an allocation on node1 or node2 (and so not pending ones)

Must not: talk to the controller (the runs come from sacct.py).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from ..errors import SlurmError
from ..model import UNLIMITED
from ..units import parse_time_limit

PROG = "sacct"
INT_MAX = 2**31 - 1


def fatal(message: str) -> None:
    """Slurm's fatal(): "sacct: fatal: ...", exit 1."""
    sys.stderr.write(f"{PROG}: fatal: {message}\n")
    sys.exit(1)


def error_exit(*lines: str) -> None:
    for line in lines:
        sys.stderr.write(f"{PROG}: error: {line}\n")
    sys.exit(1)


@dataclass
class RunFilter:
    """Empty or 0: no filter on that value. Ranges are inclusive; a max of 0 means min exactly."""

    qos: set[str] = field(default_factory=set)
    gids: set[int] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)
    nodes_min: int = 0
    nodes_max: int = 0
    cpus_min: int = 0
    cpus_max: int = 0
    timelimit_min: int = 0  # minutes, UNLIMITED for "UNLIMITED"
    timelimit_max: int = 0

    def active(self) -> bool:
        return bool(self.qos or self.gids or self.nodes or self.nodes_min or self.cpus_min
                    or self.timelimit_min)


# ---- option texts -----------------------------------------------------------------------------
def _count(text: str, arg: str, what: str, first: bool) -> int:
    """One end of a range; errors name the whole argument, as Slurm's do."""
    m = re.fullmatch(r"([0-9]{1,12})([kKmM]?)", text)
    if not m or (not first and int(m.group(1)) == 0):
        error_exit(f'Invalid numeric value "{arg}" for {what}.')
    value = int(m.group(1)) * {"": 1, "k": 1024, "m": 1048576}[m.group(2).lower()]
    if value > INT_MAX:
        error_exit(f"Numeric argument ({value}) to big for {what}.")  # sic, Slurm's spelling
    return value


def parse_range(text: str, what: str) -> tuple[int, int]:
    """get_resource_arg_range: "N", "N-M", "*" or "" (any) -> (min, max); max 0: exactly min."""
    if text in ("", "*"):
        return 1, INT_MAX
    low, dash, high = text.partition("-")
    return _count(low, text, what, True), (_count(high, text, what, False) if dash else 0)


def parse_limit(text: str) -> int:
    """time_str2mins: a time limit in minutes; 0 or malformed is fatal, as in sacct."""
    try:
        minutes = parse_time_limit(text)
    except SlurmError:
        minutes = 0
    if minutes <= 0 and minutes != UNLIMITED:
        fatal("Invalid time limit specification")
    return minutes


def parse_gids(values: list[str]) -> set[int]:
    """-g: group names or ids; one unknown group ends sacct ("Invalid group id: x")."""
    import grp
    gids = set()
    for name in values:
        if re.fullmatch(r"[0-9]{1,10}", name):
            gids.add(int(name))
            continue
        try:
            gids.add(grp.getgrnam(name).gr_gid)
        except KeyError:
            error_exit(f"Invalid group id: {name}")
    return gids


def parse_qos(values: list[str], known: list[str]) -> set[str]:
    """-q: QOS names the configuration defines (sacctmgr's list in Slurm)."""
    by_lower = {q.lower(): q for q in known}
    for name in values:
        if name.lower() not in by_lower:
            sys.stderr.write(f"{PROG}: error: You gave a bad qos '{name}'. Valid QOS's are "
                             f"{','.join(known)}\n")
            fatal("problem processing qos list")
    return {by_lower[n.lower()] for n in values}


def parse_nodes(values: list[str]) -> set[str]:
    """-N: one hostlist; a second -N is refused as Slurm's sacct refuses it (the first stays)."""
    from ..config import expand
    from ..errors import ConfigError
    if not values:
        return set()
    for _ in values[1:]:
        sys.stderr.write(f"{PROG}: error: Already asked for nodes '{values[0]}'\n")
    try:
        return set(expand(values[0], "-N/--nodelist"))
    except ConfigError as e:
        error_exit(str(e))


def build(ns) -> RunFilter:
    """All but -q, which needs the QOS list (sacct reads it once it reaches the database)."""
    from .common import split_list
    f = RunFilter(gids=parse_gids(split_list(ns.group)), nodes=parse_nodes(ns.nodelist or []))
    if ns.nnodes is not None:
        f.nodes_min, f.nodes_max = parse_range(ns.nnodes, "requested node range")
    if ns.ncpus is not None:
        f.cpus_min, f.cpus_max = parse_range(ns.ncpus, "requested cpu range")
    if ns.timelimit_min is not None:
        f.timelimit_min = parse_limit(ns.timelimit_min)
    if ns.timelimit_max is not None:
        f.timelimit_max = parse_limit(ns.timelimit_max)
    return f


# ---- selection --------------------------------------------------------------------------------
def _in_range(value: int, low: int, high: int) -> bool:
    if not low:
        return True
    return low <= value <= high if high else value == low


def keep(rec, f: RunFilter) -> bool:
    """Whether the job line of this run (an acctfields.Rec without a step) passes every filter."""
    from . import acctfields as af
    job, spec = rec.job, rec.job.spec  # scalars only: as recorded (acctfields.Rec)
    if f.qos and (spec.qos or "normal") not in f.qos:
        return False
    if f.gids and spec.gid not in f.gids:
        return False
    if f.nodes and not (f.nodes & {a.node for a in job.allocations} if job.start_time else False):
        return False
    if not _in_range(int(af.value("NNodes", rec)), f.nodes_min, f.nodes_max):
        return False
    if not _in_range(af.alloc_cpus(rec), f.cpus_min, f.cpus_max):
        return False
    return _limit_in_range(job.time_limit, f.timelimit_min, f.timelimit_max)


def _limit_in_range(limit: int, low: int, high: int) -> bool:
    """Slurm stores UNLIMITED as its largest number: it sorts above every finite limit."""
    as_db = lambda m: 2**32 - 2 if m == UNLIMITED else m  # noqa: E731 - Slurm's INFINITE
    return _in_range(as_db(limit), as_db(low), as_db(high) if high else 0)
