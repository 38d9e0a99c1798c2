"""The REST server's defences, on a real uvicorn (no controller needed: each is decided before
any call): the limits on its uvicorn Config, a deadline for a request's headers, the per-token
Clients bounded and closed when evicted, and the plain-HTTP warning for a non-loopback address."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from pyslurm_lite.config import parse

pytest.importorskip("uvicorn")
from pyslurm_lite.restd import app, server  # noqa: E402  (needs starlette, as uvicorn)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cfg(port: int = 0):
    return parse(f"SlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\nRestPort={port}\n")


def test_the_limits_are_set_on_uvicorns_config():
    config = server.uvicorn_config(_cfg())
    assert config.limit_concurrency == server.LIMIT_CONCURRENCY
    assert config.h11_max_incomplete_event_size == server.MAX_HEADER_BYTES
    assert config.timeout_keep_alive == server.KEEP_ALIVE
    from uvicorn.protocols.http.h11_impl import H11Protocol
    assert issubclass(config.http, H11Protocol)  # h11: the one whose header limit applies


def test_a_connection_that_sends_no_headers_is_closed(monkeypatch):
    monkeypatch.setattr(server, "HEADER_PATIENCE", 0.5)
    port = _free_port()
    handle = server.start_rest(_cfg(port), "127.0.0.1")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as idle, \
                socket.create_connection(("127.0.0.1", port), timeout=10) as trickle:
            began = time.monotonic()
            trickle.sendall(b"GET /openapi/v3 HTTP/1.1\r\n")
            time.sleep(0.3)
            trickle.sendall(b"Host: x\r\n")  # data, but never a whole request: still cut off
            assert idle.recv(100) == b"" and trickle.recv(100) == b""
            assert time.monotonic() - began < 5
    finally:
        handle.close()


def test_a_request_in_time_is_answered_and_kept_alive(monkeypatch):
    monkeypatch.setattr(server, "HEADER_PATIENCE", 0.5)
    port = _free_port()
    handle = server.start_rest(_cfg(port), "127.0.0.1")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"GET /slurm/v0.0.42/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 404")
    finally:
        handle.close()


class _Fake:
    def __init__(self, token, index):
        self.key, self.closed = (token, index), False

    def close(self):
        self.closed = True


def test_clients_are_bounded_and_evicted_ones_closed_once_unused():
    pool = app._Clients(_cfg(), kept=2, factory=_Fake)
    with pool.lease("t1") as first:
        with pool.lease("t2"), pool.lease("t3") as third:
            pass
        assert not first.closed  # evicted while a request uses it: closed when that ends
    assert first.closed and not third.closed
    with pool.lease("t4"):
        pass
    assert [k for k in pool._entries] == [("t3", None), ("t4", None)]
    with pool.lease("t3") as again:
        assert again is third


def test_plain_http_on_a_non_loopback_address_is_warned_about(caplog):
    assert server.is_loopback("127.0.0.1") and server.is_loopback("::1")
    assert server.is_loopback("localhost")
    assert not server.is_loopback("0.0.0.0") and not server.is_loopback("10.1.2.3")
    port = _free_port()
    with caplog.at_level(logging.WARNING, logger="pyslurm_lite.restd"):
        server.start_rest(_cfg(port), "127.0.0.1").close()
        assert "plain HTTP" not in caplog.text
        server.start_rest(_cfg(port), "0.0.0.0").close()
    assert f"0.0.0.0:{port} is plain HTTP" in caplog.text and "TLS proxy" in caplog.text


# ---- ping: every controller, each answer its own --------------------------------------------
class _Controller:
    def __init__(self, answer):
        self.answer = answer

    def ping(self):
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _ping(*answers):
    from pyslurm_lite.restd.auth import Identity
    cfg = parse("SlurmctldHost=one(127.0.0.1)\nSlurmctldHost=two(127.0.0.2)\nSlurmctldPort=1\n")
    call = app.Call(cfg=cfg, identity=Identity("a.b.c", "alice"), client=None, params={},
                    query={}, source="slurmctld_get_ping",
                    at=lambda i: _Controller(answers[i]))
    return app.ping(call), call.warnings


def test_a_controller_that_refuses_is_down_not_a_401():
    from pyslurm_lite.errors import ControllerUnreachable, Unauthenticated
    doc, warnings = _ping(object(), Unauthenticated("invalid token"))
    assert [(p["hostname"], p["pinged"]) for p in doc["pings"]] == [("one", "UP"), ("two", "DOWN")]
    assert warnings and "two: invalid token" in warnings[0]["description"]
    doc, warnings = _ping(ControllerUnreachable("down"), object())  # the backup in control
    assert [p["pinged"] for p in doc["pings"]] == ["DOWN", "UP"] and not warnings


def test_a_token_every_answering_controller_refuses_is_401():
    from pyslurm_lite.errors import ControllerUnreachable, Unauthenticated
    with pytest.raises(Unauthenticated):
        _ping(ControllerUnreachable("down"), Unauthenticated("invalid token"))
