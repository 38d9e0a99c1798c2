"""squeue's job fields: one function per % letter, over a Job message (or dataclass).

Shared by squeue's %-format and its --Format long names.
"""

from __future__ import annotations

from ..config import collect
from ..model import COMPACT as _STATE_CODES
from ..units import format_elapsed, format_limit, format_memory, format_timestamp

HEADERS = {
    "i": "JOBID", "A": "JOBID", "P": "PARTITION", "j": "NAME", "u": "USER", "T": "STATE",
    "t": "ST", "M": "TIME", "l": "TIME_LIMIT", "D": "NODES", "R": "NODELIST(REASON)",
    "C": "CPUS", "b": "TRES_PER_NODE", "S": "START_TIME", "V": "SUBMIT_TIME", "N": "NODELIST",
    "r": "REASON", "Q": "PRIORITY", "a": "ACCOUNT", "q": "QOS", "e": "END_TIME", "L": "TIME_LEFT",
    "Z": "WORK_DIR", "k": "COMMENT", "c": "MIN_CPUS", "m": "MIN_MEMORY", "y": "NICE",
    "f": "FEATURES", "B": "EXEC_HOST", "o": "COMMAND", "U": "USER_ID", "G": "GROUP",
    "F": "ARRAY_JOB_ID", "K": "ARRAY_TASK_ID", "E": "DEPENDENCY", "h": "OVER_SUBSCRIBE",
    "n": "REQ_NODES", "x": "EXC_NODES", "O": "CONTIGUOUS", "p": "PRIORITY", "Y": "SCHEDNODES",
    "z": "S:C:T", "g": "GROUP", "H": "SOCKETS_PER_NODE", "I": "CORES_PER_SOCKET",
    "J": "THREADS_PER_CORE", "d": "MIN_TMP_DISK", "w": "WCKEY", "X": "CORE_SPEC",
    "W": "LICENSES", "v": "RESERVATION",
}

COMPACT = {state.value: code for state, code in _STATE_CODES.items()}  # plain strings, for the CLIs


def elapsed(job, now: float) -> float:
    if not job.start_time:
        return 0
    end = job.end_time or now
    return max(end - job.start_time, 0)


def gres_text(spec) -> str:
    per_node = 0
    gtype = spec.gpu_type
    for g in spec.gres:
        if g.name == "gpu":
            per_node, gtype = g.count, g.type or gtype
    if per_node:
        return f"gres:gpu:{gtype + ':' if gtype else ''}{per_node}"
    if spec.gpus_per_node:
        return f"gres:gpu:{gtype + ':' if gtype else ''}{spec.gpus_per_node}"
    if spec.gpus:
        return "N/A"
    return "N/A"


def job_id_text(job) -> str:
    """12, an array task 10_3, or (pending tasks folded by squeue) 10_[4-99%2]."""
    if not job.array_job_id:  # first: a failed getattr on a message costs squeue ~1 us a row
        return str(job.job_id)
    if isinstance(job, FoldedTasks):
        return job.id_text
    return f"{job.array_job_id}_{job.array_task_id}"


class FoldedTasks:
    """An array's pending tasks shown as one squeue row: a task stands in for the rest."""

    def __init__(self, job, indices: list[int]):
        from ..arrays import fold
        self._job = job
        limit = f"%{job.array_limit}" if job.array_limit else ""
        self.task_text = f"{fold(indices)}{limit}"  # scontrol's ArrayTaskId=1-3%2
        self.id_text = f"{job.array_job_id}_[{self.task_text}]"

    def __getattr__(self, name):
        return getattr(self._job, name)


def fold_pending_tasks(jobs: list) -> list:
    """Pending tasks of each array become one row (in the first one's place), as Slurm shows."""
    out, seen, pending = [], {}, {}
    for job in jobs:
        if job.array_job_id and job.state == "PENDING":
            pending.setdefault(job.array_job_id, []).append(job)
    for job in jobs:
        group = pending.get(job.array_job_id) if job.array_job_id and job.state == "PENDING" else None
        if group is None:
            out.append(job)
        elif len(group) == 1:
            out.append(job)
        elif job.array_job_id not in seen:
            seen[job.array_job_id] = True
            out.append(FoldedTasks(group[0], sorted(j.array_task_id for j in group)))
    return out


