"""sshare: fair-share standing per account and user over the account tree — shares, decayed
usage (RawUsage: billing-seconds), Fair Tree's LevelFS and the factor. Slurm's fields, widths and
default field lists (Fair Tree: -l adds NormUsage, LevelFS, GrpTRESMins, TRESRunMins; classic
has no LevelFS)."""

from __future__ import annotations

import math
import os
import pwd
import sys

from .common import SlurmArgParser, fail, run, split_list, write_lines

PROG = "sshare"
# name, width (negative: left-aligned), kind: Slurm's print_fields table
FIELDS = {
    "account": ("Account", -20, "account"), "cluster": ("Cluster", 10, "str"),
    "effectvusage": ("EffectvUsage", 13, "double"), "fairshare": ("FairShare", 10, "double"),
    "levelfs": ("LevelFS", 10, "double"), "normshares": ("NormShares", 11, "double"),
    "normusage": ("NormUsage", 11, "double"), "rawshares": ("RawShares", 10, "shares"),
    "rawusage": ("RawUsage", 11, "usage"), "user": ("User", 10, "str"),
    "grptresmins": ("GrpTRESMins", 30, "tres"), "tresrunmins": ("TRESRunMins", 30, "tres"),
}
ATTR = {"account": "account", "cluster": "", "effectvusage": "effective_usage", "fairshare": "fairshare",
        "levelfs": "level_fs", "normshares": "norm_shares", "normusage": "norm_usage",
        "rawshares": "raw_shares", "rawusage": "raw_usage", "user": "user",
        "grptresmins": "grp_tres_mins", "tresrunmins": "tres_run_mins"}
SHORT = "account,user,rawshares,normshares,rawusage,effectvusage,fairshare"
LONG_FAIR_TREE = ("account,user,rawshares,normshares,rawusage,normusage,effectvusage,fairshare,levelfs,"
                  "grptresmins,tresrunmins")
LONG_CLASSIC = ("account,user,rawshares,normshares,rawusage,normusage,effectvusage,fairshare,"
                "grptresmins,tresrunmins")


def field_names(spec: str) -> list[str]:
    """-o/--format: names matched by prefix, case-insensitive, as Slurm's strncasecmp; "%N" widths
    are dropped (the fixed widths stay)."""
    out = []
    for word in filter(None, (w.strip().split("%")[0].lower() for w in spec.split(","))):
        match = next((k for k in FIELDS if k.startswith(word)), None)
        if match is None:
            fail(PROG, f'Invalid field requested: "{word}"')
        out.append(match)
    return out


def cell(row, key: str, depths: dict[str, int], cluster: str) -> str:
    name, _, kind = FIELDS[key]
    value = cluster if key == "cluster" else getattr(row, ATTR[key])
    if kind == "account":  # indented by depth in the tree, users one deeper than their account
        return " " * (depths.get(row.account, 0) + (1 if row.user else 0)) + row.account
    if kind == "shares":
        return "" if value < 0 else str(value)
    if kind == "usage":
        return str(int(value))
    if kind == "double":
        return "" if math.isnan(value) else f"{value:f}"
    return value


def account_depths(rows) -> dict[str, int]:
    parents = {r.account: r.parent for r in rows if not r.user}
    depths: dict[str, int] = {}
    for account in parents:
        d, a, seen = 0, account, set()
        while parents.get(a) and a not in seen:
            seen.add(a)
            a, d = parents[a], d + 1
        depths[account] = d
    return depths


def fixed(text: str, width: int) -> str:
    w = abs(width)
    if len(text) > w:
        text = text[:w - 1] + "+"
    return f"{text:<{w}} " if width < 0 else f"{text:>{w}} "


def render(rows, keys: list[str], parsable: str, header: bool, cluster: str) -> list[str]:
    depths = account_depths(rows)
    table = [[cell(r, k, depths, cluster) for k in keys] for r in rows]
    names = [FIELDS[k][0] for k in keys]
    out = []
    if parsable:
        end = "|" if parsable == "p" else ""
        if header:
            out.append("|".join(names) + end)
        out += ["|".join(cells) + end for cells in table]
        return out
    widths = [FIELDS[k][1] for k in keys]
    if header:
        # Slurm's sshare header is right-aligned whatever its columns' alignment
        out.append("".join(fixed(n, abs(w)) for n, w in zip(names, widths)))
        out.append("".join("-" * abs(w) + " " for w in widths))
    out += ["".join(fixed(c, w) for c, w in zip(cells, widths)) for cells in table]
    return out


def main_args(argv: list[str]) -> int:
    p = SlurmArgParser(prog=PROG, add_help=False)
    p.add_argument("-u", "--users", action="append")
    p.add_argument("-A", "--accounts", action="append")
    p.add_argument("-a", "--all", action="store_true")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("-U", "--Users", dest="users_only", action="store_true")
    p.add_argument("-o", "--format", action="append")
    p.add_argument("-e", "--helpformat", action="store_true")
    p.add_argument("-m", "--partition", action="store_true")
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("-n", "-h", "--noheader", action="store_true")
    p.add_argument("-p", "--parsable", action="store_true")  # '|' after the last field too
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("--help", action="help")
    ns = p.parse_args(argv)
    if ns.helpformat:
        names = [v[0] for v in FIELDS.values()]
        write_lines([" ".join(f"{n:<12}" for n in names[i:i + 6]).rstrip() for i in range(0, len(names), 6)])
        return 0
    if ns.partition:
        sys.stderr.write(f"{PROG}: warning: -m/--partition is not supported here and is ignored "
                         "(associations have no partition)\n")
    from ..client import Client
    client = Client()
    users = split_list(ns.users)
    accounts = split_list(ns.accounts)
    if not (ns.all or users or accounts):  # as Slurm: your own associations, all accounts
        users = [pwd.getpwuid(os.getuid()).pw_name]
    rows = client.shares(users)
    if accounts:
        rows = [r for r in rows if r.account in accounts]
    if ns.users_only:
        rows = [r for r in rows if r.user]
    if ns.format:
        keys = field_names(",".join(ns.format))
    elif ns.long:
        keys = field_names(LONG_CLASSIC if "NO_FAIR_TREE" in client.cfg.priority_flags else LONG_FAIR_TREE)
    else:
        keys = field_names(SHORT)
    # With -M, Slurm names the cluster above its report, whatever -n says.
    out = [f"CLUSTER: {name}" for name in ns.clusters or []]
    parsable = "P" if ns.parsable2 else "p" if ns.parsable else ""
    out += render(rows, keys, parsable, not ns.noheader, client.cfg.cluster_name)
    write_lines(out)
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
