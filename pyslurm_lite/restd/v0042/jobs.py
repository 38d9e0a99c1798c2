"""Job -> v0.0.42_job_info, the entries of GET /slurm/v0.0.42/jobs and /job/{job_id}.

    Job(job_id=41, state=PENDING, reason=PRIORITY, spec.user="alice", time_limit=30, ...)
    -> {"job_id": 41, "job_state": ["PENDING"], "state_reason": "Priority",
        "user_name": "alice", "time_limit": {"set": true, "infinite": false, "number": 30}, ...}

Fields Slurm has and we do not model (burst buffers, licenses, federation, containers, ...) are
left out: every property of job_info is optional.
"""

from __future__ import annotations

import functools
import os
import re
import signal as signals

from ...hostlists import collect
from ...model import Job, JobState
from .common import csv, epoch, minutes, number, unset

_STD_PATTERN = re.compile(r"%([%jJAaxuNnts])")


def job_info(job: Job, group_name=str) -> dict:
    """One job; group_name(gid) -> name is given by the caller (it reads the group database)."""
    spec = job.spec
    return {
        "job_id": job.job_id, "name": spec.name, "job_state": _states(job),
        "state_reason": job.reason.value if job.reason else "None",
        "state_description": job.state_desc,
        "user_id": spec.uid, "user_name": spec.user, "group_id": spec.gid,
        "group_name": group_name(spec.gid),
        "account": spec.account, "partition": job.partition or spec.partition, "qos": spec.qos,
        "comment": spec.comment, "admin_comment": job.admin_comment,
        "current_working_directory": spec.work_dir, "batch_flag": spec.batch,
        "batch_host": job.batch_host, "command": "", "dependency": spec.dependency,
        "features": spec.constraint, "excluded_nodes": spec.exclude,
        "required_nodes": spec.nodelist, "resv_name": spec.reservation,
        "nodes": _nodelist(tuple(a.node for a in job.allocations)),
        "hold": job.held, "nice": spec.nice, "requeue": spec.requeue,
        "restart_cnt": job.restart_count, "priority": number(0 if job.held else job.priority),
        "shared": _shared(spec), "mail_type": _mail_types(spec.mail_type),
        "mail_user": spec.mail_user,
        **_sizes(job), **_times(job), **_io(job), **_array(job), **_exit(job),
        "tres_per_node": _tres_per_node(spec), "tres_per_job": _tres_per_job(spec),
        "billable_tres": {"set": bool(job.billing), "infinite": False,
                          "number": float(job.billing)},
    }


@functools.lru_cache(maxsize=4096)
def _nodelist(names: tuple[str, ...]) -> str:
    """node[1-2]; cached, as thousands of jobs share a few node sets (half of a listing's time)."""
    return names[0] if len(names) == 1 else collect(names) if names else ""


def _states(job: Job) -> list[str]:
    # COMPLETING is a flag in Slurm, shown beside the state it is leaving
    if job.state == JobState.COMPLETING:
        return ["RUNNING", "COMPLETING"]
    return [job.state.value]


def _shared(spec) -> list[str]:
    if spec.exclusive_user:
        return ["user"]
    return ["none"] if spec.exclusive else []


def _mail_types(text: str) -> list[str]:
    allowed = {"BEGIN", "END", "FAIL", "REQUEUE", "TIME=100%", "TIME=90%", "TIME=80%",
               "TIME=50%", "STAGE_OUT", "ARRAY_TASKS", "INVALID_DEPENDENCY"}
    return [t for t in (text or "").upper().split(",") if t in allowed]


def _sizes(job: Job) -> dict:
    spec = job.spec
    cpus = sum(a.cpus for a in job.allocations) or spec.num_tasks * spec.cpus_per_task
    return {
        "node_count": number(len(job.allocations) or spec.num_nodes),
        "max_nodes": number(spec.max_nodes) if spec.max_nodes else unset(),
        "tasks": number(spec.num_tasks), "cpus": number(cpus),
        "cpus_per_task": number(spec.cpus_per_task),
        "tasks_per_node": number(spec.ntasks_per_node) if spec.ntasks_per_node else unset(),
        "minimum_cpus_per_node": number(spec.min_cpus_per_node),
        "memory_per_node": number(spec.mem_per_node) if spec.mem_per_node else unset(),
        "memory_per_cpu": number(spec.mem_per_cpu) if spec.mem_per_cpu else unset(),
        "time_limit": minutes(job.time_limit),
    }


def _times(job: Job) -> dict:
    return {"submit_time": epoch(job.submit_time), "eligible_time": epoch(job.eligible_time),
            "start_time": epoch(job.start_time or job.expected_start),
            "end_time": epoch(job.end_time), "deadline": epoch(job.spec.deadline),
            "preempt_time": epoch(job.preempt_time)}


def _io(job: Job) -> dict:
    """The paths as slurmrestd shows them: default name, relative to the working directory,
    %-patterns expanded (what the job writes)."""
    spec = job.spec
    out = _std_path(job, spec.std_out or "slurm-%j.out")
    return {"standard_output": out,
            "standard_error": _std_path(job, spec.std_err) if spec.std_err else out,
            "standard_input": spec.std_in or "/dev/null"}


def _std_path(job: Job, pattern: str) -> str:
    nodes = [a.node for a in job.allocations]
    array = job.array_job_id or job.job_id
    subs = {"j": str(job.job_id), "J": str(job.job_id), "A": str(array),
            "a": str(job.array_task_id if job.array_job_id else 0), "x": job.spec.name,
            "u": job.spec.user, "N": nodes[0] if nodes else "", "n": "0", "t": "0",
            "s": "batch", "%": "%"}
    text = _STD_PATTERN.sub(lambda m: subs[m.group(1)], pattern)
    return text if os.path.isabs(text) else os.path.join(job.spec.work_dir, text)


def _array(job: Job) -> dict:
    if not job.array_job_id:
        return {"array_job_id": number(0), "array_task_id": unset(),
                "array_max_tasks": number(0), "array_task_string": ""}
    return {"array_job_id": number(job.array_job_id), "array_task_id": number(job.array_task_id),
            "array_max_tasks": number(job.array_limit), "array_task_string": job.array_tasks}


def _exit(job: Job) -> dict:
    if not job.state.is_final:
        status = ["PENDING"]
    elif job.exit_signal:
        status = ["SIGNALED"]
    else:
        status = ["SUCCESS"] if job.exit_code == 0 else ["ERROR"]
    return {"exit_code": {"status": status, "return_code": number(job.exit_code),
                          "signal": {"id": number(job.exit_signal) if job.exit_signal else unset(),
                                     "name": _signal_name(job.exit_signal)}}}


def _signal_name(signum: int) -> str:
    try:
        return signals.Signals(signum).name.removeprefix("SIG") if signum else ""
    except ValueError:
        return ""


def _gres_text(name: str, gtype: str, count: int) -> str:
    return f"gres/{name}:{gtype}:{count}" if gtype else f"gres/{name}:{count}"


def _tres_per_node(spec) -> str:
    items = [_gres_text(g.name, g.type, g.count) for g in spec.gres]
    if spec.gpus_per_node:
        items.append(_gres_text("gpu", spec.gpu_type, spec.gpus_per_node))
    return ",".join(csv(items))


def _tres_per_job(spec) -> str:
    if spec.gpus and not spec.gpus_per_task:
        return _gres_text("gpu", spec.gpu_type, spec.gpus)
    return ""
