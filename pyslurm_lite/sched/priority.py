"""priority/multifactor: a pending job's priority as Slurm computes it, from factors in [0, 1].

    priority = W_age·age + W_fairshare·fairshare + W_jobsize·jobsize + W_partition·partition
               + W_qos·qos − nice

    age        time eligible / PriorityMaxAge, at most 1
    fairshare  the user association's factor over the account tree (controller/fairshare.py:
               Fair Tree, or classic 2^(−U/S) with PriorityFlags=NO_FAIR_TREE)
    jobsize    CPUs asked / CPUs in the cluster
    partition  the partition's PriorityJobFactor / the largest one
    qos        the QOS's priority / the largest one
    TRES       for each TRES in PriorityWeightTRES, its weight x the job's count / the
               partition's (gres/gpu=1000 and 1 of 4 GPUs: 250), added to the sum

Worked example: weights age=1000, fairshare=10000; a job eligible for half of PriorityMaxAge whose
user has used 50 % of the machine with 2 users (S = 0.5, U = 0.5): 1000·0.5 + 10000·2^(−1) = 5500.
Usage decays with PriorityDecayHalfLife: what was used one half-life ago counts half.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Weights:
    age: int = 0
    fairshare: int = 0
    jobsize: int = 0
    partition: int = 0
    qos: int = 0
    max_age: float = 7 * 86400.0  # seconds


def decayed(usage: float, elapsed: float, half_life: float) -> float:
    return usage * 0.5 ** (elapsed / half_life) if half_life > 0 else usage


def factors(eligible_since: float, now: float, cpus: int, total_cpus: int, partition_factor: float,
            fairshare_factor: float, weights: Weights, qos_factor: float = 0.0) -> dict[str, float]:
    return {
        "age": min(max(now - eligible_since, 0.0) / weights.max_age, 1.0) if weights.max_age > 0 else 1.0,
        "fairshare": fairshare_factor,
        "jobsize": min(cpus / total_cpus, 1.0) if total_cpus else 0.0,
        "partition": partition_factor,
        "qos": qos_factor,
    }


def combine(f: dict[str, float], weights: Weights, nice: int = 0, tres: dict[str, float] | None = None) -> int:
    """The priority: weighted factors, plus the weighted TRES factors (tres_factors), less nice."""
    value = (weights.age * f["age"] + weights.fairshare * f["fairshare"] + weights.jobsize * f["jobsize"]
             + weights.partition * f["partition"] + weights.qos * f["qos"] + sum((tres or {}).values()) - nice)
    return max(int(round(value)), 1)


SHARED_GRES = ("shard", "mps")  # sched/sharing.py's GPU shares


def job_tres(spec, def_mem_per_cpu: int = 0) -> dict[str, float]:
    """What a pending job asks for in TRES: cpu, mem (MB), node, gres/gpu, gres/gpu:TYPE."""
    nodes = max(spec.num_nodes, 1)
    out = {"cpu": float(spec.cpus_on_node(0) * nodes), "mem": float(spec.mem_on_node(0, def_mem_per_cpu) * nodes),
           "node": float(nodes)}
    gpus = spec.gpus or spec.gpus_needed_per_node() * nodes
    if gpus:
        out["gres/gpu"] = float(gpus)
        if spec.gpu_type_wanted():
            out[f"gres/gpu:{spec.gpu_type_wanted()}"] = float(gpus)
    for g in spec.gres:  # GPU shares (gres/shard, gres/mps) are TRES of their own
        if g.name in SHARED_GRES and g.count:
            out[f"gres/{g.name}"] = out.get(f"gres/{g.name}", 0.0) + float(g.count * nodes)
    return out


def partition_tres(part, cfg) -> dict[str, float]:
    """A partition's TRES: its nodes' CPUs, memory (MB), count and GPUs (by type too)."""
    out: dict[str, float] = {"cpu": 0.0, "mem": 0.0, "node": 0.0}
    for name in part.nodes:
        n = cfg.nodes.get(name)
        if n is None:
            continue
        out["cpu"] += n.cpus
        out["mem"] += n.real_memory
        out["node"] += 1
        for g in n.gres:
            if g.name == "gpu":
                out["gres/gpu"] = out.get("gres/gpu", 0.0) + g.count
                if g.type:
                    out[f"gres/gpu:{g.type}"] = out.get(f"gres/gpu:{g.type}", 0.0) + g.count
            elif g.name in SHARED_GRES:
                out[f"gres/{g.name}"] = out.get(f"gres/{g.name}", 0.0) + g.count
    return out


def tres_factors(job: dict[str, float], partition: dict[str, float], weights: dict[str, float]) -> dict[str, float]:
    """PriorityWeightTRES: each weighted TRES's weight x (the job's count / the partition's),
    as Slurm's TRES factors (a job asking for 2 of 4 GPUs with gres/gpu=1000 gets 500)."""
    return {name: w * min(job.get(name, 0.0) / partition[name], 1.0)
            for name, w in weights.items() if partition.get(name)}
