"""First fit vs best fit for GPU jobs, through the daemon's own `sched.schedule()` on a virtual
clock (bench/bench_gpu_placement.py prints and plots it).

Worked example (2 nodes x 8 GPUs): a 1-GPU job runs on n1. Another 1-GPU job arrives: first fit
puts it on n1 too (n1 comes first and has room), and so does best fit; but once the first one
ends and a third arrives while the second still runs... first fit sends it to n1 whatever n1
holds, best fit to the fuller node. The difference shows when jobs end out of order: first fit
leaves 1-GPU jobs scattered over both nodes, and an 8-GPU job then waits although 14 GPUs are
free in total; best fit keeps them together and a whole node free.

Workload (`workload()`, seeded): jobs of 1, 2, 4 or 8 GPUs (by count 50/25/15/10 %), 4 CPUs per
GPU, one node each, time limits of 30, 60, 120 or 240 minutes, each running 30-100 % of it,
arriving as a Poisson stream sized to `load` (offered GPU-time / the cluster's GPU-time).
Events at one instant: ends, then arrivals, then one scheduling pass (sched/backfill).

Measures (`Result`), over the run (first submit to last end): GPU utilization; mean wait of the
8-GPU jobs and of all; the fraction of the time in which some job waits while at least as many
GPUs as it asks are free in total (held back for a backfill reservation, or split over nodes),
and the part of it where they are free on no single node (fragmentation proper).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from heapq import heappop, heappush

from ..model import NodeAllocation
from ..sched import JobView, NodeView, PartitionView, RunningView, SchedConfig, Snapshot, schedule

PARTITION = "gpu"
CPUS_PER_GPU = 4
MEMORY = 1 << 20  # MiB per node: nobody runs out
SIZES = ((1, 0.50), (2, 0.25), (4, 0.15), (8, 0.10))  # GPUs, share of jobs
LIMITS = (30, 60, 120, 240)  # minutes


@dataclass(frozen=True)
class SimJob:
    submit: float  # seconds
    gpus: int
    limit: int  # minutes
    run: float  # seconds, <= limit * 60


@dataclass
class Result:
    policy: str
    utilization: float  # busy GPU-seconds / (GPUs x run time)
    wait_8: float  # seconds, mean over 8-GPU jobs
    wait_all: float  # seconds, mean over all jobs
    waiting_free: float  # fraction of the run: a job waits while enough GPUs are free in total
    fragmented: float  # ... and on no single node are there enough
    util_series: list = field(default_factory=list)  # (time, busy GPUs) after each event
    queue8_series: list = field(default_factory=list)  # (time, 8-GPU jobs waiting)


def workload(jobs: int, nodes: int, gpus_per_node: int, load: float, seed: int) -> list[SimJob]:
    rng = random.Random(seed)
    mean_gpus = sum(g * p for g, p in SIZES)
    mean_run = sum(LIMITS) / len(LIMITS) * 60 * 0.65
    rate = load * nodes * gpus_per_node / (mean_gpus * mean_run)  # jobs per second
    out, t = [], 0.0
    for _ in range(jobs):
        t += rng.expovariate(rate)
        gpus = rng.choices([g for g, _ in SIZES], [p for _, p in SIZES])[0]
        limit = rng.choice(LIMITS)
        out.append(SimJob(round(t), gpus, limit, round(limit * 60 * rng.uniform(0.3, 1.0))))
    return out


def simulate(jobs: list[SimJob], nodes: int, gpus_per_node: int, best_fit: bool) -> Result:
    sim = _Sim(jobs, nodes, gpus_per_node, SchedConfig(best_fit=best_fit))
    sim.run()
    return sim.result("best fit" if best_fit else "first fit")


class _Sim:
    def __init__(self, jobs, nodes: int, gpus_per_node: int, config: SchedConfig):
        self.jobs, self.config = jobs, config
        self.names = [f"n{i + 1}" for i in range(nodes)]
        self.per_node = gpus_per_node
        self.free = {n: set(range(gpus_per_node)) for n in self.names}
        self.pending: dict[int, JobView] = {}
        self.running: dict[int, RunningView] = {}
        self.start: dict[int, float] = {}
        self.ends: list = []  # heap of (end, job index)
        self.util, self.queue8 = [], []
        self.waiting_free = self.fragmented = 0.0  # seconds
        self._last = 0.0

    def run(self) -> None:
        i, n = 0, len(self.jobs)
        while i < n or self.ends:
            now = self.ends[0][0] if self.ends and (i == n or self.ends[0][0] <= self.jobs[i].submit) \
                else self.jobs[i].submit
            self._account(now)
            while self.ends and self.ends[0][0] == now:
                self._end(heappop(self.ends)[1])
            while i < n and self.jobs[i].submit == now:
                self.pending[i] = self._view(i)
                i += 1
            self._pass(now)

    def _view(self, i: int) -> JobView:
        j = self.jobs[i]
        return JobView(job_id=i + 1, priority=1, submit_time=j.submit, partition=PARTITION,
                       num_nodes=1, cpus_per_node=(j.gpus * CPUS_PER_GPU,), mem_per_node=(0,),
                       gpus_per_node=j.gpus, time_limit=j.limit)

    def _pass(self, now: float) -> None:
        plan = schedule(self._snapshot(), now, self.config)
        for s in plan.starts:
            i = s.job_id - 1
            a = s.allocations[0]
            self.free[a.node] -= set(a.gpus)
            del self.pending[i]
            self.start[i] = now
            self.running[i] = RunningView(s.job_id, (a,), now + self.jobs[i].limit * 60, start=now,
                                          partition=PARTITION)
            heappush(self.ends, (now + self.jobs[i].run, i))
        self.util.append((now, self._busy()))
        self.queue8.append((now, sum(1 for k in self.pending if self.jobs[k].gpus == 8)))

    def _end(self, i: int) -> None:
        a: NodeAllocation = self.running.pop(i).allocations[0]
        self.free[a.node] |= set(a.gpus)

    def _busy(self) -> int:
        return len(self.names) * self.per_node - sum(len(f) for f in self.free.values())

    def _account(self, now: float) -> None:
        """Time since the last event: with some job waiting although enough GPUs are free in
        total, and with enough free in total but on no one node."""
        total = sum(len(f) for f in self.free.values())
        most = max(len(f) for f in self.free.values())
        asks = [self.jobs[k].gpus for k in self.pending]
        if any(g <= total for g in asks):
            self.waiting_free += now - self._last
        if any(most < g <= total for g in asks):
            self.fragmented += now - self._last
        self._last = now

    def _snapshot(self) -> Snapshot:
        cpus = self.per_node * CPUS_PER_GPU
        used = {n: 0 for n in self.names}
        for r in self.running.values():
            used[r.allocations[0].node] += r.allocations[0].cpus
        nodes = tuple(NodeView(name=n, cpus=cpus, mem=MEMORY,
                               gpus=tuple((g, "") for g in range(self.per_node)),
                               free_cpus=cpus - used[n], free_mem=MEMORY,
                               free_gpus=tuple(sorted(self.free[n])), available=True,
                               idle=len(self.free[n]) == self.per_node)
                      for n in self.names)
        return Snapshot(jobs=tuple(self.pending.values()), nodes=nodes,
                        partitions={PARTITION: PartitionView(PARTITION, tuple(self.names))},
                        running=tuple(self.running.values()))

    def result(self, policy: str) -> Result:
        t0 = min(j.submit for j in self.jobs)
        span = (self._last - t0) or 1.0  # the last event is the last end
        busy = _area(self.util, t0, self._last)
        waits = {i: self.start[i] - j.submit for i, j in enumerate(self.jobs)}
        eight = [w for i, w in waits.items() if self.jobs[i].gpus == 8]
        return Result(policy, busy / (span * len(self.names) * self.per_node),
                      sum(eight) / max(len(eight), 1), sum(waits.values()) / len(waits),
                      self.waiting_free / span, self.fragmented / span, self.util, self.queue8)


def _area(series: list, t0: float, t1: float) -> float:
    """Integral over [t0, t1) of a step function given as (time, value) after each change."""
    total = 0.0
    for (a, v), (b, _) in zip(series, series[1:] + [(t1, 0)]):
        lo, hi = max(a, t0), min(b, t1)
        if hi > lo:
            total += v * (hi - lo)
    return total


def draw(path: str, first: Result, best: Result, columns: int = 1000) -> None:
    """A PNG of four panels on one time axis (plot.py's drawing): GPU utilization under first
    fit (orange) and best fit (blue), then the 8-GPU jobs waiting under each, on one scale."""
    from . import plot
    t0 = min(first.util_series[0][0], best.util_series[0][0])
    t1 = max(first.util_series[-1][0], best.util_series[-1][0]) or 1.0
    gpus = max(max(v for _, v in first.util_series), max(v for _, v in best.util_series), 1)
    util = [_columns(r.util_series, t0, t1, columns, mean=True) for r in (first, best)]
    queue = [_columns(r.queue8_series, t0, t1, columns, mean=False) for r in (first, best)]
    peak = max(max(q) for q in queue) or 1
    panels = [(util[0], gpus, plot.ORANGE), (util[1], gpus, plot.BLUE),
              (queue[0], peak, plot.ORANGE), (queue[1], peak, plot.BLUE)]
    height = len(panels) * (plot.PANEL + plot.GAP) + 2 * plot.MARGIN
    width = plot.WIDTH + 2 * plot.MARGIN
    img = [bytearray(plot.WHITE * width) for _ in range(height)]
    for k, (values, scale, color) in enumerate(panels):
        y0 = plot.MARGIN + k * (plot.PANEL + plot.GAP)
        plot._columns(img, y0, values, scale, color)
        plot._axes(img, y0)
    plot._write_png(path, img, width, height)


def _columns(series: list, t0: float, t1: float, columns: int, mean: bool) -> list:
    """A step function sampled into `columns`: each column's mean (or largest) value."""
    span = (t1 - t0) / columns
    out = []
    k = 0
    for c in range(columns):
        lo, hi = t0 + c * span, t0 + (c + 1) * span
        while k + 1 < len(series) and series[k + 1][0] <= lo:
            k += 1
        if mean:
            out.append(_area(series[k:], lo, hi) / span if span else 0.0)
        else:
            j, peak = k, series[k][1]
            while j + 1 < len(series) and series[j + 1][0] < hi:
                j += 1
                peak = max(peak, series[j][1])
            out.append(peak)
    return out
