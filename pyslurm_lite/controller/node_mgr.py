"""Nodes in the controller: agent registration and heartbeats, reconciliation, admin updates and
the silent-node monitor.

Reconciliation is the rule that makes restarts safe: when an agent registers it lists what it
runs (and the endings it could not deliver). A job the controller believes runs there that the
agent does not have was never launched or is lost: it is requeued (or ends NODE_FAIL). A job the
agent runs that the controller does not believe in is killed.
"""

from __future__ import annotations

import logging

from ..errors import InvalidRequest, NotFound
from ..model import ForeignGpu, GpuDevice, GpuFault, JobState, NodeState, Reason, UsageSample
from . import gres_check
from .job_mgr import Effects, JobManager, Signal
from .state import ClusterState

log = logging.getLogger("pyslurm_lite.controller.nodes")

HEARTBEAT_GRACE = 10.0  # seconds a fresh launch may be missing from heartbeats (in flight)


# srun steps whose samples a job keeps: job.usage is in every Job message (squeue's replies
# too), and a job looping over srun would otherwise grow it by one entry per step and node
MAX_USAGE_STEPS = 64


def kept_usage(usage: list[UsageSample], new: UsageSample, restart_count: int) -> list[UsageSample]:
    """usage with new in place of its (step, node)'s sample, kept in the order samples came
    (the newest last), so that steps still running, sampled at every heartbeat, stay: the batch
    step's samples and those of the MAX_USAGE_STEPS steps sampled last; those of earlier runs
    and of older steps are dropped (sacct then shows those steps without usage)."""
    out = [x for x in usage if x.restart_count == restart_count
           and (x.step, x.node) != (new.step, new.node)] + [new]
    recent: set[str] = set()
    for x in reversed(out):
        if x.step != "batch" and x.step not in recent:
            if len(recent) == MAX_USAGE_STEPS:
                return [x for x in out if x.step == "batch" or x.step in recent]
            recent.add(x.step)
    return out


