"""priority/multifactor in the controller: usage charged to associations, fair share over the
account tree, and each pending job's priority from its factors. The arithmetic lives in
usage.py (billing, charges), fairshare.py (Fair Tree / classic) and sched/priority.py (factors);
this module gathers their inputs from the state and the store and writes the results back.

Usage is kept in memory as TRES-seconds per association decayed to `usage_at`, mirrored in the
store with the jobs' charged-until marks (one transaction per charge). It is charged every
PriorityCalcPeriod for running jobs and at once for jobs that end; `state.assoc_usage` is
refreshed on every charge.
"""

from __future__ import annotations

import logging
import threading

from ..model import Job, JobState
from ..sched import priority as prio
from . import fairshare, usage as usage_mod
from .state import ClusterState

log = logging.getLogger("pyslurm_lite.controller")

PRIORITY_FLAGS_DONE = {"MAX_TRES", "NO_FAIR_TREE", "FAIR_TREE"}  # FAIR_TREE: the default anyway
# sshare's TRESRunMins lists these TRES, as Slurm's default AccountingStorageTRES, then GPUs
RUN_MINS_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages", "gres/gpu")
SECONDS_PER_MINUTE = 60.0


class PriorityManager:
    def __init__(self, state: ClusterState):
        self.s = state
        self._lock = threading.Lock()  # charges come from the monitor and from endings
        now = state.clock()
        self.usage_at = now
        self.usage = state.store.load_usage(now, self.half_life)  # (account, user) -> {tres: s}
        self.charged = state.store.load_charged()  # job id -> charged until
        self.charged_at = now
        flags = state.cfg.priority_flags
        self.classic = "NO_FAIR_TREE" in flags
        for flag in sorted(set(flags) - PRIORITY_FLAGS_DONE):
            log.warning("PriorityFlags=%s: not implemented by pyslurm-lite, ignored", flag)
        self._publish()

    @property
    def half_life(self) -> float:
        """PriorityDecayHalfLife in seconds (0: no decay)."""
        return self.s.cfg.priority_decay_half_life * SECONDS_PER_MINUTE

    # ---- usage -----------------------------------------------------------------------------------
    def charge_running(self, now: float) -> None:
        """Every PriorityCalcPeriod: what running jobs used since their last charge."""
        if now - self.charged_at < self.s.cfg.priority_calc_period:
            return
        self.charged_at = now
        with self.s.lock:
            # requeued runs first: a job's later run then leaves its charged-until mark
            due, self.s.unbilled = self.s.unbilled, []
            # ended jobs whose ending was not charged (a node that failed never reports it)
            # are caught up to their end here
            due += [j for j in self.s.jobs.values() if j.state == JobState.RUNNING
                    or (j.state.is_final and j.start_time and j.end_time > self.charged.get(j.job_id, now))]
            known = set(self.s.jobs)
        self._charge(due, now, known)

    def charge_usage(self, jobs: list[Job]) -> None:
        """Jobs that ended: the rest of their use, up to their end."""
        if jobs:
            self._charge(jobs, self.s.clock())

    def _charge(self, jobs: list[Job], now: float, known: set[int] | None = None) -> None:
        """Charge `jobs` up to `now`; with `known` (the jobs in memory), forget the marks of
        the others, which can no longer be charged."""
        tree = self._tree()
        with self._lock:
            forget = tuple(j for j in self.charged if j not in known) if known is not None else ()
            added, until = usage_mod.charges(jobs, self.charged, now,
                                             lambda j: fairshare.assoc_key(tree, j.spec.account, j.spec.user))
            if not added and not forget:
                return
            self._decay_to(now)
            for key, per_tres in added.items():
                mine = self.usage.setdefault(key, {})
                for tres, seconds in per_tres.items():
                    mine[tres] = mine.get(tres, 0.0) + seconds
            self.charged.update(until)
            for job_id in forget:
                self.charged.pop(job_id, None)
            # only the charged rows: the others' stored values decay from their own times alike
            self.s.store.add_usage({k: self.usage[k] for k in added}, until, now, forget)
            self._publish()

    def _decay_to(self, now: float) -> None:
        if now <= self.usage_at:
            return
        factor = prio.decayed(1.0, now - self.usage_at, self.half_life)
        for per_tres in self.usage.values():
            for tres in per_tres:
                per_tres[tres] *= factor
        self.usage_at = now

    def _publish(self) -> None:
        """state.assoc_usage: (account, user) -> {tres: decayed TRES-minutes} for every user
        association, and for every account (user "") the sum over everything under it."""
        tree = fairshare.effective_tree(self._tree(), self.usage)
        out: dict[tuple[str, str], dict[str, float]] = {}
        for (account, user), per_tres in self.usage.items():
            minutes = {t: v / SECONDS_PER_MINUTE for t, v in per_tres.items()}
            out[(account, user)] = dict(minutes)
            for up in _accounts_above(tree, account):
                total = out.setdefault((up, ""), {})
                for t, v in minutes.items():
                    total[t] = total.get(t, 0.0) + v
        self.s.assoc_usage = out

    def _tree(self):
        tree = getattr(self.s, "assoc_tree", None)  # H1's accounting tree, when it is there
        return tree() if callable(tree) else None

    def raw_usage(self, now: float) -> dict[tuple[str, str], float]:
        """RawUsage (decayed billing-seconds) per association, as of `now`."""
        with self._lock:
            factor = prio.decayed(1.0, max(now - self.usage_at, 0.0), self.half_life)
            return {k: v.get("billing", 0.0) * factor for k, v in self.usage.items()}

    # ---- fair share and priorities --------------------------------------------------------------
    def fair_tree(self, now: float, extra_keys=()):
        tree = self._tree()
        raw = self.raw_usage(now)
        # the jobs' own (account, user) pairs as they are charged (assoc_key), so an account
        # that is no association of theirs adds no entry with no usage to rank them by
        keys = {fairshare.assoc_key(tree, account, user) for account, user in extra_keys}
        eff = fairshare.effective_tree(tree, set(raw) | keys)
        return tree, fairshare.compute(eff, raw, self.classic)

    def recompute_priorities(self, now: float) -> None:
        """priority/multifactor: every pending job's priority from its factors (sched/priority)."""
        cfg = self.s.cfg
        if cfg.priority_type != "priority/multifactor":
            return
        w = cfg.priority_weights
        weights = prio.Weights(w.get("age", 0), w.get("fairshare", 0), w.get("jobsize", 0),
                               w.get("partition", 0), w.get("qos", 0), cfg.priority_max_age * 60.0)
        total_cpus = sum(n.cpus for n in cfg.nodes.values())
        top_factor = max((p.priority_job_factor for p in cfg.partitions.values()), default=1) or 1
        top_qos = max((q.priority for q in cfg.qos.values()), default=0) or 1
        with self.s.lock:
            pending = [j for j in self.s.jobs.values() if j.state == JobState.PENDING]
        tree, root = self.fair_tree(now, {(j.spec.account, j.spec.user) for j in pending})
        shares = fairshare.factors(root)
        part_tres = {name: prio.partition_tres(p, cfg) for name, p in cfg.partitions.items()}
        with self.s.lock:
            for job in pending:
                if job.direct_priority or job.state != JobState.PENDING:
                    continue  # an operator's value stays (Slurm's direct_set_prio)
                part = cfg.partitions.get(job.partition)
                f = prio.factors(job.eligible_time or job.submit_time, now,
                                 job.spec.cpus_on_node(0) * job.spec.num_nodes, total_cpus,
                                 (part.priority_job_factor if part else 1) / top_factor,
                                 shares.get(fairshare.assoc_key(tree, job.spec.account, job.spec.user), 1.0),
                                 weights,
                                 cfg.qos[job.spec.qos or "normal"].priority / top_qos
                                 if (job.spec.qos or "normal") in cfg.qos else 0.0)
                tres = prio.tres_factors(prio.job_tres(job.spec, cfg.def_mem_per_cpu),
                                         part_tres.get(job.partition, {}), cfg.priority_weight_tres) \
                    if cfg.priority_weight_tres else {}
                value = prio.combine(f, weights, job.spec.nice, tres)
                if value != job.priority:
                    job.priority = value
                    job.factors = {k: getattr(weights, k) * v for k, v in f.items()}
                    job.factors.update({f"tres:{k}": v for k, v in tres.items()})
                    self.s.touch(job)

    def shares(self, users: list[str]):
        """sshare's rows over the account tree."""
        now = self.s.clock()
        with self.s.lock:
            jobs = [j for j in self.s.jobs.values() if j.state == JobState.RUNNING]
            known = {(j.spec.account, j.spec.user) for j in self.s.jobs.values()}
        tree, root = self.fair_tree(now, known)
        run = usage_mod.run_minutes(jobs, now, lambda j: fairshare.assoc_key(tree, j.spec.account, j.spec.user))
        return fairshare.share_rows(root, users, run, RUN_MINS_TRES)


def billing_at_start(state: ClusterState, job: Job) -> float:
    """A starting job's billing under its partition's TRESBillingWeights (job_mgr._start)."""
    part = state.cfg.partitions.get(job.partition)

    def gpu_type(node: str, index: int) -> str:
        n = state.nodes.get(node)
        return next((g.type for g in (state.node_gpus(n) if n else ()) if g.index == index), "")
    return usage_mod.job_billing(job, part.tres_billing_weights if part else {},
                                 state.cfg.priority_flags, gpu_type)


def _accounts_above(tree, account: str) -> list[str]:
    """`account` and every account above it up to root."""
    out, seen = [], set()
    while account and account not in seen:
        seen.add(account)
        out.append(account)
        a = tree.assocs.get((account, ""))
        account = a.parent if a is not None and account != fairshare.ROOT else ""
    return out
