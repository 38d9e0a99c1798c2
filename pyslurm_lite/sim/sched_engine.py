"""`--engine scheduler`: the same replay driven through the daemon's own `sched.schedule()`.

Slow (one full scheduling pass per event instant, every pending job as a JobView), so it is for
checking, not for whole traces: the fast engine (engine.py) must give the very same start times,
job by job, and a unit test holds the two to that.

How the trace becomes scheduler input, at each instant (after ends, then arrivals):
  * one node `sim1` with the machine's processors as CPUs and memory nobody runs out of, in one
    partition `sim`;
  * every waiting job as a JobView on 1 node with `procs` CPUs, all priorities equal (so the
    scheduler's order is submit time, then job id = position in the file: the service order),
    time_limit = estimate in minutes, as a float;
  * every running job as a RunningView ending at start + estimate;
  * sched/builtin (SchedConfig(backfill=False)) for fcfs, sched/backfill for easy.
Every start in the returned plan happens now.

`replay_jobs()` (below) is the multi-resource replay behind `simulate --from-sacct`: the same
loop on a slurm.conf's nodes, partitions and QOS (conf_cluster.py) with jobs as sacct recorded
them (sacct.py): several nodes, memory, typed GPUs, priorities (priority/multifactor's fair
share charged as the replay runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from heapq import heappop, heappush

from ..model import parse_constraint
from ..sched import JobView, NodeView, PartitionView, RunningView, SchedConfig, Snapshot, schedule
from .conf_cluster import Cluster, Priorities
from ..sched.policy import POLICIES, History, WaitScale
from .guard_refit import choose_factor, next_fit, window_jobs
from .sacct import Record
from ..sched.profile import planned_end
from .swf import Trace

NODE, PARTITION = "sim1", "sim"
MEMORY = 1 << 40  # MiB: more than any job asks (they ask none)
BACKFILL = {"fcfs": False, "easy": True}  # sched/builtin or sched/backfill, by policy


def minutes(seconds: int | float) -> float:
    """seconds / 60 as a float m with m * 60 == seconds, or, where no float has that (31 s),
    the nearest m with m * 60 just below: the scheduler computes a job's end as
    now + time_limit * 60, and plain seconds / 60 comes back one ulp over for about 3 % of whole
    seconds (31 / 60 * 60 = 31.000000000000004), which would turn an exact tie with the shadow
    time ("ends no later than") into a miss. Just below keeps the tie; with whole-second times
    nothing else can fall between."""
    m = seconds / 60
    down = math.nextafter(m, -math.inf)
    for candidate in (m, math.nextafter(m, math.inf), down):
        if candidate * 60 == seconds:
            return candidate
    return m if m * 60 < seconds else down


class PolicyState:
    """The controller's part of a sched_policy (controller/state.py), for a replay: the guard's
    waits, the starved jobs carried from pass to pass, EASY++'s per-user history and each job's
    prediction, fixed when it is first seen."""

    def __init__(self, policy, epoch: float = 0.0, first: float = 0.0):
        self.policy = policy
        self.waits = WaitScale(policy.guard) if policy is not None and policy.guard.factor else None
        # the guard's re-fits (Refit): a window after the first job (`first`), then each period
        refit = policy.refit if self.waits is not None else None
        self.next_refit = first + refit.window if refit is not None else math.inf
        self.history = History() if policy is not None and policy.predict else None
        self.epoch = epoch  # a score's time origin (Snapshot.sched_epoch)
        self.predicted: dict[int, float] = {}  # job id -> seconds
        self.starved = frozenset()

    def arrived(self, view: JobView, user, limit: float) -> JobView:
        """A new pending job (limit: its time limit in seconds, math.inf for none)."""
        if self.history is None:
            return view
        run = self.predicted[view.job_id] = self.history.predict(user, limit)
        return replace(view, planned_minutes=minutes(run)) if run < limit else view

    def running(self, view: RunningView, limit: float, now: float) -> RunningView:
        if self.history is None:
            return view
        return replace(view, planned_end=planned_end(view.start, limit,
                                                     self.predicted[view.job_id], now))

    def snapshot(self, snap: Snapshot) -> Snapshot:
        if self.waits is None:
            return replace(snap, sched_epoch=self.epoch)
        return replace(snap, sched_epoch=self.epoch, starve_bound=self.waits.bound(),
                       starved=self.starved)

    def planned(self, plan) -> None:
        self.starved = plan.starved

    def refit(self, now: float, window) -> None:
        """A fit, when one is due: window() gives the jobs it replays (guard_refit)."""
        if now < self.next_refit:
            return
        seed = (self.waits.count, self.waits.total)
        self.waits.refitted(choose_factor(window(), self.policy, seed, self.waits.guard.factor))
        self.next_refit = next_fit(self.next_refit, now, self.policy.refit)

    def started(self, wait: float) -> None:
        if self.waits is not None:
            self.waits.started(wait)

    def ended(self, job_id: int, user, run: float) -> None:
        self.predicted.pop(job_id, None)
        if self.history is not None:
            self.history.completed(user, run)


def replay(trace: Trace, policy: str) -> list:
    """Start time of every job in service order, as sched.schedule() decides them; for a policy
    of sched.policy.POLICIES with PolicyState playing the controller's part."""
    return replay_projected(trace, policy, project=False)[0]


