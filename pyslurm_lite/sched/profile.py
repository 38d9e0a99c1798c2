"""The backfill planner's view of the future: per node, free resources as a step function of time.

Worked example (node n1, 4 CPUs, now = 0): job A holds 2 CPUs until t=100 (its time limit), so
n1's profile is [(0, 2 free), (100, 4 free)]. Reserving job B (4 CPUs, 50 s) at its earliest
start blocks [100, 150): [(0, 2), (100, 0), (150, 4)]. A job asking 2 CPUs for 200 s now would
need 2 free over [0, 200) — the interval [100, 150) has 0: it would delay B, so it may not start.
One asking 2 CPUs for 100 s fits (its window ends where B's begins).

Releases come from running jobs' estimated ends (their time limits; a job with none never
releases; under EASY++, sched_policy, the ends cycle.py plans with, and a pending job is booked
for its predicted length, planned_length). A job already past its limit is assumed to let go
within OVERDUE seconds, not now: its resources are still held. Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import math
from bisect import bisect_right

from ..model import NodeAllocation
from . import sharing, switches
from .policy import corrected
from .select import FreeNode, best_fit_order, fit_key, holds_required, pick_gpus, share
from .snapshot import JobView, NodeView, RunningView

OVERDUE = 1.0  # seconds: when a job past its time limit is expected to have let go


def planned_length(job: JobView) -> float:
    """Seconds backfill books a job for: its EASY++ prediction when it has one (its time
    limit still kills it), else its time limit (math.inf without one)."""
    if job.planned_minutes > 0:
        return job.planned_minutes * 60
    return job.time_limit * 60 if job.time_limit > 0 else math.inf


def planned_end(start: float, limit: float, predicted: float, now: float) -> float:
    """A running job's EASY++ planned end (0: none, its time limit's end): start + its
    prediction, or, once it has outlived that, + the next step of policy.LADDER above what it
    has run (policy.corrected), so the plan is never in the past. Seconds; limit math.inf
    for none.

    Worked example: started at 0, limit 3600, predicted 300; at now=1000 it has outlived the
    prediction: LADDER's next step above 1000 is 1800, so it is planned to end at 1800."""
    run = predicted
    if start + run <= now:
        run = corrected(now - start, limit)
    return 0.0 if run >= limit else start + run


