"""The HTTP side of both daemons' Prometheus endpoints (controller/metrics.py, agent/metrics.py):
prometheus-client's own server on a daemon thread, a bind failure turned into a configuration
error naming the slurm.conf key."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, start_http_server

from .errors import ConfigError


def serve(registry: CollectorRegistry, addr: str, port: int, key: str):
    """Serve registry at http://addr:port/metrics; the server (shutdown() stops it)."""
    try:
        httpd, _ = start_http_server(port, addr=addr, registry=registry)
    except OSError as e:
        raise ConfigError(f"{key}={port}: cannot serve /metrics on {addr}:{port}: "
                          f"{e.strerror or e}") from None
    return httpd