def replay_projected(trace: Trace, policy: str, project: bool = True) -> tuple[list, list]:
    """(start times, each job's projected start at its submit: sched/projection.py's, asked at
    every instant with arrivals; None where it gave none)."""
    chosen = POLICIES.get(policy)
    config = SchedConfig(backfill=BACKFILL.get(policy, True), policy=chosen)
    state = PolicyState(chosen, first=trace.submit[0] if len(trace) else 0.0)
    submit, run, procs, estimate, user = (trace.submit, trace.run, trace.procs, trace.estimate,
                                          trace.user)
    start = [None] * len(trace)
    projected = [None] * len(trace)
    pending: dict[int, JobView] = {}
    running: dict[int, RunningView] = {}
    ends: list = []  # heap of (actual end, job)
    free, i, n = trace.machine, 0, len(trace)
    while i < n or ends:
        now = ends[0][0] if ends and (i == n or ends[0][0] <= submit[i]) else submit[i]
        while ends and ends[0][0] == now:
            j = heappop(ends)[1]
            free += procs[j]
            del running[j]
            state.ended(j + 1, user[j], run[j])
        first = i
        while i < n and submit[i] == now:
            pending[i] = state.arrived(_job_view(i, submit[i], procs[i], estimate[i]), user[i],
                                       estimate[i])
            i += 1
        state.refit(now, lambda: window_jobs(trace, start, i, now, chosen.refit))
        views = tuple(state.running(r, estimate[j], now) for j, r in running.items())
        snap = state.snapshot(_snapshot(trace.machine, free, pending, views))
        if project and i > first:
            snap = replace(snap, project_starts=True)
        plan = schedule(snap, now, config)
        state.planned(plan)
        for j in range(first, i) if project else ():
            projected[j] = plan.projected.get(j + 1, plan.reservations.get(j + 1))
        for s in plan.starts:
            j = s.job_id - 1
            del pending[j]
            start[j] = now
            free -= procs[j]
            running[j] = RunningView(s.job_id, tuple(s.allocations), now + estimate[j], start=now)
            heappush(ends, (now + run[j], j))
            state.started(now - submit[j])
            if project and first <= j < i:
                projected[j] = now
    return start, projected


def _job_view(j: int, submit, procs: int, estimate) -> JobView:
    # job ids from 1 in service order, which is file order among equal submit times
    return JobView(job_id=j + 1, priority=1, submit_time=submit, partition=PARTITION,
                   num_nodes=1, cpus_per_node=(procs,), mem_per_node=(0,),
                   time_limit=minutes(estimate))


