"""Projected starts: when every pending job a pass left waiting is expected to start.

After a pass (cycle.py) the Timeline (profile.py) holds what runs, the pass's starts and its
backfill reservations. The projection continues on a copy of it, conservative style: each
pending job, in the pass's priority order, is booked at its earliest slot, so each projection
accounts for every job ahead of it. The bookings live on the copy only: no decision of the pass
changes (EASY stays EASY); the projection only fills Plan.projected.

Worked example (one node, 4 CPUs, now = 0): A (4 CPUs) runs until t=600. Pending, in priority
order: B (4 CPUs, 10 min), C (2 CPUs, 5 min), D (2 CPUs, 5 min), E (4 CPUs, 10 min).
  - the pass reserves B at 600 (EASY: the first blocked job); C, D and E wait (Priority);
  - C: the copy has B on [600, 1200): C's earliest slot is 1200; booked [1200, 1500);
  - D: 2 CPUs are still free on [1200, 1500): D is projected at 1200 too;
  - E: needs all 4 CPUs: 1500, after C and D.
With bf_max_job_test=3, B, C and D are tested and E gets no projection ("bf_max_job_test");
with bf_window=20 (minutes: 1200 s), E (1500) is past the window ("bf_window"), as Slurm's
backfill plans no further than bf_window.

Who gets a projection: the jobs that wait for resources (Resources, Priority, Reserved for
maintenance) and those waiting only for their --begin time, at their earliest slot from it. Held
and dependent jobs, jobs a limit holds back and those no node could ever hold keep their reason
and get none. A job without a time limit is booked forever: those behind it that need its
resources get no projection (no start can be promised), as backfill already treats them.

It runs when the snapshot asks (Snapshot.project_starts): it costs about what conservative
backfill's reservations cost, so the controller asks once every bf_interval seconds, as Slurm's
backfill refreshes its start times, and keeps the last projections in between (job_mgr).

Pure: no I/O, no clock. It reads the pass's state and writes only Plan.projected,
Plan.unprojected and Plan.projecting.
"""

from __future__ import annotations

import copy
import math

from ..model import Reason
from .profile import Timeline, planned_length
from .snapshot import JobView

# reasons of jobs that only wait for resources to free up: they can be projected
WAITING = frozenset({Reason.RESOURCES, Reason.PRIORITY, Reason.RESERVED_MAINT})
MAX_JOB_TEST, WINDOW = "bf_max_job_test", "bf_window"  # why a job got no projection


def projectable(reason: Reason) -> bool:
    """Could a job pending for this reason have a projected start (--begin: if nothing else
    holds it back)?"""
    return reason in WAITING or reason is Reason.BEGIN_TIME


def project(p, queue) -> None:
    """Fill p.plan.projected (job id -> projected start) for the pending jobs of `queue` (the
    pass's priority order) and p.plan.unprojected (job id -> cause) for those the limits cut.
    `p`: the finished pass (cycle._Pass), read for its timeline, node orders and usability."""
    plan, config = p.plan, p.config
    if not p.s.project_starts:
        return
    plan.projecting = True
    timeline = copy_timeline(p.timeline)
    horizon = p.now + config.window if config.window > 0 else math.inf
    limit, tested = config.max_job_test, 0
    started = {s.job_id for s in plan.starts}
    # per job shape: no earlier start than the last one found (bookings only take resources
    # away, so the same shape never fits earlier than it did), math.inf once it never fits
    floor: dict[tuple, float] = {}
    for job in queue:
        jid = job.job_id
        if jid in started:
            continue
        if jid in plan.reservations:
            tested += 1  # already booked on the timeline by the pass
            continue
        if not _projectable(p, job, plan.reasons.get(jid)):
            continue
        if limit and tested >= limit:
            plan.unprojected[jid] = MAX_JOB_TEST
            continue
        tested += 1
        start = _book(p, timeline, job, floor, horizon)
        if start is None:
            continue  # never, under what is booked (jobs without a time limit hold it)
        if start > horizon:
            plan.unprojected[jid] = WINDOW
        else:
            plan.projected[jid] = start


def _projectable(p, job: JobView, reason: Reason | None) -> bool:
    """Waits for resources only, or for its --begin time with nothing else holding it back."""
    if reason in WAITING:
        return True
    if reason is not Reason.BEGIN_TIME:
        return False
    part = p.s.partitions.get(job.partition)
    return (job.job_id not in p.s.dependencies and part is not None and part.up
            and (not job.reservation or job.reservation in p.resv_by_name)
            and not (job.array_limit and p.array_running.get(job.array_job_id, 0) >= job.array_limit)
            and p.tally.quick_reason(job) is None)


def _book(p, timeline: Timeline, job: JobView, floor: dict, horizon: float) -> float | None:
    """The job's earliest start on `timeline` (booked there when within the horizon), math.inf
    past it unbooked, or None when it never fits."""
    key = _shape(p, job)
    t_from = max(p.now, job.begin_time, floor.get(key, p.now))
    if t_from > horizon:
        return math.inf if floor.get(key) != math.inf else None
    order = p._order(job)  # the pass's own node order and usability: the same rules as backfill
    usable = p._usable(job)
    ends = [r.end_time for n in order for r in p.resv_by_node.get(n, ())]
    timeline.now = t_from  # earliest() searches from timeline.now: here, the copy's own
    try:
        start, allocations = timeline.earliest(job, order, usable, ends)
    finally:
        timeline.now = p.now
    if job.begin_time <= p.now:  # a --begin job's start says nothing of its shape's earlier slots
        floor[key] = math.inf if start is None else start
    if start is None:
        return None
    if start <= horizon:
        timeline.block(allocations, start, start + planned_length(job))
    return start


def _shape(p, job: JobView) -> tuple:
    """All that decides where and when a job fits, but not which job it is."""
    barred_by_user = job.exclusive_user or p.exclusive_held
    return (job.partition, job.reservation, job.num_nodes, job.cpus_per_node, job.mem_per_node,
            job.gpus_per_node, job.gpu_type, job.gpu_types, job.exclusive, job.features,
            job.time_limit, job.planned_minutes, job.required, job.excluded, job.whole_mem,
            job.exclusive_user,
            job.user if barred_by_user else "", job.enforce_binding, job.req_switch,
            job.share_name, job.shares_per_node)


def copy_timeline(timeline: Timeline) -> Timeline:
    """A copy whose bookings leave the original as it was: every node's step function copied
    (the GPU sets are immutable; the per-interval share counts are dicts changed in place)."""
    c = copy.copy(timeline)
    c.nodes = {}
    for name, profile in timeline.nodes.items():
        q = copy.copy(profile)
        q.times, q.cpus, q.mem, q.gpus = (list(profile.times), list(profile.cpus),
                                          list(profile.mem), list(profile.gpus))
        q.shares = [dict(s) for s in profile.shares]
        c.nodes[name] = q
    return c
