"""sched/backfill: lower-priority jobs may start ahead of blocked ones only if they delay none of
the reservations made for them.

Worked example (one node, 4 CPUs): A (2 CPUs) runs until t=100. The top pending job B needs 4
CPUs: it cannot start before A ends, so B is *reserved* at its shadow time t=100 with all 4
CPUs, and 2 CPUs are free now. C (2 CPUs, limit 50 s) ends at 50 <= 100: it starts now. D (2 CPUs,
no limit) would still hold its CPUs at t=100, when B needs every CPU (nothing is *extra* at the
shadow time): D waits with Reason=Priority, and B starts at t=100 as promised.

Two modes, both over the same Timeline (profile.py):
  easy          the first blocked job of each partition gets a reservation (Slurm's default and
                textbook EASY: a later job starts now if it ends by the shadow time or fits in
                what is extra at it);
  conservative  every blocked job, up to bf_max_job_test, gets one at its earliest slot, so no
                job is delayed by a later one.
A job "fits now" when it holds its share on enough nodes from now to the end of its time limit
without overlapping any reservation; jobs past bf_max_job_test are not tried (Reason=Priority).
"""

from __future__ import annotations

from ..model import NodeAllocation
from .profile import Timeline, planned_length
from .snapshot import JobView


class Backfill:
    """One pass's reservations. `place_now` answers "may this job start now?"; `reserve` books
    a blocked job's earliest slot. The caller (cycle.py) decides who gets reservations."""

    def __init__(self, timeline: Timeline, max_job_test: int):
        self.timeline = timeline
        self.max_job_test = max_job_test
        self.tested = 0
        self.booked = 0  # reservations made; with none, nothing can be delayed

    def exhausted(self) -> bool:
        return bool(self.max_job_test) and self.tested >= self.max_job_test

    def place_now(self, job: JobView, order: list[str], usable) -> list[NodeAllocation] | None:
        allocations = self.timeline.place(job, order, self.timeline.now, usable)
        if allocations is not None:
            self.timeline.block(allocations, self.timeline.now, _end(job, self.timeline.now))
        return allocations

    def reserve(self, job: JobView, order: list[str], usable, also=()) -> float | None:
        """Book job's earliest start on the timeline; returns that time (None: never)."""
        start, allocations = self.timeline.earliest(job, order, usable, also)
        if start is None:
            return None
        self.timeline.block(allocations, start, _end(job, start))
        self.booked += 1
        return start


def _end(job: JobView, start: float) -> float:
    return start + planned_length(job)
