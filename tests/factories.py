"""Builders for the scheduler's inputs (JobView, NodeView, PartitionView, Snapshot) and for model
Jobs, with defaults that describe the common case so each test row states only what it is about.

    snap = snapshot(jobs=[job(1, cpus=2)], nodes=[node("n1", cpus=2)])
"""

from __future__ import annotations

import math

from pyslurm_lite.model import GresRequest, Job, JobSpec, JobState, NodeAllocation, parse_constraint
from pyslurm_lite.sched import JobView, NodeView, PartitionView, RunningView, Snapshot

DEFAULT_PARTITION = "main"


def job(job_id: int, *, cpus: int = 1, mem: int = 100, nodes: int = 1, gpus: int = 0,
        gpu_type: str = "", priority: int | None = None, submit: float | None = None,
        partition: str = DEFAULT_PARTITION, exclusive: bool = False, begin: float = 0.0,
        held: bool = False, held_by_admin: bool = False, features: tuple[str, ...] = (),
        constraint: str = "", limit: int = -1, user: str = "alice", qos: str = "normal",
        account: str = "", reservation: str = "") -> JobView:
    """A pending job asking for `cpus`/`mem` (MiB)/`gpus` on each of `nodes` nodes.

    By default priority decreases and submit time increases with the job id, as in the
    controller (priority/basic), so lower ids come first.
    """
    return JobView(
        job_id=job_id,
        priority=1000 - job_id if priority is None else priority,
        submit_time=float(job_id) if submit is None else submit,
        partition=partition, num_nodes=nodes,
        cpus_per_node=(cpus,) * nodes, mem_per_node=(mem,) * nodes,
        gpus_per_node=gpus, gpu_type=gpu_type, exclusive=exclusive, begin_time=begin,
        held=held, held_by_admin=held_by_admin, time_limit=limit, user=user, qos=qos,
        account=account, reservation=reservation,
        features=parse_constraint(constraint) if constraint else ((tuple(features),) if features else ()))


def node(name: str, *, cpus: int = 4, mem: int = 4000, gpus: int = 0,
         gpu_types: tuple[str, ...] | None = None, free_cpus: int | None = None,
         free_mem: int | None = None, free_gpus: tuple[int, ...] | None = None,
         available: bool = True, features: tuple[str, ...] = (), weight: int = 1,
         idle: bool | None = None) -> NodeView:
    """A node with `gpus` GPUs (indices 0..gpus-1, types from gpu_types); all free by default."""
    types = gpu_types if gpu_types is not None else ("",) * gpus
    assert len(types) == gpus, "one type per GPU"
    fc = cpus if free_cpus is None else free_cpus
    fm = mem if free_mem is None else free_mem
    fg = tuple(range(gpus)) if free_gpus is None else tuple(free_gpus)
    if idle is None:
        idle = fc == cpus and fm == mem and len(fg) == gpus
    return NodeView(name=name, cpus=cpus, mem=mem, gpus=tuple(enumerate(types)),
                    free_cpus=fc, free_mem=fm, free_gpus=fg, available=available,
                    features=tuple(features), weight=weight, idle=idle)


def partition(name: str = DEFAULT_PARTITION, nodes=(), up: bool = True, tier: int = 1,
              preempt_mode: str = "", grace: int = 0) -> PartitionView:
    return PartitionView(name=name, nodes=tuple(nodes), up=up, priority_tier=tier,
                         preempt_mode=preempt_mode, grace_time=grace)


def running(job_id: int, node: str, *, cpus: int = 1, mem: int = 100, gpus=(), end: float = math.inf,
            start: float = 0.0, partition: str = DEFAULT_PARTITION, user: str = "alice",
            qos: str = "normal", preempting: bool = False, requeue: bool = True):
    """A running job holding cpus/mem/gpus on node until `end` (its time limit)."""
    return RunningView(job_id, (NodeAllocation(node, cpus, mem, list(gpus)),), end, start=start,
                       partition=partition, user=user, qos=qos, preempting=preempting,
                       requeue=requeue)


def snapshot(jobs=(), nodes=(), partitions=None, running=(), qos=(), reservations=()) -> Snapshot:
    """A snapshot; without `partitions`, one partition 'main' holding every node."""
    if partitions is None:
        partitions = [partition(DEFAULT_PARTITION, [n.name for n in nodes])]
    return Snapshot(jobs=tuple(jobs), nodes=tuple(nodes),
                    partitions={p.name: p for p in partitions}, running=tuple(running),
                    qos={q.name: q for q in qos}, reservations=tuple(reservations))


def model_job(job_id: int = 42, *, nodes=("node1",), cpus: int = 1, gpus=(), name: str = "train",
              user: str = "alice", work_dir: str = "/home/alice/run", **spec_changes) -> Job:
    """A running model Job allocated on `nodes` (each with `cpus` CPUs and GPU indices `gpus`)."""
    spec = JobSpec(name=name, user=user, uid=1000, gid=1000, work_dir=work_dir,
                   submit_dir=work_dir, script="#!/bin/sh\necho hi\n", num_nodes=len(nodes),
                   num_tasks=len(nodes), **spec_changes)
    if gpus:
        spec.gres = [GresRequest("gpu", "", len(gpus))]
    allocations = [NodeAllocation(node=n, cpus=cpus, mem=1000, gpus=list(gpus)) for n in nodes]
    return Job(job_id=job_id, spec=spec, state=JobState.RUNNING, partition="main",
               allocations=allocations, start_time=1_700_000_000.0, submit_time=1_699_999_990.0,
               time_limit=60, master_port=29542, priority=7)
