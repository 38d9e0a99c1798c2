"""gRPC plumbing shared by every daemon and client: channels, the identity of a caller, and the
one place where domain errors become status codes (and back).

Authentication lives here, in one place:
  - daemons (controller <-> agents) prove themselves with a token made from the cluster key
    (auth.key, root-only, like munge.key); `AuthInterceptor` refuses daemon-only methods without
    a valid one, before any servicer runs;
  - users: `identity_metadata()` is what a client attaches to every call and `caller_of(context)`
    is the single point where a server reads who is calling. Today that identity is the uid the
    client states; a credential signed by a local helper replaces this pair without touching the
    servicers.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import secrets
import time

import grpc

from .. import errors
from .common import AUTH_KEY, UID_KEY, USER_KEY, domain_error, identity_metadata  # noqa: F401

log = logging.getLogger("pyslurm_lite.rpc")

TOKEN_LIFETIME = 300  # seconds a daemon token is accepted (clocks of a cluster agree this well)

_CODE_OF_KIND = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "unsatisfiable": grpc.StatusCode.FAILED_PRECONDITION,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "permission": grpc.StatusCode.PERMISSION_DENIED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "conflict": grpc.StatusCode.ABORTED,
}

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.max_send_message_length", 256 * 1024 * 1024),
    ("grpc.enable_http_proxy", 0),
]


# Servers never share a port: with SO_REUSEPORT (gRPC's default) a restarted controller could
# bind beside a dying one and both would answer.
SERVER_OPTIONS = CHANNEL_OPTIONS + [("grpc.so_reuseport", 0)]


def client_channel(target: str) -> grpc.Channel:
    return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)


def caller_of(context) -> tuple[int, str]:
    """(uid, user name) of whoever made this call."""
    md = dict(context.invocation_metadata() or ())
    try:
        uid = int(md.get(UID_KEY, "-1"))
    except ValueError:
        uid = -1
    return uid, md.get(USER_KEY, str(uid))


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
    """Turn a client-side RpcError back into the domain error it carried (rpccommon's table,
    shared with the light HTTP/2 client)."""
    code = e.code().value[0] if hasattr(e, "code") and e.code() is not None else None
    raise domain_error(code, e.details() if hasattr(e, "details") else str(e), unreachable_msg) from None


# ---- daemon authentication ------------------------------------------------------------------
def load_or_create_key(path: str) -> bytes:
    """The cluster key at path, created (0600) if absent. Creation is atomic, so a controller
    and agents starting together agree on one key."""
    try:
        with open(path, "rb") as f:
            return f.read().strip()
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_hex(32).encode())
    try:
        os.link(tmp, path)  # fails if another process won the race; then theirs is the key
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    with open(path, "rb") as f:
        return f.read().strip()


def _sign(key: bytes, stamp: str) -> str:
    return hmac.new(key, stamp.encode(), hashlib.sha256).hexdigest()


def daemon_metadata(key: bytes) -> tuple:
    stamp = str(int(time.time()))
    return identity_metadata() + ((AUTH_KEY, f"{stamp}.{_sign(key, stamp)}"),)


def token_valid(key: bytes, token: str, now: float | None = None) -> bool:
    stamp, _, mac = token.partition(".")
    if not stamp.isdigit() or abs((now or time.time()) - int(stamp)) > TOKEN_LIFETIME:
        return False
    return hmac.compare_digest(mac, _sign(key, stamp))


class AuthInterceptor(grpc.ServerInterceptor):
    """Refuses calls to daemon-only methods that carry no valid cluster-key token."""

    def __init__(self, key: bytes, daemon_only: set[str]):
        self.key, self.daemon_only = key, daemon_only

        def deny(request, context):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "authentication failed: bad or missing cluster key token")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation, details):
        if details.method.rsplit("/", 1)[-1] in self.daemon_only:
            token = dict(details.invocation_metadata or ()).get(AUTH_KEY, "")
            if not token_valid(self.key, token):
                log.warning("refused %s: bad or missing cluster key token", details.method)
                return self._deny
        return continuation(details)


# ---- launch credentials ---------------------------------------------------------------------
CREDENTIAL_LIFETIME = 600  # seconds an srun has to reach the agents with its step credential


def _launch_claim(job_id: int, step_id: int, uid: int, nodes) -> str:
    return f"{job_id}:{step_id}:{uid}:{','.join(nodes)}"


def sign_launch(key: bytes, job_id: int, step_id: int, uid: int, nodes, now: float | None = None) -> str:
    """The controller's word that uid may launch step job_id.step_id on these nodes, for a while."""
    expiry = str(int((now or time.time()) + CREDENTIAL_LIFETIME))
    claim = _launch_claim(job_id, step_id, uid, nodes)
    return f"{expiry}.{_sign(key, expiry + ':' + claim)}"


def launch_allowed(key: bytes, credential: str, job_id: int, step_id: int, uid: int, nodes,
                   node: str, now: float | None = None) -> bool:
    """Does the credential cover launching this step, as this uid, on this node, now?"""
    expiry, _, mac = credential.partition(".")
    if not expiry.isdigit() or int(expiry) < (now or time.time()) or node not in nodes:
        return False
    claim = _launch_claim(job_id, step_id, uid, nodes)
    return hmac.compare_digest(mac, _sign(key, expiry + ":" + claim))


BIND_PATIENCE = 10.0  # seconds a restarting daemon waits for its port (a killed predecessor's)


def bind(server, address: str) -> int:
    """add_insecure_port, retried while the port is still held (the daemon this one replaces
    may not be gone yet); raises OSError naming the address when it never frees."""
    deadline = time.monotonic() + BIND_PATIENCE
    while True:
        try:
            port = server.add_insecure_port(address)
        except RuntimeError:
            port = 0
        if port:
            return port
        if time.monotonic() > deadline:
            raise OSError(f"cannot listen on {address}: address in use")
        time.sleep(0.2)
