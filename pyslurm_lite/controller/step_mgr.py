"""Job steps and interactive allocations in the controller (srun, salloc).

A step is recorded in its job (committed) before srun gets the credential that lets it launch, so
`squeue -s` and accounting always know what runs. Tasks are laid out over the step's nodes as
srun -m asks (layout.py; block by default: node k gets ceil-or-floor(ntasks / nnodes) tasks, the
first nodes the larger share, task ids consecutive node by node); the step records each task's
node.

Worked example: a job on node[1-2] with 2 CPUs each; `srun -n3` makes step 0 on both nodes with
tasks [0, 1] on node1 and [2] on node2. `srun -n1` makes step 1 on node1 alone.

A step's share of the job (Slurm's step allocation, select/cons_tres for steps): CPUs, memory
(--mem, --mem-per-cpu) and GPUs (--gres=gpu:N, --gpus, --gpus-per-node, --gpus-per-task) out
of what the job holds on each node. Worked example: `salloc -N1 -c4 --mem=2000 --gres=gpu:2`
holds GPUs [0, 1]; `srun --mem=500 --gres=gpu:1` (step 0) gets GPU 0 and 500 MiB; a second
`srun --gres=gpu:1` gets GPU 1; a third waits ("Requested nodes are busy") until one ends,
unless --overlap; `srun --gres=gpu:3` can never fit ("Requested node configuration is not
available"). A step that asks for no memory or GPUs gets the job's, and holds none of them.
"""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass

from ..config import expand
from ..errors import InvalidRequest, NotFound, StaleState, Unsatisfiable
from ..layout import distribute, parse_distribution
from ..model import Job, JobState, NodeAllocation, Reason, Step
from ..rpc import credential
from .auth import require
from .job_mgr import Caller, Effects, Signal
from .state import ClusterState

MAX_TASKS_PER_NODE = 512  # Slurm's MaxTasksPerNode default


# Slurm's texts (slurm_errno.c): ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE,
# ESLURM_TOO_MANY_REQUESTED_CPUS, ESLURM_NODES_BUSY (srun retries on the last)
NODE_CONFIG = "Requested node configuration is not available"
TOO_MANY_CPUS = "More processors requested than permitted"
BUSY = "Requested nodes are busy"


@dataclass
class StepResources:
    """What a step asks of its job's allocation besides tasks and CPUs (field names are
    CreateStepRequest's). Memory in MiB; 0 everywhere: the job's memory and GPUs, none held."""

    mem_per_node: int = 0
    mem_per_cpu: int = 0
    gpus: int = 0  # over the step's nodes
    gpus_per_node: int = 0
    gpus_per_task: int = 0
    gpus_none: bool = False  # --gres=none / gpu:0
    overcommit: bool = False
    overlap: bool = False

    def mem_on(self, cpus: int) -> int:
        return self.mem_per_node or self.mem_per_cpu * cpus

    def gpus_on(self, index: int, layout: list[int]) -> int | None:
        """GPUs the step asks on its index-th node; None when it asks none (it gets the job's)."""
        if self.gpus_none:
            return 0
        if self.gpus_per_node:
            return self.gpus_per_node
        if self.gpus_per_task:
            return self.gpus_per_task * layout[index]
        if self.gpus:  # dealt over the nodes, the first ones the larger share
            return self.gpus // len(layout) + (index < self.gpus % len(layout))
        return None


