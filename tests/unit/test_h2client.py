"""h2client against a real grpcio server on loopback: replies, errors, a multi-MB reply, a large
request, deadlines, an unreachable or restarted server; and Client over both transports giving
the same answers and the same domain errors."""

from __future__ import annotations

import socket
import threading
import time
import types
from concurrent import futures

import grpc
import pytest

from pyslurm_lite import errors
from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc
from pyslurm_lite.client import Client
from pyslurm_lite.rpc.h2client import Channel, RpcFailure, percent_decode
from pyslurm_lite.rpc.common import (AUTH_KEY, DEADLINE_EXCEEDED, INTERNAL, NOT_FOUND, UNAVAILABLE)
from pyslurm_lite.rpc.authsock import AuthSocketServer
from pyslurm_lite.rpc.grpcutil import SERVER_OPTIONS, rpc_method

BIG = 5 * 2**20 + 7  # bytes: a reply over many DATA frames and past the 64 KiB default window
MESSAGE = "no such job: ü 100%\nsecond line"  # percent-encoded on the wire


class Raw:
    """Unary methods on bytes, recording who called."""

    def __init__(self):
        self.calls: list[tuple[str, dict, str]] = []
        self.time_left: list[float | None] = []

    def handler(self, name):
        def call(request, context):
            self.calls.append((name, dict(context.invocation_metadata()), context.peer()))
            self.time_left.append(context.time_remaining())
            return getattr(self, name)(request, context)
        return grpc.unary_unary_rpc_method_handler(call)

    def Echo(self, request, context):
        return b"echo:" + request

    def Big(self, request, context):
        return bytes(range(256)) * (BIG // 256) + b"x" * (BIG % 256)

    def Empty(self, request, context):
        return b""

    def Fail(self, request, context):
        context.abort(grpc.StatusCode.NOT_FOUND, MESSAGE)

    def Slow(self, request, context):
        time.sleep(1.5)
        return b"late"


def start(servicer_setup, port: int = 0):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=SERVER_OPTIONS)
    servicer_setup(server)
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    return server, port


class RawServer:
    """A grpcio server of Raw's methods on a loopback port; restart() keeps the port."""

    def __init__(self):
        self.raw = Raw()
        self.server, self.port = start(self._setup)

    def _setup(self, server):
        handlers = {m: self.raw.handler(m) for m in ("Echo", "Big", "Empty", "Fail", "Slow")}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.Raw", handlers),))

    def restart(self):
        self.server.stop(None).wait()
        self.server, port = start(self._setup, self.port)
        assert port == self.port

    def stop(self):
        self.server.stop(None)


@pytest.fixture
def raw_server():
    server = RawServer()
    yield server.raw, server.port, server
    server.stop()


def test_reply_and_metadata(raw_server):
    raw, port, _ = raw_server
    channel = Channel(f"127.0.0.1:{port}")
    md = ((AUTH_KEY, "u1|a-token"), ("x-other", "value"))
    assert bytes(channel.unary("/t.Raw/Echo", b"hello", md, timeout=5)) == b"echo:hello"
    name, seen, _ = raw.calls[0]
    assert name == "Echo" and all(seen[k] == v for k, v in md)
    assert 3 < raw.time_left[0] <= 5  # the deadline went along (grpc-timeout)


def test_calls_share_one_connection(raw_server):
    raw, port, _ = raw_server
    channel = Channel(f"127.0.0.1:{port}")
    for i in range(5):
        assert bytes(channel.unary("/t.Raw/Echo", b"%d" % i, timeout=5)) == b"echo:%d" % i
    assert len({peer for _, _, peer in raw.calls}) == 1


def test_error_status_and_message(raw_server):
    _, port, _ = raw_server
    channel = Channel(f"127.0.0.1:{port}")
    with pytest.raises(RpcFailure) as e:
        channel.unary("/t.Raw/Fail", b"", timeout=5)
    assert (e.value.code, e.value.message) == (NOT_FOUND, MESSAGE)
    assert bytes(channel.unary("/t.Raw/Echo", b"after", timeout=5)) == b"echo:after"


def test_unknown_method_is_unimplemented(raw_server):
    _, port, _ = raw_server
    with pytest.raises(RpcFailure) as e:
        Channel(f"127.0.0.1:{port}").unary("/t.Raw/Nope", b"", timeout=5)
    assert e.value.code == grpc.StatusCode.UNIMPLEMENTED.value[0]


def test_large_reply_and_large_request(raw_server):
    _, port, _ = raw_server
    channel = Channel(f"127.0.0.1:{port}")
    reply = bytes(channel.unary("/t.Raw/Big", b"", timeout=10))
    assert len(reply) == BIG and reply[:256] == bytes(range(256)) and reply.endswith(b"x" * 7)
    request = bytes(range(256)) * 4096 + b"tail"  # 1 MiB: past the server's initial windows
    assert bytes(channel.unary("/t.Raw/Echo", request, timeout=10)) == b"echo:" + request
    assert len(bytes(channel.unary("/t.Raw/Big", b"", timeout=10))) == BIG  # windows renewed


