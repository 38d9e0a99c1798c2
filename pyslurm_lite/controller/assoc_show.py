"""sacctmgr show account|user|qos|association: the records, one dict of Slurm's column names to
printed values per row, in Slurm's order (accounts before their users, by name). The CLI picks
the columns (format=) and lays them out; anyone may look (as Slurm without PrivateData)."""

from __future__ import annotations

from ..model import UNLIMITED, Association, Qos
from ..sched.limits import format_tres
from .assoc import ROOT, Accounts


def show(accounts: Accounts, entity: str, names: list[str], sel: dict[str, list[str]]) -> list[dict]:
    # the tables are swapped whole on change (assoc.py): read without a lock
    if entity == "qos":
        return [_qos_row(q) for n, q in sorted(accounts.qos.items()) if not names or n in names]
    if entity == "account":
        wanted = set(names + sel.get("accounts", []))
        return [_account_row(a) for a in _ordered(accounts)
                if not a.user and (not wanted or a.account in wanted)]
    if entity == "user":
        wanted = set(names + sel.get("users", []))
        return [{"User": u, "DefaultAccount": d, "Admin": "None"}
                for u, d in sorted(accounts.users.items()) if not wanted or u in wanted]
    users, accts = set(sel.get("users", [])), set(names + sel.get("accounts", []))
    return [_assoc_row(accounts, a) for a in _ordered(accounts)
            if (not users or a.user in users) and (not accts or a.account in accts)]


def _ordered(accounts: Accounts) -> list[Association]:
    """Depth first from root: an account, its users, then its sub-accounts (sacctmgr's order)."""
    out: list[Association] = []
    todo = [ROOT]
    while todo:
        name = todo.pop()
        acct = accounts.get(name)
        if acct is None or acct in out:
            continue
        out.append(acct)
        out += sorted((a for a in accounts.assocs.values() if a.account == name and a.user),
                      key=lambda a: a.user)
        todo += sorted((a.account for a in accounts.assocs.values()
                        if not a.user and a.parent == name and a.account != name), reverse=True)
    return out


def _count(n: int) -> str:
    return "" if n == UNLIMITED else str(n)


def _wall(minutes: int) -> str:
    if minutes == UNLIMITED:
        return ""
    days, rest = divmod(minutes, 1440)
    text = f"{rest // 60:02d}:{rest % 60:02d}:00"
    return f"{days}-{text}" if days else text


def _assoc_row(accounts: Accounts, a: Association) -> dict:
    lim = a.limits
    return {"Cluster": accounts.cfg.cluster_name, "Account": a.account, "User": a.user,
            "Partition": "", "Fairshare": str(a.fairshare), "Priority": "",
            "GrpJobs": "", "GrpTRES": format_tres(lim.grp_tres), "GrpSubmit": "", "GrpWall": "",
            "GrpTRESMins": format_tres(lim.grp_tres_mins), "MaxJobs": _count(lim.max_jobs),
            "MaxTRES": format_tres(lim.max_tres_per_job), "MaxTRESPerNode": "",
            "MaxTRESPerUser": format_tres(lim.max_tres_per_user),
            "MaxSubmitJobs": _count(lim.max_submit_jobs), "MaxWall": _wall(lim.max_wall),
            "MaxTRESMins": "", "QOS": ",".join(accounts.allowed_qos(a)),
            "DefaultQOS": a.default_qos, "GrpTRESRunMins": "",
            "ParentName": "" if a.user or a.account == ROOT else a.parent,
            "DefaultAccount": accounts.users.get(a.user, "") if a.user else ""}


def _account_row(a: Association) -> dict:
    return {"Account": a.account, "Description": a.description, "Organization": a.organization}


def _qos_row(q: Qos) -> dict:
    per_user = dict(q.max_tres_per_user)
    if q.max_gpus_per_user != UNLIMITED:
        per_user.setdefault("gres/gpu", q.max_gpus_per_user)
    return {"Name": q.name, "Priority": str(q.priority), "GraceTime": _wall_seconds(q.grace_time),
            "Preempt": ",".join(q.preempt), "PreemptExemptTime": "",
            "PreemptMode": q.preempt_mode or "cluster", "Flags": "", "UsageThres": "",
            "UsageFactor": "1.000000", "GrpTRES": format_tres(q.grp_tres),
            "GrpTRESMins": format_tres(q.grp_tres_mins), "GrpTRESRunMins": "", "GrpJobs": "",
            "GrpSubmit": "", "GrpWall": "", "MaxTRES": format_tres(q.max_tres_per_job),
            "MaxTRESPerNode": "", "MaxTRESMins": "", "MaxWall": _wall(q.max_wall),
            "MaxTRESPerUser": format_tres(per_user), "MaxJobsPerUser": _count(q.max_jobs_per_user),
            "MaxSubmitJobsPerUser": _count(q.max_submit_jobs_per_user), "MaxTRESPA": "",
            "MaxJobsPA": "", "MaxSubmitPA": "", "MinTRES": "", "Description": q.description or q.name}


def _wall_seconds(seconds: int) -> str:
    minutes, s = divmod(seconds, 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}:{s:02d}"