class StepManager:
    def __init__(self, state: ClusterState):
        self.s = state
        self.keyring = None  # keys.KeyRing with the cluster key, set when the controller starts

    def _job(self, job_id: int, caller: Caller) -> Job:
        job = self.s.jobs.get(job_id)
        if job is None:
            raise NotFound(f"Job {job_id} not found")
        require("step", caller, job.spec.uid)
        if job.state != JobState.RUNNING:
            raise StaleState(f"Job {job_id} is not running ({job.state.value})")
        return job

    def create(self, job_id: int, caller: Caller, name: str = "", num_nodes: int = 0,
               num_tasks: int = 0, ntasks_per_node: int = 0, cpus_per_task: int = 0,
               exclusive: bool = False, nodelist: str = "", distribution: str = "",
               task_nodes: list[str] | None = None,
               resources: StepResources | None = None) -> tuple[Step, Job, str]:
        parse_distribution(distribution)  # refused before anything is recorded
        res = resources or StepResources()
        if min(res.mem_per_node, res.mem_per_cpu, res.gpus, res.gpus_per_node,
               res.gpus_per_task) < 0:
            raise InvalidRequest("Invalid step resource request: negative memory or GPU count")
        with self.s.lock:
            job = self._job(job_id, caller)
            if task_nodes:  # -m arbitrary: the hostfile names each task's node
                nodelist, num_tasks = ",".join(sorted(set(task_nodes))), len(task_nodes)
                num_nodes = len(set(task_nodes))
            nodes = self._step_nodes(job, num_nodes, num_tasks, ntasks_per_node, nodelist)
            cpt = cpus_per_task or job.spec.cpus_per_task
            if not num_tasks:
                num_tasks = ntasks_per_node * len(nodes) if ntasks_per_node else \
                    (job.spec.num_tasks if len(nodes) == len(job.allocations) else len(nodes))
            if num_tasks > MAX_TASKS_PER_NODE * len(nodes) or ntasks_per_node > MAX_TASKS_PER_NODE:
                # -O lifts the CPU bound: without this a count of 2**31 is laid out under the lock
                raise InvalidRequest(f"Task count specification invalid: more than "
                                     f"MaxTasksPerNode={MAX_TASKS_PER_NODE} tasks on a node")
            where = ([nodes.index(n) for n in task_nodes] if task_nodes else
                     distribute(num_tasks, len(nodes), distribution, ntasks_per_node))
            layout = [where.count(i) for i in range(len(nodes))]
            cpus = self._step_cpus(job, nodes, [n * cpt for n in layout], res.overcommit)
            self._check_fit(job, nodes, cpus, exclusive)
            shares = self._shares(job, nodes, cpus, layout, res)
            step = Step(step_id=job.next_step_id, name=name, nodes=nodes, num_tasks=num_tasks,
                        tasks_per_node=layout, cpus_per_task=cpt, start_time=self.s.clock(),
                        exclusive=exclusive, cpus_per_node=cpus, task_nodes=where,
                        distribution=distribution or "block", allocations=shares,
                        gpus_held=any(res.gpus_on(i, layout) for i in range(len(nodes)))
                        and not res.overlap, overlap=res.overlap)
            job.next_step_id += 1
            job.steps.append(step)
            self.s.save([job])  # recorded before anything can run
        credential_ = credential.sign_job(lambda n: self.keyring.key_for(f"node:{n}"),
                                          job, step.step_id, step.nodes, self.s.cfg.cred_expire,
                                          step_gpus={a.node: a.gpus for a in step.allocations},
                                          tasks=_task_ids(step))
        return step, job, credential_

    def _step_nodes(self, job: Job, num_nodes: int, num_tasks: int, per_node: int,
                    nodelist: str) -> list[str]:
        nodes = job.node_names
        if nodelist:
            wanted = set(expand(nodelist))
            if not wanted <= set(nodes):
                raise Unsatisfiable("Requested node configuration is not available")
            nodes = [n for n in nodes if n in wanted]
        if num_nodes:
            if num_nodes > len(nodes):
                raise Unsatisfiable("Requested node configuration is not available")
            nodes = nodes[:num_nodes]
        elif num_tasks and not per_node:
            nodes = nodes[:max(min(num_tasks, len(nodes)), 1)]
        return nodes

    @staticmethod
    def _step_cpus(job: Job, nodes: list[str], cpus: list[int], overcommit: bool) -> list[int]:
        """The CPUs the step needs on each node: one per task and -c, at most the job's there
        with -O (tasks then share CPUs). More than the whole job holds: Slurm's refusal."""
        held = {a.node: a.cpus for a in job.allocations}
        if overcommit:
            return [min(c, held[n]) for n, c in zip(nodes, cpus)]
        if sum(cpus) > sum(held.values()):
            raise Unsatisfiable(TOO_MANY_CPUS)
        return cpus

    def _check_fit(self, job: Job, nodes: list[str], cpus: list[int], exclusive: bool) -> None:
        """A step never needs more CPUs than the job holds on a node; an exclusive step also
        waits for CPUs other exclusive steps hold (srun retries then)."""
        held = {a.node: a.cpus for a in job.allocations}
        for node, need in zip(nodes, cpus):
            if need > held[node]:
                raise Unsatisfiable(NODE_CONFIG)
            if exclusive:
                busy = sum(s.cpus_per_node[s.nodes.index(node)] for s in job.steps
                           if s.exclusive and s.state == JobState.RUNNING and node in s.nodes)
                if busy + need > held[node]:
                    raise StaleState(BUSY)

    def _shares(self, job: Job, nodes: list[str], cpus: list[int], layout: list[int],
                res: StepResources) -> list[NodeAllocation]:
        """The step's memory and GPUs on each node. Asking more than the job holds there can
        never fit; asking what running steps hold waits (--overlap shares it instead)."""
        held = {a.node: a for a in job.allocations}
        others = [s for s in job.steps if s.state == JobState.RUNNING and not s.overlap]
        shares = []
        for i, node in enumerate(nodes):
            job_share, mem = held[node], res.mem_on(cpus[i])
            want = res.gpus_on(i, layout)
            if (job_share.mem and mem > job_share.mem) or (want or 0) > len(job_share.gpus):
                raise Unsatisfiable(NODE_CONFIG)
            taken = [s.allocations[s.nodes.index(node)] for s in others
                     if node in s.nodes and s.allocations]
            if job_share.mem and not res.overlap and mem + sum(t.mem for t in taken) > job_share.mem:
                raise StaleState(BUSY)
            busy = {g for s in others if s.gpus_held and node in s.nodes
                    for g in s.allocations[s.nodes.index(node)].gpus}
            gpus = job_share.gpus if want is None else _pick_gpus(job_share.gpus, busy, want,
                                                                    res.overlap)
            shares.append(NodeAllocation(node, cpus[i], mem, gpus))
        return shares

    def complete(self, job_id: int, step_id: int, exit_code: int, exit_signal: int,
                 caller: Caller) -> None:
        with self.s.lock:
            job = self.s.jobs.get(job_id)
            if job is None:
                raise NotFound(f"Job {job_id} not found")
            require("step", caller, job.spec.uid)
            step = next((s for s in job.steps if s.step_id == step_id), None)
            if step is None or step.state != JobState.RUNNING:
                return
            step.exit_code, step.exit_signal, step.end_time = exit_code, exit_signal, self.s.clock()
            step.state = JobState.COMPLETED if not (exit_code or exit_signal) else (
                JobState.CANCELLED if exit_signal in (_signal.SIGKILL, _signal.SIGTERM, _signal.SIGINT)
                else JobState.FAILED)
            self.s.save([job])

    def complete_allocation(self, job_id: int, exit_code: int, exit_signal: int,
                            caller: Caller) -> Effects:
        """salloc/srun ended the allocation it made: the job ends, its nodes are cleaned."""
        effects = Effects()
        with self.s.lock:
            job = self._job(job_id, caller)
            if job.spec.batch:
                raise InvalidRequest("a batch job ends with its script, not by request")
            job.exit_code, job.exit_signal, job.end_time = exit_code, exit_signal, self.s.clock()
            job.state = JobState.COMPLETED if not (exit_code or exit_signal) else JobState.FAILED
            job.reason = Reason.NONE if job.state == JobState.COMPLETED else Reason.NON_ZERO_EXIT
            effects.signals += [Signal(n, [job.job_id], 0, True, False, "complete",
                                       restart_counts=[job.restart_count]) for n in job.node_names]
            for step in job.steps:
                if step.state == JobState.RUNNING:
                    step.state, step.end_time = JobState.CANCELLED, job.end_time
            self.s.release_allocations(job)
            self.s.save([job])
        self.s.changed.set()
        return effects


def _pick_gpus(gpus: list[int], busy: set[int], want: int, overlap: bool) -> list[int]:
    """want of the job's GPUs on a node, the first ones no running step holds; with --overlap
    held ones too (after the free ones), otherwise the step waits for them."""
    free = [g for g in gpus if g not in busy]
    if len(free) < want and not overlap:
        raise StaleState(BUSY)
    return sorted((free + [g for g in gpus if g in busy])[:want])


def _task_ids(step: Step) -> dict[str, list[int]]:
    """Each node's global task ids (ascending), as the launch credential signs them: the agent
    takes a step's layout from there, not from srun."""
    ids: dict[str, list[int]] = {n: [] for n in step.nodes}
    for task, index in enumerate(step.task_nodes):
        ids[step.nodes[index]].append(task)
    return ids
