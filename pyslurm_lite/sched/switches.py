"""topology/tree placement: a multi-node job's nodes under as low a switch as holds enough of
them, on as few leaf switches as it can, and --switches=N[@wait] (at most N leaf switches,
waited for up to `wait` seconds after the job became eligible, then any).

Worked example: leaf switches s1 (node1, node2) and s2 (node3, node4) under `top`; node1 is
full, the others can hold the job's share. A `-N2` job: first fit takes node2 and node3, one on
each leaf; here s1 holds one fitting node and s2 two, so the lowest switch holding two is s2 and
the job gets node3 and node4. Were node4 full too, no leaf would hold two: the lowest switch that
does is `top`, and the job spans s1 and s2 (the leaf with the most fitting nodes first). With
--switches=1@5:00 it would instead wait (Reason=Resources) until one leaf holds two, or until 5
minutes after it became eligible, and then take the two-leaf placement.

Mirrors Slurm 22.05's select/cons_tres _eval_nodes_topo in what a user sees (one leaf switch when
one can hold the job, the tightest such; else the largest leaves, the closest to those already
taken first) without its node-weight groups: the caller's node order (weight, best fit) decides
which nodes of a leaf are taken.

Pure: no I/O, no clock (`now` is the instant the caller is placing the job at).
"""

from __future__ import annotations

from .snapshot import JobView


def _view(item):
    return item.view


def uses_topology(views) -> bool:
    """Some node has switches (topology/tree with a topology.conf)."""
    return any(v.switches for v in views)


def choose(job: JobView, fitting: list, now: float, view_of=_view) -> list | None:
    """job.num_nodes items out of `fitting` (each a node that can hold the job's share, in the
    caller's order of preference; view_of(item) is its NodeView), all under one switch, or None
    when no switch holds enough of them or --switches says wait."""
    need = job.num_nodes
    paths = {view_of(item).name: view_of(item).switches for item in fitting}
    names = list(paths)  # a node on no switch is under no top switch: never taken
    if any(r not in paths for r in job.required):  # a dict: -w of many nodes stays linear
        return None
    top = _top_switch(job, names, paths, need)
    if top is None:
        return None
    under = [item for item in fitting if top in paths[view_of(item).name]]
    picked = _fill(job, under, paths, need, view_of)
    if picked is None:
        return None
    leaves = {paths[view_of(item).name][0] for item in picked}
    if job.req_switch and len(leaves) > job.req_switch and not waited_enough(job, now):
        return None
    return picked


def request(spec, max_wait: int) -> dict:
    """A JobSpec's --switches as JobView fields: the wait is what it asked, at most
    SchedulerParameters=max_switch_wait, which is also the wait when it asked none (Slurm)."""
    if spec.req_switch <= 0:
        return {}
    wait = max_wait if spec.wait4switch < 0 else min(spec.wait4switch, max_wait)
    return {"req_switch": spec.req_switch, "switch_wait": float(wait)}


def waited_enough(job: JobView, now: float) -> bool:
    """--switches' wait is over: counted from the job's eligible time (its submission, or its
    --begin when later), as Slurm counts it from the first time it tried to place the job."""
    return now - max(job.submit_time, job.begin_time) >= job.switch_wait


def _top_switch(job: JobView, names: list[str], paths: dict, need: int) -> str | None:
    """The lowest switch with at least `need` of the fitting nodes below it (and every -w node),
    the one with the fewest (tightest fit) among equals, then by name."""
    counts: dict[str, int] = {}
    levels: dict[str, int] = {}
    for name in names:
        for level, switch in enumerate(paths[name]):
            counts[switch] = counts.get(switch, 0) + 1
            levels[switch] = max(levels.get(switch, 0), level)
    holding = [s for s, n in counts.items() if n >= need and
               all(s in paths[r] for r in job.required)]
    if not holding:
        return None
    return min(holding, key=lambda s: (levels[s], counts[s], s))


def _fill(job: JobView, under: list, paths: dict, need: int, view_of) -> list | None:
    """Nodes leaf by leaf: the -w nodes' leaves first, then by _next_leaf, each leaf's nodes in
    the caller's order."""
    by_leaf: dict[str, list] = {}
    for item in under:
        by_leaf.setdefault(paths[view_of(item).name][0], []).append(item)
    leaf_path = {path[0]: path for path in paths.values() if path}
    required = set(job.required)
    picked = [item for item in under if view_of(item).name in required]
    taken: list[str] = []
    for leaf in dict.fromkeys(paths[r][0] for r in job.required):
        taken.append(leaf)
        picked += [i for i in by_leaf.pop(leaf) if i not in picked][:max(need - len(picked), 0)]
    while len(picked) < need and by_leaf:
        leaf = _next_leaf(by_leaf, [leaf_path[t] for t in taken], leaf_path, need - len(picked))
        taken.append(leaf)
        picked += by_leaf.pop(leaf)[:need - len(picked)]
    return picked if len(picked) >= need else None


def _next_leaf(by_leaf: dict, taken: list, leaf_path: dict, remaining: int) -> str:
    """A leaf that holds the rest alone, the closest to those taken, then the tightest; else
    the closest, then the one holding most (fewest leaves in all); then by name. (Slurm's
    _topo_choose_best_switch: closer only wins when it fits as well.)"""
    def key(leaf: str):
        count = len(by_leaf[leaf])
        fits = count >= remaining
        far = sum(_distance(leaf_path[leaf], other) for other in taken)
        return (not fits, far, count if fits else -count, leaf)
    return min(by_leaf, key=key)


def _distance(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """Hops between two leaf switches: up to their lowest common switch and down again."""
    common = set(b)
    for up, switch in enumerate(a):
        if switch in common:
            return up + b.index(switch)
    return 1 << 20  # in disjoint trees: as far as can be
