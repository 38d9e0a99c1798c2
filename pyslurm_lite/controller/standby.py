"""A controller of a pair (two or more SlurmctldHost= lines): standby until it holds the control
lease (lease.py), then a normal controller; when it can no longer prove it holds the lease it
stops acting and starts over in standby.

The loop, once a second (`run_once(now)`):
  standby  try to acquire the lease (it expired: the holder stopped renewing for
           SlurmctldTimeout; or `scontrol takeover` asked and the holder stepped down) →
           stop the standby server, start a Controller exactly as a restarted one starts
           (state.recover(), agents re-register and their running jobs are adopted)
  active   renew; another holder, or a takeover asked of us → step down; no renewal for
           SlurmctldTimeout minus a margin → step down before the lease can expire, so the
           next holder never overlaps this one (and the store's fence refuses any late write).
           That deadline is kept by a watchdog thread on the monotonic clock (`watch_once`), not
           by the renewing thread, which a database that stopped answering may hold for as long
           as its timeouts (store.open_engine); the lease's own times are the database's clock
           (lease.py), so the hosts' clocks need not agree.
Taking control (state.recover(), the REST server) runs while another thread goes on renewing: a
large recovery must not let the lease lapse under the controller taking it.
Stepping down re-executes the process (same pid, same command line): nothing of the deposed
controller (threads, sockets, cached state) survives into the standby it becomes.

While standby the process answers Ping (index, active=false) and Takeover on its own address,
authenticated as the active one would (u1 tokens for this SlurmctldHost line's audience, or a JWT
with AuthAltTypes=auth/jwt: the REST server's ping); every other call gets UNAVAILABLE
"Controller is in standby mode", and clients try the next controller (client.py).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from concurrent import futures

import grpc

from .. import config as config_mod
from .._proto import controller_pb2 as pb, controller_pb2_grpc
from ..rpc import authn, jwt, keys, tokens
from ..rpc.grpcutil import SERVER_OPTIONS, bind as bind_port
from ..service import wait_for_stop
from .auth import Users
from .lease import Lease

log = logging.getLogger("pyslurm_lite.controller.standby")

STANDBY_MESSAGE = "Controller is in standby mode"  # Slurm's ESLURM_IN_STANDBY_MODE
POLL_PERIOD = 0.5  # seconds between a standby's attempts to acquire
RENEW_PERIOD = 1.0  # seconds between an active controller's renewals
WATCH_PERIOD = 0.1  # seconds between the watchdog's looks at the renewal deadline
# seconds a backup, just started, leaves the lease to the primary (both start together: the
# primary should be the one in control, as in Slurm)
BACKUP_START_GRACE = 5.0
# seconds a backup waits for its primary's JWT key (made at the primary's first start, which a
# slow PostgreSQL migration may delay) before a missing key stops it
JWT_KEY_WAIT = 30.0
# set in the environment of a controller that stepped down and re-executed itself: a primary
# started afresh resumes control from a backup (as Slurm's does), one that stepped down does not
STEPPED_DOWN_ENV = "PYSLURM_LITE_STEPPED_DOWN"


def stop_margin(ttl: float) -> float:
    """Seconds before its lease could expire that a controller unable to renew stops acting."""
    return min(max(ttl * 0.25, 0.5), 5.0)


def my_index(cfg, given: int | None) -> int:
    """Which SlurmctldHost= line this process is: --index, else the line naming this host."""
    count = len(cfg.controller_hosts)
    if given is not None:
        if not 0 <= given < count:
            raise config_mod.ConfigError(f"--index {given}: {cfg.path} has {count} SlurmctldHost= "
                                         f"line(s) (0 is the primary)")
        return given
    names = {socket.gethostname(), socket.gethostname().split(".")[0], os.uname().nodename}
    for i, (name, _addr, _port) in enumerate(cfg.controller_hosts):
        if name in names:
            return i
    raise config_mod.ConfigError(f"this host ({os.uname().nodename}) is none of the "
                                 f"SlurmctldHost= lines of {cfg.path}: start it with --index N")


class StandbyServicer(controller_pb2_grpc.ControllerServicer):
    """Ping and Takeover only; the other methods are refused (see below the class)."""

    def __init__(self, role: "Role"):
        self.role = role

    def Ping(self, request, context):
        return pb.PingReply(cluster_name=self.role.cfg.cluster_name,
                            instance=self.role.lease.instance, now=time.time(),
                            index=self.role.index, active=False)

    def Takeover(self, request, context):
        who = authn.principal()
        caller = self.role.users.caller(who.user.uid, who.user.gid)
        if not caller.operator:
            context.abort(grpc.StatusCode.PERMISSION_DENIED,
                          "Access/permission denied: takeover is for operators")
        self.role.lease.request_takeover()
        log.info("takeover requested by %s: waiting for the controller in control to step down",
                 caller.user)
        return pb.TakeoverReply(message=f"{self.role.name} takes over")


def _refuse(self, request, context):
    context.abort(grpc.StatusCode.UNAVAILABLE, STANDBY_MESSAGE)


_METHODS = pb.DESCRIPTOR.services_by_name["Controller"].methods_by_name
for _name in _METHODS:
    if _name not in ("Ping", "Takeover"):
        setattr(StandbyServicer, _name, _refuse)


class Role:
    """One controller process of a pair: its lease, its standby server, its Controller."""

    def __init__(self, cfg, index: int, on_step_down=None):
        self.cfg, self.index = cfg, index
        self.name = cfg.controller_hosts[index][0]
        self.address = cfg.controller_targets[index]
        self.ttl = float(cfg.slurmctld_timeout)
        self.lease = Lease(cfg.db_url, index, self.ttl)
        self.users = Users(cfg)
        self.controller = None
        self.server = None
        self.renewed = 0.0  # time.monotonic() when the last successful renewal began
        self.holding = False  # from acquiring the lease until stepping down: the watchdog's charge
        self._stepping = threading.Lock()  # the watchdog and the renewing thread may both step down
        self.started = time.monotonic()
        self.resume = index == 0 and not os.environ.get(STEPPED_DOWN_ENV)
        self.stop = threading.Event()
        self.on_step_down = on_step_down or reexec

    # ---- standby ------------------------------------------------------------------------------
    def serve_standby(self) -> None:
        keyring = keys.load_or_create(self.cfg.key_path)
        replays, cfg = tokens.Replays(), self.cfg
        audience = tokens.controller_audience(self.index)  # a token for another line is refused
        check_jwt = self._jwt_acceptor()

        def check_user(token: str):
            if jwt.looks_like_jwt(token):
                return check_jwt(token)
            return tokens.verify_user_token(token, keyring.key_for, cfg.cluster_name, audience,
                                            replays)

        def no_daemons(token: str, method: str):
            raise tokens.AuthError("a standby controller takes no reports")

        # every other method is open here only to be refused with UNAVAILABLE, which sends the
        # caller on to the next controller (an auth error would not)
        rules = {m: authn.OPEN for m in _METHODS} | {"Ping": authn.USER, "Takeover": authn.USER}
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=SERVER_OPTIONS,
                                  interceptors=[authn.Authenticator(rules, check_user, no_daemons)])
        controller_pb2_grpc.add_ControllerServicer_to_server(StandbyServicer(self), self.server)
        bind_port(self.server, self.address, cfg)
        self.server.start()
        log.info("controller %s (SlurmctldHost index %d) in standby on %s", self.name, self.index,
                 self.address)

    def _jwt_acceptor(self, wait: float = JWT_KEY_WAIT):
        """jwt.acceptor for this line. A backup started beside its primary on one host (`cluster
        up --backup-controller`) waits a little for the primary to make the key; then a missing
        key is the start-up error naming the file to copy (a backup never makes its own)."""
        deadline = time.monotonic() + wait
        while True:
            try:
                return jwt.acceptor(self.cfg, self.index)
            except jwt.KeyMissing:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    # ---- the loop -----------------------------------------------------------------------------
    def run_once(self, now: float, mono: float) -> None:
        if not self.holding:
            if self.index > 0 and mono - self.started < min(self.ttl, BACKUP_START_GRACE):
                return
            if self.resume:
                self._resume_control(now)
            if self.lease.acquire(now):
                self.renewed, self.holding = mono, True
                self._activate()
            return
        self.renew_once(now, mono)

    def renew_once(self, now: float, mono: float) -> None:
        try:
            outcome = self.lease.renew(now)
        except Exception as e:  # the database is out of reach: retry; the watchdog keeps time
            log.warning("cannot renew the control lease: %s", e)
            self.watch_once(mono)
            return
        if outcome == Lease.RENEWED:
            self.renewed = max(self.renewed, mono)
        else:
            self.step_down("another controller asked to take over" if outcome == Lease.TAKEOVER
                           else "another controller holds the control lease",
                           release=outcome == Lease.TAKEOVER)

    def watch_once(self, mono: float) -> None:
        """Step down once the last successful renewal began SlurmctldTimeout minus the margin
        ago: the lease could expire soon, and a renewal still hanging proves nothing."""
        if self.holding and mono - self.renewed > self.ttl - stop_margin(self.ttl):
            self.step_down("the control lease could not be renewed in time", release=False)

    def _resume_control(self, now: float) -> None:
        """A primary back in service asks the backup in control to hand control back."""
        self.resume = False
        holder = self.lease.holder(now)
        if holder is not None and holder.index != self.index and holder.live:
            log.info("primary controller back: asking %s (index %d) to hand control back",
                     self.cfg.controller_hosts[holder.index][0], holder.index)
            self.lease.request_takeover()

    def _activate(self) -> None:
        log.info("controller %s acquired the control lease (epoch %d): taking control",
                 self.name, self.lease.epoch)
        if self.server is not None:
            self.server.stop(grace=0).wait()
            self.server = None
        started = threading.Event()
        keeper = threading.Thread(target=self._renew_until, args=(started,), daemon=True,
                                  name="control_lease_while_starting")
        keeper.start()
        try:
            self._start_controller()
        finally:
            started.set()
            keeper.join()

    def _renew_until(self, started: threading.Event) -> None:
        while not started.wait(RENEW_PERIOD) and self.holding:
            try:
                self.renew_once(time.time(), time.monotonic())
            except Exception:
                log.exception("control lease renewal failed")

    def _start_controller(self) -> None:
        from .daemon import Controller
        try:
            self.controller = Controller(self.cfg, index=self.index, lease=self.lease)
            self.controller.start()
        except Exception:
            log.exception("controller %s could not take control", self.name)
            self.step_down("its start-up failed", release=True)

    def step_down(self, why: str, release: bool) -> None:
        with self._stepping:
            if not self.holding:  # the other thread stepped down first
                return
            self.holding = False
        log.warning("controller %s stepping down: %s", self.name, why)
        if self.controller is not None:
            self.controller.stop.set()  # no more scheduling passes, launches or timers
        if release:
            try:
                self.lease.release()
            except Exception:
                log.exception("could not release the control lease (it expires on its own)")
        self.on_step_down()

    def run_forever(self) -> None:
        while not self.stop.is_set():
            try:
                self.run_once(time.time(), time.monotonic())
            except Exception:
                log.exception("control lease pass failed")
            self.stop.wait(RENEW_PERIOD if self.holding else POLL_PERIOD)

    def watch_forever(self) -> None:
        while not self.stop.wait(WATCH_PERIOD):
            self.watch_once(time.monotonic())

    def shutdown(self) -> None:
        self.stop.set()
        if self.controller is not None:
            self.controller.shutdown()
            try:
                self.lease.release()  # a clean stop hands control over at once
            except Exception:
                log.exception("could not release the control lease")
        if self.server is not None:
            self.server.stop(grace=1).wait()
        self.lease.close()


def reexec() -> None:
    """Start over as this same process (pid, command line), in standby."""
    logging.shutdown()
    os.environ[STEPPED_DOWN_ENV] = "1"
    os.execv(sys.executable, sys.orig_argv)


def main(cfg, index: int | None, pid_file: str | None) -> None:
    role = Role(cfg, my_index(cfg, index))
    role.serve_standby()
    threading.Thread(target=role.run_forever, daemon=True, name="control_lease").start()
    threading.Thread(target=role.watch_forever, daemon=True, name="control_lease_watchdog").start()
    wait_for_stop(pid_file)
    role.shutdown()
