"""--gpu-bind: which of the step's GPUs on this node each task sees (Slurm's gres/gpu task
binding): its CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS and the other GPU variables, per task.

Worked example: a step with GPUs 0 and 1 here, 2 tasks, gres.conf Cores=0-1 for GPU 0 and
Cores=2-3 for GPU 1, tasks bound to CPUs {0, 1} and {2, 3}: --gpu-bind=closest gives task 0 GPU 0
and task 1 GPU 1; map_gpu:1,0 gives task 0 GPU 1 and task 1 GPU 0; single:2 gives both GPU 0;
none (the default) gives each task both.

Types: none, closest, map_gpu:<id>[*count],..., mask_gpu:<hex mask>[*count],...,
single:<tasks per GPU>, and the modifier verbose (each task's first stderr line says its binding,
as slurmstepd prints it). IDs and masks count the job's GPUs here from 0 when the devices cgroup
fences the job to them (ConstrainDevices, as in Slurm), else they are the node's GPU indices.
A GPU's close cores are its gres.conf Cores=, else its NUMA node's CPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import InvalidRequest

KINDS = ("none", "closest", "map_gpu", "mask_gpu", "single")

# The root agent parses SLURM_GPU_BIND out of the user's launch environment: bounds keep a
# hostile value (map_gpu:0*4000000000, mask_gpu:0x<a million digits>) from costing it memory
# or time. Nothing real comes near them: a node has a few GPUs, a step a few thousand tasks.
MAX_TEXT = 4096  # characters of --gpu-bind / SLURM_GPU_BIND
MAX_ITEMS = 4096  # map_gpu/mask_gpu entries once *count is spread out (one per local task)
MAX_GPU_ID = 1023  # a map_gpu id
MAX_MASK_BITS = 64  # a mask_gpu mask: Slurm's are 64-bit


@dataclass
class GpuBind:
    kind: str = ""  # "" = none, Slurm's default: every task sees the step's GPUs
    values: list[int] = field(default_factory=list)  # map_gpu ids, mask_gpu masks
    per_gpu: int = 0  # single:N
    verbose: bool = False


def parse(text: str) -> GpuBind:
    """'verbose,map_gpu:0*2,1' -> GpuBind('map_gpu', [0, 0, 1], verbose=True). Bad text:
    InvalidRequest with Slurm's message."""
    bind = GpuBind()
    text = text or ""
    bad = InvalidRequest(f"Invalid --gpu-bind argument: {_shown(text)}")
    if len(text) > MAX_TEXT:
        raise InvalidRequest(f"Invalid --gpu-bind argument: {_shown(text)} (longer than "
                             f"{MAX_TEXT} characters)")
    for part in filter(None, re.split(r",(?=[a-z])", (text or "").lower().strip())):
        name, colon, rest = part.partition(":")
        if name in ("verbose", "v") and not colon:
            bind.verbose = True
        elif name in ("none", "closest") and not colon:
            bind.kind = name
        elif name in ("map_gpu", "mask_gpu") and rest:
            bind.kind, bind.values = name, _listed(rest, name == "mask_gpu", bad)
        elif name == "single" and rest.isdigit() and 0 < int(rest) <= MAX_ITEMS:
            bind.kind, bind.per_gpu = name, int(rest)
        else:
            raise bad
    return bind


def _shown(text: str) -> str:
    """The value as an error message quotes it: a long one cut short."""
    return text if len(text) <= 80 else f"{text[:80]}..."


def _listed(text: str, masks: bool, bad: Exception) -> list[int]:
    """map_gpu ids or mask_gpu masks, each `*count` spread out, within the bounds above."""
    out: list[int] = []
    for item in text.split(","):
        value, star, count = item.partition("*")
        try:
            number = int(value, 16 if masks or value.startswith("0x") else 10)
            times = int(count) if star else 1
        except ValueError:
            raise bad from None
        limit = (1 << MAX_MASK_BITS) - 1 if masks else MAX_GPU_ID
        if number < 0 or number > limit or times < 1:
            raise bad
        if times > MAX_ITEMS - len(out):
            raise InvalidRequest(f"{bad}: more than {MAX_ITEMS} entries")
        out += [number] * times
    return out


def plan(bind: GpuBind, gpus: list[int], fence: list[int] | None, tasks: int,
         task_cpus: list[set[int]] | None, close: dict[int, set[int]]) -> list[list[int]] | None:
    """Each local task's GPUs (node indices) out of the step's `gpus`, or None (not bound).
    `close`: GPU index -> its close cores (may lack GPUs); ValueError for a map or mask naming a
    GPU the step does not have here."""
    if bind.kind in ("", "none") or not gpus:
        return None
    if bind.kind == "single":
        return [[gpus[(i // bind.per_gpu) % len(gpus)]] for i in range(tasks)]
    if bind.kind == "closest":
        return [_closest(gpus, cpus, close) for cpus in (task_cpus or [set()] * tasks)]
    # what the IDs and mask bits count: the job's GPUs here when fenced, else the node's
    number = (lambda i: fence[i] if i < len(fence) else None) if fence else (lambda i: i)
    wanted = [bind.values[i % len(bind.values)] for i in range(tasks)]
    if bind.kind == "map_gpu":
        picked = [[number(v)] for v in wanted]
    else:
        picked = [[number(b) for b in range(m.bit_length()) if m >> b & 1] for m in wanted]
    for task, chosen in enumerate(picked):
        if not chosen or not set(chosen) <= set(gpus):
            ids = [fence.index(g) for g in gpus] if fence else gpus
            raise ValueError(f"--gpu-bind={bind.kind}: task {task} names no GPU of this step here "
                             f"(its GPUs: {','.join(map(str, ids))})")
    return picked


def _closest(gpus: list[int], cpus: set[int], close: dict[int, set[int]]) -> list[int]:
    """The GPUs whose close cores hold some of the task's CPUs; all of them when none does or
    nothing is known (a task unbound, GPUs without Cores= or NUMA node)."""
    near = [g for g in gpus if cpus & close.get(g, set())]
    return near or list(gpus)


def close_cores(devices) -> dict[int, set[int]]:
    """GPU index -> its close cores: gres.conf Cores= (read as this host's logical CPU ids),
    else the CPUs of its NUMA node; GPUs with neither are left out."""
    from .cpus import numa_cpus, parse_cpulist
    out = {}
    for g in devices:
        cores = parse_cpulist(g.cores) if g.cores else (numa_cpus(g.numa_node) if g.numa_node >= 0 else set())
        if cores:
            out[g.index] = cores
    return out


def verbose_line(task_gpus: list[int], step_gpus: list[int], fence: list[int] | None) -> str:
    """slurmstepd's report (gres_common.c): usable_gres and bit_alloc as hex masks, local
    indices when fenced, the node's when not."""
    local = fence is not None
    numbering = fence or []
    usable = sum(1 << (numbering.index(g) if local else g) for g in task_gpus)
    alloc = sum(1 << g for g in step_gpus)
    global_list = ",".join(str(g) for g in task_gpus)
    local_list = ",".join(str(numbering.index(g)) for g in task_gpus) if local else global_list
    return (f"gpu-bind: usable_gres={usable:#x}; bit_alloc={alloc:#x}; "
            f"local_inx={len(step_gpus) if local else 0}; global_list={global_list}; "
            f"local_list={local_list}\n")