def test_request_over_the_servers_limit_is_refused_not_hung():
    """The server answers RESOURCE_EXHAUSTED without reading the rest: no wait for a window."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         options=[("grpc.max_receive_message_length", 2**20)])
    raw = Raw()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "t.Raw", {"Echo": raw.handler("Echo")}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        channel = Channel(f"127.0.0.1:{port}")
        with pytest.raises(RpcFailure) as e:
            channel.unary("/t.Raw/Echo", b"x" * (8 * 2**20), timeout=5)
        assert e.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
        assert bytes(channel.unary("/t.Raw/Echo", b"small", timeout=5)) == b"echo:small"
    finally:
        server.stop(None)


def test_empty_reply(raw_server):
    _, port, _ = raw_server
    assert bytes(Channel(f"127.0.0.1:{port}").unary("/t.Raw/Empty", b"", timeout=5)) == b""


def test_deadline(raw_server):
    _, port, _ = raw_server
    channel = Channel(f"127.0.0.1:{port}")
    t0 = time.monotonic()
    with pytest.raises(RpcFailure) as e:
        channel.unary("/t.Raw/Slow", b"", timeout=0.3)
    assert e.value.code == DEADLINE_EXCEEDED and time.monotonic() - t0 < 1.2
    assert bytes(channel.unary("/t.Raw/Echo", b"next", timeout=5)) == b"echo:next"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_port():
    t0 = time.monotonic()
    with pytest.raises(RpcFailure) as e:
        Channel(f"127.0.0.1:{free_port()}").unary("/t.Raw/Echo", b"", timeout=5)
    assert e.value.code == UNAVAILABLE and time.monotonic() - t0 < 2


def test_server_restarted_between_calls(raw_server):
    _, port, server = raw_server
    channel = Channel(f"127.0.0.1:{port}")
    assert bytes(channel.unary("/t.Raw/Echo", b"1", timeout=5)) == b"echo:1"
    server.restart()  # the idle connection is gone: the next call notices and opens another
    assert bytes(channel.unary("/t.Raw/Echo", b"2", timeout=5)) == b"echo:2"


def test_not_http2_at_all():
    listener = socket.create_server(("127.0.0.1", 0))

    def answer():
        conn, _ = listener.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    with pytest.raises(RpcFailure) as e:
        Channel(f"127.0.0.1:{listener.getsockname()[1]}").unary("/t.Raw/Echo", b"", timeout=5)
    assert e.value.code in (UNAVAILABLE, INTERNAL)
    listener.close()


@pytest.mark.parametrize("text, decoded", [
    ("plain", "plain"), ("100%25", "100%"), ("%C3%BC", "ü"), ("bad %zz", "bad %zz"), ("end%", "end%"),
])
def test_percent_decode(text, decoded):
    assert percent_decode(text) == decoded


# ---- Client over both transports --------------------------------------------------------------
class Controller(controller_pb2_grpc.ControllerServicer):
    @rpc_method
    def Ping(self, request, context):
        return pb.PingReply(cluster_name="test", now=12.5)

    tokens: list[str] = []

    @rpc_method
    def SubmitJob(self, request, context):
        token = dict(context.invocation_metadata()).get(AUTH_KEY, "")
        self.tokens.append(token)
        return pb.SubmitJobReply(job_id=1000 + int(token.split(":")[1]) if token else 0)

    @rpc_method
    def GetJobs(self, request, context):
        if 404 in request.filter.job_ids:
            raise errors.NotFound("Invalid job id specified")
        reply = pb.GetJobsReply(now=1.0)
        for i in range(20000):  # several MB
            job = reply.jobs.add(job_id=i, state="PENDING")
            job.spec.name, job.spec.script = f"job{i}", "#!/bin/sh\n" + "x" * 200
        return reply

    @rpc_method
    def UpdateJobs(self, request, context):
        raise errors.PermissionDenied("Access/permission denied")


@pytest.fixture(scope="module")
def controller(tmp_path_factory):
    """A fake controller, and an auth socket whose tokens name the caller's uid and a count."""
    count = iter(range(10**6))
    sock = AuthSocketServer(str(tmp_path_factory.mktemp("run") / "sack.socket"),
                            lambda uid, gid, aud: f"{aud}:{uid}:{next(count)}", frozenset({"slurmctld"}))
    sock.start()
    server, port = start(lambda s: controller_pb2_grpc.add_ControllerServicer_to_server(Controller(), s))
    yield types.SimpleNamespace(controller_target=f"127.0.0.1:{port}", auth_socket=sock.path)
    server.stop(None)
    sock.close()


@pytest.mark.parametrize("transport", ["grpcio", "h2"])
def test_client_answers_the_same_over_both(controller, transport):
    import os
    client = Client(cfg=controller, transport=transport)
    assert client.ping().cluster_name == "test"
    jobs, now = client.jobs()
    assert len(jobs) == 20000 and jobs[-1].spec.name == "job19999" and now == 1.0
    assert client._call("SubmitJob", pb.SubmitJobRequest()).job_id == 1000 + os.getuid()
    assert client._call("SubmitJob", pb.SubmitJobRequest()).job_id == 1000 + os.getuid()
    assert len(set(Controller.tokens[-2:])) == 2  # a fresh token for every call
    with pytest.raises(errors.NotFound, match="^Invalid job id specified$"):
        client.jobs(job_ids=[404])
    with pytest.raises(errors.PermissionDenied, match="^Access/permission denied$"):
        client.update_jobs([1], "hold")


@pytest.mark.parametrize("transport", ["grpcio", "h2"])
def test_client_unreachable_message_is_the_same(controller, transport):
    target = f"127.0.0.1:{free_port()}"
    with pytest.raises(errors.ControllerUnreachable) as e:
        Client(cfg=types.SimpleNamespace(controller_target=target, auth_socket=controller.auth_socket),
               transport=transport).ping()
    assert e.value.message == f"Unable to contact slurm controller (connect failure) at {target}"


def test_client_refuses_an_unknown_transport(controller):
    with pytest.raises(errors.SlurmError, match="valid: grpcio, h2"):
        Client(cfg=controller, transport="carrier-pigeon")
