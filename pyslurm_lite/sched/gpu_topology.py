"""Which of a node's free GPUs a job gets: those that talk fastest to each other (NVLink, then
the same PCIe switch, then the same NUMA node / cores), leaving linked groups whole for later jobs.

Worked example: 4 GPUs, NVLink pairs (0,1) and (2,3), GPU 0 taken. A 2-GPU job could take the
lowest free indices [1, 2] (no link between them); it gets [2, 3] (one NVLink pair). A 1-GPU job
next gets 1 (its partner 0 is taken anyway) rather than breaking the pair (2, 3).

The node's wiring travels as NodeView.gpu_affinity: (a, b, weight) for each pair of GPU indices
that share something, weight NVLINK per NVLink + SWITCH + NUMA. A choice of k GPUs is scored by
the weight inside it (more is better), then by the weight it cuts off from the free GPUs left
(less is better), then by its indices (lowest first): deterministic. Small choices are searched
exhaustively, large ones greedily. Pure: no I/O.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations
from math import comb

NVLINK = 100  # per NVLink between the two GPUs: the fastest path
SWITCH = 10  # behind one PCIe switch: peer-to-peer without the host bridge
NUMA = 1  # same NUMA node (or the same gres.conf Cores=): at least the same memory controller
EXHAUSTIVE = 256  # at most this many candidate sets are scored one by one; more: greedy


def affinity(devices) -> tuple[tuple[int, int, int], ...]:
    """NodeView.gpu_affinity from GpuDevices (links, pci_switch, numa_node, cores); () when the
    devices say nothing about their wiring (then the lowest indices are taken, as before)."""
    out = []
    for i, a in enumerate(devices):
        for j in range(i + 1, len(devices)):
            b = devices[j]
            weight = NVLINK * max(a.links[j] if j < len(a.links) else 0, 0)
            if a.pci_switch and a.pci_switch == b.pci_switch:
                weight += SWITCH
            if (a.numa_node >= 0 and a.numa_node == b.numa_node) or (a.cores and a.cores == b.cores):
                weight += NUMA
            if weight:
                out.append((a.index, b.index, weight))
    return tuple(out)


def bound_cores(devices) -> tuple[tuple[int, frozenset], ...]:
    """NodeView.gpu_cores: gres.conf Cores= of each GPU that has it."""
    return tuple((d.index, frozenset(_cpulist(d.cores))) for d in devices if d.cores)


def _cpulist(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def covers(chosen, cores: tuple[tuple[int, frozenset], ...], cpus: int) -> bool:
    """--gres-flags=enforce-binding: the cores bound to `chosen` number at least `cpus`; GPUs
    without Cores= bind every core (Slurm's rule), so then it always holds."""
    if not cores:
        return True
    by_gpu = dict(cores)
    if any(g not in by_gpu for g in chosen):
        return True
    return len(frozenset().union(*(by_gpu[g] for g in chosen))) >= cpus


@lru_cache(maxsize=256)
def _weights(pairs: tuple[tuple[int, int, int], ...]) -> dict[tuple[int, int], int]:
    out = {}
    for a, b, w in pairs:
        out[(a, b)] = out[(b, a)] = w
    return out


def choose(pool: list[int], count: int, pairs, accept=None) -> list[int] | None:
    """`count` GPUs of the sorted free `pool`, best connected (module docstring), among the
    sets accept(set) allows (None: any); None when it allows none."""
    if count > len(pool):
        return None
    if (count == len(pool) or count <= 0 or not pairs) and accept is None:
        return pool[:count]
    if accept is None:  # the common case, asked again and again within a pass: remembered
        return list(_best(tuple(pool), count, pairs))
    return _choose(pool, count, pairs, accept)


@lru_cache(maxsize=4096)
def _best(pool: tuple, count: int, pairs) -> tuple:
    return tuple(_choose(list(pool), count, pairs, None))


def _choose(pool: list[int], count: int, pairs, accept) -> list[int] | None:
    weights = _weights(pairs or ())
    if comb(len(pool), count) <= EXHAUSTIVE:
        candidates = list(combinations(pool, count))
    else:
        candidates = [_greedy(pool, count, seed, weights) for seed in pool]
    candidates.sort(key=lambda c: _score(c, pool, weights))
    return next((list(c) for c in candidates if accept is None or accept(c)), None)


def _score(chosen, pool, weights) -> tuple:
    inside = sum(weights.get((a, b), 0) for a, b in combinations(chosen, 2))
    rest = [g for g in pool if g not in chosen]
    cut = sum(weights.get((a, b), 0) for a in chosen for b in rest)
    return -inside, cut, tuple(sorted(chosen))


def _greedy(pool, count, seed, weights) -> tuple[int, ...]:
    """From seed, add the GPU best linked to those chosen; on ties the one best linked to the
    free GPUs (it starts a whole group rather than a fragment), then the lowest index."""
    chosen = [seed]
    while len(chosen) < count:
        rest = [g for g in pool if g not in chosen]
        nxt = max(rest, key=lambda g: (sum(weights.get((g, c), 0) for c in chosen),
                                       sum(weights.get((g, r), 0) for r in rest), -g))
        chosen.append(nxt)
    return tuple(sorted(chosen))
