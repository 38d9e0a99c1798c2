"""The controller process: wires store, state, managers, dispatcher and the gRPC server, and runs
the loops.

Loops are `run_once(now)` functions wrapped by `run_forever()`:
  - scheduler: woken by any change (submit, end, node up), passes are coalesced so a burst of
    submissions is a few passes, not one per job; also a periodic pass for --begin times;
  - monitor: time limits, silent nodes, forgetting jobs ended more than MinJobAge ago.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pwd
import threading
import time
from concurrent import futures

import grpc

from .. import config as config_mod
from .. import cycletrace
from .._proto import controller_pb2, controller_pb2_grpc
from ..errors import ConfigError
from ..rpc import authn, keys, tokens
from ..rpc.authsock import AuthSocketServer
from ..rpc.grpcutil import SERVER_OPTIONS, bind as bind_port
from ..sched import SchedConfig, schedule
from ..sched.policy import POLICIES
from .dispatch import Dispatcher
from .guard_refit import GuardRefit
from .idle_gpu import IdleGpuMonitor
from .job_mgr import JobManager
from .job_timers import JobTimers
from .metrics import ControllerMetrics
from .node_mgr import NodeManager
from .notify import Notifier
from .notify_send import Sender
from .priority_mgr import PriorityManager
from .resv_mgr import ReservationManager
from .rpc import ControllerServicer
from . import state as state_mod
from .state import ClusterState
from .step_mgr import StepManager
from .store import Store

from ..service import wait_for_stop

log = logging.getLogger("pyslurm_lite.controller")

AGENT_METHODS = {"RegisterNode", "NodeHeartbeat", "ReportJobEvents"}  # a node's daemon token
PRIVATE_DATA_DONE = {"jobs"}  # PrivateData= values implemented
SCHED_PERIOD = 1.0  # seconds between full passes (begin times, reasons, backfill deep in the queue)
MIN_SCHED_INTERVAL = 0.01  # seconds between passes at least: at most 100 passes a second
EVENT_QUIET = 0.02  # seconds without a change before an event pass runs
EVENT_MAX_DEFER = 0.25  # seconds an event pass may be deferred by a continuing burst
MONITOR_PERIOD = 1.0
PRIORITY_CALC_PERIOD = 5.0  # seconds between multifactor priority recalculations  # seconds between time-limit / silent-node checks


class Controller:
    def __init__(self, cfg, clock=time.time, index: int = 0, lease=None):
        self.cfg = cfg
        self.index = index  # which SlurmctldHost= line this controller is (0: the primary)
        self.sched_config = sched_config(cfg)  # a bad key stops it before the database is touched
        self.store = Store(cfg.db_url, clock)
        if lease is not None:  # one of a pair: no write commits once another holds the lease
            self.store.fence = lease.fence
        self.state = ClusterState(cfg, self.store, clock)
        self.jobs = JobManager(self.state)
        self.timers = JobTimers(self.jobs)
        self.priorities = PriorityManager(self.state)
        self.jobs.on_ended = self.priorities.charge_usage
        self.nodes = NodeManager(self.state, self.jobs)
        self.dispatch = Dispatcher(self.state)
        self.steps = StepManager(self.state)
        self.reservations = ReservationManager(self.state)
        self.notifier = Notifier(self.state)  # job changes -> outbox rows, in their commit
        self.state.on_save = self.notifier.on_save
        self.idle_gpus = IdleGpuMonitor(self.state, self.jobs, self.notifier)
        self.guard_refit = GuardRefit(self.state, self.store)  # sched_policy=learned
        self.stop = threading.Event()
        self.server = None
        self.rest = None  # the HTTP server on RestPort (restd), while in control
        self.metrics = ControllerMetrics(self.state) if cfg.metrics_port else None  # MetricsPort=0: off
        self._priorities_at = 0.0
        self.state.use_policy(self.sched_config.policy)  # its waits and run times, from recover()
        depth = cfg.scheduler_parameters.get("default_queue_depth", "100")
        if not depth.isdigit() or int(depth) < 1:
            raise ConfigError(f"{cfg.path}: bad default_queue_depth={depth}")
        full_depth = self.sched_config.max_job_test or int(depth)  # 0: every job
        self.event_config = dataclasses.replace(self.sched_config, queue_depth=int(depth),
                                                max_job_test=min(int(depth), full_depth))

    def schedule_once(self, now: float, full: bool = True) -> int:
        """One pass. An event pass (full=False) looks at the top default_queue_depth jobs
        only, as Slurm's event-triggered main scheduler does (the others keep their reasons
        until the next full pass, at most SCHED_PERIOD later); the periodic pass looks at every
        job and tries bf_max_job_test of them."""
        began = time.perf_counter()
        cycletrace.mark("pass.full" if full else "pass.event")
        self.timers.deadlines(now)  # before the snapshot, so none past its deadline starts
        with self.state.lock:
            snap = self.state.snapshot()
        if not full:  # projections cost a conservative pass: the periodic passes make them
            snap = dataclasses.replace(snap, project_starts=False)
        config = self.sched_config if full else self.event_config
        plan = schedule(snap, now, config)
        self.state.starved = plan.starved
        effects = self.jobs.apply_plan(plan)
        self.dispatch.send(effects)
        if plan.preemptions:  # those without a grace time go now
            self.dispatch.send(self.timers.preemptions_due(now))
        self.state.diag.add(backfilled_jobs=plan.backfilled)
        self.state.diag.cycle(int((time.perf_counter() - began) * 1e6), len(snap.jobs), not full)
        return len(plan.starts)

    def monitor_once(self, now: float) -> None:
        if now - self._priorities_at >= PRIORITY_CALC_PERIOD or self.state.new_jobs:
            self.state.new_jobs = False  # new jobs get their factors within a second
            self.priorities.recompute_priorities(now)
            self._priorities_at = now
        self.priorities.charge_running(now)  # every PriorityCalcPeriod
        self.dispatch.send(self.timers.signal_warnings(now))
        self.dispatch.send(self.timers.time_limits(now))
        self.timers.deadlines(now)  # a deadline passes between scheduling passes too
        self.dispatch.send(self.timers.preemptions_due(now))
        self.dispatch.send(self.nodes.monitor(now))
        self.dispatch.send(self.idle_gpus.run_once(now))
        self.notifier.periodic(now)
        self.guard_refit.run_once(now)
        self.forget_ended_jobs(now)

    def forget_ended_jobs(self, now: float) -> None:
        """Drop jobs ended more than MinJobAge ago from memory (sacct still finds them in the
        database); MinJobAge=0 keeps them, as in Slurm. state.purge_old knows only its fixed
        age, so the clock it is given is moved by the difference."""
        if not self.cfg.min_job_age:
            return
        with self.state.lock:
            self.state.purge_old(now - (self.cfg.min_job_age - state_mod.MIN_JOB_AGE))

    def _scheduler_loop(self) -> None:
        last_full, submitted = 0.0, 0
        while not self.stop.is_set():
            woken = self.state.changed.wait(SCHED_PERIOD)
            self.state.changed.clear()
            if woken and self.state.submissions != submitted:
                self._settle()
            submitted = self.state.submissions
            began = time.monotonic()
            full = not woken or began - last_full >= SCHED_PERIOD
            try:
                self.schedule_once(self.state.clock(), full=full)
            except Exception:
                log.exception("scheduling pass failed")
            if full:
                last_full = began
            # Throttle: rest at least as long as the pass took (and MIN_SCHED_INTERVAL), so a
            # burst of submissions, each one a wake-up, costs a few passes, not one per job,
            # and leaves the RPC threads the CPU.
            self.stop.wait(max(time.monotonic() - began, MIN_SCHED_INTERVAL))

    def _settle(self) -> None:
        """Defer an event pass while submissions keep coming, until EVENT_QUIET passes without
        one, at most EVENT_MAX_DEFER: one pass then sees the whole burst. Endings and node
        changes do not defer (their resources should be used at once)."""
        deadline = time.monotonic() + EVENT_MAX_DEFER
        seen = self.state.submissions
        while not self.stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.stop.wait(min(EVENT_QUIET, left))
            if self.state.submissions == seen:
                return
            seen = self.state.submissions

    def _monitor_loop(self) -> None:
        while not self.stop.wait(MONITOR_PERIOD):
            try:
                self.monitor_once(self.state.clock())
            except Exception:
                log.exception("monitor pass failed")

    def authenticator(self, keyring: keys.KeyRing) -> authn.Authenticator:
        """User tokens for every user command (u1 ones for this controller's audience only), a
        node's daemon token for the agents' reports."""
        from ..rpc import jwt
        cfg, replays = self.cfg, tokens.Replays()
        audience = tokens.controller_audience(self.index)
        check_jwt = jwt.acceptor(cfg, self.index)  # AuthAltTypes=auth/jwt: reads (or makes) its key now

        def check_user(token: str) -> tokens.UserIdentity:
            if not token:
                raise tokens.AuthError("no authentication token in the call: is this client "
                                       "older than the controller?")
            if jwt.looks_like_jwt(token):  # scontrol token's, or the REST server's caller's
                return check_jwt(token)
            return tokens.verify_user_token(token, keyring.key_for, cfg.cluster_name, audience,
                                            replays)

        def check_daemon(token: str, method: str) -> str:
            sender = tokens.daemon_sender(token)
            if not sender.startswith("node:") or sender[5:] not in cfg.nodes:
                raise tokens.AuthError("missing or malformed daemon token (cluster key)")
            tokens.verify_daemon_token(token, keyring.key_for(sender), sender,
                                       tokens.daemon_method(method, self.index), replays)
            return sender

        names = controller_pb2.DESCRIPTOR.services_by_name["Controller"].methods_by_name
        rules = {m: (authn.DAEMON if m in AGENT_METHODS else authn.USER) for m in names}
        return authn.Authenticator(rules, check_user, check_daemon)

    def auth_socket(self, keyring: keys.KeyRing) -> AuthSocketServer:
        """The controller's own sack socket, so its host needs no agent to run commands."""
        cfg, host = self.cfg, os.uname().nodename

        def issue(uid: int, gid: int, audience: str) -> str:
            return tokens.make_user_token(keyring.key_for(keys.CLUSTER), keys.CLUSTER, cfg.cluster_name,
                                          audience, uid, gid, host, cfg.token_ttl)

        path = os.path.join(os.path.dirname(cfg.auth_socket), "slurmctld.socket")
        return AuthSocketServer(path, issue, tokens.controller_audiences(cfg))

    def start(self, bind: str | None = None) -> int:
        config_mod.warn_ignored(self.cfg, log)
        cycletrace.start("controller")
        me = pwd.getpwuid(os.geteuid()).pw_name
        if self.cfg.slurm_user != me:
            log.warning("SlurmUser=%s: the controller runs as %s (it does not change user); here "
                        "SlurmUser only names an operator", self.cfg.slurm_user, me)
        for value in self.cfg.private_data:
            if value not in PRIVATE_DATA_DONE:
                log.warning("PrivateData=%s is not implemented (only %s): that data stays visible "
                            "to every user", value, ",".join(sorted(PRIVATE_DATA_DONE)))
        self.state.recover()
        self.notifier.recovered()
        sender = Sender(self.store, self.cfg, self.notifier.wake)  # WebhookSecretFile checked here
        keyring = keys.load_or_create(self.cfg.key_path)
        if not keyring.is_cluster:
            raise ConfigError(f"{self.cfg.key_path} holds the key of {keyring.scope}: the controller "
                              f"needs the cluster key")
        # the address its SlurmctldHost= line names, not every interface
        address = self.cfg.controller_targets[self.index]
        if self.metrics:  # before the gRPC server: a port in use fails start-up cleanly
            self.metrics.serve(address.rsplit(":", 1)[0], self.cfg.metrics_port)
        self.dispatch.keyring = self.steps.keyring = keyring
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=SERVER_OPTIONS,
                                  interceptors=[*([self.metrics.rpc_timer()] if self.metrics else []),
                                                self.authenticator(keyring)])
        servicer = ControllerServicer(self.state, self.jobs, self.nodes, self.dispatch, self.steps,
                                      self.reservations, priorities=self.priorities)
        servicer.index = self.index
        self.server.add_generic_rpc_handlers((servicer.raw_handlers(),))  # before the generated
        controller_pb2_grpc.add_ControllerServicer_to_server(servicer, self.server)
        port = bind_port(self.server, bind or address, self.cfg)
        self.server.start()
        self.rest = start_rest(own_controller_only(self.cfg, self.index), address.rsplit(":", 1)[0],
                               fatal=self.store.fence is None)
        self.authsock = self.auth_socket(keyring)
        self.authsock.start()
        for loop in (self._scheduler_loop, self._monitor_loop):
            threading.Thread(target=loop, daemon=True, name=loop.__name__).start()
        threading.Thread(target=sender.run_forever, args=(self.stop,), daemon=True,
                         name="notify_sender").start()
        log.info("controller %s listening on %s (instance %s)", self.cfg.cluster_name, port,
                 self.state.instance)
        return port

    def shutdown(self) -> None:
        self.stop.set()
        self.state.changed.set()
        if self.server:
            self.server.stop(grace=1).wait()
        if getattr(self, "authsock", None):
            self.authsock.close()
        self.dispatch.close()
        if self.metrics:
            self.metrics.close()
        if self.rest is not None:
            self.rest.close()
        self.store.close()


