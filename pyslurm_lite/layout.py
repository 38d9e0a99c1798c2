"""How a step's tasks are laid out over its nodes (srun -m/--distribution, node level).

Pure: shared by the controller (which records the layout) and srun (which checks the option
before asking for anything).

Worked example: 5 tasks on 2 nodes -> block [0, 0, 0, 1, 1] (first nodes take the extra task),
cyclic [0, 1, 0, 1, 0], plane=2 [0, 0, 1, 1, 0] (blocks of 2 dealt round the nodes).
"""

from __future__ import annotations

from .errors import InvalidRequest

NODE_KINDS = ("block", "cyclic", "plane", "arbitrary")
LOWER_KINDS = ("*", "block", "cyclic", "fcyclic")  # the socket and core levels


def block_layout(num_tasks: int, num_nodes: int, per_node: int = 0) -> list[int]:
    """Tasks per node in block distribution."""
    if per_node:
        return [per_node] * num_nodes
    base, extra = divmod(num_tasks, num_nodes)
    return [base + (1 if i < extra else 0) for i in range(num_nodes)]


def parse_distribution(text: str) -> tuple[str, int, list[str]]:
    """'cyclic:block' -> ('cyclic', 0, ['block']); 'plane=4' -> ('plane', 4, []). The lower
    levels are returned for srun to report; ',Pack'/',NoPack' are accepted."""
    body, _, pack = (text or "block").partition(",")
    levels = body.split(":")
    first = levels[0].lower() if levels[0] not in ("", "*") else "block"
    kind, _, size = first.partition("=")
    lower = [lv.lower() for lv in levels[1:]]
    ok = (kind in NODE_KINDS and (size.isdigit() and int(size) > 0 if kind == "plane" else not size)
          and len(lower) <= 2 and all(lv in LOWER_KINDS for lv in lower)
          and pack.lower() in ("", "pack", "nopack"))
    if not ok:
        raise InvalidRequest(f"Invalid --distribution specification: {text}")
    return kind, int(size or 0), lower


def distribute(num_tasks: int, num_nodes: int, distribution: str = "", per_node: int = 0
               ) -> list[int]:
    """Each task's node, as an index into the step's nodes. With --ntasks-per-node no node takes
    more than that (unless the tasks cannot fit otherwise)."""
    kind, size, _ = parse_distribution(distribution)
    if kind in ("block", "arbitrary"):
        counts = block_layout(num_tasks, num_nodes, per_node)
        return [n for n, c in enumerate(counts) for _ in range(c)]
    size = size if kind == "plane" else 1
    even = -(-num_tasks // num_nodes)
    cap = max(per_node or (even if kind == "cyclic" else num_tasks), even)
    load, out, node = [0] * num_nodes, [], 0
    while len(out) < num_tasks:
        if load[node] < cap:
            take = min(size, cap - load[node], num_tasks - len(out))
            out += [node] * take
            load[node] += take
        node = (node + 1) % num_nodes
    return out
