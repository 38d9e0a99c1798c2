"""The accounting database: accounts, users, their associations, and QOS (slurmdbd's role).

Owns: the in-memory copy of the accounting tables (loaded once, written through the Store on
every change), the bootstrap Slurm starts with (account root, user root in it, QOS normal),
importing the QOS of slurm.conf's QOSName lines the first time they are seen, and publishing
the QOS to `cfg.qos` (what validate, the scheduler and preemption read) after each change.
Lookups a submission needs (inherited QOS lists, default account) are here; the sacctmgr verbs
are in assoc_cmds.py, the submit checks and the scheduler's limits in assoc_policy.py.

Must not: decide about jobs, or take the state's lock. Changes come only through `commit()`,
which writers call under `lock`; readers take no lock (the tables are replaced, never changed in
place), so the scheduler, which holds the state's lock, never waits on a sacctmgr command.
"""

from __future__ import annotations

import copy
import logging
import threading

from ..model import Association, AssocTree, Qos

log = logging.getLogger("pyslurm_lite.controller.assoc")

ROOT = "root"
ROOT_QOS = ("normal",)  # root's QOS list when none was set (as a fresh slurmdbd's)
NORMAL = "normal"
UNENFORCED = ("the accounting database has accounts but AccountingStorageEnforce lacks "
              "associations: jobs may name any account (-A), and those whose (account, user) is "
              "no association are charged and ranked under the user's default association")


class Accounts:
    def __init__(self, cfg, store):
        self.cfg, self.store = cfg, store
        self.lock = threading.RLock()
        self.assocs: dict[tuple[str, str], Association] = {}
        self.users: dict[str, str] = {}  # user -> DefaultAccount
        self.qos: dict[str, Qos] = {}
        self.version = 0  # bumped by every change; caches key on it
        self._tree: tuple[int, AssocTree] | None = None  # (version, tree)
        self._load()
        self._warn_unenforced()

    # ---- start-up ------------------------------------------------------------------------------
    def _load(self) -> None:
        assocs, users, qos = self.store.load_accounting()
        self.assocs = {(a.account, a.user): a for a in assocs}
        self.users, self.qos = users, {q.name: q for q in qos}
        new_qos = [q for name, q in self.cfg.qos.items() if name not in self.qos]
        for q in new_qos:
            if q.name != NORMAL or self.cfg.qos[NORMAL] != Qos(NORMAL):
                log.info("imported QOS %s from slurm.conf", q.name)
        if NORMAL not in self.qos and all(q.name != NORMAL for q in new_qos):
            new_qos.append(Qos(NORMAL))
        boot: list[Association] = []
        if (ROOT, "") not in self.assocs:
            boot.append(Association(ROOT, "", parent="", description="default root account",
                                    organization=ROOT))
        if (ROOT, ROOT) not in self.assocs:
            boot.append(Association(ROOT, ROOT, parent=ROOT))
        users = {} if ROOT in self.users else {ROOT: ROOT}
        if new_qos or boot or users:
            self.commit(assocs=boot, users=users, qos=new_qos)
        else:
            self._publish()

    # ---- changes -------------------------------------------------------------------------------
    def commit(self, assocs=(), users=None, qos=(), drop_assocs=(), drop_users=(), drop_qos=()) -> None:
        """Durable first, then visible: the store's transaction, then the memory copy and
        cfg.qos. Callers hold `lock`."""
        self.store.save_accounting(assocs, users, qos, drop_assocs, drop_users, drop_qos)
        # new dicts, swapped in whole: readers (submissions, the scheduler's snapshot) take no
        # lock and see the tables before or after a change, never during it
        new_assocs, new_users, new_qos = dict(self.assocs), dict(self.users), dict(self.qos)
        for a in assocs:
            new_assocs[(a.account, a.user)] = a
        new_users.update(users or {})
        for q in qos:
            new_qos[q.name] = q
        for key in drop_assocs:
            new_assocs.pop(tuple(key), None)
        for name in drop_users:
            new_users.pop(name, None)
        for name in drop_qos:
            new_qos.pop(name, None)
        self.assocs, self.users, self.qos = new_assocs, new_users, new_qos
        self._publish()

    def _publish(self) -> None:
        self.version += 1
        # a new dict, swapped in whole: a pass that holds the old one keeps a consistent view
        self.cfg.qos = dict(self.qos)

    def _warn_unenforced(self) -> None:
        """Accounts are set up but nothing makes jobs use them: say so once, at start."""
        if "associations" in self.cfg.accounting_storage_enforce:
            return
        if any(not a.user and a.account != ROOT for a in self.assocs.values()):
            log.warning(UNENFORCED)

    # ---- lookups -------------------------------------------------------------------------------
    def tree(self) -> AssocTree:
        """The whole tree, rebuilt only after a change (fair share reads it every pass)."""
        version, cached = self._tree or (-1, None)
        if version != self.version:
            version = self.version  # read first: a change made meanwhile rebuilds it next time
            cached = AssocTree(self.assocs, self.users, tuple(self.cfg.accounting_storage_enforce))
            self._tree = (version, cached)
        return cached

    def get(self, account: str, user: str = "") -> Association | None:
        return self.assocs.get((account, user))

    def editable(self, account: str, user: str = "") -> Association:
        """A copy to change and commit (the live one stays as it was until the commit)."""
        return copy.deepcopy(self.assocs[(account, user)])

    def parent_of(self, assoc: Association) -> Association | None:
        if assoc.user:
            return self.assocs.get((assoc.account, ""))
        return self.assocs.get((assoc.parent, "")) if assoc.parent and assoc.account != ROOT else None

    def lineage(self, assoc: Association):
        """The association, then each one above it up to root."""
        seen = 0
        while assoc is not None and seen < 64:  # a loop in a hand-edited database ends here
            yield assoc
            assoc, seen = self.parent_of(assoc), seen + 1

    def allowed_qos(self, assoc: Association) -> list[str]:
        """Its QOS list, else the nearest one above it (root: normal)."""
        for a in self.lineage(assoc):
            if a.qos:
                return a.qos
        return list(ROOT_QOS)

    def default_qos(self, assoc: Association) -> str:
        """DefaultQOS up the tree; else the only QOS it may use; else normal (as Slurm's)."""
        for a in self.lineage(assoc):
            if a.default_qos:
                return a.default_qos
        allowed = self.allowed_qos(assoc)
        return allowed[0] if len(allowed) == 1 else NORMAL

    def subtree(self, account: str) -> list[Association]:
        """Every association at or under account (its users, its sub-accounts and theirs)."""
        out, todo = [], [account]
        while todo:
            name = todo.pop()
            for a in self.assocs.values():
                if a.account == name and a.user:
                    out.append(a)
                elif not a.user and a.parent == name and a.account != name:
                    todo.append(a.account)
            if (name, "") in self.assocs:
                out.append(self.assocs[(name, "")])
        return out

    def user_assocs(self, user: str) -> list[Association]:
        return sorted((a for a in self.assocs.values() if a.user == user), key=lambda a: a.account)
