"""sacctmgr's verbs on the accounting database: add, modify, delete, show of account, user, qos
and association, with Slurm's option names and the lines sacctmgr prints.

A request arrives parsed (verb, entity, names, where, set; keys as the user typed them) from
cli/sacctmgr.py. Every option is checked before anything changes: an unknown one is Slurm's
" Unknown option: KEY=VALUE" and nothing is written. `dry_run` does all of it but the commit
(sacctmgr asks "Would you like to commit changes?" in between).

Worked example: `sacctmgr -i add user alice Account=physics` adds the association
(physics, alice); alice had none, so physics becomes her DefaultAccount, and the reply's lines
are " Adding User(s)\\n  alice\\n Settings =\\n  Default Account = physics\\n ...".
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidRequest, PermissionDenied
from ..model import UNLIMITED, Association, Qos
from ..sched.limits import parse_tres
from ..units import parse_duration_seconds, parse_time_limit
from .assoc import NORMAL, ROOT, Accounts
from .assoc_show import show

VERBS = ("add", "modify", "delete", "show")
ENTITIES = ("account", "user", "qos", "association")

# sacctmgr's option names (lower case) -> ours, for associations (accounts and users)
ASSOC_OPTIONS = {
    "fairshare": "fairshare", "shares": "fairshare", "parent": "parent",
    "description": "description", "organization": "organization",
    "defaultaccount": "default_account", "qos": "qos", "qoslevel": "qos",
    "defaultqos": "default_qos", "grptres": "grp_tres", "grptresmins": "grp_tres_mins",
    "maxtres": "max_tres_per_job", "maxtresperjob": "max_tres_per_job",
    "maxtresperuser": "max_tres_per_user", "maxjobs": "max_jobs",
    "maxsubmitjobs": "max_submit_jobs", "maxsubmit": "max_submit_jobs", "maxwall": "max_wall",
}
QOS_OPTIONS = {
    "priority": "priority", "preempt": "preempt", "preemptmode": "preempt_mode",
    "gracetime": "grace_time", "maxwall": "max_wall", "description": "description",
    "maxjobsperuser": "max_jobs_per_user", "maxjobspu": "max_jobs_per_user",
    "maxsubmitjobsperuser": "max_submit_jobs_per_user", "maxsubmitpu": "max_submit_jobs_per_user",
    "maxtresperuser": "max_tres_per_user", "maxtrespu": "max_tres_per_user",
    "maxtres": "max_tres_per_job", "maxtresperjob": "max_tres_per_job",
    "grptres": "grp_tres", "grptresmins": "grp_tres_mins", "preemptexempttime": "preempt_exempt_time",
}
_TRES_FIELDS = ("grp_tres", "grp_tres_mins", "max_tres_per_job", "max_tres_per_user")
_COUNT_FIELDS = ("max_jobs", "max_submit_jobs", "max_jobs_per_user", "max_submit_jobs_per_user")
# Where-conditions and add's selectors: they name what to act on rather than set anything
SELECTORS = {"name": "names", "names": "names", "account": "accounts", "accounts": "accounts",
             "acct": "accounts", "user": "users", "users": "users", "cluster": "clusters",
             "clusters": "clusters"}
PRINT_NAMES = {"fairshare": "Fairshare", "parent": "Parent", "qos": "QOS", "default_qos": "DefaultQOS",
               "grp_tres": "GrpTRES", "grp_tres_mins": "GrpTRESMins", "max_tres_per_job": "MaxTRES",
               "max_tres_per_user": "MaxTRESPerUser", "max_jobs": "MaxJobs",
               "max_submit_jobs": "MaxSubmitJobs", "max_wall": "MaxWall", "priority": "Priority",
               "preempt": "Preempt", "preempt_mode": "PreemptMode", "grace_time": "GraceTime",
               "max_jobs_per_user": "MaxJobsPerUser", "max_submit_jobs_per_user": "MaxSubmitJobsPerUser",
               "preempt_exempt_time": "PreemptExemptTime", "description": "Description",
               "organization": "Organization", "default_account": "DefaultAccount"}


@dataclasses.dataclass
class Request:
    verb: str
    entity: str
    names: list[str]
    where: dict[str, str]
    set: dict[str, str]
    dry_run: bool = False
    active_jobs: object = None  # () -> jobs not yet over: what a delete must not pull from under


# What sacctmgr prints when slurmdbd refuses a change (ESLURM_ACCESS_DENIED's text)
_DENIED = {"account": " Problem adding accounts: Access/permission denied",
           "association": " Problem adding accounts: Access/permission denied",
           "user": " Problem adding users: Access/permission denied",
           "qos": " Problem adding QOS: Access/permission denied"}


def execute(accounts: Accounts, req: Request, operator: bool) -> tuple[list[dict], list[str]]:
    """(records shown, lines printed). Raises InvalidRequest with sacctmgr's text; changes are
    operators' (auth.py's "accounting"), showing is anyone's."""
    if req.verb not in VERBS or req.entity not in ENTITIES:
        raise InvalidRequest(f" Unknown command: {req.verb} {req.entity}")
    if req.verb != "show" and not operator:
        raise PermissionDenied(_DENIED[req.entity] if req.verb == "add"
                               else " Error with request: Access/permission denied")
    _check_clusters(accounts, {**req.where, **req.set})
    if req.verb == "show":
        sel = _selectors(req.where, {}, "condition")
        return show(accounts, req.entity, req.names + sel.pop("names", []), sel), []
    with accounts.lock:
        handler = _HANDLERS[(req.verb, "account" if req.entity == "association" and req.verb == "add"
                             else req.entity)]
        return [], handler(accounts, req)


