"""Which cores a job is pinned to (task/affinity's role, simplified): the controller decided how
many CPUs a job has on this node; the agent picks which, preferring the cores bound to the job's
GPUs (gres.conf Cores=, else their NUMA node; none with --gres-flags=disable-binding, only those
with enforce-binding) and never giving one core to two jobs while free ones remain.

Worked example: cores 0-3 on NUMA 0 and 4-7 on NUMA 1, job A holds 4; a 2-CPU job whose GPU sits
on NUMA 1 gets [5, 6]; with no GPU preference it would get [0, 1].

When configuration declares more CPUs than the host has (a local test cluster), there are not
enough cores to pin to: the job is left unpinned rather than squeezed.
"""

from __future__ import annotations

import os
import threading


def numa_cpus(node: int) -> set[int]:
    try:
        with open(f"/sys/devices/system/node/node{node}/cpulist") as f:
            return parse_cpulist(f.read())
    except (OSError, ValueError):
        return set()


def parse_cpulist(text: str) -> set[int]:
    """'0-3,8,10-11' -> {0, 1, 2, 3, 8, 10, 11}"""
    out: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def cpulist(cpus) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's list form)."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(c)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


class CoreMap:
    def __init__(self, cores: set[int] | None = None):
        self.cores = sorted(cores if cores is not None else os.sched_getaffinity(0))
        self.owner: dict[int, str] = {}
        self.lock = threading.Lock()

    def take(self, key: str, count: int, numa_nodes: set[int] = frozenset(),
             near: set[int] | None = None, strict: bool = False) -> list[int]:
        """Reserve `count` cores for key, those in `near` (else on `numa_nodes`) first; [] (no
        pinning) when that many are not free. strict (--gres-flags=enforce-binding): only
        `near` cores; when too few of them are free, the first `count` of them, shared with
        the jobs that hold them (not reserved), rather than any core elsewhere."""
        with self.lock:
            free = [c for c in self.cores if c not in self.owner]
            if near is None:
                near = set().union(*(numa_cpus(n) for n in numa_nodes)) if numa_nodes else set()
            if strict and near:
                free = [c for c in free if c in near]
                if len(free) < count:
                    return sorted(near & set(self.cores))[:count]
            if count <= 0 or count > len(free):
                return []
            free.sort(key=lambda c: (c not in near, c))
            chosen = sorted(free[:count])
            for c in chosen:
                self.owner[c] = key
            return chosen

    def held(self, key: str) -> list[int]:
        with self.lock:
            return sorted(c for c, k in self.owner.items() if k == key)

    def release(self, key: str) -> None:
        with self.lock:
            for c in [c for c, k in self.owner.items() if k == key]:
                del self.owner[c]


def gpu_cores(devices, gpus, gres_flags: str = "") -> tuple[set[int] | None, bool]:
    """(the cores to prefer for a job holding `gpus`, whether only those): gres.conf Cores= of
    those GPUs when every one has it, else None (their NUMA nodes then); --gres-flags=
    disable-binding prefers nothing, enforce-binding allows nothing else."""
    if gres_flags == "disable-binding":
        return set(), False
    mine = [d for d in devices if d.index in gpus]
    if not mine or not all(d.cores for d in mine):
        return None, False
    return set().union(*(parse_cpulist(d.cores) for d in mine)), gres_flags == "enforce-binding"
