"""Carries Effects to agents over gRPC: launches and signals, one batched call per node.

Owns: channels to agents (one per node, reused) and a small pool of sender threads, so a slow or
dead agent never blocks the scheduler or an RPC handler. Failures are logged; reconciliation on
heartbeat/registration repairs what a lost message left behind.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

from .. import cycletrace
from ..rpc import wire
from .._proto import agent_pb2, agent_pb2_grpc, types_pb2
from ..rpc import credential, tokens
from ..rpc.grpcutil import MAX_REQUEST, client_channel, daemon_metadata
from .job_mgr import Effects, Launch, Signal
from .state import ClusterState

log = logging.getLogger("pyslurm_lite.controller.dispatch")

LAUNCH_TIMEOUT = 30.0  # seconds for an agent to accept a batch of launches
JOB_OVERHEAD = 4096  # bytes a job's message holds besides its script and environment, at most


class Dispatcher:
    def __init__(self, state: ClusterState):
        self.s = state
        self._stubs: dict[str, agent_pb2_grpc.AgentStub] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="dispatch")
        self.keyring = None  # keys.KeyRing with the cluster key, set when the controller starts

    def _stub(self, node: str) -> agent_pb2_grpc.AgentStub:
        with self._lock:
            stub = self._stubs.get(node)
            if stub is None:
                cfg = self.s.cfg.nodes[node]
                target = f"{cfg.addr}:{cfg.port or self.s.cfg.slurmd_port}"
                stub = agent_pb2_grpc.AgentStub(client_channel(target, self.s.cfg))
                self._stubs[node] = stub
            return stub

    def send(self, effects: Effects) -> None:
        for launch in effects.launches:
            self._pool.submit(self._launch, launch)
        for sig in effects.signals:
            self._pool.submit(self._signal, sig)

    def _node_addrs(self, launch: Launch) -> list[str]:
        names = {a.node for job in launch.jobs for a in job.allocations}
        return [f"{n}={self.s.cfg.nodes[n].addr}" for n in sorted(names)]

    def _metadata(self, node: str, method: str) -> tuple:
        return daemon_metadata(self.keyring.key_for(f"node:{node}"), tokens.CONTROLLER, method)

    def credential(self, job) -> str:
        """The launch credential of a job's batch script."""
        return credential.sign_job(lambda n: self.keyring.key_for(f"node:{n}"), job, credential.BATCH,
                                   job.node_names, self.s.cfg.cred_expire)

    def _launch(self, launch: Launch) -> None:
        scripts = self.s.store.load_scripts([j.job_id for j in launch.jobs])
        for req in self._launch_requests(launch, scripts):
            cycletrace.marks("launch.send", (j.job_id for j in req.jobs))
            try:
                self._stub(launch.node).LaunchJobs(req, timeout=LAUNCH_TIMEOUT,
                                                   metadata=self._metadata(launch.node, "LaunchJobs"))
                cycletrace.marks("launch.acked", (j.job_id for j in req.jobs))
            except grpc.RpcError as e:
                log.warning("launch of %s on %s failed: %s", [j.job_id for j in req.jobs],
                            launch.node, e.code())

    def _launch_requests(self, launch: Launch, scripts: dict):
        """LaunchJobs requests for a node, each under the agent's message size cap (counted
        from the script and environment, which are nearly all of a job's bytes)."""
        def new():
            return agent_pb2.LaunchJobsRequest(instance=self.s.instance, epoch=launch.epoch,
                                               node_addrs=self._node_addrs(launch))
        req, size = new(), 0
        for job in launch.jobs:
            script, env = scripts.get(job.job_id, ("", {}))
            n = JOB_OVERHEAD + len(script) + sum(len(k) + len(v) + 8 for k, v in env.items())
            if req.jobs and size + n > MAX_REQUEST // 2:
                yield req
                req, size = new(), 0
            msg = req.jobs.add()
            wire.fill_msg(msg, job)
            msg.spec.script = script
            msg.spec.environment.update(env)
            req.credentials.append(self.credential(job))
            size += n
        if req.jobs:
            yield req

    def _signal(self, sig: Signal) -> None:
        req = agent_pb2.SignalJobsRequest(job_ids=sig.job_ids, signal=sig.signal,
                                          batch_only=sig.batch_only, terminate=sig.terminate,
                                          reason=sig.reason, steps_only=sig.steps_only,
                                          restart_counts=sig.restart_counts or [-1] * len(sig.job_ids))
        try:
            self._stub(sig.node).SignalJobs(req, timeout=10.0, metadata=self._metadata(sig.node, "SignalJobs"))
        except grpc.RpcError as e:
            log.warning("signal %s to %s on %s failed: %s", sig.signal, sig.job_ids, sig.node, e.code())

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


_ = types_pb2  # the Job message type travels inside LaunchJobsRequest
