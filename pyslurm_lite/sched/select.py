"""select/cons_tres, first form: fit one job onto nodes by CPUs, memory and GPUs per node.

Worked example: nodes n1 (2 CPUs free, GPUs 0-3 free) and n2 (1 CPU free, GPUs 2,3 free); a job
asking -N1 -c2 --gres=gpu:2 skips nothing on n1 and gets n1 with CPUs 2 and GPUs [0, 1]. A job
asking -N2 -c1 --gres=gpu:3 fails: n2 has only two GPUs free, so no two nodes fit.

Nodes are chosen best fit (fit_key): the lowest Weight first, as Slurm, then the node left with
the fewest free GPUs, then the fewest free CPUs, then (weight, name) order, so partly used nodes
fill up first and whole nodes stay free for the big jobs (a 1-GPU job goes beside another 1-GPU
job rather than onto an empty node an 8-GPU job needs). -w nodes come first, all of them. A
multi-node job takes the first num_nodes nodes of that order that fit. A job's share of a
node (share()) is its CPUs and memory for that node index; --mem=0 asks the node's whole memory;
--exclusive asks the whole node. GPUs are picked by pick_gpus(), of the type asked, or of each
type asked (--gres=gpu:a100:1,gpu:t4:1 takes one of each): among the free ones those best
connected (NVLink, PCIe switch, NUMA: gpu_topology.py), the lowest indices when the node says
nothing of its wiring; with --gres-flags=enforce-binding only GPUs whose gres.conf Cores= are
enough for the job's CPUs. Best fit, worked: n1 idle (4 GPUs free) and n2 with 3 GPUs free; a
1-GPU job goes to n2 (3 < 4), leaving n1 whole for a 4-GPU job; first fit would take n1.
"""

from __future__ import annotations

import math

from ..model import NodeAllocation, constraint_met
from . import gpu_topology, switches
from .sharing import ShareBook
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
        pool = [g for g in free if g not in picked and (typed is None or g in typed)]
        accept = None
        if job.enforce_binding and view.gpu_cores:
            accept = lambda c, p=tuple(picked): gpu_topology.covers(  # noqa: E731
                p + c, view.gpu_cores, job.cpus_per_node[0])
        fit = gpu_topology.choose(pool, count, view.gpu_affinity, accept)
        if fit is None:
            return None
        picked += fit
    return sorted(picked)


def fit_key(view: NodeView, free_gpus: int, free_cpus: int) -> tuple[int, int, int]:
    """Best fit: smaller is better. The job's own need is the same on every node, so fewest
    free before placing is fewest left after; ties keep the caller's (weight, name) order."""
    return view.weight, free_gpus, free_cpus


def best_fit_order(job: JobView, order: list[str], key_of) -> list[str]:
    """`order` ((weight, name), -w nodes first) re-ranked best fit: -w nodes stay first (a
    placement needs every one of them), the others by key_of(name) (fit_key), a stable sort.
    Multi-node jobs then take the first nodes that fit; a topology-aware choice among the
    nodes that fit (switches) narrows this list, it does not replace the ranking."""
    required = set(job.required)
    head = [n for n in order if n in required] if required else []
    rest = [n for n in order if n not in required] if required else list(order)
    rest.sort(key=key_of)
    return head + rest


def node_allowed(job: JobView, name: str) -> bool:
    return name not in job.excluded