def sched_config(cfg) -> SchedConfig:
    """SchedulerType, SchedulerParameters (bf_max_job_test, default 500 as in Slurm; bf_window;
    bf_conservative for conservative backfill and sched_policy, our additions) and the Preempt*
    keys."""
    kind = cfg.extra.get("schedulertype", "sched/backfill")
    if kind not in ("sched/backfill", "sched/builtin"):
        raise ConfigError(f"{cfg.path}: unknown SchedulerType={kind}; valid: sched/backfill, sched/builtin")
    params = cfg.scheduler_parameters
    try:
        max_job_test = int(params.get("bf_max_job_test", "500"))
    except ValueError:
        raise ConfigError(f"{cfg.path}: bad bf_max_job_test={params['bf_max_job_test']}") from None
    policy = POLICIES[cfg.sched_policy]  # a name config.py checked
    return SchedConfig(backfill=kind == "sched/backfill",
                       conservative="bf_conservative" in params,
                       max_job_test=max_job_test, preempt_type=cfg.preempt_type,
                       preempt_mode=cfg.preempt_mode, preempt_exempt_time=cfg.preempt_exempt_time,
                       window=cfg.bf_window * 60, policy=policy)


def own_controller_only(cfg, index: int):
    """The configuration the in-process REST server and dashboard call with: this controller
    alone. Callers' JWTs name no controller, so one sent to another SlurmctldHost's port (a dead
    one a local user may be listening on) could be replayed here; asked here, they never leave."""
    if len(cfg.controller_hosts) < 2:
        return cfg
    return dataclasses.replace(cfg, controller_hosts=[cfg.controller_hosts[index]])


