"""The agent process: inventory, gRPC server, and the link to the controller.

The link is one thread that reads like a script:
  register (with what runs here and the endings not yet delivered) → deliver endings as they
  happen → heartbeat every HeartbeatInterval → when the controller is unreachable or says it
  restarted, keep the endings buffered and register again.
Endings are delivered at least once; the controller applies them idempotently.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import threading
import time
from concurrent import futures
from contextlib import contextmanager

# The agent forks a process per job from a threaded gRPC server: gRPC's own fork handlers are
# for processes that use gRPC after forking, which ours never do, and they crash such children.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

import grpc  # noqa: E402  (after the fork-support switch above)
import psutil  # noqa: E402

from .. import config as config_mod
from .. import cycletrace
from ..version import SLURM_VERSION
from ..rpc import wire
from .._proto import agent_pb2_grpc, controller_pb2 as cpb, controller_pb2_grpc, types_pb2
from ..errors import ConfigError, StaleState
from ..rpc import authn, keys, tokens
from ..rpc.authsock import AuthSocketServer
from ..rpc.grpcutil import SERVER_OPTIONS, bind, client_channel, daemon_metadata
from .acctgather import Gatherer
from .cgroup import tracker_for
from .gpu import discover, sampler as gpu_sampler
from .gpu_health import watcher as gpu_health_watcher
from .journal import EndingsJournal
from . import metrics
from .rpc import AgentServicer
from .stepmgr import StepManager
from .taskmgr import TaskManager

from ..service import wait_for_stop

log = logging.getLogger("pyslurm_lite.agent")

CONTROLLER_METHODS = {"LaunchJobs", "SignalJobs", "Ping"}  # only the controller may call these
# LaunchStep is srun's: its launch carries a controller-signed credential, checked inside
RETRY_DELAY = 0.5  # seconds between attempts to reach an absent controller
RPC_TIMEOUT = 10.0
# Reports of endings are at least this far apart: a lone ending goes at once, a stream of them
# shares reports (each one RPC and one commit on the controller) instead of one each.
REPORT_SPACING = 0.025


class HealthCheck:
    """HealthCheckProgram every HealthCheckInterval seconds; its last complaint ("" when it
    passed) rides on the heartbeat, and the controller drains the node."""

    TIMEOUT = 60  # seconds a health check may take

    def __init__(self, program: str, interval: int, env: dict[str, str] | None = None):
        self.program, self.interval, self.error = program, interval, ""
        self.env = env

    def run_once(self) -> str:
        try:
            r = subprocess.run(self.program, shell=True, capture_output=True, text=True,
                               timeout=self.TIMEOUT, env=self.env)
        except subprocess.TimeoutExpired:
            return f"{self.program} timed out"
        if r.returncode == 0:
            return ""
        said = (r.stdout + r.stderr).strip().splitlines()
        return said[0] if said else f"{self.program} exited {r.returncode}"

    def run_forever(self, stop: threading.Event) -> None:
        while self.program and self.interval > 0 and not stop.is_set():
            self.error = self.run_once()
            stop.wait(self.interval)


class Agent:
    def __init__(self, cfg, node: str, spool: str | None = None):
        if node not in cfg.nodes:
            raise config_mod.ConfigError(f"{cfg.path}: node {node} is not declared (NodeName=)")
        self.cfg, self.node = cfg, node
        self.spool = spool or cfg.slurmd_spool_dir or os.path.join(cfg.state_save_location, f"agent-{node}")
        self.events: queue.Queue = queue.Queue()
        self.gpus = discover(cfg, node)
        self.tracker = tracker_for(cfg, node)  # ProctrackType and cgroup.conf
        self.journal = EndingsJournal(os.path.join(self.spool, "endings"))
        self.pending = self.journal.load()  # what a previous agent here could not deliver
        self._reported_at = 0.0  # time.monotonic() of the last report
        keyring = keys.load_or_create(cfg.key_path)
        if not keyring.can_sign_for(f"node:{node}"):
            raise ConfigError(f"{cfg.key_path} holds the key of {keyring.scope}, not of node:{node}")
        self.scope = f"node:{node}"
        self.key = keyring.key_for(self.scope)  # this node's key: all this agent ever signs with
        self.steps = StepManager(cfg, node, self.spool, self._report, self.gpus, self.tracker,
                                 node_key=self.key)
        self.steps.tasks = self.tasks = TaskManager(self.steps, node, self.key)
        self.gpu_source = gpu_sampler(self.gpus, cfg, node, self.spool)
        self.gpu_health = gpu_health_watcher(self.gpu_source, self.spool)  # None: no GPU here
        self.acct = self._gatherer()
        self.steps.acct = self.acct
        self._usage_sent = 0.0  # time of the newest sample a heartbeat delivered
        self.instance = ""
        self.epoch = ""  # this agent's registration, as the controller named it
        self._link_lock = threading.Lock()  # a registration and a launch never overlap
        self.stop = threading.Event()
        # every controller, the primary first; calls go to self.stub, the one that answered last
        self.stubs = [controller_pb2_grpc.ControllerStub(client_channel(t, cfg))
                      for t in cfg.controller_targets]
        self.stub = self.stubs[0]
        self.boot_time = psutil.boot_time()
        self.health = HealthCheck(cfg.health_check_program, cfg.health_check_interval,
                                  dict(os.environ, SLURM_CONF=cfg.path, SLURMD_NODENAME=node))

    def _gatherer(self) -> Gatherer | None:
        """jobacct_gather/cgroup or /linux (the tracker's counts where it keeps them, else the
        processes'); /none measures nothing."""
        if self.cfg.job_acct_gather_type == "jobacct_gather/none":
            return None
        return Gatherer(self.node, self.tracker, self.gpu_source,
                        lambda: self.steps.usage_targets() + self.tasks.usage_targets(),
                        self.cfg.acct_gather_frequency)

    # ---- the link -----------------------------------------------------------------------------
    def _md(self, method: str) -> tuple:
        """A daemon token for `method` at the controller self.stub calls (bound to its line)."""
        return daemon_metadata(self.key, self.scope,
                               tokens.daemon_method(method, self.stubs.index(self.stub)))

    def _report(self, event: dict) -> None:
        self.journal.record(event)  # durable before it is queued: an agent crash keeps it
        self.events.put(event)
        cycletrace.mark("end.queued", event.get("job_id", 0))

    def _acknowledged(self) -> None:
        self.journal.delivered(self.pending)
        self.pending.clear()

    def _running_msgs(self):
        return [types_pb2.RunningJob(job_id=j, restart_count=r) for j, r in self.steps.running_jobs().items()]

    def _event_msgs(self):
        return [types_pb2.JobEvent(**e) for e in self.pending]

    def _drain_queue(self, wait: float) -> None:
        try:
            self.pending.append(self.events.get(timeout=wait))
            while True:
                self.pending.append(self.events.get_nowait())
        except queue.Empty:
            pass

    @contextmanager
    def admit(self, epoch: str):
        """Launches decided under another registration (an earlier agent here, or before the
        controller reconciled this one) are refused: the controller has already requeued
        those jobs. Held while the launch starts, so the next registration lists it."""
        with self._link_lock:
            if not self.epoch or epoch != self.epoch:
                raise StaleState(f"stale launch (epoch {epoch or '-'}, registered as {self.epoch or '-'})")
            yield

    def register_once(self) -> None:
        with self._link_lock:
            self.epoch = ""
            self._register()

    def _register(self) -> None:
        running = self._running_msgs()  # before draining endings, as in heartbeat_once
        self._drain_queue(0)
        req = cpb.RegisterNodeRequest(
            node=self.node, cpus=psutil.cpu_count() or 1,
            memory=psutil.virtual_memory().total // (1024 * 1024),
            gpus=[wire.to_msg(g, types_pb2.GpuDevice) for g in self.gpus],
            running=running, events=self._event_msgs(), boot_time=self.boot_time,
            version=SLURM_VERSION)  # slurmd's: scontrol show node's Version=
        reply = self.stub.RegisterNode(req, timeout=RPC_TIMEOUT, metadata=self._md("RegisterNode"))
        self._acknowledged()
        self.instance, self.epoch = reply.instance, reply.epoch
        if reply.kill_job_ids:
            log.warning("controller does not know jobs %s: killing them", list(reply.kill_job_ids))
            self.steps.terminate(list(reply.kill_job_ids), "unknown")
        log.info("registered with controller instance %s", self.instance)

    def report_once(self) -> None:
        # Ended steps' final samples go with (or, for srun steps, without) endings; a step's is
        # taken before its ending is queued, so it is never later than the ending it belongs to.
        finals = self.acct.take_finals() if self.acct else []
        if not self.pending and not finals:
            return
        self._reported_at = time.monotonic()
        req = cpb.ReportJobEventsRequest(
            node=self.node, instance=self.instance, events=self._event_msgs(),
            usage=[wire.to_msg(u, types_pb2.UsageSample) for u in finals])
        cycletrace.marks("end.send", (e["job_id"] for e in self.pending))
        try:
            reply = self.stub.ReportJobEvents(req, timeout=RPC_TIMEOUT, metadata=self._md("ReportJobEvents"))
        except BaseException:
            if self.acct:
                self.acct.give_back(finals)
            raise
        if reply.reregister:
            self.instance = ""
            if self.acct:
                self.acct.give_back(finals)
        else:
            self._acknowledged()

    def heartbeat_once(self) -> None:
        # What runs is read before the endings are flushed: a job missing from this list has
        # its ending already queued, so the controller gets the ending first.
        running = self._running_msgs()
        self._drain_queue(0)
        self.report_once()
        usage = self.acct.latest(since=self._usage_sent) if self.acct else []
        req = cpb.NodeHeartbeatRequest(
            node=self.node, instance=self.instance, running=running, health_error=self.health.error,
            free_memory=psutil.virtual_memory().available // (1024 * 1024),
            cpu_load=os.getloadavg()[0],
            usage=[wire.to_msg(u, types_pb2.UsageSample) for u in usage],
            foreign_gpus=[wire.to_msg(f, types_pb2.ForeignGpu) for f in (self.acct.foreign if self.acct else [])],
            gpu_faults=[wire.to_msg(f, types_pb2.GpuFault)
                        for f in (self.gpu_health.faults if self.gpu_health else [])])
        if self.stub.NodeHeartbeat(req, timeout=RPC_TIMEOUT, metadata=self._md("NodeHeartbeat")).reregister:
            self.instance = ""
        elif usage:
            self._usage_sent = max(u.time for u in usage)

    def link_loop(self) -> None:
        next_beat = 0.0
        while not self.stop.is_set():
            try:
                if not self.instance:
                    self.register_once()
                    next_beat = time.monotonic() + self.cfg.heartbeat_interval
                self._drain_queue(max(min(next_beat - time.monotonic(), 1.0), 0.0))
                rest = self._reported_at + REPORT_SPACING - time.monotonic()
                if self.pending and rest > 0 and not self.stop.wait(rest):
                    self._drain_queue(0)
                self.report_once()
                if time.monotonic() >= next_beat and self.instance:
                    self.heartbeat_once()
                    next_beat = time.monotonic() + self.cfg.heartbeat_interval
            except grpc.RpcError as e:
                self._call_failed(e.code(), e.details())
                self.stop.wait(RETRY_DELAY)
            except Exception:
                log.exception("link loop error")
                self.stop.wait(RETRY_DELAY)

    def _call_failed(self, code, details: str) -> None:
        """Register again; at the next controller when this one is down or in standby, or has
        not taken our registration (whatever it answered: whoever listens on a dead
        controller's port could answer errors to keep the agents from the live one). One that
        took it is in control: a failure of a later call is retried there first."""
        if code != grpc.StatusCode.UNAVAILABLE:
            log.warning("controller call failed: %s %s", code, details)
        if code == grpc.StatusCode.UNAVAILABLE or not self.instance:
            self._next_controller()
        self.instance = ""

    def _next_controller(self) -> None:
        """The controller called is down or in standby: the next SlurmctldHost= line's (a backup
        taking over; registering there is a registration like any other)."""
        if len(self.stubs) > 1:
            self.stub = self.stubs[(self.stubs.index(self.stub) + 1) % len(self.stubs)]

    # ---- process ------------------------------------------------------------------------------
    def start(self) -> int:
        config_mod.warn_ignored(self.cfg, log)
        cycletrace.start(f"agent:{self.node}")
        # Before registering: what a crashed predecessor left running dies now, and is reported
        # lost, so the controller requeues those jobs instead of waiting on tasks that are gone.
        for job_id in self.steps.clear_leftovers():
            self.pending.append({"job_id": job_id, "kind": "lost", "time": time.time()})
        self.metrics = metrics.start(self)  # MetricsPort= of this node (before gRPC: a port in use fails cleanly)
        # each srun connection holds a thread for the step's life: room for many steps at once
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=64), options=SERVER_OPTIONS,
                                  interceptors=[self.authenticator()])
        agent_pb2_grpc.add_AgentServicer_to_server(AgentServicer(self.node, self.steps, self.tasks, self.admit),
                                                   self.server)
        node_cfg = self.cfg.nodes[self.node]
        port = node_cfg.port or self.cfg.slurmd_port
        bound = bind(self.server, f"{node_cfg.addr}:{port}", self.cfg)
        self.server.start()
        self.authsock = self.auth_socket()
        self.authsock.start()
        threading.Thread(target=self.link_loop, daemon=True, name="link").start()
        threading.Thread(target=self.health.run_forever, args=(self.stop,), daemon=True,
                         name="health").start()
        if self.gpu_health is not None:  # checked as often as heartbeats carry what it finds
            threading.Thread(target=self.gpu_health.run_forever,
                             args=(self.stop, self.cfg.heartbeat_interval), daemon=True,
                             name="gpu_health").start()
        if self.acct is not None:
            threading.Thread(target=self.acct.run_forever, args=(self.stop,), daemon=True,
                             name="acctgather").start()
        log.info("agent %s listening on %s:%s, %d GPU(s)%s, process tracking: %s", self.node,
                 node_cfg.addr, bound, len(self.gpus),
                 " (simulated)" if self.gpus and self.gpus[0].simulated else "", self.tracker.name)
        if self.tracker.name == "proctrack/pgid":
            log.warning("no cgroups (not root, or no usable hierarchy): jobs are tracked by process "
                        "group, so a process that calls setsid escapes, and --mem is not enforced")
        return bound

    def authenticator(self) -> authn.Authenticator:
        """The controller's daemon token (made with this node's key) for its methods; srun's
        LaunchStep is open here, its credential is checked by the TaskManager."""
        replays = tokens.Replays()

        def check_daemon(token: str, method: str) -> str:
            tokens.verify_daemon_token(token, self.key, tokens.CONTROLLER, method, replays)
            return tokens.CONTROLLER

        def no_users(token: str):
            raise tokens.AuthError("agents take no user calls")

        rules = {m: authn.DAEMON for m in CONTROLLER_METHODS} | {"LaunchStep": authn.OPEN}
        return authn.Authenticator(rules, no_users, check_daemon)

    def auth_socket(self) -> AuthSocketServer:
        """This host's sack socket: local users get their tokens for the controller here."""
        host = os.uname().nodename

        def issue(uid: int, gid: int, audience: str) -> str:
            return tokens.make_user_token(self.key, self.scope, self.cfg.cluster_name, audience,
                                          uid, gid, host, self.cfg.token_ttl)

        path = os.path.join(os.path.dirname(self.cfg.auth_socket), f"slurmd-{self.node}.socket")
        return AuthSocketServer(path, issue, tokens.controller_audiences(self.cfg))

    def shutdown(self) -> None:
        self.stop.set()
        self.server.stop(grace=1).wait()
        self.authsock.close()
        if not self.tracker.existing():  # jobs outlive a stopping agent; an empty scope does not
            self.tracker.close()


def main(node: str, conf_path: str | None = None, pid_file: str | None = None) -> None:
    cfg = config_mod.load(conf_path)
    agent = Agent(cfg, node)
    agent.start()
    wait_for_stop(pid_file)
    agent.shutdown()
