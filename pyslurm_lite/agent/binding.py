"""srun --cpu-bind: which CPUs each task of a step may run on (task/affinity's role).

The agent plans the masks of a step's tasks on this node before any starts (every task's
SLURM_CPU_BIND lists them all, as Slurm's does) and sets each task's affinity while it waits at
its gate, so everything the task runs inherits it. CPUs are the logical CPUs the job may use here:
its own cores when the agent pinned it (cpus.py), else the agent's.

Worked example: CPUs [0, 1, 2, 3], 2 tasks, -c 2, --cpu-bind=cores -> task 0 {0, 1}, task 1
{2, 3}; SLURM_CPU_BIND=quiet,mask_cpu:0x3,0xC. With more tasks than CPUs the tasks wrap round,
as Slurm's cyclic fill does. --cpu-bind=map_cpu:3,1 -> local task 0 on CPU 3, task 1 on CPU 1.

Types: none|no, cores, threads, rank, sockets, ldoms (this node's CPUs are not split into
sockets or NUMA domains here: sockets and ldoms bind as cores, and srun says so), map_cpu:,
mask_cpu:, and the modifiers verbose and quiet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidRequest

_AS_CORES = ("cores", "threads", "rank", "sockets", "ldoms", "boards")
APPROXIMATED = ("sockets", "ldoms", "boards")  # srun warns: bound as cores

# The root agent parses --cpu-bind from the user's launch: bounds keep a hostile value from
# costing it memory or time (a mask's bits are walked, its list is spread over the tasks).
MAX_TEXT = 4096  # characters of --cpu-bind
MAX_CPUS = 4096  # a map_cpu id is below it; a mask_cpu mask names no CPU at or above it


@dataclass
class CpuBind:
    kind: str = ""  # "" = the default: bound when the job has cores of its own here
    ids: list[int] = field(default_factory=list)      # map_cpu
    masks: list[int] = field(default_factory=list)    # mask_cpu
    verbose: bool = False


def parse(text: str) -> CpuBind:
    """'verbose,map_cpu:0,1' -> CpuBind('map_cpu', [0, 1], verbose=True). A map_cpu:/mask_cpu:
    list runs to the end (its items are comma separated too). Bad text: InvalidRequest."""
    bind = CpuBind()
    lower = (text or "").lower()
    if len(lower) > MAX_TEXT:
        raise InvalidRequest(f"Invalid --cpu-bind argument: {lower[:80]}... (longer than "
                             f"{MAX_TEXT} characters)")
    at = min((lower.find(k) for k in ("map_cpu:", "mask_cpu:") if k in lower), default=-1)
    head, listed = (lower, "") if at < 0 else (lower[:at], lower[at:])
    for part in filter(None, head.split(",")):
        if part in ("verbose", "v", "quiet", "q"):
            bind.verbose = part in ("verbose", "v")
        elif part in ("none", "no") + _AS_CORES:
            bind.kind = "none" if part == "no" else part
        else:
            raise InvalidRequest(f"Invalid --cpu-bind argument: {text}")
    if listed:
        name, _, values = listed.partition(":")
        try:
            numbers = [int(v, 16 if name == "mask_cpu" or v.startswith("0x") else 10)
                       for v in values.split(",")]
        except ValueError:
            raise InvalidRequest(f"Invalid --cpu-bind argument: {text}") from None
        bound = MAX_CPUS if name == "map_cpu" else 1 << MAX_CPUS
        if any(n < 0 or n >= bound for n in numbers):
            raise InvalidRequest(f"Invalid --cpu-bind argument: {text} (CPU ids run below "
                                 f"{MAX_CPUS})")
        bind.kind = name
        (bind.ids if name == "map_cpu" else bind.masks).extend(numbers)
    return bind


def plan(bind: CpuBind, cpus: list[int], local_tasks: int, cpus_per_task: int,
         pinned: bool) -> list[set[int]] | None:
    """Each local task's CPUs, or None when tasks are not bound."""
    if bind.kind == "none" or not cpus or (not bind.kind and not pinned):
        return None
    if bind.kind == "map_cpu":
        return [{bind.ids[i % len(bind.ids)]} for i in range(local_tasks)]
    if bind.kind == "mask_cpu":
        return [_bits(bind.masks[i % len(bind.masks)]) for i in range(local_tasks)]
    width = max(cpus_per_task, 1)
    return [{cpus[(i * width + k) % len(cpus)] for k in range(width)} for i in range(local_tasks)]


def _bits(mask: int) -> set[int]:
    """The CPUs a mask names, in one pass over its binary digits (not a shift per bit)."""
    return {i for i, digit in enumerate(reversed(bin(mask)[2:])) if digit == "1"}


def mask_hex(cpus: set[int]) -> str:
    return hex(sum(1 << c for c in cpus)).upper().replace("0X", "0x")


def environment(bind: CpuBind, masks: list[set[int]] | None) -> dict[str, str]:
    """SLURM_CPU_BIND* as slurmstepd sets them: the resolved masks of every task on the node."""
    verbose = "verbose" if bind.verbose else "quiet"
    if masks is None:
        return {"SLURM_CPU_BIND": f"{verbose},none", "SLURM_CPU_BIND_TYPE": "none",
                "SLURM_CPU_BIND_LIST": "", "SLURM_CPU_BIND_VERBOSE": verbose}
    listed = ",".join(mask_hex(m) for m in masks)
    return {"SLURM_CPU_BIND": f"{verbose},mask_cpu:{listed}", "SLURM_CPU_BIND_TYPE": "mask_cpu:",
            "SLURM_CPU_BIND_LIST": listed, "SLURM_CPU_BIND_VERBOSE": verbose}


def verbose_line(node: str, rank: int, local: int, pid: int, cpus: set[int] | None) -> str:
    """task/affinity's report of a binding, as a task's first line of stderr."""
    if cpus is None:
        return f"cpu-bind=NULL - {node}, task {rank:2d} {local:2d} [{pid}]: mask 0x0 set\n"
    return f"cpu-bind=MASK - {node}, task {rank:2d} {local:2d} [{pid}]: mask {mask_hex(cpus)} set\n"