def start_rest(cfg, host: str, fatal: bool):
    """The HTTP server on RestPort (slurmrestd's API and the dashboard) on this controller's
    address, or None (RestPort=0). A port in use fails a lone controller's start-up; one of a
    pair takes control without it (said in its log) rather than leave the cluster with none."""
    if not cfg.rest_port:
        return None
    try:
        from ..restd.server import start_rest as start
    except ImportError as e:  # restd not installed with this build: say so, never silently
        log.warning("RestPort=%d: the REST server is not available (%s)", cfg.rest_port, e)
        return None
    try:
        return start(cfg, host)
    except ConfigError as e:
        if fatal:
            raise
        log.error("%s: in control without the REST API", e.message)
        return None


PRIVILEGED_PORTS = 1024  # below this, only root may listen (net.ipv4.ip_unprivileged_port_start)


def warn_pair_in_clear(cfg) -> bool:
    """Say so when controllers of a pair are neither TLS-checked nor on privileged ports: while
    one is down any local user of its host may listen on its address and port; the clients and
    agents that try it first then send that listener their calls (and user tokens, for it
    only: each controller takes its own audience) and take its answers."""
    from ..rpc import tls
    if tls.enabled(cfg) or all(int(t.rsplit(":", 1)[1]) < PRIVILEGED_PORTS
                               for t in cfg.controller_targets):
        return False
    log.warning("%d SlurmctldHost lines without TLSParameters: while a controller is down, any "
                "user of its host can listen on its port and answer the commands and agents that "
                "try it; set TLSParameters= (or use a SlurmctldPort below %d)",
                len(cfg.controller_hosts), PRIVILEGED_PORTS)
    return True


def main(conf_path: str | None = None, pid_file: str | None = None,
         index: int | None = None) -> None:
    cfg = config_mod.load(conf_path)
    if len(cfg.controller_hosts) > 1:  # a pair: standby until it holds the control lease
        from . import standby
        warn_pair_in_clear(cfg)
        standby.main(cfg, index, pid_file)
        return
    ctl = Controller(cfg)
    ctl.start()
    wait_for_stop(pid_file)
    ctl.shutdown()
