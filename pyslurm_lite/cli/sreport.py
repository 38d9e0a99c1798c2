"""sreport: `cluster utilization` and `user topusage` as Slurm 22.05's sreport prints them.

The figures (cli/sreport_usage.py) come from the job records sacct reads and the controller's
nodes; this module holds sreport's command line: getopt options anywhere (-n -p -P -t -T ...),
the report words matched by prefix as sreport does, conditions (Start=, End=, Format=,
Clusters=, Users=, Accounts=, TopCount=, Group), the title block (kept with -p/-P, dropped by
-n), and print_fields' columns. Other reports (AccountUtilizationByUser, job sizes,
reservations) and the interactive mode are refused with a message.
"""

from __future__ import annotations

import getopt
import os
import sys
from dataclasses import dataclass, field

from . import sreport_usage as su
from .common import run
from .slurmtime import TimeSpecError, parse_time

PROG = "sreport"
RULE = "-" * 80
TIME_FORMATS = [  # (word, shortest prefix, Slurm's name, divisor, with percentage)
    ("secper", 6, "Seconds/Percentage of Total", 1, True),
    ("minper", 6, "Minutes/Percentage of Total", 60, True),
    ("hourper", 6, "Hours/Percentage of Total", 3600, True),
    ("seconds", 1, "Seconds", 1, False), ("minutes", 1, "Minutes", 60, False),
    ("hours", 1, "Hours", 3600, False), ("percent", 1, "Percentage of Total", 0, True),
]
USAGE = """\
sreport [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -h or --help: equivalent to "help" command
     -n or --noheader: equivalent to "noheader" command
     -p or --parsable: output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -t <time_format>: Second, Minute, Hour, Percent, SecPer, MinPer, HourPer
     -T or --tres: comma separated list of TRES, or 'ALL' for all TRES
     -V or --version: equivalent to "version" command

    Valid report types here are:
     cluster Utilization [Start=<OPT>] [End=<OPT>] [Format=<OPT>] [Clusters=<OPT>]
     user TopUsage [Start=<OPT>] [End=<OPT>] [Users=<OPT>] [Accounts=<OPT>]
                   [TopCount=<OPT>] [Group] [Format=<OPT>] [Clusters=<OPT>]
    Start and End default to 00:00:00 of the previous day and of today.
"""


@dataclass
class Opts:
    parsable: int = 0  # 0, 1: '|' after every field (-p), 2: between fields (-P)
    header: bool = True
    time_name: str = "Minutes"
    divisor: int = 60  # 0: percent only
    per: bool = False  # a percentage is printed (Percent, *Per)
    tres: list[str] = field(default_factory=lambda: ["cpu"])
    tres_given: bool = False
    sort_by_time: bool = True
    clusters: list[str] = field(default_factory=list)  # -M: added to each report's Clusters=
    exit_code: int = 0


def prefix(word: str, full: str, shortest: int) -> bool:
    """Slurm's xstrncasecmp(full, word, MAX(len(word), shortest)) == 0."""
    return len(word) >= shortest and full.lower().startswith(word.lower())


# ---- options ----------------------------------------------------------------------------------
def set_time_format(o: Opts, word: str) -> None:
    for name, shortest, text, divisor, per in TIME_FORMATS:
        if prefix(word, name, shortest):
            o.time_name, o.divisor, o.per = text, divisor, per
            return
    sys.stderr.write(f"unknown time format {word}\n")  # sreport goes on in minutes, as here


def set_tres(o: Opts, text: str) -> None:
    """-T/--tres (else SREPORT_TRES): TRES by name, 'ALL'; unknown names are skipped."""
    wanted: list[str] = []
    for word in filter(None, text.split(",")):
        if word.lower() == "all":
            wanted = list(su.ALL_TRES)
            break
        if word.lower() in su.ALL_TRES and word.lower() not in wanted:
            wanted.append(word.lower())
    if not wanted:
        fatal("No valid TRES given")
    if "node" in wanted and o.per:
        fatal("TRES node usage is no longer reported in percent format reports.  "
              "Please use TRES CPU instead.")
    o.tres, o.tres_given = wanted, True


def fatal(message: str) -> None:
    sys.stderr.write(f"{PROG}: fatal: {message}\n")
    sys.exit(1)


LONG = ["all_clusters", "cluster=", "federation", "help", "immediate", "local", "noheader",
        "parsable", "parsable2", "quiet", "sort=", "tres=", "usage", "verbose", "version"]


