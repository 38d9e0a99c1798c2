"""gRPC plumbing shared by every daemon and client: channels, the identity of a caller, and the
one place where domain errors become status codes (and back).

Authentication lives here: `identity_metadata()` is what a client attaches to every call and
`caller_of(context)` is the single point where a server reads who is calling. Today the identity
is the caller's uid as the client states it; controller-signed credentials replace this function
pair without touching the servicers.
"""

from __future__ import annotations

import functools
import logging
import os
import pwd

import grpc

from . import errors

log = logging.getLogger("pyslurm_lite.rpc")

UID_KEY = "x-pyslurm-uid"
USER_KEY = "x-pyslurm-user"

_CODE_OF_KIND = {
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "unsatisfiable": grpc.StatusCode.FAILED_PRECONDITION,
    "not_found": grpc.StatusCode.NOT_FOUND,
    "permission": grpc.StatusCode.PERMISSION_DENIED,
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "conflict": grpc.StatusCode.ABORTED,
}
_ERROR_OF_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidRequest,
    grpc.StatusCode.FAILED_PRECONDITION: errors.Unsatisfiable,
    grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDenied,
    grpc.StatusCode.ABORTED: errors.StaleState,
}

CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.max_send_message_length", 256 * 1024 * 1024),
    ("grpc.enable_http_proxy", 0),
]


def client_channel(target: str) -> grpc.Channel:
    return grpc.insecure_channel(target, options=CHANNEL_OPTIONS)


def identity_metadata() -> tuple:
    uid = os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return ((UID_KEY, str(uid)), (USER_KEY, user))


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
    """Turn a client-side RpcError back into the domain error it carried."""
    code = e.code() if hasattr(e, "code") else None
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        raise errors.ControllerUnreachable(unreachable_msg) from None
    cls = _ERROR_OF_CODE.get(code, errors.SlurmError)
    raise cls(e.details() if hasattr(e, "details") else str(e)) from None
