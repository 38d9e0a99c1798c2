"""Fair share over the account tree: Slurm's Fair Tree (its default since 19.05) and, with
PriorityFlags=NO_FAIR_TREE, the classic algorithm. Pure: the tree, the usage and the running
jobs' TRES come in, sshare's rows and each user association's factor go out.

Usage is RawUsage: decayed billing-seconds (controller/usage.py). An account's usage is the sum
over everything under it. Among siblings (the children of one account):
  NormShares   RawShares / the siblings' RawShares       (classic: times the parent's NormShares)
  EffectvUsage RawUsage / the parent's RawUsage           (classic: Slurm's formula below)
  LevelFS      NormShares / EffectvUsage (inf when unused, 0 without shares)
Fair Tree ranks users by walking the tree depth first, siblings in decreasing LevelFS (tied
accounts have their children merged and ranked together, tied users share a rank); the first of
N users visited gets FairShare N/N = 1, the next (N-1)/N, and so on: an account that used less
than its share ranks all of its users above the users of an account that used more.

Worked example: root has physics (RawShares 3) and bio (1), each with one user (p, b); p has used
600 billing-seconds and b 400. NormShares: physics 0.75, bio 0.25; EffectvUsage: physics 0.6,
bio 0.4; LevelFS: physics 1.25, bio 0.625. physics goes first: p ranks 2/2 = 1.0, b 1/2 = 0.5.
Classic instead gives each user 2^(-EffectvUsage/NormShares), with NormShares the product down
the path and EffectvUsage = NormUsage + (parent's EffectvUsage - NormUsage) x RawShares / the
siblings' RawShares: physics 0.6 + (1 - 0.6) x 3/4 = 0.9, and p, alone in it, the same: 0.9 over
0.75 -> 0.435; bio 0.4 + (1 - 0.4) x 1/4 = 0.55, b the same: 0.55 over 0.25 -> 0.218.

Jobs are charged and ranked under their association, or, when their (account, user) is none
(AccountingStorageEnforce without associations lets a job name any account), under the user's
default association, else under root (assoc_key). Without accounts beyond root (no sacctmgr
yet) that is every user under root, each with RawShares 1: users equal. Usage recorded under
other keys (before this rule) hangs under its account, made under root if it is gone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import AssocTree, Association

ROOT = "root"
NO_SHARES = -1  # the root line's RawShares: none, printed blank as Slurm does


@dataclass
class ShareRow:
    account: str
    user: str = ""
    raw_shares: int = 1
    norm_shares: float = 0.0
    raw_usage: float = 0.0
    effective_usage: float = 0.0
    fairshare: float = 0.0
    norm_usage: float = 0.0
    level_fs: float = 0.0
    grp_tres_mins: str = ""
    tres_run_mins: str = ""
    parent: str = ""


@dataclass
class _Node:
    assoc: Association
    parent: "_Node | None" = None
    children: list["_Node"] = field(default_factory=list)
    usage: float = 0.0
    norm_shares: float = 0.0
    eff_usage: float = 0.0
    level_fs: float = 0.0
    fairshare: float = 0.0
    norm_usage: float = 0.0

    @property
    def is_user(self) -> bool:
        return bool(self.assoc.user)


def effective_tree(tree: AssocTree | None, keys) -> AssocTree:
    """The tree fair share runs over: `tree` when it has accounts beyond root, else one made of
    the (account, user) `keys` seen (users equal). Users with usage but no association of
    their own are placed under their account (or root) with RawShares 1."""
    has_accounts = tree is not None and any(not a.user and a.account != ROOT for a in tree.assocs.values())
    out = AssocTree(dict(tree.assocs) if has_accounts else {}, dict(tree.default_account) if tree else {},
                    tree.enforce if tree else ())
    out.assocs.setdefault((ROOT, ""), Association(ROOT, "", parent=""))
    members: dict[str, int] = {}
    for account, user in sorted(keys):
        account = account or (tree.default_account.get(user, ROOT) if tree else ROOT)
        if (account, "") not in out.assocs:
            out.assocs[(account, "")] = Association(account, "", parent=ROOT, fairshare=0)
        if user and (account, user) not in out.assocs:
            out.assocs[(account, user)] = Association(account, user, parent=account)
            members[account] = members.get(account, 0) + 1
    for account, count in members.items():  # accounts made here: as many shares as users
        a = out.assocs[(account, "")]
        if a.account != ROOT and a.fairshare == 0:
            a.fairshare = count
    return out


def assoc_key(tree: AssocTree | None, account: str, user: str) -> tuple[str, str]:
    """The association a job of `user` under `account` ("" = the user's default) charges and
    is ranked by: (account, user) when that is an association, else the user's default
    association, else the user under root. Without AccountingStorageEnforce=associations a
    job may name any account; were a pair that is no association charged as itself, naming a
    fresh -A would start the user again from zero usage (fair share reset at will)."""
    assocs = tree.assocs if tree is not None else {}
    if account and (account, user) in assocs:
        return (account, user)
    default = tree.default_account.get(user, "") if tree is not None else ""
    if default and (default, user) in assocs:
        return (default, user)
    return (ROOT, user)


def _build(tree: AssocTree, usage: dict[tuple[str, str], float]) -> _Node:
    nodes = {key: _Node(a) for key, a in tree.assocs.items()}
    root = nodes[(ROOT, "")]
    for key, node in nodes.items():
        a = node.assoc
        if key == (ROOT, ""):
            continue
        up = nodes.get((a.account, "")) if a.user else nodes.get((a.parent or ROOT, ""))
        node.parent = up if up is not None and up is not node else root
        node.parent.children.append(node)
        node.usage = usage.get(key, 0.0) if a.user else 0.0
    for node in nodes.values():  # users before sub-accounts, each by name (sshare's order)
        node.children.sort(key=lambda n: (not n.is_user, n.assoc.user or n.assoc.account))
    _sum_usage(root)
    return root


def _sum_usage(node: _Node) -> float:
    if node.children:
        node.usage += sum(_sum_usage(c) for c in node.children)
    return node.usage


def _levels(node: _Node, total: float, classic: bool) -> None:
    """NormShares, NormUsage, EffectvUsage and LevelFS of every node below `node`."""
    level_shares = sum(max(c.assoc.fairshare, 0) for c in node.children)
    for c in node.children:
        share = max(c.assoc.fairshare, 0) / level_shares if level_shares else 0.0
        c.norm_usage = c.usage / total if total else 0.0
        if classic:
            c.norm_shares = share * node.norm_shares
            c.eff_usage = c.norm_usage + (node.eff_usage - c.norm_usage) * share
        else:
            c.norm_shares = share
            c.eff_usage = c.usage / node.usage if node.usage else 0.0
        sibling_usage = c.usage / node.usage if node.usage else 0.0
        c.level_fs = 0.0 if not share else math.inf if not sibling_usage else share / sibling_usage
        if classic:
            c.fairshare = 2.0 ** (-c.eff_usage / c.norm_shares) if c.norm_shares else 0.0
        _levels(c, total, classic)


def _rank(siblings: list[_Node], counter: list[int], users: int) -> None:
    """Fair Tree: visit siblings by decreasing LevelFS; tied users share a rank, tied accounts
    are ranked as one (their children merged)."""
    ordered = sorted(siblings, key=lambda n: (-n.level_fs, n.is_user, n.assoc.user or n.assoc.account))
    i = 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j].level_fs == ordered[i].level_fs:
            j += 1
        tied = ordered[i:j]
        rank = counter[0]
        for n in (n for n in tied if n.is_user):
            n.fairshare = rank / users if users else 0.0
            counter[0] -= 1
        merged = [c for n in tied if not n.is_user for c in n.children]
        if merged:
            _rank(merged, counter, users)
        i = j


def _walk(node: _Node, depth: int = 0):
    yield node, depth
    for c in node.children:
        yield from _walk(c, depth + 1)


def compute(tree: AssocTree, usage: dict[tuple[str, str], float], classic: bool = False) -> _Node:
    """The tree with every node's figures; `usage`: (account, user) -> RawUsage."""
    root = _build(tree, usage)
    root.norm_usage = 1.0 if root.usage else 0.0
    root.eff_usage = root.norm_usage
    root.norm_shares = 1.0 if classic else 0.0
    _levels(root, root.usage, classic)
    if not classic:
        users = sum(1 for n, _ in _walk(root) if n.is_user)
        _rank(root.children, [users], users)
    return root


def factors(root: _Node) -> dict[tuple[str, str], float]:
    """Each user association's fair-share factor."""
    return {(n.assoc.account, n.assoc.user): n.fairshare for n, _ in _walk(root) if n.is_user}


def share_rows(root: _Node, only_users=(), run_mins: dict[tuple[str, str], dict[str, float]] | None = None,
               tres_names: tuple[str, ...] = ()) -> list[ShareRow]:
    """sshare's rows, depth first (root, then under each account its users, then its accounts);
    `only_users` keeps those users' lines (accounts always show). `run_mins`: TRES-minutes left
    to running jobs per user association, summed up the tree for TRESRunMins."""
    run_mins = run_mins or {}
    rows = []
    for n, depth in _walk(root):
        a = n.assoc
        if n.is_user and only_users and a.user not in only_users:
            continue
        under = [(m.assoc.account, m.assoc.user) for m, _ in _walk(n) if m.is_user]
        running = {t: sum(run_mins.get(k, {}).get(t, 0.0) for k in under) for t in tres_names}
        rows.append(ShareRow(
            a.account, a.user, NO_SHARES if depth == 0 else a.fairshare, n.norm_shares, n.usage,
            n.eff_usage, n.fairshare if n.is_user else math.nan, n.norm_usage,
            math.nan if depth == 0 else n.level_fs,
            tres_string(a.limits.grp_tres_mins), tres_string(running, keep_zero=True),
            n.parent.assoc.account if n.parent else ""))
    return rows


def tres_string(values: dict[str, float], keep_zero: bool = False) -> str:
    """Slurm's "cpu=10,mem=100,gres/gpu=2" (whole numbers)."""
    return ",".join(f"{k}={int(v)}" for k, v in values.items() if keep_zero or v)