class NodeManager:
    def __init__(self, state: ClusterState, jobs: JobManager):
        self.s = state
        self.jobs = jobs
        # node -> why its GPUs, at its last registration, disagreed with slurm.conf
        self.gpu_problems: dict[str, str] = {}
        # node -> the GPU faults its last heartbeat reported: only a fault not in it is acted on
        self.gpu_faults_seen: dict[str, set[tuple[int, str, str]]] = {}

    def _node(self, name: str):
        node = self.s.nodes.get(name)
        if node is None:
            raise NotFound(f"Invalid node name specified: {name}")
        return node

    def register(self, name: str, cpus: int, memory: int, gpus: list[GpuDevice], running: dict[int, int],
                 boot_time: float, version: str) -> tuple[list[int], Effects, str]:
        """An agent (re)joined; returns job ids it must kill, and its new epoch: launches
        decided before this reconciliation carry an older one and the agent refuses them.
        `running`: job id -> restart count."""
        now = self.s.clock()
        with self.s.lock:
            node = self._node(name)
            node.real_cpus, node.real_memory, node.boot_time = cpus, memory, boot_time
            node.agent_version = version
            self._take_gpus(node, gpus, now)
            node.responding, node.last_heartbeat = True, now
            self.s.registered.add(name)
            returns = self.s.cfg.return_to_service >= 1 or node.reason != "Not responding"
            if node.state in (NodeState.UNKNOWN, NodeState.DOWN) and not self._admin_down(node) and returns:
                node.state = NodeState.IDLE  # ReturnToService=1: a node that answers again is back
                if node.reason == "Not responding":
                    node.reason = ""
            kill, _, signals = self._reconcile(name, running, now, grace=0.0)
            self.s.refresh_node(name)
            epoch = self.s.new_epoch(name)
        self.s.changed.set()
        return kill, Effects(signals=signals), epoch

    def _take_gpus(self, node, reported: list[GpuDevice], now: float) -> None:
        """The GPUs the node may hand out: what its agent reports, checked against slurm.conf.
        A disagreement drains the node with Slurm's reason (an operator's own drain reason is
        kept), so jobs wait visibly instead of for GPUs that are not there."""
        verdict = gres_check.check(node.config.gres, reported)
        node.gpus, node.config.gres = verdict.usable, verdict.gres
        self.gpu_problems[node.name] = verdict.reason
        if not verdict.reason:
            return
        log.warning("node %s: %s: drained", node.name, verdict.reason)
        if not node.drain:
            node.drain, node.reason, node.reason_time = True, verdict.reason, now
            self.s.store.save_node(node.name, True, node.state == NodeState.DOWN, node.reason, now)

    def _admin_down(self, node) -> bool:
        return node.state == NodeState.DOWN and node.reason not in ("", "Not responding")

    def _reconcile(self, name: str, running: dict[int, int], now: float, grace: float):
        kill = [jid for jid, rc in running.items() if not self._believes_running(jid, rc, name)]
        lost = []
        for job in list(self.s.jobs.values()):
            if not job.allocations or job.allocations[0].node != name or not job.spec.batch:
                continue  # only a batch script is something an agent must be running
            if now - job.start_time < grace:
                continue  # its launch may still be on the way to the agent
            if job.state == JobState.RUNNING and running.get(job.job_id) != job.restart_count:
                lost.append(job)
            elif job.job_id in self.s.completing and job.job_id not in running:
                self.s.release_allocations(job)
                if job.state == JobState.PENDING:
                    job.allocations = []
                lost.append(job)
        signals = []
        for job in lost:
            if job.state == JobState.RUNNING:
                log.warning("job %s is not running on %s: requeued or failed", job.job_id, name)
                signals += self._node_failed_job(job, name)
        self.s.save(lost)
        return kill, lost, signals

    def _believes_running(self, job_id: int, restart_count: int, node: str) -> bool:
        job = self.s.jobs.get(job_id)
        if job is None:
            return False
        if job.job_id in self.s.completing:
            return True  # already being killed; let it finish dying
        return job.state == JobState.RUNNING and job.restart_count == restart_count \
            and node in job.node_names

    def _node_failed_job(self, job, failed: str) -> list[Signal]:
        """A job lost its processes on `failed`: requeue it when allowed, else NODE_FAIL. Its
        nodes that are still alive end this run (SIGTERM, then SIGKILL) and the job keeps their
        resources until its batch host confirms; when the batch host is the one that failed,
        nothing will confirm, so they are free at once."""
        batch_host = job.batch_host or (job.node_names[0] if job.node_names else "")
        if job.spec.requeue and self.s.cfg.job_requeue and job.spec.batch:
            # past MaxBatchRequeue the job waits, held, for a person to look (Slurm's
            # launch_failed_requeued_held) rather than churn on bad nodes forever
            signals = self.jobs.requeue(job, hold=job.restart_count >= self.s.cfg.max_batch_requeue)
        else:
            signals = self.jobs._end(job, JobState.NODE_FAIL, Reason.NONE)
        if batch_host == failed or not job.spec.batch:
            self.s.release_allocations(job)
            if job.state == JobState.PENDING:
                job.allocations = []
        return [sig for sig in signals if sig.node != failed]

    def job_lost(self, job_id: int, node: str, when: float) -> Effects:
        """An agent that restarted found (and killed) this job's processes from before: the run
        lost its tasks there, as if the node had failed. A later run is not affected."""
        effects = Effects()
        with self.s.lock:
            job = self.s.jobs.get(job_id)
            if job is None or job.state != JobState.RUNNING or node not in job.node_names \
                    or job.start_time > when:
                return effects
            log.warning("job %s lost its processes on %s (agent restarted): requeued or failed", job_id, node)
            effects.signals += self._node_failed_job(job, node)
            self.s.save([job])
        self.s.changed.set()
        return effects

    def health(self, name: str, error: str) -> None:
        """HealthCheckProgram failed on the node: drain it (a person resumes it), as Slurm's NHC."""
        with self.s.lock:
            node = self._node(name)
            if not error or node.drain:
                return
            log.warning("node %s failed its health check: %s", name, error)
            node.drain, node.reason, node.reason_time = True, f"HealthCheck: {error}"[:200], self.s.clock()
            self.s.store.save_node(name, True, node.state == NodeState.DOWN, node.reason, node.reason_time)

    def gpu_health(self, name: str, faults: list[GpuFault]) -> None:
        """GPU faults the agent sees (agent/gpu_health.py). A new one, by GpuHealthAction:
        drain (Slurm's way: running jobs keep running, no new ones start; the reason names the
        GPU and the fault), gpu (only that GPU leaves scheduling until the node is resumed) or
        none (logged). A fault still reported after a resume is not new: the resume stands."""
        with self.s.lock:
            node = self._node(name)
            seen = self.gpu_faults_seen.get(name, set())
            self.gpu_faults_seen[name] = {(f.index, f.kind, f.detail) for f in faults}
            new = [f for f in faults if (f.index, f.kind, f.detail) not in seen]
            if not new:
                return
            action = self.s.cfg.gpu_health_action
            reason = "; ".join(f"gpu {f.index}: {f.detail}" for f in new)
            log.warning("node %s: %s (GpuHealthAction=%s)", name, reason, action)
            if action == "gpu":
                marked = {f.index for f in new}
                node.gpu_faults = [f for f in node.gpu_faults if f.index not in marked] + new
            elif action == "drain" and not node.drain:  # an operator's own drain reason is kept
                node.drain, node.reason, node.reason_time = True, reason[:200], self.s.clock()
                self.s.store.save_node(name, True, node.state == NodeState.DOWN, node.reason,
                                       node.reason_time)
        self.s.changed.set()

    def heartbeat(self, name: str, instance: str, running: dict[int, int], free_memory: int,
                  load: float) -> tuple[bool, Effects]:
        """Returns True when the agent must register again (controller restarted, or DOWN)."""
        now = self.s.clock()
        with self.s.lock:
            node = self._node(name)
            if instance != self.s.instance or name not in self.s.registered:
                return True, Effects()
            node.last_heartbeat, node.free_memory, node.cpu_load = now, free_memory, load
            if not node.responding:
                node.responding = True
                self.s.refresh_node(name)
                self.s.changed.set()
            _, lost, signals = self._reconcile(name, running, now, grace=HEARTBEAT_GRACE)
        if lost:
            self.s.changed.set()
        return False, Effects(signals=signals)

    def record_usage(self, name: str, samples: list[UsageSample], final: bool = False) -> None:
        """Agents' samples of their steps: the latest per (step, node) is kept in job.usage
        (the batch step's and the MAX_USAGE_STEPS last sampled steps', see kept_usage), in
        memory only (a job is committed with its usage when it ends, so a restart loses at
        most the samples since). A sample of an earlier run of the job is dropped; so is a
        heartbeat's of a job that has ended. Final samples of a job that already ended (its
        ending was reported first, at a registration) are committed at once."""
        ended = []
        with self.s.lock:
            for u in samples:
                job = self.s.jobs.get(u.job_id)
                if job is None or u.restart_count != job.restart_count or name not in job.node_names:
                    continue
                if job.state.is_final and not final:
                    continue
                u.node = name  # the agent that sent it, whatever the sample says
                job.usage = kept_usage(job.usage, u, job.restart_count)
                self.s.touch_listing(job)  # squeue/sstat's cached copy of the job is stale
                if job.state.is_final and job not in ended:
                    ended.append(job)
            if ended:
                self.s.save(ended)

    def foreign_gpus(self, name: str, found: list[ForeignGpu]) -> None:
        """GPUs the agent saw used by processes no job started: kept out of scheduling until
        they are free again (ForeignGpuAction=exclude) or only reported (=report: a lab whose
        people run things beside the scheduler on purpose); logged when that changes."""
        with self.s.lock:
            node = self._node(name)
            if [(f.index, f.pids) for f in found] == [(f.index, f.pids) for f in node.foreign_gpus]:
                return
            if found:
                kept = ("kept out of scheduling" if self.s.cfg.foreign_gpu_action == "exclude"
                        else "still scheduled (ForeignGpuAction=report)")
                log.warning("node %s: GPU(s) %s used by processes no job started (pids %s): %s",
                            name, ",".join(str(f.index) for f in found),
                            ",".join(str(p) for f in found for p in f.pids), kept)
            else:
                log.info("node %s: no GPU used outside jobs any more", name)
            node.foreign_gpus = list(found)
        self.s.changed.set()

    def monitor(self, now: float) -> Effects:
        """Mark nodes silent for SlurmdTimeout DOWN ("Not responding"); their jobs fail over."""
        effects, changed = Effects(), []
        with self.s.lock:
            for node in self.s.nodes.values():
                if node.name not in self.s.registered or node.state == NodeState.DOWN:
                    continue
                if now - node.last_heartbeat > self.s.cfg.slurmd_timeout:
                    log.warning("node %s not responding: DOWN", node.name)
                    node.state, node.responding = NodeState.DOWN, False
                    node.reason, node.reason_time = "Not responding", now
                    self.s.registered.discard(node.name)
                    for job in list(self.s.jobs.values()):
                        if node.name in job.node_names and job.state == JobState.RUNNING:
                            effects.signals += self._node_failed_job(job, node.name)
                            changed.append(job)
                        elif node.name in job.node_names and job.job_id in self.s.completing:
                            self.s.release_allocations(job)
                            changed.append(job)
            self.s.save(changed)
        if changed:
            self.s.changed.set()
        return effects

    def _fail_jobs_on(self, name: str) -> list[Signal]:
        """A node going DOWN takes its jobs with it: requeued when allowed, else NODE_FAIL; their
        processes on this and other nodes are killed."""
        signals, changed = [], []
        for job in list(self.s.jobs.values()):
            if name in job.node_names and job.state == JobState.RUNNING:
                signals += [Signal(name, [job.job_id], 9, True, False, "node_fail")]
                signals += self._node_failed_job(job, name)
                changed.append(job)
        self.s.save(changed)
        return signals

    def update(self, names: list[str], state: str, reason: str) -> Effects:
        """scontrol update NodeName=... State=DRAIN|RESUME|DOWN|UNDRAIN Reason=..."""
        state = state.upper()
        if state not in ("DRAIN", "RESUME", "DOWN", "UNDRAIN", "IDLE"):
            raise InvalidRequest(f"Invalid node state specified: {state}")
        if state in ("DRAIN", "DOWN") and not reason:
            raise InvalidRequest("You must specify a reason when DOWNING or DRAINING a node. Request denied")
        now = self.s.clock()
        effects = Effects()
        with self.s.lock:
            nodes = [self._node(n) for n in names]
            if state in ("RESUME", "UNDRAIN", "IDLE"):
                self._check_resumable(nodes)
            for node in nodes:
                if state == "DRAIN":
                    node.drain, node.reason, node.reason_time = True, reason, now
                elif state == "DOWN":
                    node.state, node.reason, node.reason_time = NodeState.DOWN, reason, now
                    effects.signals += self._fail_jobs_on(node.name)
                else:
                    node.drain, node.reason = False, ""
                    node.gpu_faults = []  # GpuHealthAction=gpu: the operator says they are fine
                    if node.state == NodeState.DOWN:
                        node.state = NodeState.UNKNOWN if node.name not in self.s.registered else NodeState.IDLE
                    self.s.refresh_node(node.name)
                self.s.store.save_node(node.name, node.drain, node.state == NodeState.DOWN,
                                       node.reason, node.reason_time)
        self.s.changed.set()
        return effects

    def _check_resumable(self, nodes) -> None:
        """A node drained because its GPUs disagree with slurm.conf stays drained until they
        agree (fixed configuration, agent restarted): resuming it would only let jobs wait for
        GPUs that are not there. Nothing changes when one of the nodes cannot resume."""
        for node in nodes:
            problem = self.gpu_problems.get(node.name, "")  # none: not registered yet
            if problem:
                raise InvalidRequest(
                    f"Node {node.name} cannot be resumed: {problem}; make slurm.conf Gres= and "
                    f"gres.conf (or the GPUs found) agree and restart its agent first")
