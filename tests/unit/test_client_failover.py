"""client.py with several SlurmctldHost= lines, over both transports, against real gRPC servers
on loopback: a controller that is down (a closed port), one in standby (UNAVAILABLE "Controller
is in standby mode") and one in control (answers Ping with its index)."""

from __future__ import annotations

import socket
import threading
import time
import types
from concurrent import futures

import grpc
import pytest

from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc
from pyslurm_lite.client import STANDBY, Client
from pyslurm_lite.errors import ControllerUnreachable
from pyslurm_lite.rpc.grpcutil import SERVER_OPTIONS

TRANSPORTS = ["grpcio", "h2"]


class Fake(controller_pb2_grpc.ControllerServicer):
    def __init__(self, index: int, active: bool):
        self.index, self.active, self.calls = index, active, 0

    def Ping(self, request, context):
        self.calls += 1
        if not self.active:
            context.abort(grpc.StatusCode.UNAVAILABLE, STANDBY)
        return pb.PingReply(cluster_name="test", index=self.index, active=True)


def serve(fake: Fake) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), options=SERVER_OPTIONS)
    controller_pb2_grpc.add_ControllerServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def client(targets, transport, timeout=10.0, slurmctld_timeout=2) -> Client:
    cfg = types.SimpleNamespace(controller_target=targets[0], controller_targets=targets,
                                auth_socket="/nonexistent", slurmctld_timeout=slurmctld_timeout)
    return Client(cfg=cfg, transport=transport, timeout=timeout, token="t")  # no auth socket


@pytest.fixture
def servers():
    made = []

    def make(index, active):
        fake = Fake(index, active)
        server, target = serve(fake)
        made.append(server)
        return fake, target
    yield make
    for s in made:
        s.stop(None)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_down_primary_sends_the_call_to_the_backup_and_it_is_remembered(servers, transport):
    backup, target = servers(1, True)
    c = client([closed_port(), target], transport)
    assert c.ping().index == 1
    assert c.ping().index == 1 and backup.calls == 2
    assert c._link.target == target  # the next call goes straight there


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_primary_in_standby_sends_the_call_on(servers, transport):
    primary, standby = servers(0, False)
    _, active = servers(1, True)
    assert client([standby, active], transport).ping().index == 1
    assert primary.calls == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_call_waits_while_a_backup_takes_over(servers, transport):
    """Primary down, backup in standby: the call is retried until the backup is in control,
    longer than SlurmctldTimeout (the backup needs that long to see the lease expire)."""
    backup, target = servers(1, False)
    threading.Timer(1.2, lambda: setattr(backup, "active", True)).start()
    began = time.monotonic()
    assert client([closed_port(), target], transport, slurmctld_timeout=1).ping().index == 1
    assert 1.0 < time.monotonic() - began < 5 and backup.calls >= 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_no_controller_in_control_fails_within_the_window(servers, transport, monkeypatch):
    import pyslurm_lite.client as client_mod
    monkeypatch.setattr(client_mod, "STANDBY_EXTRA", 0.5)
    _, target = servers(1, False)
    began = time.monotonic()
    with pytest.raises(ControllerUnreachable):
        client([closed_port(), target], transport, slurmctld_timeout=1).ping()
    assert 1.5 <= time.monotonic() - began < 1 * 1.5 + 0.5 + 1  # the window, and one pause


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_one_controller_down_fails_at_once(transport):
    """A single SlurmctldHost: no waiting, as before pairs existed."""
    began = time.monotonic()
    with pytest.raises(ControllerUnreachable) as e:
        client([closed_port()], transport).ping()
    assert time.monotonic() - began < 2
    assert "Unable to contact slurm controller (connect failure)" in e.value.message


# ---- calls that may have been committed are never sent twice (R1 M1) ---------------------------
# A controller in its own process, so that it can be killed while it holds a call: it prints
# "got METHOD" when a call arrives, then holds it.
HOLDING_SERVER = """
import sys, time
from concurrent import futures
import grpc
from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc

class Holding(controller_pb2_grpc.ControllerServicer):
    def _hold(self, name, reply):
        print("got", name, flush=True)
        time.sleep(60)
        return reply

    def SubmitJob(self, request, context):
        return self._hold("SubmitJob", pb.SubmitJobReply(job_id=1))

    def GetJobs(self, request, context):
        return self._hold("GetJobs", pb.GetJobsReply())

server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
controller_pb2_grpc.add_ControllerServicer_to_server(Holding(), server)
print(server.add_insecure_port("127.0.0.1:0"), flush=True)
server.start()
time.sleep(120)
"""


class Submits(Fake):
    """In control (or not): counts the jobs submitted and the listings asked."""

    def __init__(self, index: int, active: bool):
        super().__init__(index, active)
        self.submitted, self.listed = 0, 0

    def SubmitJob(self, request, context):
        if not self.active:
            context.abort(grpc.StatusCode.UNAVAILABLE, STANDBY)
        self.submitted += 1
        return pb.SubmitJobReply(job_id=100 + self.index)

    def GetJobs(self, request, context):
        self.listed += 1
        return pb.GetJobsReply(now=float(self.index))


@pytest.fixture
def submits():
    made = []

    def make(index, active):
        fake = Submits(index, active)
        server, target = serve(fake)
        made.append(server)
        return fake, target
    yield make
    for s in made:
        s.stop(None)


@pytest.fixture
def holding():
    """(target, kill_when(method)): a controller process killed as soon as `method` reaches it."""
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-c", HOLDING_SERVER], stdout=subprocess.PIPE,
                            text=True)
    port = proc.stdout.readline().strip()

    def kill_when(method: str) -> threading.Thread:
        def watch():
            if proc.stdout.readline().split() == ["got", method]:
                proc.kill()
        t = threading.Thread(target=watch, daemon=True)
        t.start()
        return t
    yield f"127.0.0.1:{port}", kill_when
    proc.kill()
    proc.wait()


