"""sshare's view of fair share: per account and user, shares, usage and the factor.

Shares are equal among the users seen (RawShares=1 each, as `sacctmgr` gives by default); usage
is the decayed CPU-seconds the store keeps (priority/multifactor charges it when jobs end);
FairShare is the classic 2^(-EffectvUsage/NormShares) that sprio's fair-share factor uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sched import priority as prio

ROOT = "root"


@dataclass
class ShareRow:
    account: str
    user: str = ""
    raw_shares: int = 1
    norm_shares: float = 0.0
    raw_usage: float = 0.0
    effective_usage: float = 0.0
    fairshare: float = 0.0


def share_rows(usage: dict[str, float], known: set[tuple[str, str]], only_users: list[str]) -> list[ShareRow]:
    """The root line, then each account's line and its users' lines. Users with usage but no job
    in memory sit under root."""
    accounts: dict[str, set[str]] = {}
    for account, user in known:
        accounts.setdefault(account or ROOT, set()).add(user)
    placed = set().union(*accounts.values()) if accounts else set()
    for user in usage:
        if user not in placed:
            accounts.setdefault(ROOT, set()).add(user)
    users = sorted(set().union(*accounts.values())) if accounts else []
    total = sum(usage.values())
    factors = prio.fairshare(usage, users)
    norm = 1.0 / max(len(users), 1)
    rows = [ShareRow(ROOT, "", 0, 1.0, round(total), 1.0 if total else 0.0, 0.0)]
    for account in sorted(accounts):
        members = sorted(accounts[account])
        used = sum(usage.get(u, 0.0) for u in members)
        if account != ROOT:
            rows.append(ShareRow(account, "", len(members), norm * len(members), round(used),
                                 used / total if total else 0.0, 0.0))
        for user in members:
            if only_users and user not in only_users:
                continue
            u = usage.get(user, 0.0)
            rows.append(ShareRow(account, user, 1, norm, round(u), u / total if total else 0.0,
                                 factors.get(user, 1.0)))
    return rows