# ---- option parsing ------------------------------------------------------------------------------
def _check_clusters(accounts: Accounts, pairs: dict[str, str]) -> None:
    """Cluster= may only name this cluster (the database holds one)."""
    for key, value in pairs.items():
        if SELECTORS.get(key.lower()) == "clusters":
            other = [c for c in value.split(",") if c and c != accounts.cfg.cluster_name]
            if other:
                raise InvalidRequest(f" This cluster '{other[0]}' doesn't exist.\n"
                                     "        Contact your admin to add it to accounting.")


def _selectors(where: dict[str, str], allowed: dict, what: str) -> dict[str, list[str]]:
    """Where-conditions to lists of names; anything else is Slurm's " Unknown condition"."""
    out: dict[str, list[str]] = {}
    for key, value in where.items():
        name = SELECTORS.get(key.lower())
        if name is None:
            raise InvalidRequest(f" Unknown {what}: {key}={value}\n Use keyword 'set' to modify value")
        out.setdefault(name, []).extend(v for v in value.split(",") if v)
    return out


def _options(pairs: dict[str, str], table: dict[str, str], modify: bool = False) -> tuple[dict, dict]:
    """(settings: field -> (op, value), selectors) from key=value pairs; op is '=', '+' or '-'
    (QOS+=high). Unknown keys: Slurm's " Unknown option: KEY=VALUE"."""
    settings, selectors = {}, {}
    where_hint = "\n Use keyword 'where' to modify condition" if modify else ""
    for key, value in pairs.items():
        op = key[-1] if key[-1:] in "+-" and len(key) > 1 else "="
        base = key[:-1] if op != "=" else key
        field = table.get(base.lower())
        if field is None and op == "=" and base.lower() in SELECTORS:
            selectors.setdefault(SELECTORS[base.lower()], []).extend(v for v in value.split(",") if v)
            continue
        if field is None or (op != "=" and field not in ("qos", "preempt")):
            raise InvalidRequest(f" Unknown option: {key}={value}" + where_hint)
        settings[field] = (op, value)
    return settings, selectors


def _value(field: str, value: str, accounts: Accounts):
    """A setting's value in our units, or InvalidRequest naming it as sacctmgr does."""
    try:
        if field in _TRES_FIELDS:
            return {k: v for k, v in parse_tres(value).items() if v != UNLIMITED}
        if field in _COUNT_FIELDS or field in ("fairshare", "priority"):
            n = int(value)
            if n < -1:
                raise ValueError
            return UNLIMITED if n == -1 else n
        if field in ("max_wall",):
            return UNLIMITED if value in ("-1", "UNLIMITED", "") else parse_time_limit(value)
        if field in ("grace_time", "preempt_exempt_time"):
            return int(value) if value.isdigit() else parse_duration_seconds(value)
        if field in ("qos", "preempt"):
            names = [q for q in value.split(",") if q]
            unknown = [q for q in names if q not in accounts.qos]
            if unknown:
                raise InvalidRequest(f" Invalid qos: {unknown[0]}")  # sacctmgr's text
            return names
        if field == "preempt_mode":
            if value.upper() not in ("OFF", "CANCEL", "REQUEUE", "SUSPEND", "CLUSTER"):
                raise ValueError
            return "" if value.upper() == "CLUSTER" else value.upper()
        return value
    except (ValueError, InvalidRequest) as e:
        if isinstance(e, InvalidRequest) and e.message.startswith(" "):
            raise  # already sacctmgr's words
        if field == "max_wall":
            raise InvalidRequest(f" Bad MaxWall time format: {value}") from None
        raise InvalidRequest(f" Bad {PRINT_NAMES.get(field, field)} value: {value}") from None


