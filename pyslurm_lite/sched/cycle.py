"""One scheduling pass: priority order, filters, placement, preemption, backfill reservations.

Pipeline, wired here and nowhere else:
  1. sort     — partition PriorityTier (desc), priority (desc), submit time, job id: ties break
                the same way every run. SchedulerParameters=sched_policy (sched/policy.py)
                changes it within a tier: starved jobs first (in the order they became able to
                run, then job id), then the others by a learned score when the policy has one
                (lowest first);
  2. filter   — held, not yet eligible (--begin), dependency unmet, partition down, its
                reservation not begun, the QOS's MaxWall/MaxJobsPerUser/GPUs per user: the
                job waits with that reason (the TRES limits of QOS and associations,
                limits.py, are asked in step 3, of the jobs a pass tries to place);
  3. place    — the first nodes of its partition (or reservation) that hold it from now to its
                time limit without touching a backfill reservation or another advance
                reservation (profile.py); -w nodes first and all of them, never -x nodes, never
                beside another user's job when either asked --exclusive=user; -N min-max takes
                the most nodes that fit now (its wider views), else waits for min;
  4. preempt  — a job that does not fit may push out lower jobs (preempt.py); it then waits for
                them to go, with Reason=Resources. Every job that could preempt is tried, in
                order, also behind a blocked job of its partition (within bf_max_job_test), and
                with preemption on, a job sorts ahead of the pending jobs it could preempt;
  5. reserve  — the first job that does not fit blocks its partition and, with backfill, gets a
                reservation at its earliest start (backfill.py; conservative: every job does);
  6. backfill — a lower job of a blocked partition starts only if step 3 finds room without
                delaying any reservation; otherwise it waits with Reason=Priority. Without
                backfill (sched/builtin) every lower job of a blocked partition waits.

sched_policy's other two parts: a starved job (able to run for starve_bound seconds: time held,
before --begin or behind a dependency does not count; it stays starved) that cannot start
gets a reservation even behind another blocked job of its partition, so no later job delays it
(conservative among the starved); with EASY++ predictions, steps 3-6 plan running jobs until
their planned_end and book pending ones for their planned_minutes (profile.planned_length),
except while a starved job waits: then time limits, so its reservation holds whatever the
predictions say.

Worked example (one node, 2 CPUs, sched_policy=learned, score = log10(r) * n): A (1 CPU) runs;
pending B (2 CPUs, 60 min, submitted first) and C (1 CPU, 1 min). Priority order would try B
first, block the node and leave C to backfill; the score puts C (log10(60) * 1 = 1.8) before B
(log10(3600) * 2 = 7.1): C starts on the free CPU at once, B waits (Resources). Once B has waited
starve_bound seconds it is starved: it goes first and its reservation holds against every
later job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..model import Reason
from .backfill import Backfill
from .dependency import NEVER
from .limits import Tally
from .preempt import could_preempt, preemptors_first, victims
from .profile import Timeline
from .projection import project
from .select import FreeNode, capable
from .snapshot import JobView, Plan, RunningView, Snapshot, Start

UNLIMITED_RUN = 365 * 86400  # seconds: a score's requested time of a job no limit bounds


@dataclass(frozen=True)
class SchedConfig:
    max_starts: int = 100000  # starts per pass, a safety valve
    backfill: bool = True  # sched/backfill; False: sched/builtin
    conservative: bool = False  # every blocked job gets a reservation (up to max_job_test)
    max_job_test: int = 0  # bf_max_job_test: jobs tried by backfill per pass; 0 = all
    # default_queue_depth for the event-triggered passes: only the top this many jobs are
    # looked at, the others keep their reasons until a full pass; 0 = the whole queue
    queue_depth: int = 0
    preempt_type: str = "preempt/none"  # preempt/partition_prio | preempt/qos
    preempt_mode: str = "OFF"  # the cluster's PreemptMode: REQUEUE | CANCEL
    preempt_exempt_time: int = 0  # seconds a job runs before it may be preempted
    # nodes best fit (select.fit_key); False: first fit, only for the simulator's comparison
    # (bench/bench_gpu_placement.py): the daemon always uses best fit
    best_fit: bool = True
    window: int = 1440 * 60  # bf_window, in seconds: no start is projected further out
    policy: object = None  # sched/policy.Policy (SchedulerParameters=sched_policy); None: easy


def schedule(snapshot: Snapshot, now: float, config: SchedConfig = SchedConfig()) -> Plan:
    starved = starved_jobs(snapshot, now)
    if starved:  # plan with time limits: a starved job's reservation must hold
        snapshot = replace(snapshot, jobs=tuple(_unpredicted(j) for j in snapshot.jobs))
    p = _Pass(snapshot, now, config, starved)
    p.plan.starved = starved
    queue = sorted(snapshot.jobs, key=order_key(snapshot, now, config.policy, starved))
    if config.preempt_type == "preempt/qos" and config.preempt_mode != "OFF":
        queue = preemptors_first(queue, snapshot.qos)
    if config.queue_depth:
        queue = queue[:config.queue_depth]
    for job in queue:
        reason = p.filter_reason(job)
        if reason is None:
            reason = p.try_start(job)
        if reason is not None:
            p.plan.reasons[job.job_id] = reason
    project(p, queue)  # after every decision: a projected start for each job left waiting
    return p.plan


def starved_jobs(snapshot: Snapshot, now: float) -> frozenset:
    """Pending jobs that could run now but have waited starve_bound seconds or more, or were
    starved at an earlier pass (snapshot.starved: a bound that has grown since takes no
    reservation away)."""
    bound, before = snapshot.starve_bound, snapshot.starved
    if bound == math.inf and not before:
        return frozenset()
    deps = snapshot.dependencies
    return frozenset(j.job_id for j in snapshot.jobs
                     if (now - waiting_since(j) >= bound or j.job_id in before)
                     and j.begin_time <= now and j.job_id not in deps)


def waiting_since(job: JobView) -> float:
    """Since when the job could have run: its wait, for the guard, is counted from there (time
    held, before --begin or behind a dependency does not count)."""
    return job.waiting_since or max(job.submit_time, job.begin_time)


def order_key(snapshot: Snapshot, now: float, policy, starved: frozenset):
    """The sort key of step 1: tier (desc), then starved jobs (since when they could run, so in
    the order they starved: a job starved later never goes ahead of one starved before; then
    id), then the others by priority (desc) or the policy's score (asc), submit time, job id."""
    tiers = {name: part.priority_tier for name, part in snapshot.partitions.items()}
    score = policy.score if policy is not None else None
    if score is None and not starved:
        return lambda j: (-tiers.get(j.partition, 0), -j.priority, j.submit_time, j.job_id)
    max_time = {name: part.max_time for name, part in snapshot.partitions.items()}
    epoch = snapshot.sched_epoch

    def key(j: JobView) -> tuple:
        tier = -tiers.get(j.partition, 0)
        if j.job_id in starved:
            return tier, 0, waiting_since(j), j.job_id
        if score is None:
            return tier, 1, -j.priority, j.submit_time, j.job_id
        limit = j.time_limit if j.time_limit > 0 else max_time.get(j.partition, -1)
        requested = limit * 60 if limit > 0 else UNLIMITED_RUN
        static = score.static(requested, sum(j.cpus_per_node), j.submit_time - epoch)
        return tier, 1, static, j.submit_time, j.job_id
    return key


