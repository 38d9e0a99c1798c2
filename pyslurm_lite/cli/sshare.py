"""sshare: fair-share standing per account and user — shares, decayed usage, the factor."""

from __future__ import annotations


from .common import SlurmArgParser, run, split_list, write_lines

PROG = "sshare"
HEADER = ("             Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n"
          "-------------------- ---------- ---------- ----------- ----------- ------------- ---------- ")
NAMES = "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare|"


def cells(r) -> list[str]:
    """Slurm's values: the root line has no RawShares and no FairShare; users are indented."""
    depth = 0 if r.account == "root" and not r.user else 1
    account = " " * depth + r.account
    raw = "" if depth == 0 else str(r.raw_shares)
    fair = f"{r.fairshare:.6f}" if r.user else ""
    return [account, r.user, raw, f"{r.norm_shares:.6f}", str(int(r.raw_usage)),
            f"{r.effective_usage:.6f}", fair]


def main_args(argv: list[str]) -> int:
    p = SlurmArgParser(prog=PROG, add_help=False)
    p.add_argument("-u", "--users", action="append")
    p.add_argument("-a", "--all", action="store_true")
    p.add_argument("-n", "-h", "--noheader", action="store_true")
    p.add_argument("-p", "--parsable", action="store_true")  # '|' after the last field too
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("--help", action="help")
    ns = p.parse_args(argv)
    from ..client import Client
    rows = Client().shares(split_list(ns.users))
    # With -M, Slurm names the cluster above its report, whatever -n says.
    out = [f"CLUSTER: {name}" for name in ns.clusters or []]
    if ns.parsable or ns.parsable2:
        if not ns.noheader:
            out.append(NAMES if ns.parsable else NAMES[:-1])
        out += ["|".join(cells(r)) + ("|" if ns.parsable else "") for r in rows]
    else:
        if not ns.noheader:
            out.append(HEADER)
        for r in rows:
            a, u, raw, norm, usage, eff, fair = cells(r)
            out.append(f"{a:<20} {u:>10} {raw:>10} {norm:>11} {usage:>11} {eff:>13} {fair:>10} ")
    write_lines(out)
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
