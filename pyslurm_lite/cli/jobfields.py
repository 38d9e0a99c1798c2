"""squeue's job fields: one function per % letter, over a Job message (or dataclass).

Shared by squeue's %-format and its --Format long names.
"""

from __future__ import annotations

from ..config import collect
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

COMPACT = {"PENDING": "PD", "RUNNING": "R", "SUSPENDED": "S", "COMPLETING": "CG",
           "COMPLETED": "CD", "FAILED": "F", "CANCELLED": "CA", "TIMEOUT": "TO", "NODE_FAIL": "NF",
           "OUT_OF_MEMORY": "OOM", "PREEMPTED": "PR", "BOOT_FAIL": "BF", "DEADLINE": "DL"}


def display_state(job, completing: bool = False) -> str:
    return job.state


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


def job_field(job, letter: str, now: float) -> str:
    spec = job.spec
    nodes = [a.node for a in job.allocations]
    pending = job.state == "PENDING"
    if letter in ("i", "A", "F"):
        return str(job.job_id)
    if letter == "P":
        return job.partition
    if letter == "j":
        return spec.name
    if letter == "u":
        return spec.user
    if letter == "U":
        return str(spec.uid)
    if letter == "T":
        return job.state
    if letter == "t":
        return COMPACT.get(job.state, job.state[:2])
    if letter == "M":
        return format_elapsed(elapsed(job, now))
    if letter == "l":
        return format_limit(job.time_limit)
    if letter == "L":
        if job.time_limit < 0:
            return "UNLIMITED"
        return format_elapsed(max(job.time_limit * 60 - elapsed(job, now), 0))
    if letter == "D":
        return str(len(nodes) if nodes else spec.num_nodes)
    if letter == "C":
        return str(sum(a.cpus for a in job.allocations) or
                   max(spec.num_tasks, spec.num_nodes) * spec.cpus_per_task)
    if letter == "R":
        return f"({job.reason})" if pending or not nodes else collect(nodes)
    if letter == "r":
        return job.reason
    if letter in ("N", "B"):
        return collect(nodes) if letter == "N" else (nodes[0] if nodes else "n/a")
    if letter == "b":
        return gres_text(spec)
    if letter == "S":
        return format_timestamp(job.start_time) if job.start_time else "N/A"
    if letter == "V":
        return format_timestamp(job.submit_time)
    if letter == "e":
        return format_timestamp(job.end_time) if job.end_time else "N/A"
    if letter in ("Q", "p"):
        return str(0 if job.held else job.priority)
    if letter == "a":
        return spec.account or "(null)"
    if letter == "q":
        return spec.qos or "normal"
    if letter == "Z":
        return spec.work_dir
    if letter == "k":
        return spec.comment or "(null)"
    if letter == "c":
        return str(spec.cpus_per_task)
    if letter == "m":
        return format_memory(spec.mem_per_node) if spec.mem_per_node else (
            format_memory(spec.mem_per_cpu) if spec.mem_per_cpu else "0")
    if letter == "y":
        return str(spec.nice)
    if letter == "f":
        return spec.constraint or "(null)"
    if letter == "o":
        return "(null)" if not spec.batch else (spec.argv[0] if spec.argv else "(null)")
    if letter == "E":
        return "(null)"
    if letter == "h":
        return "NO" if spec.exclusive else "OK"
    if letter == "n":
        return spec.nodelist or ""
    if letter == "x":
        return spec.exclude or ""
    if letter == "Y":
        return "(null)"
    if letter == "K":
        return "N/A"
    return ""