def _spec():
    from pyslurm_lite.model import JobSpec
    return JobSpec(script="#!/bin/sh\ntrue\n", work_dir="/tmp", user="u", uid=1000, gid=1000)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_submission_cut_off_mid_call_is_an_error_never_a_resubmission(submits, holding, transport):
    """The primary may have committed the job before the connection dropped: sbatch says it
    could not contact the controller, and the backup never sees a second copy."""
    backup, target = submits(1, True)
    primary, kill_when = holding
    kill_when("SubmitJob")
    began = time.monotonic()
    with pytest.raises(ControllerUnreachable, match="Unable to contact slurm controller"):
        client([primary, target], transport).submit(_spec())
    assert backup.submitted == 0 and time.monotonic() - began < 5


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_listing_cut_off_mid_call_is_asked_of_the_next_controller(submits, holding, transport):
    backup, target = submits(1, True)
    primary, kill_when = holding
    kill_when("GetJobs")
    assert client([primary, target], transport).jobs() == ([], 1.0)
    assert backup.listed == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_submission_goes_to_the_backup_when_it_never_reached_the_primary(submits, transport):
    """A closed port (no connection made), or a primary in standby: the job is submitted once,
    at the backup."""
    backup, target = submits(1, True)
    assert client([closed_port(), target], transport).submit(_spec()) == 101
    standby, standby_target = submits(0, False)
    assert client([standby_target, target], transport).submit(_spec()) == 101
    assert backup.submitted == 2 and standby.submitted == 0


def test_only_calls_that_change_nothing_are_resendable():
    """The writes R1 named, and every other method not listed, are never sent twice."""
    from pyslurm_lite.client import RESENDABLE
    methods = set(pb.DESCRIPTOR.services_by_name["Controller"].methods_by_name)
    assert RESENDABLE <= methods
    for write in ("SubmitJob", "SubmitJobs", "CreateStep", "IssueToken", "CreateReservation",
                  "CancelJobs", "UpdateJobs", "Takeover"):
        assert write not in RESENDABLE
    assert all(m.startswith("Get") or m == "Ping" for m in RESENDABLE)


# ---- each controller gets tokens for its own audience (R1 H3) ----------------------------------
class Audiences(Fake):
    """Records the audience of each user token it receives."""

    def __init__(self, index: int, active: bool):
        super().__init__(index, active)
        self.audiences = []

    def Ping(self, request, context):
        token = dict(context.invocation_metadata()).get("x-pyslurm-auth", "")
        self.audiences.append(token.split("|")[3])
        return super().Ping(request, context)


@pytest.fixture
def auth_socket():
    """A real auth socket serving the two audiences of a pair (as the agent's does)."""
    import os
    import shutil
    import tempfile
    from pyslurm_lite.rpc import tokens
    from pyslurm_lite.rpc.authsock import AuthSocketServer
    d = tempfile.mkdtemp(prefix="plt-f3-", dir="/tmp")
    os.chmod(d, 0o755)
    key = b"k" * 32

    def issue(uid, gid, audience):
        return tokens.make_user_token(key, "cluster", "test", audience, uid, gid, "h", 10)
    pair = types.SimpleNamespace(controller_hosts=[("a", "", 0), ("b", "", 0)])
    srv = AuthSocketServer(os.path.join(d, "sack.socket"), issue, tokens.controller_audiences(pair))
    srv.start()
    yield srv.path
    srv.close()
    shutil.rmtree(d, ignore_errors=True)


def _tokened(targets, transport, socket_path) -> Client:
    cfg = types.SimpleNamespace(controller_target=targets[0], controller_targets=targets,
                                auth_socket=socket_path, slurmctld_timeout=2)
    return Client(cfg=cfg, transport=transport, timeout=10.0)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_controller_is_sent_a_token_for_itself_only(auth_socket, transport):
    primary, backup = Audiences(0, False), Audiences(1, True)
    servers = [serve(primary), serve(backup)]
    try:
        c = _tokened([servers[0][1], servers[1][1]], transport, auth_socket)
        assert c.ping().index == 1
        assert c.at(1).ping().index == 1  # scontrol ping's: that controller's audience too
        with pytest.raises(Exception):
            c.at(0).ping()  # in standby
    finally:
        for s, _ in servers:
            s.stop(None)
    assert primary.audiences == ["slurmctld", "slurmctld"]
    assert backup.audiences == ["slurmctld/1", "slurmctld/1"]


def test_an_auth_socket_serves_one_audience_per_controller():
    from pyslurm_lite.rpc import tokens
    lone = types.SimpleNamespace(controller_hosts=[])
    trio = types.SimpleNamespace(controller_hosts=[("a", "", 0), ("b", "", 0), ("c", "", 0)])
    assert tokens.controller_audiences(lone) == {"slurmctld"}
    assert tokens.controller_audiences(trio) == {"slurmctld", "slurmctld/1", "slurmctld/2"}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_close_frees_the_connections_and_a_later_call_opens_new_ones(servers, transport):
    """A long-lived server (restd) closes the clients it evicts: their connections end at once."""
    fake, target = servers(0, True)
    c = client([target], transport)
    c.ping()
    link = c._link
    c.close()
    assert c._link is None
    if transport == "grpcio":
        with pytest.raises(ValueError):  # grpcio: "Cannot invoke RPC on closed channel!"
            link._conns[0].Ping(pb.PingRequest(), timeout=2)
    else:
        assert all(ch._conn is None for ch in link._conns.values())
    assert c.ping().index == 0 and fake.calls == 2
