"""Job steps and interactive allocations in the controller (srun, salloc).

A step is recorded in its job (committed) before srun gets the credential that lets it launch, so
`squeue -s` and accounting always know what runs. Tasks are laid out over the step's nodes as
srun -m asks (layout.py; block by default: node k gets ceil-or-floor(ntasks / nnodes) tasks, the
first nodes the larger share, task ids consecutive node by node); the step records each task's
node.

Worked example: a job on node[1-2] with 2 CPUs each; `srun -n3` makes step 0 on both nodes with
tasks [0, 1] on node1 and [2] on node2. `srun -n1` makes step 1 on node1 alone.
"""

from __future__ import annotations

import signal as _signal

from ..config import expand
from ..errors import InvalidRequest, NotFound, StaleState, Unsatisfiable
from ..layout import distribute, parse_distribution
from ..model import Job, JobState, Reason, Step
from ..rpc import credential
from .auth import require
from .job_mgr import Caller, Effects, Signal
from .state import ClusterState


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
               task_nodes: list[str] | None = None) -> tuple[Step, Job, str]:
        parse_distribution(distribution)  # refused before anything is recorded
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
            where = ([nodes.index(n) for n in task_nodes] if task_nodes else
                     distribute(num_tasks, len(nodes), distribution, ntasks_per_node))
            layout = [where.count(i) for i in range(len(nodes))]
            cpus = [n * cpt for n in layout]
            self._check_fit(job, nodes, cpus, exclusive)
            step = Step(step_id=job.next_step_id, name=name, nodes=nodes, num_tasks=num_tasks,
                        tasks_per_node=layout, cpus_per_task=cpt, start_time=self.s.clock(),
                        exclusive=exclusive, cpus_per_node=cpus, task_nodes=where,
                        distribution=distribution or "block")
            job.next_step_id += 1
            job.steps.append(step)
            self.s.save([job])  # recorded before anything can run
        credential_ = credential.sign_job(lambda n: self.keyring.key_for(f"node:{n}"), job,
                                          step.step_id, step.nodes, self.s.cfg.cred_expire)
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

    def _check_fit(self, job: Job, nodes: list[str], cpus: list[int], exclusive: bool) -> None:
        """A step never needs more CPUs than the job holds on a node; an exclusive step also
        waits for CPUs other exclusive steps hold (srun retries then)."""
        held = {a.node: a.cpus for a in job.allocations}
        for node, need in zip(nodes, cpus):
            if need > held[node]:
                raise Unsatisfiable("Requested node configuration is not available")
            if exclusive:
                busy = sum(s.cpus_per_node[s.nodes.index(node)] for s in job.steps
                           if s.exclusive and s.state == JobState.RUNNING and node in s.nodes)
                if busy + need > held[node]:
                    raise StaleState("Requested nodes are busy")

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