def _snapshot(machine: int, free: int, pending: dict, running: tuple) -> Snapshot:
    node = NodeView(name=NODE, cpus=machine, mem=MEMORY, gpus=(), free_cpus=free,
                    free_mem=MEMORY, free_gpus=(), available=True, idle=free == machine)
    return Snapshot(jobs=tuple(pending.values()), nodes=(node,),
                    partitions={PARTITION: PartitionView(PARTITION, (NODE,))},
                    running=running)



# ---- multi-resource replay (`simulate --from-sacct`) -------------------------------------------
#
# The same loop over a real cluster: the conf's nodes with their CPUs, memory and GPUs, its
# partitions and QOS (conf_cluster.py builds them), every recorded job asking what it asked
# (nodes, CPUs, memory, GPUs of a type, --constraint), in its partition, under its QOS, user and
# account. At each instant: ends, then arrivals, then (priority/multifactor) fair share charged
# and priorities recomputed, then one sched.schedule() pass; every start happens now, on the
# allocations the plan gives, and holds them until start + run (run capped at the time limit);
# backfill sees it held until start + time limit.


@dataclass(frozen=True)
class SimJob:
    """One recorded job as this cluster takes it."""

    record: Record
    partition: str
    limit: int  # minutes; -1 unlimited

    @property
    def run(self) -> int:
        """Seconds it holds its allocation: the recorded run, cut at its time limit."""
        return self.record.run if self.limit < 0 else min(self.record.run, self.limit * 60)


@dataclass
class Outcome:
    start: dict[int, float]  # job index -> when it started
    never: dict[int, str]  # job index -> why it was still pending when nothing else could happen


def replay_jobs(jobs: list[SimJob], cluster: Cluster) -> Outcome:
    """Start time of every job (indexed as `jobs`, which are in submit order) on `cluster`."""
    return _Replay(jobs, cluster).run()