def _unpredicted(job: JobView) -> JobView:
    if not job.planned_minutes:
        return job
    return replace(job, planned_minutes=0, wider=tuple(_unpredicted(w) for w in job.wider))


def _planned(running: tuple[RunningView, ...], starved: frozenset) -> tuple[RunningView, ...]:
    """Running jobs as the Timeline sees them: until their EASY++ planned end, unless a
    starved job waits (then until their time limit)."""
    if starved or not any(r.planned_end for r in running):
        return running
    return tuple(replace(r, end=r.planned_end) if r.planned_end else r for r in running)


class _Pass:
    """What one pass has decided so far: starts, blocked partitions, per-user counts."""

    def __init__(self, snapshot: Snapshot, now: float, config: SchedConfig,
                 starved: frozenset = frozenset()):
        self.s, self.now, self.config = snapshot, now, config
        self.starved = starved  # sched_policy's guard: each gets a reservation when blocked
        self.plan = Plan()
        self.free = {n.name: FreeNode(n) for n in snapshot.nodes}
        order = [n.name for n in sorted(snapshot.nodes, key=lambda n: (n.weight, n.name))]
        self.by_partition = {name: [n for n in order if n in set(p.nodes)]
                             for name, p in snapshot.partitions.items()}
        self.timeline = Timeline(self.free, _planned(snapshot.running, starved), now, config.best_fit)
        self.backfill = Backfill(self.timeline, config.max_job_test)
        self.blocked: set[str] = set()
        self.frozen: set[str] = set()  # blocked without a reservation
        self.preempted: set[int] = set()
        self.array_running = dict(snapshot.array_running)
        # QOS and association limits: what runs, counted per user, QOS and association
        self.tally = Tally(snapshot.qos, snapshot.limits, snapshot.running)
        self.resv_by_name = {r.name: r for r in snapshot.reservations}
        self.resv_by_node: dict[str, list] = {}
        for resv in snapshot.reservations:
            for n in resv.nodes:
                self.resv_by_node.setdefault(n, []).append(resv)
        self._most_free = None
        # --exclusive=user: who holds each node, and until when (running jobs, then this pass's
        # starts); backfill reservations are not counted, they are re-planned every pass
        self.holders: dict[str, list[tuple[str, bool, float]]] = {}
        # some running job, or one started this pass, asked --exclusive=user
        self.exclusive_held = any(r.exclusive_user for r in snapshot.running)
        for r in snapshot.running:
            # still there past its planned end (KillWait, an overdue end): it holds the node
            # for as long as it runs, not until an end already gone by
            end = r.end if r.end > now else math.inf
            for a in r.allocations:
                self.holders.setdefault(a.node, []).append((r.user, r.exclusive_user, end))
        # _usable(), per job shape: the nodes that could hold it, and those of them that no
        # advance reservation covers
        self._capable: dict[tuple, tuple[set[str], set[str]]] = {}

    # ---- 2. filters ---------------------------------------------------------------------------
    def filter_reason(self, job: JobView) -> Reason | None:
        if job.held:
            return Reason.HELD_ADMIN if job.held_by_admin else Reason.HELD_USER
        if job.begin_time > self.now:
            return Reason.BEGIN_TIME
        unmet = self.s.dependencies.get(job.job_id)
        if unmet is not None:
            return Reason.DEPENDENCY_NEVER if unmet == NEVER else Reason.DEPENDENCY
        part = self.s.partitions.get(job.partition)
        if part is None or not part.up:
            return Reason.PARTITION_DOWN
        if job.reservation:
            resv = self.resv_by_name.get(job.reservation)
            if resv is None or resv.start_time > self.now:
                return Reason.RESERVATION
        if job.array_limit and self.array_running.get(job.array_job_id, 0) >= job.array_limit:
            return Reason.ARRAY_TASK_LIMIT  # %N: its array has N tasks running already
        return self.tally.quick_reason(job)

    # ---- 3-6. place, preempt, reserve, backfill -----------------------------------------------
    def try_start(self, job: JobView) -> Reason | None:
        order = self._order(job)
        blocked = job.partition in self.blocked
        testing = blocked or self.backfill.booked > 0  # a start now could delay a reservation
        starved = job.job_id in self.starved  # reserved even behind a blocked job
        if job.partition in self.frozen and not starved:
            return self._preempt_behind(job, order)
        if blocked and not self.config.backfill:
            return Reason.PRIORITY  # sched/builtin stops at the first blocked job of a partition
        if testing:
            if self.backfill.exhausted():
                return Reason.PRIORITY  # past bf_max_job_test
            self.backfill.tested += 1
        held = self.tally.tres_reason(job)  # a job held by a limit blocks nobody
        if held is not None:
            return held
        usable = None
        for view in (*job.wider, job):  # -N min-max: as many nodes as fit now, widest first
            usable = allocations = None
            if self._could_fit_now(view) and len(self.plan.starts) < self.config.max_starts:
                usable = self._usable(view)
                allocations = self.backfill.place_now(view, order, usable)
            if allocations is not None:
                self._started(job, allocations)
                self.plan.backfilled += testing
                return None
        if blocked and not self.config.conservative and not starved:
            return self._preempt_behind(job, order, counted=True)
        usable = usable or self._usable(job)
        if blocked:
            reason = self._preempt_behind(job, order, counted=True)
        else:
            reason = self._why_not(job, order, usable)
            if reason is Reason.REQ_NODE_NOT_AVAIL:
                # the nodes that are up cannot hold it at all (down, drained, GPUs taken by
                # processes no job started): no start time can be planned, and, as in Slurm,
                # it holds back nobody behind it
                return reason
        if not blocked:
            self._preempt_for(job, order)
            self.blocked.add(job.partition)
        if self.config.backfill:
            ends = [r.end_time for n in order for r in self.resv_by_node.get(n, ())]
            start = self.backfill.reserve(job, order, usable, ends)
            if start is not None:
                self.plan.reservations[job.job_id] = start
            elif not blocked:
                # no start time can be promised (jobs without a limit hold what it needs): any
                # backfill could delay it when they end, so none is allowed in its partition
                self.frozen.add(job.partition)
        return reason

    def _order(self, job: JobView) -> list[str]:
        """The nodes to try, in order: -w's nodes first (placement takes every one of them),
        then the partition's others, never a -x node."""
        nodes = self.by_partition.get(job.partition, [])
        if job.reservation:
            reserved = set(self.resv_by_name[job.reservation].nodes)
            nodes = [n for n in nodes if n in reserved]
        if job.excluded:
            nodes = [n for n in nodes if n not in job.excluded]
        if job.required:
            required = set(job.required)
            nodes = [n for n in nodes if n in required] + [n for n in nodes if n not in required]
        return nodes

    def _usable(self, job: JobView):
        """usable(node, t0, t1): the node is up, could ever hold the job, and no advance
        reservation the job is not in overlaps [t0, t1)."""
        free, by_node = self.free, self.resv_by_node
        key = (job.cpus_per_node[0], job.mem_per_node[0], job.gpus_per_node, job.gpu_type,
               job.features, job.whole_mem, job.gpu_types, job.excluded, job.exclusive)
        known = self._capable.get(key)  # key: all that capable() reads of the job
        if known is None:
            static = {name for name, f in free.items() if f.view.available and capable(f.view, job)}
            known = self._capable[key] = (static, {name for name in static if not by_node.get(name)})
        static, timeless = known
        barred = self._barred(job)
        if barred:
            timeless = timeless - set(barred)

        def usable(name: str, t0: float, t1: float) -> bool:
            if name not in static:
                return False
            if name in barred and t0 < barred[name]:
                return False  # another user's job holds it until then (--exclusive=user)
            resvs = by_node.get(name)
            return not resvs or all(r.name == job.reservation or r.end_time <= t0 or t1 <= r.start_time
                                    for r in resvs)
        usable.static = static  # the time-independent part, for a quick skip
        usable.barred = barred  # busy with another user's jobs (--exclusive=user), not down
        usable.timeless = timeless  # no advance reservation there: usable at any time
        return usable

    def _barred(self, job: JobView) -> dict[str, float]:
        """--exclusive=user: node -> until when other users' jobs keep this job off it (when it
        asked for it, or when they did)."""
        barred: dict[str, float] = {}
        if not job.exclusive_user and not self.exclusive_held:
            return barred  # the common case, kept cheap: nobody asked for it
        for name, held in self.holders.items():
            for user, exclusive_user, end in held:
                if user != job.user and (job.exclusive_user or exclusive_user):
                    barred[name] = max(barred.get(name, end), end)
        return barred

    def _could_fit_now(self, job: JobView) -> bool:
        """A cheap bound (largest free CPU and GPU counts now) that spares most of the
        per-node work when the cluster is full and the queue is long."""
        if self._most_free is None:
            avail = [f for f in self.free.values() if f.view.available]
            self._most_free = (max((f.free_cpus for f in avail), default=0),
                               max((len(f.free_gpus) for f in avail), default=0),
                               any(f.idle for f in avail))
        cpus, gpus, idle = self._most_free
        if job.exclusive:
            return idle
        return min(job.cpus_per_node) <= cpus and job.gpus_per_node <= gpus

    def _started(self, job: JobView, allocations) -> None:
        self.plan.starts.append(Start(job.job_id, tuple(allocations)))
        end = self.now + job.time_limit * 60 if job.time_limit > 0 else math.inf
        for a in allocations:
            self.free[a.node].hold(a)
            self.holders.setdefault(a.node, []).append((job.user, job.exclusive_user, end))
        self.exclusive_held = self.exclusive_held or job.exclusive_user
        self._most_free = None
        if job.array_job_id:
            self.array_running[job.array_job_id] = self.array_running.get(job.array_job_id, 0) + 1
        self.tally.add(job.user, job.qos, job.account, allocations)

    def _preempt_behind(self, job: JobView, order: list[str], counted: bool = False) -> Reason:
        """A job behind a blocked one of its partition still preempts when it may (Slurm tries
        each pending job that could); it then waits for its victims (Resources), else for the
        jobs ahead (Priority). `counted`: already counted against bf_max_job_test."""
        c = self.config
        if c.preempt_type == "preempt/none" or c.preempt_mode == "OFF" or \
                not could_preempt(job, self.s, c.preempt_type):
            return Reason.PRIORITY
        if not counted:
            if self.backfill.exhausted():
                return Reason.PRIORITY
            self.backfill.tested += 1
        held = self.tally.tres_reason(job)  # a job its limits hold back preempts nobody
        if held is not None:
            return held
        return Reason.PRIORITY if self._preempt_for(job, order) is None else Reason.RESOURCES

    def _preempt_for(self, job: JobView, order: list[str]):
        """The preemptions made for `job` (empty when those already under way free enough), or
        None when preempting cannot make room for it."""
        c = self.config
        if c.preempt_type == "preempt/none":
            return None
        candidates = [self.free[n] for n in order]
        found = victims(job, candidates, self.s, self.now, c.preempt_type, c.preempt_mode,
                        c.preempt_exempt_time, self.preempted)
        for p in found or ():
            self.preempted.add(p.job_id)
            self.plan.preemptions.append(p)
        return found

    def _why_not(self, job: JobView, order: list[str], usable) -> Reason:
        """Resources when enough capable nodes are up but busy; ReqNodeNotAvail when too few are
        up (Reserved for maintenance when a MAINT reservation holds the missing ones)."""
        down = tuple(n for n in job.required if n not in self.free or not self.free[n].view.available)
        if down:  # a node it names with -w is down or drained: Slurm's UnavailableNodes
            self.plan.unavailable[job.job_id] = down
            return Reason.REQ_NODE_NOT_AVAIL
        up = [n for n in order if n in usable.static]
        busy = [n for n in up if n in usable.barred or usable(n, self.now, self.now + 1)]
        if len(busy) >= job.num_nodes:
            return Reason.RESOURCES
        if len(up) >= job.num_nodes:
            maint = any("MAINT" in r.flags for n in up for r in self.resv_by_node.get(n, ())
                        if r.start_time <= self.now < r.end_time)
            return Reason.RESERVED_MAINT if maint else Reason.REQ_NODE_NOT_AVAIL
        return Reason.REQ_NODE_NOT_AVAIL