def parse_options(argv: list[str]) -> tuple[Opts, list[str]]:
    try:
        pairs, words = getopt.gnu_getopt(argv, "aM:hnpPQs:t:T:vV", LONG)
    except getopt.GetoptError as e:
        sys.stderr.write(f"{PROG}: {e.msg}\nTry \"sreport --help\" for more information\n")
        sys.exit(1)
    o, tres = Opts(), os.environ.get("SREPORT_TRES")
    for opt, arg in pairs:
        if opt in ("-h", "--help", "--usage"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        if opt in ("-V", "--version"):
            from .usage import VERSION_LINE
            sys.stdout.write(VERSION_LINE)
            sys.exit(0)
        if opt in ("-n", "--noheader"):
            o.header = False
        elif opt in ("-p", "--parsable"):
            o.parsable = 1
        elif opt in ("-P", "--parsable2"):
            o.parsable = 2
        elif opt in ("-t",):
            set_time_format(o, arg)
        elif opt in ("-T", "--tres"):
            tres = arg
        elif opt in ("-s", "--sort"):
            o.sort_by_time = not prefix(arg, "name", 1)
        elif opt in ("-M", "--cluster"):
            o.clusters += split(arg)
        elif opt in ("-a", "--all_clusters", "--federation", "--local"):
            pass  # one cluster here, no federation: each of these selects it
        else:  # -Q, -v, --immediate: nothing to quieten, log or confirm here
            pass
    if tres:
        set_tres(o, tres)
    return o, words


# ---- printing (print_fields) ------------------------------------------------------------------
@dataclass
class Col:
    name: str
    width: int  # negative: left-justified
    kind: str  # "str", "time", "count"
    key: str


def render(cols: list[Col], values: list[str], o: Opts, header: bool = False) -> str:
    out = []
    for i, (c, v) in enumerate(zip(cols, values)):
        last = i == len(cols) - 1
        if o.parsable:
            out.append(v if (o.parsable == 2 and last) else v + "|")
            continue
        size = abs(c.width)
        if c.kind == "str" and not header and len(v) > size:
            v = v[:size - 1] + "+"
        v = v[:size]
        out.append((v.rjust(size) if c.width > 0 else v.ljust(size)) + " ")
    return "".join(out)


def header_lines(cols: list[Col], o: Opts) -> list[str]:
    if not o.header:
        return []
    lines = [render(cols, [c.name for c in cols], o, header=True)]
    if not o.parsable:
        lines.append("".join("-" * abs(c.width) + " " for c in cols))
    return lines


def show_time(value: float, total: float, o: Opts) -> str:
    """slurmdb_report_print_time."""
    percent = value / (total or 1) * 100
    if not o.divisor:
        return f"{percent:.2f}%"
    amount = f"{int(value)}" if o.divisor == 1 else f"{value / o.divisor:.0f}"
    return f"{amount}({percent:.2f}%)" if o.per else amount


def usage_width(largest: float, o: Opts) -> int:
    """sreport_set_usage_col_width: 8 columns up to 99999999 seconds, one more per digit."""
    width, order = 8, 100_000_000
    while largest >= order and width < 25:
        width, order = width + 1, order * 10
    return width + (9 if o.per and o.divisor else 0)


def title(o: Opts, name: str, window: tuple[float, float], extra: str = "") -> list[str]:
    if not o.header:
        return []
    from ..units import format_timestamp
    unit = "TRES" if o.tres_given else "CPU"
    reported = f"Usage reported in {o.time_name}" if (o.per and not o.divisor) else \
        f"Usage reported in {unit} {o.time_name}"
    return [RULE, f"{name} {format_timestamp(window[0])} - {format_timestamp(window[1] - 1)}{extra}",
            reported, RULE]


def columns(words: list[str], table: list[tuple], o: Opts) -> list[Col]:
    """Format= words to columns, by Slurm's prefix rules, in the table's order of checks."""
    cols = []
    for item in words:
        word, _, width = item.partition("%")
        for full, shortest, name, size, kind in table:
            if prefix(word, full, shortest):
                size = size + 9 if (kind == "time" and o.per and o.divisor and size) else size
                cols.append(Col(name, int(width) if width.strip().isdigit() and int(width)
                                else size, kind, full))
                break
        else:
            o.exit_code = 1
            sys.stderr.write(f" Unknown field '{word}'\n")
    return cols


# ---- conditions -------------------------------------------------------------------------------
@dataclass
class Cond:
    start: float = 0.0
    end: float = 0.0
    format: list[str] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    top: int = 10
    group: bool = False


def parse_conditions(words: list[str], o: Opts, now: float, for_users: bool) -> Cond:
    c = Cond()
    for w in words:
        key, eq, value = w.partition("=")
        if not eq and prefix(key, "all_clusters", 1):
            continue
        if for_users and not eq and prefix(key, "group", 1):
            c.group = True
        elif not eq and not for_users:
            c.clusters += split(w)
        elif for_users and (not eq or prefix(key, "users", 1)):
            c.users += split(value if eq else w)
        elif for_users and (prefix(key, "accounts", 2) or prefix(key, "acct", 4)):
            c.accounts += split(value)
        elif prefix(key, "clusters", 1):
            c.clusters += split(value)
        elif prefix(key, "end", 1):
            c.end = when(value, now)
        elif prefix(key, "format", 1):
            c.format += split(value)
        elif prefix(key, "start", 1):
            c.start = when(value, now)
        elif for_users and prefix(key, "topcount", 1):
            c.top = top_count(value, o)
        else:
            o.exit_code = 1
            sys.stderr.write(f" Unknown condition: {w}\nUse keyword set to modify value\n")
    return c


def split(text: str) -> list[str]:
    return [x for x in text.split(",") if x]


def when(text: str, now: float) -> float:
    try:
        return parse_time(text, now)
    except TimeSpecError as e:
        sys.stderr.write(f"{e}\n")
        sys.exit(1)


def top_count(text: str, o: Opts) -> int:
    if text.isdigit():
        return int(text)
    o.exit_code = 1
    sys.stderr.write(f"Invalid TopCount '{text}'\n")
    return 10


# ---- the reports ------------------------------------------------------------------------------
def dispatch(words: list[str], o: Opts) -> int:
    if not words:
        sys.stderr.write(f"{PROG}: error: the interactive mode is not supported by pyslurm-lite; "
                         "give a report on the command line\n")
        return 1
    kind, rest = words[0], words[1:]
    if prefix(kind, "help", 2):
        sys.stdout.write(USAGE)
        return 0
    if prefix(kind, "version", 4):
        from .usage import VERSION_LINE
        sys.stdout.write(VERSION_LINE)
        return 0
    if prefix(kind, "cluster", 2) or prefix(kind, "user", 1):
        if not rest:
            sys.stderr.write(f"too few arguments for keyword:{kind}\n")
            return 1
        if prefix(kind, "user", 1):
            return user_report(rest, o)
        return cluster_report(rest, o)
    if prefix(kind, "job", 1) or prefix(kind, "reservation", 2) or prefix(kind, "resv", 2):
        sys.stderr.write(f"{PROG}: error: {kind} reports are not supported by pyslurm-lite\n")
        return 1
    sys.stderr.write(f"invalid keyword: {kind}\n")
    return 1


def leading(word: str, full: str, n: int) -> bool:
    """Slurm's xstrncasecmp(word, full, n) == 0: the first n characters agree."""
    return len(word) >= min(n, len(full)) and word[:n].lower() == full[:n].lower()


# sreport's cluster reports in its order of checks: (name, characters compared, ours)
CLUSTER_REPORTS = [("AccountUtilizationByUser", 1, False), ("UserUtilizationByAccount", 18, False),
                   ("UA", 2, False), ("UserUtilizationByWckey", 18, False), ("UW", 2, False),
                   ("Utilization", 2, True), ("WCKeyUtilizationByUser", 1, False)]


def cluster_report(words: list[str], o: Opts) -> int:
    report = words[0]
    found = next((r for r in CLUSTER_REPORTS if leading(report, r[0], r[1])), None)
    if found is None:
        sys.stderr.write(f"Not valid report {report}\nValid cluster reports are, "
                         '"AccountUtilizationByUser", "UserUtilizationByAccount", '
                         '"UserUtilizationByWckey", "Utilization", and "WCKeyUtilizationByUser"\n')
        return 1
    if not found[2]:
        sys.stderr.write(f"{PROG}: error: cluster {found[0]} is not supported by pyslurm-lite "
                         "(cluster Utilization and user TopUsage are)\n")
        return 1
    if "node" in o.tres:
        fatal("TRES node usage is no longer reported in the Cluster Utilization report.  "
              "Please use TRES CPU instead.")
    from .sreport_reports import cluster_utilization
    return cluster_utilization(words[1:], o)


def user_report(words: list[str], o: Opts) -> int:
    if leading(words[0], "Top", 1):
        from .sreport_reports import user_top
        return user_top(words[1:], o)
    sys.stderr.write(f'Not valid report {words[0]}\nValid user reports are, "Top"\n')
    return 1


def main_args(argv: list[str]) -> int:
    o, words = parse_options(argv)
    return dispatch(words, o) or o.exit_code


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()

