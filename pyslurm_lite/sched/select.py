"""select/cons_tres, first form: fit one job onto nodes by CPUs, memory and GPUs per node.

Worked example: nodes n1 (2 CPUs free, GPUs 0-3 free) and n2 (1 CPU free, GPUs 2,3 free); a job
asking -N1 -c2 --gres=gpu:2 skips nothing on n1 and gets n1 with CPUs 2 and GPUs [0, 1]. A job
asking -N2 -c1 --gres=gpu:3 fails: n2 has only two GPUs free, so no two nodes fit.

Nodes are tried in (weight, name) order so placements are deterministic.
"""

from __future__ import annotations

from ..model import NodeAllocation, constraint_met
from .snapshot import JobView, NodeView


class FreeNode:
    """A mutable copy of a NodeView's free resources, used while building one plan."""

    __slots__ = ("view", "free_cpus", "free_mem", "free_gpus", "idle")

    def __init__(self, view: NodeView):
        self.view = view
        self.free_cpus = view.free_cpus
        self.free_mem = view.free_mem
        self.free_gpus = list(view.free_gpus)
        self.idle = view.idle

    def gpus_of_type(self, gpu_type: str) -> list[int]:
        if not gpu_type:
            return self.free_gpus
        typed = {i for i, t in self.view.gpus if t == gpu_type}
        return [i for i in self.free_gpus if i in typed]

    def fits(self, job: JobView, index: int) -> bool:
        if job.exclusive:
            return self.idle and self.free_cpus >= job.cpus_per_node[index]
        return (self.free_cpus >= job.cpus_per_node[index]
                and self.free_mem >= job.mem_per_node[index]
                and len(self.gpus_of_type(job.gpu_type)) >= job.gpus_per_node)

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
            gpus = list(self.free_gpus)
        else:
            cpus, mem = job.cpus_per_node[index], job.mem_per_node[index]
            gpus = self.gpus_of_type(job.gpu_type)[:job.gpus_per_node]
        self.free_cpus -= cpus
        self.free_mem -= mem
        self.free_gpus = [g for g in self.free_gpus if g not in gpus]
        self.idle = False
        return NodeAllocation(node=self.view.name, cpus=cpus, mem=mem, gpus=gpus)


def capable(node: NodeView, job: JobView, index: int = 0) -> bool:
    """Could this node ever hold this job (all of it free)? Used for 'never' vs 'not now'."""
    typed = [i for i, t in node.gpus if not job.gpu_type or t == job.gpu_type]
    return (node.cpus >= job.cpus_per_node[index] and node.mem >= job.mem_per_node[index]
            and len(typed) >= job.gpus_per_node
            and constraint_met(job.features, node.features))


def select_nodes(job: JobView, candidates: list[FreeNode]) -> list[NodeAllocation] | None:
    """Allocations for job on the first nodes that fit, or None (nothing is taken then)."""
    chosen: list[FreeNode] = []
    for node in candidates:
        if len(chosen) == job.num_nodes:
            break
        if node.view.available and node.fits(job, len(chosen)) and \
                constraint_met(job.features, node.view.features):
            chosen.append(node)
    if len(chosen) < job.num_nodes:
        return None
    return [node.take(job, i) for i, node in enumerate(chosen)]
