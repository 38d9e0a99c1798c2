"""TRES billing and usage charging (Slurm's priority/multifactor usage, AccountingStorageTRES).

Owns: what a job's allocation counts in TRES (`alloc_tres`), its billing under a partition's
TRESBillingWeights (`billing`), and the charge of running and ended jobs to their associations
(`charges`): billing x seconds since the job was last charged, as Slurm's RawUsage, plus
per-TRES seconds for GrpTRESMins and sreport. Pure functions: no store, no clock reads — the
priority manager feeds them and writes the results.

Worked example (TRESBillingWeights="CPU=1.0,Mem=0.25G,GRES/gpu=10.0"): a job holding 2 CPUs,
4096 MB and 1 GPU on one node counts cpu=2, mem=4096, node=1, gres/gpu=1; it bills
2 x 1.0 + 4 GiB x 0.25 + 1 x 10.0 = 13.0 (the sum, Slurm's default). With PriorityFlags=MAX_TRES
the node-level TRES (cpu, mem, node, gres/*) give their largest weighted value instead of their
sum: max(2.0, 1.0, 10.0) = 10.0; other TRES (licenses) would be added to that. Without weights a
job bills its CPUs (2). Run 90 s, it charges 13.0 x 90 = 1170 billing-seconds of RawUsage,
180 cpu-seconds and 90 gres/gpu-seconds. A job holding 3 shards of a GPU counts gres/shard=3
and no gres/gpu; it bills GRES/shard='s weight x 3.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..model import UNLIMITED, Job
from ..sched.sharing import whole_gpus

# The TRES that lie on nodes: with MAX_TRES their weighted values are not summed, their largest
# counts (Slurm's assoc_mgr_tres_weighted).
NODE_TRES = ("cpu", "mem", "node")
MB_PER_GIB = 1024.0  # TRESBillingWeights' memory weights are per GiB (config.py), counts in MB


def alloc_tres(job: Job, gpu_type_of: Callable[[str, int], str] | None = None,
               weights: dict[str, float] | None = None, flags: Iterable[str] = ()) -> dict[str, float]:
    """The job's allocation as Slurm's AllocTRES counts it: cpu, mem (MB), node, gres/gpu,
    gres/gpu:TYPE (when the GPUs' type is known), gres/shard or gres/mps (a job sharing a GPU
    holds no gres/gpu) and billing (set at start; computed from
    `weights` when the job has none yet). `gpu_type_of(node, index)` names a GPU's type; without
    it the type the job asked for is used."""
    tres: dict[str, float] = {"cpu": 0.0, "mem": 0.0, "node": 0.0}
    wanted = job.spec.gpu_type_wanted()
    for a in job.allocations:
        tres["cpu"] += a.cpus
        tres["mem"] += a.mem
        tres["node"] += 1
        if a.share_name:  # shards (or mps) of a GPU: counted as themselves, not as gres/gpu
            key = f"gres/{a.share_name}"
            tres[key] = tres.get(key, 0.0) + sum(a.shares)
        for index in whole_gpus(a):
            tres["gres/gpu"] = tres.get("gres/gpu", 0.0) + 1
            gtype = gpu_type_of(a.node, index) if gpu_type_of else wanted
            if gtype:
                key = f"gres/gpu:{gtype}"
                tres[key] = tres.get(key, 0.0) + 1
    tres["billing"] = job.billing or billing(tres, weights or {}, flags)
    return tres


def billing(tres: dict[str, float], weights: dict[str, float], flags: Iterable[str] = ()) -> float:
    """The billing of TRES counts (alloc_tres' dict) under TRESBillingWeights `weights` (mem per
    GiB); PriorityFlags MAX_TRES takes the largest weighted node-level TRES plus the sum of the
    others. No weights: the CPUs, as Slurm bills then."""
    if not weights:
        return float(tres.get("cpu", 0.0))
    node_part, global_part = 0.0, 0.0
    max_tres = "MAX_TRES" in flags
    for name, count in tres.items():
        if name == "billing" or name not in weights:
            continue
        value = count * weights[name] / (MB_PER_GIB if name == "mem" else 1.0)
        if max_tres and (name in NODE_TRES or name.startswith("gres/")):
            node_part = max(node_part, value)
        else:
            global_part += value
    return node_part + global_part


def job_billing(job: Job, weights: dict[str, float], flags: Iterable[str] = (),
                gpu_type_of: Callable[[str, int], str] | None = None) -> float:
    """A starting job's billing from its allocation (job.billing is set from this)."""
    tres = alloc_tres(job, gpu_type_of)
    tres.pop("billing")
    return billing(tres, weights, flags)


def charges(jobs: Iterable[Job], charged_until: dict[int, float], now: float,
            key: Callable[[Job], tuple[str, str]] = lambda j: (j.spec.account, j.spec.user)) -> tuple[
        dict[tuple[str, str], dict[str, float]], dict[int, float]]:
    """What running (or just ended) jobs used since they were last charged, up to `now` (or
    their end): (account, user) -> {"billing": billing-seconds, cpu, mem (MB-seconds), node,
    gres/gpu, ...: TRES-seconds}, and each charged job's new charged-until time. A job never
    charged is charged from its start; time before charged_until is never charged twice.
    `key` names the association a job charges."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    until: dict[int, float] = {}
    for job in jobs:
        if not job.start_time or not job.allocations:
            continue
        end = min(now, job.end_time) if job.end_time > job.start_time else now
        since = max(charged_until.get(job.job_id, 0.0), job.start_time)
        if end <= since:
            continue
        seconds = end - since
        per_assoc = out.setdefault(key(job), {})
        for name, count in alloc_tres(job).items():
            per_assoc[name] = per_assoc.get(name, 0.0) + count * seconds
        until[job.job_id] = end
    return out, until


def run_minutes(jobs: Iterable[Job], now: float,
                key: Callable[[Job], tuple[str, str]] = lambda j: (j.spec.account, j.spec.user)
                ) -> dict[tuple[str, str], dict[str, float]]:
    """sshare's TRESRunMins: each running job's TRES x the minutes left of its time limit
    (none for a job without one), per association."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for job in jobs:
        if not job.start_time or not job.allocations or job.time_limit in (0, UNLIMITED):
            continue
        left = max(job.start_time + job.time_limit * 60.0 - now, 0.0) / 60.0
        per_assoc = out.setdefault(key(job), {})
        for name, count in alloc_tres(job).items():
            per_assoc[name] = per_assoc.get(name, 0.0) + count * left
    return out
