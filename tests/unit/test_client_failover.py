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