class _NodeProfile:
    """Free CPUs, memory and GPU indices on one node from each breakpoint to the next."""

    __slots__ = ("view", "times", "cpus", "mem", "gpus", "shares", "share_total")

    def __init__(self, free: FreeNode, now: float):
        self.view: NodeView = free.view
        self.times = [now]
        self.cpus = [free.free_cpus]
        self.mem = [free.free_mem]
        self.gpus = [frozenset(free.free_gpus)]
        # gres/shard, gres/mps in use per interval, and per GPU configured (sched/sharing.py)
        self.shares = [dict(free.shares.use)]
        self.share_total = free.shares.total

    def _split(self, t: float) -> int:
        """Index of the interval starting at t, inserting a breakpoint there if needed."""
        i = bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        i += 1
        self.times.insert(i, t)
        self.cpus.insert(i, self.cpus[i - 1])
        self.mem.insert(i, self.mem[i - 1])
        self.gpus.insert(i, self.gpus[i - 1])
        self.shares.insert(i, dict(self.shares[i - 1]))
        return i

    def add(self, t0: float, t1: float, cpus: int, mem: int, gpus, give: bool) -> None:
        """Give back (give=True) or take resources over [t0, t1)."""
        i0 = self._split(t0)
        i1 = self._split(t1) if t1 < math.inf else len(self.times)
        sign = 1 if give else -1
        g = frozenset(gpus)
        for i in range(i0, i1):
            self.cpus[i] += sign * cpus
            self.mem[i] += sign * mem
            self.gpus[i] = self.gpus[i] | g if give else self.gpus[i] - g

    def add_shares(self, t0: float, t1: float, a: NodeAllocation, give: bool) -> None:
        """add() for the gres/shard or gres/mps an allocation holds (none: nothing to do)."""
        if not a.share_name:
            return
        i0 = self._split(t0)
        i1 = self._split(t1) if t1 < math.inf else len(self.times)
        for i in range(i0, i1):
            sharing.apply(self.shares[i], a, give)

    def window(self, t0: float, t1: float, job: JobView, index: int):
        """GPU indices free throughout [t0, t1) if the job's share fits there all along, else None."""
        need_c, need_m, _ = self._needs(job, index)
        gpus = None
        i = bisect_right(self.times, t0) - 1
        times = self.times
        first = i
        while i < len(times) and times[i] < t1:
            if self.cpus[i] < need_c or self.mem[i] < need_m:
                return None
            free = self.gpus[i] - sharing.busy(self.shares[i])  # a shared GPU is not free whole
            gpus = free if gpus is None else gpus & free
            i += 1
        if gpus is None:
            return None
        if job.share_name:  # its shares on one GPU, free all along (sched/sharing.py)
            gpu = sharing.window_gpu(job.share_name, job.shares_per_node, self.share_total,
                                     ((self.gpus[k], self.shares[k]) for k in range(first, i)))
            return None if gpu is None else [gpu]
        return pick_gpus(job, gpus, self.view)

    def first_fit(self, job: JobView, index: int, t_from: float, duration: float, usable, also):
        """The earliest t >= t_from at which the job's share fits here over [t, t+duration) and
        usable(t, t+duration) holds (usable None: always), or None. Candidates are t_from, this
        node's breakpoints after it and the instants in `also`, walked in order; a window that
        fails on an interval skips every candidate inside it (no start there can fit either)."""
        times, cpus, mem, gpus = self.times, self.cpus, self.mem, self.gpus
        need_c, need_m, need_g = self._needs(job, index)
        extra = sorted(a for a in also if a > t_from) if also else ()  # not breakpoints
        e = 0
        n = len(times)
        i = bisect_right(times, t_from) - 1  # the interval holding the candidate
        t = t_from
        while True:
            t1 = t + duration
            k = i
            while k < n and times[k] < t1:
                if cpus[k] < need_c or mem[k] < need_m or len(gpus[k]) < need_g:
                    break
                k += 1
            else:
                if (usable is None or usable(t, t1)) and (
                        not (job.gpus_per_node or job.exclusive or job.share_name) or
                        self.window(t, t1, job, index) is not None):
                    return t
                # fits, but unusable then or not the same GPUs throughout: the next candidate
                while e < len(extra) and extra[e] <= t:
                    e += 1
                if e < len(extra) and (i + 1 >= n or extra[e] < times[i + 1]):
                    t = extra[e]  # inside interval i still
                    continue
                k = i
            i = k + 1
            if i >= n:
                return None
            t = times[i]

    def fit_key(self, t: float) -> tuple[int, int, int]:
        """select.fit_key of this node with what is free at t."""
        i = bisect_right(self.times, t) - 1
        return fit_key(self.view, len(self.gpus[i]), self.cpus[i])

    def _needs(self, job: JobView, index: int) -> tuple[int, int, int]:
        """CPUs, memory and GPU count the job's share on this node needs."""
        cpus, mem = share(job, self.view, index)
        return cpus, mem, len(self.view.gpus) if job.exclusive else job.gpus_per_node