class _Replay:
    def __init__(self, jobs: list[SimJob], cluster: Cluster):
        self.jobs, self.cluster = jobs, cluster
        self.free = {n: [v.free_cpus, v.free_mem, set(v.free_gpus)] for n, v in cluster.nodes.items()}
        self.pending: dict[int, JobView] = {}
        self.running: dict[int, RunningView] = {}
        self.start: dict[int, float] = {}
        self.reasons: dict[int, object] = {}
        self.ends: list = []  # heap of (end, job index)
        first = jobs[0].record.submit if jobs else 0.0
        self.policy = PolicyState(cluster.config.policy, first, first)
        self.cpu_trace = _cpu_trace(jobs, cluster) if self.policy.next_refit < math.inf else None
        multifactor = cluster.cfg.priority_type == "priority/multifactor"
        self.priorities = Priorities(cluster.cfg) if multifactor else None
        self.billing: dict[int, float] = {}

    def run(self) -> Outcome:
        jobs, ends = self.jobs, self.ends
        i, n = 0, len(jobs)
        while i < n or ends:
            now = ends[0][0] if ends and (i == n or ends[0][0] <= jobs[i].record.submit) \
                else jobs[i].record.submit
            self._charge(now)  # usage up to now, while the ending jobs still count as running
            while ends and ends[0][0] == now:
                self._end(heappop(ends)[1])
            while i < n and jobs[i].record.submit == now:
                self.pending[i] = self.policy.arrived(_sacct_view(i, jobs[i]), jobs[i].record.user,
                                                      _seconds(jobs[i].limit))
                i += 1
            if self.cpu_trace is not None:
                self.policy.refit(now, lambda: self._window(now, i))
            self._pass(now)
        never = {k: getattr(self.reasons.get(k + 1), "value", "never scheduled") for k in self.pending}
        return Outcome(self.start, never)

    def _window(self, now: float, arrived: int) -> Trace:
        """The guard re-fit's window, the cluster as its processors (guard_refit replays)."""
        start = [self.start.get(k) for k in range(arrived)]
        return window_jobs(self.cpu_trace, start, arrived, now, self.policy.policy.refit)

    def _pass(self, now: float) -> None:
        if self.priorities is not None:
            self._reprioritize(now)
        plan = schedule(self.policy.snapshot(self._snapshot(now)), now, self.cluster.config)
        self.policy.planned(plan)
        for s in plan.starts:
            self._begin(s.job_id - 1, tuple(s.allocations), now)
        self.reasons = plan.reasons

    def _begin(self, k: int, allocations: tuple, now: float) -> None:
        job = self.jobs[k]
        view = self.pending.pop(k)
        for a in allocations:
            free = self.free[a.node]
            free[0] -= a.cpus
            free[1] -= a.mem
            free[2] -= set(a.gpus)
        self.start[k] = now
        self.policy.started(now - job.record.submit)
        end = now + job.limit * 60 if job.limit >= 0 else math.inf
        self.running[k] = RunningView(view.job_id, allocations, end, start=now,
                                      partition=job.partition, user=view.user, qos=view.qos,
                                      account=view.account)
        if self.priorities is not None:
            self.billing[k] = self.priorities.billing(job.record, job.partition)
        heappush(self.ends, (now + job.run, k))

    def _end(self, k: int) -> None:
        self.policy.ended(k + 1, self.jobs[k].record.user, self.jobs[k].run)
        for a in self.running.pop(k).allocations:
            free = self.free[a.node]
            free[0] += a.cpus
            free[1] += a.mem
            free[2] |= set(a.gpus)
        self.billing.pop(k, None)

    def _charge(self, now: float) -> None:
        if self.priorities is not None:
            rec = self.jobs
            self.priorities.charge(now, [(rec[k].record.user, rec[k].record.account, b)
                                         for k, b in self.billing.items()])

    def _reprioritize(self, now: float) -> None:
        p = self.priorities
        shares = p.shares({(self.jobs[k].record.account, self.jobs[k].record.user)
                           for k in self.pending})
        for k, view in self.pending.items():
            job = self.jobs[k]
            value = p.priority(job.record, job.partition, now, shares)
            if value != view.priority:
                self.pending[k] = replace(view, priority=value)

    def _snapshot(self, now: float) -> Snapshot:
        nodes = tuple(replace(v, free_cpus=f[0], free_mem=f[1], free_gpus=tuple(sorted(f[2])),
                              idle=f[0] == v.cpus and len(f[2]) == len(v.gpus))
                      for v, f in ((v, self.free[name]) for name, v in self.cluster.nodes.items()))
        return Snapshot(jobs=tuple(self.pending.values()), nodes=nodes,
                        partitions=self.cluster.partitions,
                        running=tuple(self.policy.running(r, _seconds(self.jobs[k].limit), now)
                                      for k, r in self.running.items()),
                        qos=self.cluster.cfg.qos)


def _cpu_trace(jobs: list[SimJob], cluster: Cluster) -> Trace:
    """The jobs as processor counts on one machine of the cluster's CPUs: what the guard's
    re-fit replays (sim/guard_refit.py); a job without a time limit is estimated at its run."""
    t = Trace(name="cpus", machine=sum(v.cpus for v in cluster.nodes.values()))
    for k, job in enumerate(jobs):
        r = job.record
        t.ids.append(k + 1)
        t.submit.append(r.submit)
        t.run.append(job.run)
        t.procs.append(r.cpus)
        t.estimate.append(job.limit * 60 if job.limit >= 0 else job.run)
        t.user.append(r.user)
    return t


def _seconds(limit: int) -> float:
    """A time limit in minutes (-1: none) in seconds (math.inf: none)."""
    return limit * 60 if limit >= 0 else math.inf


def _sacct_view(k: int, job: SimJob) -> JobView:
    r = job.record
    return JobView(job_id=k + 1, priority=1, submit_time=r.submit, partition=job.partition,
                   num_nodes=r.nodes, cpus_per_node=r.cpus_per_node,
                   mem_per_node=(r.mem,) * r.nodes, gpus_per_node=r.gpus, gpu_type=r.gpu_type,
                   features=parse_constraint(r.constraint) if r.constraint else (),
                   time_limit=job.limit, user=r.user, account=r.account, qos=r.qos or "normal")
