"""One view of a node's GPUs: slurm.conf's Gres= checked against what its agent reports.

slurm.conf says what a node should have; the agent reports what it found (NVML, or gres.conf as
written). As slurmctld's gres_node_config_validate() does, the two must agree or the node is
drained with Slurm's reason, so that a job never waits for GPUs that are not there:

    slurm.conf Gres=   reported             verdict
    gpu:4              4 x (no type)        ok
    gpu:4              2 x a100             drain: gres/gpu count reported lower than configured (2 < 4)
    gpu:a100:4         4 x (no type)        drain: gres/gpu:a100 count too low (0 < 4)
    gpu:a100:4         4 x a100             ok
    gpu:4              4 x a100             ok, and the node's Gres= becomes gpu:a100:4 (types are
                                            learnt from the agent, as Slurm learns them from gres.conf)
    gpu:2              4 x h200             ok: the 2 beyond the configuration are not used
    (none)             4 x h200             ok: a GPU slurm.conf does not give the node is not used

Pure: no state, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import GpuDevice, GresRequest


@dataclass
class GpuVerdict:
    usable: list[GpuDevice] = field(default_factory=list)  # what the scheduler may hand out
    gres: list[GresRequest] = field(default_factory=list)  # the node's Gres=, types learnt
    reason: str = ""  # Slurm's drain reason; "" when configuration and report agree


def check(configured: list[GresRequest], reported: list[GpuDevice]) -> GpuVerdict:
    gpus = [g for g in configured if g.name == "gpu"]
    others = [g for g in configured if g.name != "gpu"]
    total = sum(g.count for g in gpus)
    verdict = GpuVerdict(usable=_usable(gpus, reported), gres=list(configured))
    if len(reported) < total:
        verdict.reason = f"gres/gpu count reported lower than configured ({len(reported)} < {total})"
        return verdict
    for g in gpus:
        have = sum(1 for d in reported if d.type == g.type)
        if g.type and have < g.count:
            verdict.reason = f"gres/gpu:{g.type} count too low ({have} < {g.count})"
            return verdict
    if gpus and not any(g.type for g in gpus) and all(d.type for d in verdict.usable):
        verdict.gres = _typed(verdict.usable) + others
    return verdict


def _usable(gpus: list[GresRequest], reported: list[GpuDevice]) -> list[GpuDevice]:
    """Typed entries take devices of their type first, untyped ones any that are left; each
    takes no more than its count."""
    left = sorted(reported, key=lambda d: d.index)
    taken: list[GpuDevice] = []
    for g in sorted(gpus, key=lambda g: not g.type):
        mine = [d for d in left if not g.type or d.type == g.type][:g.count]
        taken += mine
        left = left[len(mine):] if not g.type else [d for d in left if all(d is not m for m in mine)]
    return sorted(taken, key=lambda d: d.index)


def _typed(devices: list[GpuDevice]) -> list[GresRequest]:
    counts: dict[str, int] = {}
    for d in devices:
        counts[d.type] = counts.get(d.type, 0) + 1
    return [GresRequest("gpu", t, n) for t, n in counts.items()]
