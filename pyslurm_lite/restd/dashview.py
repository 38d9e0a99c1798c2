"""What the dashboard shows, worked out from the controller's messages: queue rows, nodes with
their GPUs, fair share, recent failures, one job's timeline and usage bars. Pure: no I/O, no
clock (`now` is the controller's), no HTML (templates/ escape everything these return).

Where each figure comes from (the same RPCs as the CLIs, so the controller's authorization,
PrivateData included, applies to what a user sees):
  queue            GetJobs, active jobs; a pending job's projected start is `expected_start`,
                   backfill's reservation for it, which is what `squeue --start` prints
  nodes            GetNodes; per GPU: which job holds it (the allocations of running jobs), its
                   utilization (that job's latest agent sample on the node, a mean over the
                   step's GPUs), faults and foreign processes; idle-GPU flags from AdminComment
  fair share       GetShares, the rows `sshare` prints (accounts: user empty)
  recent failures  GetJobHistory, FAILED/NODE_FAIL/OUT_OF_MEMORY/TIMEOUT in the last 24 h
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

QUEUE_ROWS = 500  # rows rendered; the counts cover every job
FAILED_STATES = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT")
FAILURE_WINDOW = 24 * 3600.0  # seconds of history the failures table covers
FAILURE_ROWS = 50
ACTIVE_ORDER = {"RUNNING": 0, "COMPLETING": 1, "SUSPENDED": 2, "PENDING": 3}


def when(t: float) -> str:
    """Slurm's timestamp form (2026-12-01T23:40:00), or Slurm's 'N/A' for 0/unknown."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) if t and t > 0 else "N/A"


def duration(seconds: float) -> str:
    """squeue's %M form: [days-]hours:minutes:seconds, minutes:seconds under an hour."""
    s = int(max(seconds, 0))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def job_id_text(job) -> str:
    return f"{job.array_job_id}_{job.array_task_id}" if job.array_job_id else str(job.job_id)


# ---- the queue ---------------------------------------------------------------------------------
def matches(job, query: str) -> bool:
    """The search box: a case-insensitive substring of id, name, user, account, partition,
    state or reason."""
    if not query:
        return True
    hay = " ".join((job_id_text(job), str(job.job_id), job.spec.name, job.spec.user,
                    job.spec.account, job.partition, job.state, job.reason)).lower()
    return query.lower() in hay


def queue_row(job, now: float) -> dict:
    pending = job.state == "PENDING"
    nodes = sorted({a.node for a in job.allocations})
    return {
        "id": job.job_id, "id_text": job_id_text(job), "name": job.spec.name,
        "user": job.spec.user, "account": job.spec.account, "partition": job.partition,
        "state": job.state, "reason": job.reason or "None",
        "nodes": ",".join(nodes), "priority": job.priority,
        "time": duration(now - job.start_time) if job.start_time and not pending else "0:00",
        "start": when(job.expected_start if pending else job.start_time),
        "gpus": sum(len(a.gpus) for a in job.allocations) if not pending else gpus_asked(job.spec),
    }


def gpus_asked(spec) -> int:
    """Whole GPUs a pending job asks for: --gpus, else --gpus-per-node or --gres=gpu:N per node."""
    per_node = spec.gpus_per_node or sum(g.count for g in spec.gres if g.name == "gpu")
    return spec.gpus or per_node * max(spec.num_nodes, 1)


