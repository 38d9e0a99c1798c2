"""sched/backfill, EASY: lower-priority jobs may start ahead of a blocked job only if they do not
delay it.

Worked example (one node, 4 CPUs): A (2 CPUs) runs until t=100. The top pending job B needs 4
CPUs: it cannot start before A ends, so B is *reserved* at its shadow time t=100 with all 4
CPUs, and 2 CPUs are free now. C (2 CPUs, limit 50 s) ends at 50 <= 100: it starts now. D (2 CPUs,
no limit) would still hold its CPUs at t=100, when B needs every CPU (nothing is *extra* at the
shadow time): D waits with Reason=Priority, and B starts at t=100 as promised.

On nodes with several resources the same rule holds per node and per resource: the shadow time
is the first running job's estimated end after which the reserved job fits, and what is free at
that time beyond its reservation is the extra a long backfill job may use.

Nothing here does I/O or reads a clock; estimated ends come from the snapshot's running jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import NodeAllocation
from .select import FreeNode, select_nodes
from .snapshot import JobView, RunningView


@dataclass
class Reservation:
    job_id: int
    start: float  # the shadow time
    allocations: list[NodeAllocation]


class _Copy(FreeNode):
    """A FreeNode copy that can take back what a running job releases."""

    @classmethod
    def of(cls, node: FreeNode) -> "_Copy":
        c = cls(node.view)
        c.free_cpus, c.free_mem, c.free_gpus, c.idle = (node.free_cpus, node.free_mem,
                                                        list(node.free_gpus), node.idle)
        return c

    def give_back(self, a: NodeAllocation) -> None:
        self.free_cpus += a.cpus
        self.free_mem += a.mem
        self.free_gpus = sorted(set(self.free_gpus) | set(a.gpus))
        self.idle = self.free_cpus >= self.view.cpus and len(self.free_gpus) >= len(self.view.gpus)


def reserve(job: JobView, candidates: list[FreeNode], running: tuple[RunningView, ...],
            now: float) -> tuple[Reservation | None, dict[str, _Copy]]:
    """When (and where) could `job` start, as running jobs end at their estimates? Returns the
    reservation and the nodes' free state at that time, or (None, {}) if never (unlimited
    jobs hold what it needs)."""
    future = {n.view.name: _Copy.of(n) for n in candidates}
    for run in sorted(running, key=lambda r: (r.end, r.job_id)):
        if math.isinf(run.end):
            break
        touched = False
        for a in run.allocations:
            if a.node in future:
                future[a.node].give_back(a)
                touched = True
        if not touched:
            continue
        trial = {k: _Copy.of(v) for k, v in future.items()}
        order = [trial[n.view.name] for n in candidates]
        allocations = select_nodes(job, order)
        if allocations is not None:
            # what is left at the shadow time beyond the reservation is the extra
            return Reservation(job.job_id, max(run.end, now), allocations), trial
    return None, {}


def may_backfill(job: JobView, candidates: list[FreeNode], reservation: Reservation,
                 extra: dict[str, _Copy], now: float) -> list[NodeAllocation] | None:
    """Start `job` now without delaying the reservation? Either it ends (by its time limit) no
    later than the shadow time, or what it takes fits in the extra of the nodes it uses."""
    ends = now + job.time_limit * 60 if job.time_limit > 0 else math.inf
    if ends <= reservation.start:
        return select_nodes(job, candidates)
    # it would still run at the shadow time: only nodes whose extra can hold it are candidates
    both = [n for n in candidates if n.view.name not in extra or extra[n.view.name].fits(job, 0)]
    allocations = select_nodes(job, both)
    if allocations is not None:
        for a in allocations:
            if a.node in extra:
                extra[a.node].free_cpus -= a.cpus
                extra[a.node].free_mem -= a.mem
                extra[a.node].free_gpus = [g for g in extra[a.node].free_gpus if g not in a.gpus]
                extra[a.node].idle = False
    return allocations
