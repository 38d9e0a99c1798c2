"""One scheduling pass (sched/builtin): strict priority order within each partition.

Pipeline, wired here and nowhere else:
  1. sort   — priority (desc), submit time, job id: ties break the same way every run;
  2. filter — held, not yet eligible (--begin), partition down: the job waits with that reason;
  3. select — first nodes of the job's partition that fit it (select.py);
  4. block  — a job that does not fit blocks every lower-priority job of its partition
              (Reason=Priority), so a big job is never starved by a stream of small ones.
              Backfill (a later stage) is what may start those lower jobs without delaying it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Reason
from .select import FreeNode, capable, select_nodes
from .snapshot import JobView, Plan, Snapshot, Start


@dataclass(frozen=True)
class SchedConfig:
    max_starts: int = 100000  # starts per pass, a safety valve


def sort_key(job: JobView):
    return (-job.priority, job.submit_time, job.job_id)


def _filter_reason(job: JobView, snapshot: Snapshot, now: float) -> Reason | None:
    if job.held:
        return Reason.HELD_ADMIN if job.held_by_admin else Reason.HELD_USER
    if job.begin_time > now:
        return Reason.BEGIN_TIME
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
    blocked: set[str] = set()
    for job in sorted(snapshot.jobs, key=sort_key):
        reason = _filter_reason(job, snapshot, now)
        if reason is None and job.partition in blocked:
            reason = Reason.PRIORITY
        if reason is None:
            candidates = by_partition.get(job.partition, [])
            allocations = select_nodes(job, candidates)
            if allocations is not None and len(plan.starts) < config.max_starts:
                plan.starts.append(Start(job.job_id, tuple(allocations)))
                continue
            blocked.add(job.partition)
            reason = _why_not(job, candidates)
        plan.reasons[job.job_id] = reason
    return plan


def _why_not(job: JobView, candidates: list[FreeNode]) -> Reason:
    """Resources when enough capable nodes are up but busy; ReqNodeNotAvail when too few are up."""
    up = [n for n in candidates if n.view.available and capable(n.view, job)]
    if len(up) >= job.num_nodes:
        return Reason.RESOURCES
    return Reason.REQ_NODE_NOT_AVAIL
