"""select/cons_tres, first form: fit one job onto nodes by CPUs, memory and GPUs per node.

Worked example: nodes n1 (2 CPUs free, GPUs 0-3 free) and n2 (1 CPU free, GPUs 2,3 free); a job
asking -N1 -c2 --gres=gpu:2 skips nothing on n1 and gets n1 with CPUs 2 and GPUs [0, 1]. A job
asking -N2 -c1 --gres=gpu:3 fails: n2 has only two GPUs free, so no two nodes fit.

Nodes are tried in (weight, name) order so placements are deterministic. A job's share of a
node (share()) is its CPUs and memory for that node index; --mem=0 asks the node's whole memory;
--exclusive asks the whole node. GPUs are picked by pick_gpus(): the lowest free indices, of the
type asked, or of each type asked (--gres=gpu:a100:1,gpu:t4:1 takes one of each).
"""

from __future__ import annotations

from ..model import NodeAllocation, constraint_met
from .snapshot import JobView, NodeView


def share(job: JobView, view: NodeView, index: int) -> tuple[int, int]:
    """CPUs and MiB the job needs on this node as its index-th node (--exclusive: all CPUs)."""
    if job.exclusive:
        return view.cpus, 0
    return job.cpus_per_node[index], view.mem if job.whole_mem else job.mem_per_node[index]


def pick_gpus(job: JobView, free, view: NodeView) -> list[int] | None:
    """The GPU indices the job takes out of `free` on this node, or None when they are not there."""
    free = sorted(free)
    if job.exclusive:
        return free if len(free) >= len(view.gpus) else None
    wanted = job.gpu_types or ((job.gpu_type, job.gpus_per_node),)
    picked: list[int] = []
    for gpu_type, count in sorted(wanted, key=lambda w: not w[0]):  # typed first: any GPU last
        if not count:
            continue
        typed = {i for i, t in view.gpus if t == gpu_type} if gpu_type else None
        fit = [g for g in free if g not in picked and (typed is None or g in typed)][:count]
        if len(fit) < count:
            return None
        picked += fit
    return sorted(picked)


def node_allowed(job: JobView, name: str) -> bool:
    return name not in job.excluded


class FreeNode:
    """A mutable copy of a NodeView's free resources, used while building one plan."""

    __slots__ = ("view", "free_cpus", "free_mem", "free_gpus", "idle")

    def __init__(self, view: NodeView):
        self.view = view
        self.free_cpus = view.free_cpus
        self.free_mem = view.free_mem
        self.free_gpus = list(view.free_gpus)
        self.idle = view.idle

    def fits(self, job: JobView, index: int) -> bool:
        if job.exclusive:
            return self.idle and self.free_cpus >= job.cpus_per_node[index]
        cpus, mem = share(job, self.view, index)
        return (self.free_cpus >= cpus and self.free_mem >= mem
                and pick_gpus(job, self.free_gpus, self.view) is not None)

    def copy(self) -> "FreeNode":
        c = FreeNode(self.view)
        c.free_cpus, c.free_mem, c.free_gpus, c.idle = (self.free_cpus, self.free_mem,
                                                        list(self.free_gpus), self.idle)
        return c

    def hold(self, a: NodeAllocation) -> None:
        """Take exactly what an allocation made elsewhere (the timeline) holds."""
        self.free_cpus -= a.cpus
        self.free_mem -= a.mem
        self.free_gpus = [g for g in self.free_gpus if g not in a.gpus]
        self.idle = False

    def give_back(self, a: NodeAllocation) -> None:
        self.free_cpus += a.cpus
        self.free_mem += a.mem
        self.free_gpus = sorted(set(self.free_gpus) | set(a.gpus))
        self.idle = self.free_cpus >= self.view.cpus and len(self.free_gpus) >= len(self.view.gpus)

    def take(self, job: JobView, index: int) -> NodeAllocation:
        if job.exclusive:
            cpus, mem = self.free_cpus, self.free_mem
        else:
            cpus, mem = share(job, self.view, index)
        gpus = pick_gpus(job, self.free_gpus, self.view) or []
        self.free_cpus -= cpus
        self.free_mem -= mem
        self.free_gpus = [g for g in self.free_gpus if g not in gpus]
        self.idle = False
        return NodeAllocation(node=self.view.name, cpus=cpus, mem=mem, gpus=gpus)


def capable(node: NodeView, job: JobView, index: int = 0) -> bool:
    """Could this node ever hold this job (all of it free)? Used for 'never' vs 'not now'."""
    cpus, mem = share(job, node, index)
    return (node.cpus >= cpus and node.mem >= mem and node_allowed(job, node.name)
            and pick_gpus(job, [i for i, _ in node.gpus], node) is not None
            and constraint_met(job.features, node.features))


def holds_required(job: JobView, names) -> bool:
    """-w: a placement must include every node the job names."""
    return not job.required or set(job.required) <= set(names)


def select_nodes(job: JobView, candidates: list[FreeNode]) -> list[NodeAllocation] | None:
    """Allocations for job on the first nodes that fit, or None (nothing is taken then)."""
    chosen: list[FreeNode] = []
    for node in candidates:
        if len(chosen) == job.num_nodes:
            break
        if node.view.available and node_allowed(job, node.view.name) and \
                node.fits(job, len(chosen)) and constraint_met(job.features, node.view.features):
            chosen.append(node)
    if len(chosen) < job.num_nodes or not holds_required(job, [c.view.name for c in chosen]):
        return None
    return [node.take(job, i) for i, node in enumerate(chosen)]
