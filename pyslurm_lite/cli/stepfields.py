"""Job steps as squeue -s and scontrol show step print them.

A running batch job shows its script as step `JOBID.batch`; srun steps are `JOBID.N`.
"""

from __future__ import annotations

from ..config import collect
from ..units import format_elapsed, format_limit_hms, format_timestamp

SQUEUE_STEPS_FORMAT = "%.15i %.8j %.9P %.8u %.9M %N"
STEP_HEADERS = {"i": "STEPID", "j": "NAME", "P": "PARTITION", "u": "USER", "M": "TIME",
                "N": "NODELIST", "T": "STATE", "l": "TIME_LIMIT", "A": "NTASKS"}


def running_steps(job) -> list[dict]:
    """The job's live steps as plain records (batch first), for display."""
    out = []
    if job.state == "RUNNING" and job.spec.batch and job.allocations:
        a = job.allocations[0]
        out.append({"id": f"{job.job_id}.batch", "name": "batch", "nodes": [a.node], "tasks": 1,
                    "cpus": a.cpus, "start": job.start_time, "state": "RUNNING"})
    for s in job.steps:
        if s.state == "RUNNING":
            out.append({"id": f"{job.job_id}.{s.step_id}", "name": s.name, "nodes": list(s.nodes),
                        "tasks": s.num_tasks, "cpus": sum(s.cpus_per_node), "start": s.start_time,
                        "state": s.state})
    return out


def step_field(job, step: dict, letter: str, now: float) -> str:
    return {
        "i": step["id"], "j": step["name"], "P": job.partition, "u": job.spec.user,
        "M": format_elapsed(now - step["start"]), "N": collect(step["nodes"]),
        "T": step["state"], "l": "UNLIMITED" if job.time_limit < 0 else format_elapsed(job.time_limit * 60),
        "A": str(step["tasks"]),
    }.get(letter, "")


def step_record(job, step: dict, now: float) -> list[str]:
    return [
        f"StepId={step['id']} UserId={job.spec.uid} StartTime={format_timestamp(step['start'])} "
        f"TimeLimit={format_limit_hms(job.time_limit)}",
        f"State={step['state']} Partition={job.partition} NodeList={collect(step['nodes'])}",
        f"Nodes={len(step['nodes'])} CPUs={step['cpus']} Tasks={step['tasks']} "
        f"Name={step['name']} Network=(null)",
        "ResvPorts=(null)",
        "CPUFreqReq=Default Dist=Block",
        "",
    ]
