"""Interactive allocations, shared by salloc and a standalone srun: submit a job without a
script, wait until it holds its nodes (saying so when it waits, as Slurm does), release it."""

from __future__ import annotations

import os
import sys
import time

from ..model import JobSpec

POLL = 0.05  # seconds between looks at a pending allocation
# --immediate: how long a job may take to start and still count as "at once". A scheduling pass
# follows each submission within a fraction of this; Slurm's salloc also waits one second
# when --immediate is given without seconds.
IMMEDIATE_FLOOR = 1.0
# Slurm's texts for a job --immediate could not start (slurm_errno.c), by its pending reason
BUSY = "Requested nodes are busy"  # ESLURM_NODES_BUSY
NOT_TOP = "Immediate execution impossible, insufficient priority"  # ESLURM_NOT_TOP_PRIORITY
NODE_CONFIG = "Requested node configuration is not available"  # ..._NODE_CONFIG_UNAVAILABLE
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE"}


def allocate(client, spec: JobSpec, prog: str, quiet: bool = False, immediate: str | None = None):
    """Submit spec as an allocation (no batch script) and wait until it runs; returns the job.
    immediate (--immediate[=secs]): give up, cancelling it, unless it starts within secs."""
    from ..errors import Unsatisfiable
    spec.batch = False
    spec.script = ""
    try:
        job_id = client.submit(spec)
    except Unsatisfiable as e:
        raise Unsatisfiable(f"Unable to allocate resources: {e.message.splitlines()[-1]}") from None
    if immediate is not None:
        try:
            start_at_once(client, job_id, immediate, prog)
        except Unsatisfiable as e:
            raise Unsatisfiable(f"Unable to allocate resources: {e.message}") from None
    try:
        return _wait_running(client, job_id, prog, quiet)
    except BaseException:  # interrupted or failed while pending: withdraw the request, as Slurm
        client.cancel(job_ids=[job_id])
        sys.stderr.write(f"{prog}: Job allocation {job_id} has been revoked.\n")
        raise


def _wait_running(client, job_id: int, prog: str, quiet: bool):
    said_waiting = False
    started = time.monotonic()
    while True:
        jobs, _ = client.jobs(job_ids=[job_id], include_finished=True)
        job = jobs[0]
        if job.state == "RUNNING":
            if said_waiting:
                sys.stderr.write(f"{prog}: job {job_id} has been allocated resources\n")
            if prog == "salloc" and not quiet:
                sys.stderr.write(f"{prog}: Granted job allocation {job_id}\n")
            return job
        if job.state in FINAL:
            raise RuntimeError(f"{prog}: job {job_id} ended {job.state} before it started")
        if not said_waiting and not quiet and time.monotonic() - started > 1.0:
            sys.stderr.write(f"{prog}: job {job_id} queued and waiting for resources\n")
            said_waiting = True
        time.sleep(POLL)


def start_at_once(client, job_id: int, immediate: str, prog: str) -> None:
    """--immediate[=secs]: wait up to secs (at least IMMEDIATE_FLOOR) for the job to start;
    otherwise cancel it and raise Unsatisfiable with Slurm's reason text. Slurm decides this
    inside the controller at submit; here the submission is withdrawn instead, so the job id
    is spent, which is the one difference a user can see."""
    from ..errors import Unsatisfiable
    deadline = time.monotonic() + max(immediate_seconds(immediate), IMMEDIATE_FLOOR)
    while True:
        jobs, _ = client.jobs(job_ids=[job_id], include_finished=True)
        if not jobs or jobs[0].state != "PENDING":
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    client.cancel(job_ids=[job_id])
    reason = jobs[0].reason
    raise Unsatisfiable(NOT_TOP if reason == "Priority" else
                        NODE_CONFIG if reason.startswith("ReqNodeNotAvail") else BUSY)


def immediate_seconds(value: str | None) -> int:
    """--immediate[=secs]; checked before anything is submitted."""
    from ..errors import InvalidRequest
    if value and not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise InvalidRequest(f"Invalid --immediate specification: {value}")
    return int(value or 0)


def release(client, job_id: int, exit_code: int = 0, exit_signal: int = 0) -> None:
    from .._proto import controller_pb2 as pb
    try:
        client._call("CompleteJob", pb.CompleteJobRequest(job_id=job_id, exit_code=exit_code,
                                                          exit_signal=exit_signal))
    except Exception as e:  # the job may have been cancelled meanwhile; nothing left to release
        getattr(e, "message", None)


def allocation_environment(job, cfg) -> dict[str, str]:
    """What salloc's command (and srun's tasks through the agent) learn of the allocation."""
    from ..agent.env import compress_counts
    from ..layout import block_layout
    from ..config import collect
    nodes = [a.node for a in job.allocations]
    spec = job.spec
    env = {
        "SLURM_JOB_ID": str(job.job_id), "SLURM_JOBID": str(job.job_id),
        "SLURM_JOB_NAME": spec.name, "SLURM_JOB_NODELIST": collect(nodes), "SLURM_NODELIST": collect(nodes),
        "SLURM_JOB_NUM_NODES": str(len(nodes)), "SLURM_NNODES": str(len(nodes)),
        "SLURM_JOB_PARTITION": job.partition, "SLURM_CLUSTER_NAME": cfg.cluster_name,
        "SLURM_SUBMIT_DIR": os.getcwd(), "SLURM_SUBMIT_HOST": spec.submit_host,
        "SLURM_JOB_CPUS_PER_NODE": compress_counts([a.cpus for a in job.allocations]),
        "SLURM_TASKS_PER_NODE": compress_counts(block_layout(spec.num_tasks, len(nodes), spec.ntasks_per_node)),
        "SLURM_NTASKS": str(spec.num_tasks), "SLURM_NPROCS": str(spec.num_tasks),
    }
    if spec.cpus_per_task > 1:
        env["SLURM_CPUS_PER_TASK"] = str(spec.cpus_per_task)
    return env