def _apply(obj, settings: dict, accounts: Accounts) -> None:
    """Make the settings on an Association (limits live in .limits) or a Qos."""
    for field, (op, text) in settings.items():
        value = _value(field, text, accounts)
        target = obj.limits if isinstance(obj, Association) and hasattr(obj.limits, field) else obj
        if field == "default_account":
            continue  # a user's, not an association's: the callers make it
        if op == "+":
            value = getattr(target, field) + [v for v in value if v not in getattr(target, field)]
        elif op == "-":
            value = [v for v in getattr(target, field) if v not in value]
        setattr(target, field, value)
        if field == "max_tres_per_user" and isinstance(obj, Qos):
            obj.max_gpus_per_user = value.get("gres/gpu", UNLIMITED)  # what the scheduler reads


def _settings_lines(settings: dict) -> list[str]:
    return [f"  {PRINT_NAMES.get(f, f):<13} = {v}" for f, (op, v) in settings.items()]


# ---- account -------------------------------------------------------------------------------------
def _add_account(accounts: Accounts, req: Request) -> list[str]:
    settings, sel = _options(req.set, ASSOC_OPTIONS)
    names = req.names + sel.get("names", []) + sel.get("accounts", [])
    if not names:
        raise InvalidRequest(" Need name of account to add.")
    parent = settings.pop("parent", ("=", ROOT))[1]
    if accounts.get(parent) is None:
        raise InvalidRequest(f" Parent account '{parent}' doesn't exist.")
    new = [n for n in dict.fromkeys(names) if accounts.get(n) is None]
    if not new:
        return [" Nothing new added."]
    descr, org = settings.pop("description", None), settings.pop("organization", None)
    made = []
    for name in new:
        a = Association(name, "", parent=parent, description=descr[1] if descr else name,
                        organization=org[1] if org else (parent if parent != ROOT else name))
        _apply(a, settings, accounts)
        made.append(a)
    if not req.dry_run:
        accounts.commit(assocs=made)
    lines = [" Adding Account(s)"] + [f"  {n}" for n in new]
    lines += [" Settings", f"  Description     = {descr[1] if descr else 'Account Name'}",
              f"  Organization    = {org[1] if org else 'Parent/Account Name'}", " Associations"]
    lines += [f"  A = {n:<10.10} C = {accounts.cfg.cluster_name:<10.10}" for n in new]
    if settings or parent != ROOT:
        lines += [" Settings"] + _settings_lines(settings)
        lines += [f"  Parent        = {parent}"] if parent != ROOT else []
    return lines


def _modify_assocs(accounts: Accounts, req: Request) -> list[str]:
    """modify account|user ... set ...: the associations named (and users' DefaultAccount)."""
    settings, _ = _options(req.set, ASSOC_OPTIONS, modify=True)
    sel = _selectors(req.where, {}, "condition")
    names = req.names + sel.get("names", [])
    if req.entity == "account":
        names += sel.get("accounts", [])
        targets = [accounts.get(n) for n in names if accounts.get(n) is not None]
    else:
        names += sel.get("users", [])
        only = set(sel.get("accounts", []))
        targets = [a for n in names for a in accounts.user_assocs(n) if not only or a.account in only]
    if not targets or not settings:
        raise InvalidRequest(" Nothing modified")
    default = settings.pop("default_account", None)
    changed = []
    for a in targets:
        new = accounts.editable(a.account, a.user)
        if "parent" in settings and (a.user or accounts.get(settings["parent"][1]) is None):
            raise InvalidRequest(f" Parent account '{settings['parent'][1]}' doesn't exist.")
        for f in ("description", "organization"):
            if f in settings and not a.user:
                setattr(new, f, settings[f][1])
        _apply(new, {k: v for k, v in settings.items() if k not in ("description", "organization")},
               accounts)
        changed.append(new)
    users = {}
    if default is not None:
        for name in {a.user for a in targets if a.user}:
            if accounts.get(default[1], name) is None:
                raise InvalidRequest(f" User {name} does not have an association with account {default[1]}")
            users[name] = default[1]
    if not req.dry_run:
        accounts.commit(assocs=changed if settings else (), users=users)
    kind = "user" if req.entity == "user" else "account"
    lines = [f" Modified {kind} associations..."] if settings else []
    lines += [f"  C = {accounts.cfg.cluster_name:<10} A = {a.account:<20}" + (f" U = {a.user:<9}" if a.user else "")
              for a in targets] if settings else []
    if users:
        lines += [" Modified users..."] + [f"  {u}" for u in sorted(users)]
    return lines