class Timeline:
    """Every node's profile, the running jobs' releases applied; blocks added as jobs are placed."""

    def __init__(self, free: dict[str, FreeNode], running: tuple[RunningView, ...], now: float,
                 best_fit: bool = True):
        self.now = now
        self.best_fit = best_fit  # False: first fit in `order` (the simulator's comparison)
        self.nodes = {name: _NodeProfile(f, now) for name, f in free.items()}
        for run in running:
            if math.isinf(run.end):
                continue
            t = run.end if run.end > now else now + OVERDUE
            for a in run.allocations:
                profile = self.nodes.get(a.node)
                if profile is not None:
                    profile.add(t, math.inf, a.cpus, a.mem, a.gpus, give=True)
                    profile.add_shares(t, math.inf, a, give=True)

    def place(self, job: JobView, order: list[str], t0: float, usable) -> list[NodeAllocation] | None:
        """Allocations for job starting at t0 on the best-fit nodes (select.best_fit_order, free
        resources at t0) that hold it for its whole time limit, or None. `usable(name, t0, t1)`
        vets nodes (advance reservations)."""
        t1 = t0 + planned_length(job)
        if job.num_nodes == 1 and not job.required and self.best_fit:
            return self._place_one(job, order, t0, t1, usable)
        chosen = []
        tree = switches.uses_topology(p.view for p in self.nodes.values())  # topology/tree
        ranked = best_fit_order(job, order, lambda n: self.nodes[n].fit_key(t0)) if self.best_fit else order
        for name in ranked:
            if len(chosen) == job.num_nodes and not tree:
                break
            profile = self.nodes[name]
            if not usable(name, t0, t1):
                continue
            # under topology/tree the node's final index is known only after choose(): the
            # first index's share, the largest (extra tasks go to the first nodes), is vetted
            gpus = profile.window(t0, t1, job, 0 if tree else len(chosen))
            if gpus is not None:
                chosen.append((profile, gpus))
        if tree:  # every node that fits, narrowed to the fewest switches (switches.py)
            chosen = switches.choose(job, chosen, t0, view_of=lambda c: c[0].view) or []
        if len(chosen) < job.num_nodes or not holds_required(job, [p.view.name for p, _ in chosen]):
            return None
        return self._allocations(job, chosen)

    def _place_one(self, job: JobView, order: list[str], t0: float, t1: float, usable):
        """place() for the common one-node job, in one pass: a node is vetted only when its key
        beats the best fit found so far, so most of a large partition costs a comparison."""
        best = best_key = None
        for name in order:
            profile = self.nodes[name]
            key = profile.fit_key(t0)
            if best_key is not None and key >= best_key:
                if key[0] > best_key[0]:
                    break  # `order` is by weight: the nodes left are all heavier
                continue
            if not usable(name, t0, t1):
                continue
            gpus = profile.window(t0, t1, job, 0)
            if gpus is not None:
                best, best_key = (profile, gpus), key
        return None if best is None else self._allocations(job, [best])

    @staticmethod
    def _allocations(job: JobView, chosen) -> list[NodeAllocation]:
        allocations = []
        for index, (profile, gpus) in enumerate(chosen):
            v = profile.view
            if job.exclusive:
                allocations.append(NodeAllocation(v.name, v.cpus, v.mem, list(gpus)))
            else:
                cpus, mem = share(job, v, index)
                allocations.append(NodeAllocation(v.name, cpus, mem, list(gpus)))
            sharing.mark(allocations[-1], job.share_name, job.shares_per_node)
        return allocations

    def earliest(self, job: JobView, order: list[str], usable, also=()):
        """(start, allocations) at the first instant from now where the job fits for its whole
        time limit, or (None, None) when it never does (unlimited jobs hold what it needs).
        `also`: more instants where usability may change (advance reservations' ends).

        Each node's own first fit is found first (profile.first_fit); the job can start no
        earlier than the num_nodes-th smallest of them, so only those instants are tried, and
        at each only on the nodes whose first fit is not later (a node that holds the job at
        t has its first fit at or before t: the candidate that starts t's interval)."""
        duration = planned_length(job)
        first = {}  # node -> its first fit, in `order`
        static = getattr(usable, "static", None)
        timeless = getattr(usable, "timeless", ())  # usable at any time: no call needed
        for name in order:
            if static is not None and name not in static:
                continue
            vet = None if name in timeless else (lambda t0, t1, n=name: usable(n, t0, t1))
            t = self.nodes[name].first_fit(job, 0, self.now, duration, vet, also)
            if t is not None:
                first[name] = t
        if len(first) < job.num_nodes or any(r not in first for r in job.required):
            return None, None
        firsts = sorted(first.values())
        after = max([firsts[job.num_nodes - 1]] + [first[r] for r in job.required])  # -w: all of them
        times = sorted({after} | {t for t in firsts if t > after}
                       | {t for name in order for t in self.nodes[name].times if t > after}
                       | {t for t in also if t > after}
                       if job.num_nodes > 1 or job.required else {firsts[0]})
        for t in times:
            allocations = self.place(job, [name for name, f in first.items() if f <= t], t, usable)
            if allocations is not None:
                return t, allocations
        return None, None

    def block(self, allocations, t0: float, t1: float) -> None:
        for a in allocations:
            self.nodes[a.node].add(t0, t1, a.cpus, a.mem, a.gpus, give=False)
            self.nodes[a.node].add_shares(t0, t1, a, give=False)
