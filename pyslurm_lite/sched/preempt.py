"""Preemption: which running jobs a blocked job may push out, and the fewest that let it start.

    preempt/partition_prio  a job of a partition with a higher PriorityTier preempts jobs of
                            partitions with a lower one
    preempt/qos             a job whose QOS lists another QOS in Preempt= preempts jobs of it

Worked example (preempt/qos, QOS high has Preempt=normal; node n1 with 4 CPUs): normal jobs A
(2 CPUs, started 10 min ago) and B (2 CPUs, started 1 min ago) fill n1. A high job H asking 2
CPUs cannot start; victims are taken youngest first, so B alone is preempted (freeing 2 CPUs is
enough). With PreemptExemptTime=5:00, B (1 min old) is exempt and A is taken instead.
A victim already being preempted counts as freed first, so a repeated pass adds no one.

Queue order (Slurm's sort_job_queue2): with preemption on, a pending job goes ahead of the
pending jobs it could preempt, whatever their priority, so under priority/basic a high job
submitted after a normal one is tried first and gets what its victims free.

The mode (REQUEUE or CANCEL) and the grace time come from the victim's QOS (preempt/qos) or
partition (preempt/partition_prio), else the cluster's PreemptMode. Pure: no I/O, no clock.
"""

from __future__ import annotations

from .select import FreeNode, select_nodes
from .snapshot import JobView, Preemption, RunningView, Snapshot


def _may_preempt(job: JobView, run: RunningView, snapshot: Snapshot, kind: str) -> bool:
    if kind == "preempt/partition_prio":
        mine, theirs = snapshot.partitions.get(job.partition), snapshot.partitions.get(run.partition)
        return mine is not None and theirs is not None and theirs.priority_tier < mine.priority_tier
    if kind == "preempt/qos":
        qos = snapshot.qos.get(job.qos)
        return qos is not None and run.qos in qos.preempt
    return False


def could_preempt(job: JobView, snapshot: Snapshot, kind: str) -> bool:
    """Some running job is of a kind `job` may preempt: worth trying preemption for it."""
    return any(_may_preempt(job, r, snapshot, kind) for r in snapshot.running)


def preemptors_first(jobs: list[JobView], qos: dict) -> list[JobView]:
    """`jobs` (in priority order) with each job moved ahead of the first pending job whose QOS
    its own QOS preempts (preempt/qos); jobs of QOSes that preempt each other keep their order.
    Per QOS, the place of its first job in the output is kept, so this stays cheap for long
    queues (the number of QOSes is small)."""
    out: list[JobView] = []
    first: dict[str, int] = {}  # QOS -> index of its first job in `out`

    def preempts(a: str, b: str) -> bool:
        q = qos.get(a)
        return q is not None and b in q.preempt

    for job in jobs:
        ahead = [i for name, i in first.items() if preempts(job.qos, name) and not preempts(name, job.qos)]
        if not ahead:
            first.setdefault(job.qos, len(out))
            out.append(job)
            continue
        k = min(ahead)
        out.insert(k, job)
        first = {name: i + 1 if i >= k else i for name, i in first.items()}
        first[job.qos] = min(first.get(job.qos, k), k)
    return out


def _exempt(run: RunningView, snapshot: Snapshot, now: float, cluster_exempt: int) -> bool:
    qos = snapshot.qos.get(run.qos)
    exempt = qos.preempt_exempt_time if qos is not None and qos.preempt_exempt_time >= 0 else cluster_exempt
    return now - run.start < exempt


def _mode_and_grace(run: RunningView, snapshot: Snapshot, kind: str, cluster_mode: str) -> tuple[str, int]:
    if kind == "preempt/qos":
        qos = snapshot.qos.get(run.qos)
        mode, grace = (qos.preempt_mode, qos.grace_time) if qos is not None else ("", 0)
    else:
        part = snapshot.partitions.get(run.partition)
        mode, grace = (part.preempt_mode, part.grace_time) if part is not None else ("", 0)
    mode = mode or cluster_mode
    if mode == "REQUEUE" and not run.requeue:
        mode = "CANCEL"  # a job submitted --no-requeue cannot go back to the queue
    return mode, grace


def victims(job: JobView, candidates: list[FreeNode], snapshot: Snapshot, now: float, kind: str,
            cluster_mode: str, cluster_exempt: int, already: set[int] = frozenset()
            ) -> list[Preemption] | None:
    """The preemptions that let `job` start (possibly none when jobs already being preempted
    free enough), or None when preempting cannot make room for it."""
    if kind == "preempt/none" or cluster_mode == "OFF":
        return None
    names = {c.view.name for c in candidates}
    # Jobs being preempted since an earlier pass are on their way out (for this job, most
    # likely); those picked earlier in this pass are promised to another job: not counted.
    going = lambda r: r.preempting  # noqa: E731
    pool = [r for r in snapshot.running if r.job_id not in already
            and (going(r) or (_may_preempt(job, r, snapshot, kind)
                                and not _exempt(r, snapshot, now, cluster_exempt)))]
    pool = [r for r in pool if any(a.node in names for a in r.allocations)]
    # those already on their way out first, then the youngest, then the lowest priority
    pool.sort(key=lambda r: (not going(r), -r.start, r.priority, r.job_id))
    freed = {c.view.name: c.copy() for c in candidates}
    chosen = []
    for run in pool:
        for a in run.allocations:
            if a.node in freed:
                freed[a.node].give_back(a)
        chosen.append(run)
        trial = {k: v.copy() for k, v in freed.items()}
        if select_nodes(job, [trial[c.view.name] for c in candidates]) is not None:
            out = []
            for r in chosen:
                if not going(r):
                    mode, grace = _mode_and_grace(r, snapshot, kind, cluster_mode)
                    out.append(Preemption(r.job_id, job.job_id, mode, grace))
            return out
    return None