def _delete_account(accounts: Accounts, req: Request) -> list[str]:
    sel = _selectors(req.where, {}, "condition")
    names = [n for n in req.names + sel.get("names", []) + sel.get("accounts", []) if accounts.get(n)]
    if ROOT in names:
        raise InvalidRequest(" Error with request: the root account cannot be deleted")
    if not names:
        raise InvalidRequest(" Nothing deleted")
    gone = {(a.account, a.user) for n in names for a in accounts.subtree(n)}
    return _drop(accounts, req, gone, [" Deleting accounts..."] + [f"  {n}" for n in names])


def _drop(accounts: Accounts, req: Request, gone: set, lines: list[str]) -> list[str]:
    """Drop associations; a user left with none is dropped too, one whose default account
    went gets the first one left. Refused while a job of one of them is not over."""
    _refuse_if_active(req, lambda j: (j.spec.account, j.spec.user) in gone)
    users, drop_users = {}, []
    for user in {u for _, u in gone if u}:
        left = [a.account for a in accounts.user_assocs(user) if (a.account, user) not in gone]
        if not left:
            drop_users.append(user)
        elif accounts.users.get(user) not in left:
            users[user] = left[0]
    if not req.dry_run:
        accounts.commit(users=users, drop_assocs=sorted(gone), drop_users=drop_users)
    return lines


# ---- user ----------------------------------------------------------------------------------------
def _add_user(accounts: Accounts, req: Request) -> list[str]:
    settings, sel = _options(req.set, ASSOC_OPTIONS)
    names = list(dict.fromkeys(req.names + sel.get("names", []) + sel.get("users", [])))
    default = settings.pop("default_account", None)
    wanted = sel.get("accounts", []) + ([default[1]] if default else [])
    if not names:
        raise InvalidRequest(" Need name of user to add.")
    if not wanted:
        raise InvalidRequest(" Need a default account for these users to add.")
    missing = [a for a in wanted if accounts.get(a) is None]
    if missing:
        raise InvalidRequest(f" This account '{missing[0]}' doesn't exist.\n"
                             "        Contact your admin to add this account.")
    made, users, new_users = [], {}, []
    for user in names:
        for account in dict.fromkeys(wanted):
            if accounts.get(account, user) is None:
                a = Association(account, user, parent=account)
                _apply(a, settings, accounts)
                made.append(a)
        if user not in accounts.users:
            new_users.append(user)
            users[user] = default[1] if default else wanted[0]  # the first account is the default
        elif default:
            users[user] = default[1]
    if not made and not users:
        return [" Nothing new added."]
    if not req.dry_run:
        accounts.commit(assocs=made, users=users)
    lines = []
    if new_users:
        lines += [" Adding User(s)"] + [f"  {u}" for u in new_users]
        lines += [" Settings =", f"  Default Account = {users[new_users[0]]}"]
    if made:
        lines += [" Associations ="] + [f"  U = {a.user:<9.9} A = {a.account:<10.10} "
                                        f"C = {accounts.cfg.cluster_name:<10.10}" for a in made]
    if settings:
        lines += [" Non Default Settings"] + _settings_lines(settings)
    return lines


def _delete_user(accounts: Accounts, req: Request) -> list[str]:
    sel = _selectors(req.where, {}, "condition")
    names = req.names + sel.get("names", []) + sel.get("users", [])
    only = set(sel.get("accounts", []))
    gone = {(a.account, a.user) for n in names for a in accounts.user_assocs(n)
            if not only or a.account in only}
    if not gone:
        raise InvalidRequest(" Nothing deleted")
    if only:
        lines = [" Deleting user associations..."] + [
            f"  C = {accounts.cfg.cluster_name:<10} A = {a:<10} U = {u:<9}" for a, u in sorted(gone)]
    else:
        lines = [" Deleting users..."] + [f"  {u}" for u in sorted({u for _, u in gone})]
    return _drop(accounts, req, gone, lines)