def queue(jobs, now: float, query: str = "", page: int = 0, limit: int = QUEUE_ROWS) -> dict:
    """Running before pending, then by priority (higher first), then job id; page `page` of
    `limit` rows of those the search matches, and counts of all."""
    counts = {"total": len(jobs), "running": 0, "pending": 0, "other": 0}
    for j in jobs:
        key = "running" if j.state == "RUNNING" else "pending" if j.state == "PENDING" else "other"
        counts[key] += 1
    chosen = [j for j in jobs if matches(j, query)]
    chosen.sort(key=lambda j: (ACTIVE_ORDER.get(j.state, 9), -j.priority, j.job_id))
    counts["matching"] = len(chosen)
    page = min(page, max(len(chosen) - 1, 0) // limit)
    rows = chosen[page * limit:(page + 1) * limit]
    return {"counts": counts, "rows": [queue_row(j, now) for j in rows], "query": query,
            "page": page, "first": page * limit + 1 if rows else 0, "last": page * limit + len(rows),
            "pages": max((len(chosen) + limit - 1) // limit, 1)}


# ---- nodes and their GPUs ----------------------------------------------------------------------
@dataclass
class GpuView:
    index: int
    type: str = ""
    job: str = ""            # the job holding it ("" free)
    util: float | None = None  # percent, the holder's latest sample; None: no sample
    idle_flag: bool = False  # its job is flagged for idle GPUs (AdminComment)
    fault: str = ""
    foreign: bool = False

    @property
    def state(self) -> str:
        if self.fault:
            return "fault"
        if self.foreign:
            return "foreign"
        return "alloc" if self.job else "idle"


@dataclass
class NodeView:
    name: str
    state: str
    reason: str
    cpus: str
    mem: str
    gres: str
    gres_used: str
    drain: bool
    gpus: list[GpuView] = field(default_factory=list)


def _gpu_holders(jobs) -> dict[tuple[str, int], tuple[object, float | None]]:
    """(node, GPU index) -> (running job, its mean GPU utilization on that node, or None)."""
    out = {}
    for job in jobs:
        if job.state != "RUNNING":
            continue
        util = {}
        for s in job.usage:
            if s.gpus:
                util.setdefault(s.node, []).append(s.gpu_util)
        for a in job.allocations:
            mean = sum(util[a.node]) / len(util[a.node]) if util.get(a.node) else None
            for g in a.gpus:
                out[(a.node, g)] = (job, mean)
    return out


def node_views(nodes, jobs) -> list[NodeView]:
    from ..cli import nodefields as nf  # sinfo's own state words and GRES texts
    holders = _gpu_holders(jobs)
    views = []
    for n in sorted(nodes, key=lambda n: n.config.name):
        faults = {f.index: f.detail or f.kind for f in n.gpu_faults}
        foreign = {f.index for f in n.foreign_gpus}
        indices = [d.index for d in n.gpus] or list(range(nf.gpu_total(n.config)))
        types = {d.index: d.type for d in n.gpus}
        gpus = []
        for i in indices:
            job, util = holders.get((n.config.name, i), (None, None))
            gpus.append(GpuView(
                index=i, type=types.get(i, ""), job=job_id_text(job) if job else "",
                util=util, idle_flag=bool(job and "idle" in job.admin_comment.lower()),
                fault=faults.get(i, ""), foreign=i in foreign))
        views.append(NodeView(
            name=n.config.name, state=nf.long_state(n), reason=nf.reason_text(n) if n.reason else "",
            cpus=f"{n.alloc_cpus}/{n.config.cpus}",
            mem=f"{n.alloc_mem}/{n.config.real_memory}", gres=nf.gres_text(n.config),
            gres_used=nf.gres_used_text(n), drain=n.drain, gpus=gpus))
    return views


# ---- fair share and failures -------------------------------------------------------------------
def share_rows(rows) -> list[dict]:
    """sshare's account rows (its users are in `sshare -a`), in sshare's tree order, with its
    blanks: root has no RawShares nor LevelFS, and an account no FairShare (users have one);
    the controller sends -1 and NaN for those, which sshare prints as empty cells."""
    return [{"account": r.account, "parent": r.parent,
             "raw_shares": str(r.raw_shares) if r.raw_shares >= 0 else "",
             "norm_shares": share_number(r.norm_shares), "raw_usage": f"{r.raw_usage:.0f}",
             "effective_usage": share_number(r.effective_usage),
             "fairshare": share_number(r.fairshare), "level_fs": share_number(r.level_fs)}
            for r in rows if not r.user]


def share_number(value: float) -> str:
    """sshare's %f: blank for NaN, "inf" for a level with no usage."""
    if math.isnan(value):
        return ""
    return "inf" if math.isinf(value) else f"{value:.6f}"


def failure_rows(runs, limit: int = FAILURE_ROWS) -> list[dict]:
    """The latest runs first."""
    chosen = sorted((r for r in runs if r.state in FAILED_STATES),
                    key=lambda r: -(r.job.end_time or r.job.submit_time))
    return [{"id": r.job.job_id, "id_text": job_id_text(r.job), "name": r.job.spec.name,
             "user": r.job.spec.user, "state": r.state, "end": when(r.job.end_time),
             "exit": f"{r.job.exit_code}:{r.job.exit_signal}",
             "nodes": ",".join(sorted({a.node for a in r.job.allocations}))}
            for r in chosen[:limit]]