class FreeNode:
    """A mutable copy of a NodeView's free resources, used while building one plan."""

    __slots__ = ("view", "free_cpus", "free_mem", "free_gpus", "idle", "shares")

    def __init__(self, view: NodeView):
        self.view = view
        self.free_cpus = view.free_cpus
        self.free_mem = view.free_mem
        self.free_gpus = list(view.free_gpus)
        self.idle = view.idle
        self.shares = ShareBook(view.shares)  # gres/shard, gres/mps (sched/sharing.py)

    def fits(self, job: JobView, index: int) -> bool:
        if job.exclusive:
            return self.idle and self.free_cpus >= job.cpus_per_node[index]
        cpus, mem = share(job, self.view, index)
        return (self.free_cpus >= cpus and self.free_mem >= mem
                and pick_gpus(job, self.free_gpus, self.view) is not None
                and self.shares.fits(job.share_name, job.shares_per_node, self.free_gpus))

    def copy(self) -> "FreeNode":
        c = FreeNode(self.view)
        c.free_cpus, c.free_mem, c.free_gpus, c.idle = (self.free_cpus, self.free_mem,
                                                        list(self.free_gpus), self.idle)
        c.shares = self.shares.copy()
        return c

    def hold(self, a: NodeAllocation) -> None:
        """Take exactly what an allocation made elsewhere (the timeline) holds."""
        self.free_cpus -= a.cpus
        self.free_mem -= a.mem
        self.free_gpus = [g for g in self.free_gpus if g not in a.gpus]
        self.idle = False
        self.shares.hold(a)

    def give_back(self, a: NodeAllocation) -> None:
        self.free_cpus += a.cpus
        self.free_mem += a.mem
        self.free_gpus = sorted(set(self.free_gpus) | set(a.gpus))
        self.shares.release(a)  # a GPU others still have shares of is not free whole
        self.free_gpus = [g for g in self.free_gpus if not self.shares.busy(g)]
        self.idle = self.free_cpus >= self.view.cpus and len(self.free_gpus) >= len(self.view.gpus)

    def take(self, job: JobView, index: int) -> NodeAllocation:
        if job.exclusive:
            cpus, mem = self.free_cpus, self.free_mem
        else:
            cpus, mem = share(job, self.view, index)
        gpus = pick_gpus(job, self.free_gpus, self.view) or []
        shared = self.shares.pick(job.share_name, job.shares_per_node, self.free_gpus)
        if job.share_name and shared is not None:
            gpus = [shared]  # the GPU its shares are on (sched/sharing.py)
        self.free_cpus -= cpus
        self.free_mem -= mem
        self.free_gpus = [g for g in self.free_gpus if g not in gpus]
        self.idle = False
        a = NodeAllocation(node=self.view.name, cpus=cpus, mem=mem, gpus=gpus)
        if job.share_name and shared is not None:
            a.shares, a.share_name = [job.shares_per_node], job.share_name
            self.shares.hold(a)
        return a


def capable(node: NodeView, job: JobView, index: int = 0) -> bool:
    """Could this node ever hold this job (all of it free)? Used for 'never' vs 'not now'."""
    cpus, mem = share(job, node, index)
    return (node.cpus >= cpus and node.mem >= mem and node_allowed(job, node.name)
            and pick_gpus(job, [i for i, _ in node.gpus], node) is not None
            and constraint_met(job.features, node.features))


def holds_required(job: JobView, names) -> bool:
    """-w: a placement must include every node the job names."""
    return not job.required or set(job.required) <= set(names)


def select_nodes(job: JobView, candidates: list[FreeNode],
                 now: float = math.inf) -> list[NodeAllocation] | None:
    """Allocations for job on the best-fit nodes (best_fit_order) among candidates, or None
    (nothing is taken then). `now`: for --switches' wait (preemption, the default, does not
    wait for switches)."""
    by_name = {c.view.name: c for c in candidates}
    ranked = best_fit_order(job, list(by_name), lambda n: fit_key(
        by_name[n].view, len(by_name[n].free_gpus), by_name[n].free_cpus))
    chosen: list[FreeNode] = []
    tree = switches.uses_topology(c.view for c in candidates)  # topology/tree
    for node in (by_name[n] for n in ranked):
        if len(chosen) == job.num_nodes and not tree:
            break
        if node.view.available and node_allowed(job, node.view.name) and \
                node.fits(job, 0 if tree else len(chosen)) and \
                constraint_met(job.features, node.view.features):
            chosen.append(node)  # under topology/tree: the largest share vetted (see profile.py)
    if tree:  # every node that fits, narrowed to the fewest switches (switches.py)
        chosen = switches.choose(job, chosen, now) or []
    if len(chosen) < job.num_nodes or not holds_required(job, [c.view.name for c in chosen]):
        return None
    return [node.take(job, i) for i, node in enumerate(chosen)]
