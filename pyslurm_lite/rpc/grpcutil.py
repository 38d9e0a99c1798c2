"""gRPC plumbing shared by every daemon and client: channels, servers, and the one place where
domain errors become status codes (and back).

Who is calling is proved elsewhere in this package: tokens.py (what a token says and how it is
checked), authsock.py (where a user gets one), authn.py (the servers' check before any servicer
runs), credential.py (what the controller signs for a launch), keys.py (the keys).
"""

from __future__ import annotations

import functools
import logging
import time

import grpc

from .. import errors
from .common import AUTH_KEY, domain_error

log = logging.getLogger("pyslurm_lite.rpc")

TOKEN_LIFETIME = 300  # seconds a daemon token is accepted (clocks of a cluster agree this well)

_CODE_OF_KIND = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "unsatisfiable": grpc.StatusCode.FAILED_PRECONDITION,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "permission": grpc.StatusCode.PERMISSION_DENIED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "conflict": grpc.StatusCode.ABORTED,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
}

MAX_REQUEST = 32 * 1024 * 1024  # bytes a server accepts in one message (scripts are <= 4 MB)
MAX_REPLY = 256 * 1024 * 1024  # bytes a client accepts (squeue of many thousand jobs)

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_REPLY),
    ("grpc.max_send_message_length", MAX_REQUEST),
    ("grpc.enable_http_proxy", 0),
]


# Servers never share a port: with SO_REUSEPORT (gRPC's default) a restarted controller could
# bind beside a dying one and both would answer. What they take in is capped (a request is a
# submission or a report), what they send is not (listings).
SERVER_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_REQUEST),
    ("grpc.max_send_message_length", MAX_REPLY),
    ("grpc.so_reuseport", 0),
]


def client_channel(target: str, cfg=None) -> grpc.Channel:
    """A channel to target; over TLS, checked against the CA, when cfg has TLSParameters."""
    from . import tls
    if cfg is not None and tls.enabled(cfg):
        return grpc.secure_channel(target, tls.channel_credentials(cfg), options=CHANNEL_OPTIONS)
    return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)


def rpc_method(fn):
    """Wrap a servicer method: domain errors -> status codes; anything else -> INTERNAL, logged."""

    @functools.wraps(fn)
    def wrapper(self, request, context):
        try:
            return fn(self, request, context)
        except errors.SlurmError as e:
            context.abort(_CODE_OF_KIND.get(e.kind, grpc.StatusCode.UNKNOWN), e.message)
        except Exception:  # the loop boundary: never let a bug kill the server thread silently
            log.exception("%s failed", fn.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"internal error in {fn.__name__}")

    return wrapper


def raise_domain(e: grpc.RpcError, unreachable_msg: str = "Unable to contact slurm controller (connect failure)"):
    """Turn a client-side RpcError back into the domain error it carried (common.py's table,
    shared with the light HTTP/2 client)."""
    code = e.code().value[0] if hasattr(e, "code") and e.code() is not None else None
    raise domain_error(code, e.details() if hasattr(e, "details") else str(e), unreachable_msg) from None


# ---- authentication metadata -------------------------------------------------------------------
def daemon_metadata(key: bytes, sender: str, method: str) -> tuple:
    """A fresh daemon token for one call of method (tokens.py)."""
    from .tokens import make_daemon_token
    return ((AUTH_KEY, make_daemon_token(key, sender, method)),)


BIND_PATIENCE = 10.0  # seconds a restarting daemon waits for its port (a killed predecessor's)


def bind(server, address: str, cfg=None) -> int:
    """Listen on address (over TLS when cfg has TLSParameters), retried while the port is still
    held (the daemon this one replaces may not be gone yet); raises OSError naming the address
    when it never frees."""
    from . import tls
    creds = tls.server_credentials(cfg) if cfg is not None and tls.enabled(cfg) else None
    deadline = time.monotonic() + BIND_PATIENCE
    while True:
        try:
            port = server.add_secure_port(address, creds) if creds else server.add_insecure_port(address)
        except RuntimeError:
            port = 0
        if port:
            return port
        if time.monotonic() > deadline:
            raise OSError(f"cannot listen on {address}: address in use")
        time.sleep(0.2)
