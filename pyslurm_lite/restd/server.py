"""Running the REST application (app.py) with uvicorn: inside the active controller on
RestPort (`start_rest`, a daemon thread), or standalone in the foreground (`pyslurm-lite restd`,
`serve`). The listening socket is bound here, before uvicorn starts, so a port already taken is
a ConfigError naming RestPort at once, not a log line from a background thread.
"""

from __future__ import annotations

import logging
import socket
import threading
import time

from ..errors import ConfigError

log = logging.getLogger("pyslurm_lite.restd")
START_PATIENCE = 10.0  # seconds start_rest waits for uvicorn to accept connections
STOP_PATIENCE = 5.0  # seconds close() waits for in-flight requests


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


def _server(cfg):
    import uvicorn

    from .app import make_app
    config = uvicorn.Config(make_app(cfg), log_level="warning", access_log=False,
                            lifespan="off", timeout_keep_alive=30)
    return uvicorn.Server(config)


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
    _server(cfg).run(sockets=[sock])