def _delete_association(accounts: Accounts, req: Request) -> list[str]:
    sel = _selectors(req.where, {}, "condition")
    if sel.get("users"):
        return _delete_user(accounts, dataclasses.replace(req, names=[], where={
            "users": ",".join(sel["users"]), **({"accounts": ",".join(sel["accounts"])} if sel.get("accounts") else {})}))
    return _delete_account(accounts, req)


def _modify_association(accounts: Accounts, req: Request) -> list[str]:
    sel = _selectors(req.where, {}, "condition")
    entity = "user" if sel.get("users") else "account"
    return _modify_assocs(accounts, dataclasses.replace(req, entity=entity))


# ---- qos -----------------------------------------------------------------------------------------
def _add_qos(accounts: Accounts, req: Request) -> list[str]:
    settings, sel = _options(req.set, QOS_OPTIONS)
    names = list(dict.fromkeys(req.names + sel.get("names", [])))
    if not names:
        raise InvalidRequest(" Need name of qos to add.")
    new = [n for n in names if n not in accounts.qos]
    if not new:
        return [" Nothing new added."]
    made = []
    for name in new:
        q = Qos(name, description=name)
        _apply(q, settings, accounts)
        made.append(q)
    if not req.dry_run:
        accounts.commit(qos=made)
    lines = [" Adding QOS(s)"] + [f"  {n}" for n in new]
    return lines + [" Settings", f"  Description    = {made[0].description}"] + _settings_lines(settings)


def _modify_qos(accounts: Accounts, req: Request) -> list[str]:
    settings, _ = _options(req.set, QOS_OPTIONS, modify=True)
    sel = _selectors(req.where, {}, "condition")
    names = [n for n in req.names + sel.get("names", []) if n in accounts.qos]
    if not names or not settings:
        raise InvalidRequest(" Nothing modified")
    changed = []
    for name in names:
        q = dataclasses.replace(accounts.qos[name])
        _apply(q, settings, accounts)
        changed.append(q)
    if not req.dry_run:
        accounts.commit(qos=changed)
    return [" Modified qos..."] + [f"  {n}" for n in names]


def _delete_qos(accounts: Accounts, req: Request) -> list[str]:
    sel = _selectors(req.where, {}, "condition")
    names = [n for n in req.names + sel.get("names", []) if n in accounts.qos]
    if NORMAL in names:
        raise InvalidRequest(" Error with request: QOS normal cannot be deleted")
    if not names:
        raise InvalidRequest(" Nothing deleted")
    _refuse_if_active(req, lambda j: (j.spec.qos or NORMAL) in names)
    users_of = [a for a in accounts.assocs.values() if set(a.qos) & set(names) or a.default_qos in names]
    changed = []
    for a in users_of:  # as slurmdbd: the QOS leaves every association's list with it
        new = accounts.editable(a.account, a.user)
        new.qos = [q for q in new.qos if q not in names]
        new.default_qos = "" if new.default_qos in names else new.default_qos
        changed.append(new)
    if not req.dry_run:
        accounts.commit(assocs=changed, drop_qos=names)
    return [" Deleting QOS(s)..."] + [f"  {n}" for n in names]


def _refuse_if_active(req: Request, uses) -> None:
    """Slurm's ESLURM_JOBS_RUNNING_ON_ASSOC: a job still pending or running keeps what it uses."""
    busy = [j for j in (req.active_jobs() if req.active_jobs else ()) if uses(j)]
    if busy:
        j = busy[0]
        raise InvalidRequest(" Error with request: Job(s) active, cancel job(s) before remove\n"
                             f"  JobID = {j.job_id:<10} A = {j.spec.account:<10} U = {j.spec.user:<9}")


_HANDLERS = {
    ("add", "account"): _add_account, ("add", "user"): _add_user, ("add", "qos"): _add_qos,
    ("modify", "account"): _modify_assocs, ("modify", "user"): _modify_assocs,
    ("modify", "qos"): _modify_qos, ("modify", "association"): _modify_association,
    ("delete", "account"): _delete_account, ("delete", "user"): _delete_user,
    ("delete", "qos"): _delete_qos, ("delete", "association"): _delete_association,
}

