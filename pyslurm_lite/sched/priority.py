"""priority/multifactor: a pending job's priority as Slurm computes it, from factors in [0, 1].

    priority = W_age·age + W_fairshare·fairshare + W_jobsize·jobsize + W_partition·partition
               + W_qos·qos − nice

    age        time eligible / PriorityMaxAge, at most 1
    fairshare  2^(−U/S): U the user's share of all (decayed) usage, S the user's share of the
               shares (equal shares among users here) — the classic Slurm formula
    jobsize    CPUs asked / CPUs in the cluster
    partition  the partition's PriorityJobFactor / the largest one
    qos        the QOS's priority / the largest one

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


def fairshare(usage: dict[str, float], users) -> dict[str, float]:
    """2^(−U/S) for each user, equal shares among `users`."""
    users = set(users) | set(usage)
    total = sum(usage.values())
    share = 1.0 / max(len(users), 1)
    return {u: 2.0 ** (-(usage.get(u, 0.0) / total if total else 0.0) / share) for u in users}


def factors(eligible_since: float, now: float, cpus: int, total_cpus: int, partition_factor: float,
            fairshare_factor: float, weights: Weights, qos_factor: float = 0.0) -> dict[str, float]:
    return {
        "age": min(max(now - eligible_since, 0.0) / weights.max_age, 1.0) if weights.max_age > 0 else 1.0,
        "fairshare": fairshare_factor,
        "jobsize": min(cpus / total_cpus, 1.0) if total_cpus else 0.0,
        "partition": partition_factor,
        "qos": qos_factor,
    }


def combine(f: dict[str, float], weights: Weights, nice: int = 0) -> int:
    value = (weights.age * f["age"] + weights.fairshare * f["fairshare"] + weights.jobsize * f["jobsize"]
             + weights.partition * f["partition"] + weights.qos * f["qos"] - nice)
    return max(int(round(value)), 1)
