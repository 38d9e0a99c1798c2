"""Running the REST application (app.py) with uvicorn: inside the active controller on
RestPort (`start_rest`, a daemon thread), or standalone in the foreground (`pyslurm-lite restd`,
`serve`). The listening socket is bound here, before uvicorn starts, so a port already taken is
a ConfigError naming RestPort at once, not a log line from a background thread.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time

from ..errors import ConfigError

log = logging.getLogger("pyslurm_lite.restd")
START_PATIENCE = 10.0  # seconds start_rest waits for uvicorn to accept connections
STOP_PATIENCE = 5.0  # seconds close() waits for in-flight requests

# What one HTTP client can hold. This server lives inside the controller (root, shared fds):
# a flood of idle or slow connections must cost a bounded number of fds for a bounded time.
MAX_CONNECTIONS = 256  # open at once; beyond it a new connection is closed at once
LIMIT_CONCURRENCY = 128  # connections + requests in progress beyond which uvicorn answers 503
MAX_HEADER_BYTES = 32 << 10  # request line + headers (h11's incomplete event); larger: 400
HEADER_PATIENCE = 10.0  # seconds from connecting (or the last answer) to a request's headers
KEEP_ALIVE = 5  # seconds an idle keep-alive connection stays open (uvicorn's default)


class RestHandle:
    """A running server: close() stops it and frees the port (a controller that loses control
    stops serving)."""

    def __init__(self, server, thread: threading.Thread, address: tuple[str, int]):
        self.server, self.thread, self.address = server, thread, address

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(STOP_PATIENCE)


def listen_address(cfg, host: str | None = None) -> tuple[str, int]:
    """(host, RestPort): the controller's address unless one is given."""
    return host or cfg.controller_addr or cfg.controller_host, cfg.rest_port


def bind(host: str, port: int, key: str = "RestPort") -> socket.socket:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family, backlog=128)
    except OSError as e:
        raise ConfigError(f"{key}={port}: cannot serve the REST API on {host}:{port}: "
                          f"{e.strerror or e}") from None


def uvicorn_config(cfg):
    """uvicorn's Config for this app, with the limits above (h11: the protocol whose header
    size limit uvicorn exposes; httptools is not installed with us)."""
    import uvicorn

    from .app import make_app
    return uvicorn.Config(make_app(cfg), log_level="warning", access_log=False,
                          lifespan="off", http=_protocol_class(),
                          limit_concurrency=LIMIT_CONCURRENCY,
                          h11_max_incomplete_event_size=MAX_HEADER_BYTES,
                          timeout_keep_alive=KEEP_ALIVE)


def _server(cfg):
    import uvicorn
    return uvicorn.Server(uvicorn_config(cfg))


def _protocol_class():
    """uvicorn's h11 protocol, plus what uvicorn lacks: a deadline for a request's headers
    (uvicorn times out only idle keep-alive connections, so a client that connects and trickles
    or sends nothing would hold its fd forever) and a cap on open connections."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Protocol(H11Protocol):
        _header_timer = None

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            if len(self.connections) > MAX_CONNECTIONS:
                transport.close()
                return
            self._await_headers()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._await_headers()

        def connection_lost(self, exc) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            # a request whose headers arrive in time replaces self.cycle with its own
            self._header_timer = self.loop.call_later(HEADER_PATIENCE, self._headers_late,
                                                      self.cycle)

        def _headers_late(self, cycle_then) -> None:
            # no new request since, and none in progress (a pipelined one may have begun as
            # the last answer ended): still waiting for headers, or for the rest of a body
            # nobody reads any more
            idle = cycle_then is None or cycle_then.response_complete
            if self.cycle is cycle_then and idle and not self.transport.is_closing():
                self.transport.close()

    return Protocol


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is a loopback one (reachable from this host only)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback
                               for i in infos)


def _warn_if_exposed(host: str, port: int) -> None:
    """Plain HTTP: tokens (X-SLURM-USER-TOKEN) cross the network in clear."""
    if not is_loopback(host):
        log.warning("REST API on %s:%d is plain HTTP on a non-loopback address: tokens cross the "
                    "network in clear; put a TLS proxy in front of it and bind it to loopback "
                    "(`pyslurm-lite restd --listen 127.0.0.1:PORT`)", host, port)


def start_rest(cfg, host: str | None = None) -> RestHandle:
    """Serve on (host or the controller's address, cfg.rest_port) from a daemon thread; return
    once it accepts connections."""
    address = listen_address(cfg, host)
    sock = bind(*address)
    server = _server(cfg)
    # uvicorn installs signal handlers only on the main thread: in this thread it installs none
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="restd", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_PATIENCE
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        raise ConfigError(f"RestPort={address[1]}: the REST server did not start on "
                          f"{address[0]}:{address[1]}")
    log.info("REST API (slurmrestd v0.0.42) on http://%s:%d/", *address)
    _warn_if_exposed(*address)
    return RestHandle(server, thread, address)


def serve(cfg, listen: str | None = None) -> None:
    """`pyslurm-lite restd`: in the foreground until SIGINT/SIGTERM."""
    host, port = listen_address(cfg)
    if listen:
        host, _, port_text = listen.rpartition(":")
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError(f"--listen {listen}: want HOST:PORT")
        host, port = host.strip("[]") or "0.0.0.0", int(port_text)
    if not port:
        raise ConfigError("no port to serve on: set RestPort= in slurm.conf or give --listen "
                          "HOST:PORT")
    sock = bind(host, port, "--listen" if listen else "RestPort")
    log.info("REST API (slurmrestd v0.0.42) on http://%s:%d/", host, port)
    _warn_if_exposed(host, port)
    _server(cfg).run(sockets=[sock])
