"""One scheduling pass: priority order within each partition, then (sched/backfill) EASY.

Pipeline, wired here and nowhere else:
  1. sort     — priority (desc), submit time, job id: ties break the same way every run;
  2. filter   — held, not yet eligible (--begin), dependency unmet, partition down: the job waits
                with that reason;
  3. select   — first nodes of the job's partition that fit it (select.py);
  4. reserve  — the first job that does not fit blocks its partition and, with backfill, gets a
                reservation at its shadow time (backfill.py);
  5. backfill — a lower job of a blocked partition starts only if it cannot delay that
                reservation; otherwise it waits with Reason=Priority. Without backfill
                (sched/builtin) every lower job of a blocked partition waits.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Reason
from .backfill import may_backfill, reserve
from .dependency import NEVER
from .select import FreeNode, capable, select_nodes
from .snapshot import JobView, Plan, Snapshot, Start


@dataclass(frozen=True)
class SchedConfig:
    max_starts: int = 100000  # starts per pass, a safety valve
    backfill: bool = True  # sched/backfill (EASY); False: sched/builtin


def sort_key(job: JobView):
    return (-job.priority, job.submit_time, job.job_id)


def _filter_reason(job: JobView, snapshot: Snapshot, now: float) -> Reason | None:
    if job.held:
        return Reason.HELD_ADMIN if job.held_by_admin else Reason.HELD_USER
    if job.begin_time > now:
        return Reason.BEGIN_TIME
    unmet = snapshot.dependencies.get(job.job_id)
    if unmet is not None:
        return Reason.DEPENDENCY_NEVER if unmet == NEVER else Reason.DEPENDENCY
    part = snapshot.partitions.get(job.partition)
    if part is None or not part.up:
        return Reason.PARTITION_DOWN
    return None


def schedule(snapshot: Snapshot, now: float, config: SchedConfig = SchedConfig()) -> Plan:
    plan = Plan()
    free = {n.name: FreeNode(n) for n in snapshot.nodes}
    order = sorted(snapshot.nodes, key=lambda n: (n.weight, n.name))
    by_partition = {name: [free[n.name] for n in order if n.name in set(p.nodes)]
                    for name, p in snapshot.partitions.items()}
    blocked: dict[str, tuple] = {}  # partition -> (reservation or None, extra at its start)
    array_running = dict(snapshot.array_running)
    for job in sorted(snapshot.jobs, key=sort_key):
        reason = _filter_reason(job, snapshot, now)
        if reason is None and job.array_limit and array_running.get(job.array_job_id, 0) >= job.array_limit:
            reason = Reason.ARRAY_TASK_LIMIT  # %N: its array has N tasks running already
        if reason is None:
            candidates = by_partition.get(job.partition, [])
            allocations = _place(job, candidates, blocked.get(job.partition), config, now)
            if allocations is not None and len(plan.starts) < config.max_starts:
                plan.starts.append(Start(job.job_id, tuple(allocations)))
                if job.array_job_id:
                    array_running[job.array_job_id] = array_running.get(job.array_job_id, 0) + 1
                continue
            if job.partition in blocked:
                reason = Reason.PRIORITY
            else:
                reason = _why_not(job, candidates)
                blocked[job.partition] = _reserve(job, candidates, snapshot, config, now, plan)
        plan.reasons[job.job_id] = reason
    return plan


def _place(job: JobView, candidates, block, config: SchedConfig, now: float):
    """Nodes for job now: freely when its partition is not blocked, else only by backfill."""
    if block is None:
        return select_nodes(job, candidates)
    reservation, extra = block
    if not config.backfill or reservation is None:
        return None
    return may_backfill(job, candidates, reservation, extra, now)


def _reserve(job: JobView, candidates, snapshot: Snapshot, config: SchedConfig, now: float,
             plan: Plan) -> tuple:
    if not config.backfill:
        return (None, {})
    reservation, extra = reserve(job, candidates, snapshot.running, now)
    if reservation is not None:
        plan.reservations[job.job_id] = reservation.start
    return (reservation, extra)


def _why_not(job: JobView, candidates: list[FreeNode]) -> Reason:
    """Resources when enough capable nodes are up but busy; ReqNodeNotAvail when too few are up."""
    up = [n for n in candidates if n.view.available and capable(n.view, job)]
    if len(up) >= job.num_nodes:
        return Reason.RESOURCES
    return Reason.REQ_NODE_NOT_AVAIL