def _nodes(job) -> list[str]:
    return [a.node for a in job.allocations]


def _cpus(job) -> str:
    spec = job.spec
    return str(sum(a.cpus for a in job.allocations) or
               max(spec.num_tasks, spec.num_nodes) * spec.cpus_per_task)


def _node_count(job) -> str:
    """%D: nodes allocated; a pending job's requested count, as Slurm shows (and without
    looking at its allocations, which costs squeue ~1 us a row)."""
    if job.state == "PENDING":
        return str(job.spec.num_nodes)
    return str(len(job.allocations) or job.spec.num_nodes)


def _reason_or_nodes(job) -> str:
    if job.state == "PENDING" or not job.allocations:
        return f"({job.state_desc or job.reason})"  # e.g. ReqNodeNotAvail, UnavailableNodes:node2
    return collect(_nodes(job))


def _time_left(job, now) -> str:
    if job.time_limit < 0:
        return "UNLIMITED"
    return format_elapsed(max(job.time_limit * 60 - elapsed(job, now), 0))


def _min_memory(spec) -> str:
    if spec.mem_per_node:
        return format_memory(spec.mem_per_node)
    return format_memory(spec.mem_per_cpu) if spec.mem_per_cpu else "0"


# letter -> f(job, now) -> text. One table, so squeue's %-format and --Format share it and a
# row computes only the fields its format asks for.
FIELDS = {
    "i": lambda j, now: job_id_text(j),
    "A": lambda j, now: str(j.job_id),
    "P": lambda j, now: j.partition,
    "j": lambda j, now: j.spec.name,
    "u": lambda j, now: j.spec.user,
    "U": lambda j, now: str(j.spec.uid),
    "T": lambda j, now: j.state,
    "t": lambda j, now: COMPACT.get(j.state) or j.state[:2],
    "M": lambda j, now: format_elapsed(elapsed(j, now)) if j.start_time else "0:00",
    "l": lambda j, now: format_limit(j.time_limit),
    "L": _time_left,
    "D": lambda j, now: _node_count(j),
    "C": lambda j, now: _cpus(j),
    "R": lambda j, now: _reason_or_nodes(j),
    "r": lambda j, now: j.state_desc or j.reason,
    "N": lambda j, now: collect(_nodes(j)),
    "B": lambda j, now: j.allocations[0].node if j.allocations else "n/a",
    "b": lambda j, now: gres_text(j.spec),
    "S": lambda j, now: _start(j),
    "Y": lambda j, now: "(null)",
    "V": lambda j, now: format_timestamp(j.submit_time),
    "e": lambda j, now: format_timestamp(j.end_time) if j.end_time else "N/A",
    "Q": lambda j, now: str(0 if j.held else j.priority),
    "p": lambda j, now: str(0 if j.held else j.priority),
    "a": lambda j, now: j.spec.account or "(null)",
    "q": lambda j, now: j.spec.qos or "normal",
    "Z": lambda j, now: j.spec.work_dir,
    "k": lambda j, now: j.spec.comment or "(null)",
    "c": lambda j, now: str(j.spec.cpus_per_task),
    "m": lambda j, now: _min_memory(j.spec),
    "y": lambda j, now: str(j.spec.nice),
    "f": lambda j, now: j.spec.constraint or "(null)",
    "o": lambda j, now: "(null)",
    "E": lambda j, now: j.spec.dependency or "(null)",
    "F": lambda j, now: str(j.array_job_id or j.job_id),
    "K": lambda j, now: str(j.array_task_id) if j.array_job_id else "N/A",
    "h": lambda j, now: "NO" if j.spec.exclusive else "OK",
    "n": lambda j, now: j.spec.nodelist,
    "x": lambda j, now: j.spec.exclude,
}


def _start(job) -> str:
    """%S: when it started, or (pending) when backfill expects it to."""
    when = job.expected_start if job.state == "PENDING" else job.start_time
    return format_timestamp(when) if when else "N/A"


def _blank(job, now) -> str:
    return ""
