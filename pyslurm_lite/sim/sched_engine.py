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
"""

from __future__ import annotations

import math
from heapq import heappop, heappush

from ..sched import JobView, NodeView, PartitionView, RunningView, SchedConfig, Snapshot, schedule
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


def replay(trace: Trace, policy: str) -> list:
    """Start time of every job in service order, as sched.schedule() decides them."""
    config = SchedConfig(backfill=BACKFILL[policy])
    submit, run, procs, estimate = trace.submit, trace.run, trace.procs, trace.estimate
    start = [None] * len(trace)
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
        while i < n and submit[i] == now:
            pending[i] = _job_view(i, submit[i], procs[i], estimate[i])
            i += 1
        plan = schedule(_snapshot(trace.machine, free, pending, running), now, config)
        for s in plan.starts:
            j = s.job_id - 1
            del pending[j]
            start[j] = now
            free -= procs[j]
            running[j] = RunningView(s.job_id, tuple(s.allocations), now + estimate[j])
            heappush(ends, (now + run[j], j))
    return start


def _job_view(j: int, submit, procs: int, estimate) -> JobView:
    # job ids from 1 in service order, which is file order among equal submit times
    return JobView(job_id=j + 1, priority=1, submit_time=submit, partition=PARTITION,
                   num_nodes=1, cpus_per_node=(procs,), mem_per_node=(0,),
                   time_limit=minutes(estimate))


def _snapshot(machine: int, free: int, pending: dict, running: dict) -> Snapshot:
    node = NodeView(name=NODE, cpus=machine, mem=MEMORY, gpus=(), free_cpus=free,
                    free_mem=MEMORY, free_gpus=(), available=True, idle=free == machine)
    return Snapshot(jobs=tuple(pending.values()), nodes=(node,),
                    partitions={PARTITION: PartitionView(PARTITION, (NODE,))},
                    running=tuple(running.values()))

