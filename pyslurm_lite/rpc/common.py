"""What both client transports share, without importing grpc: gRPC status codes by number, the
domain error each one carries back to a caller, and the identity metadata a client attaches.

rpcutil (grpcio: channels, servers, daemon authentication) re-exports these names; the light
HTTP/2 client (h2client) uses them directly, so a short-lived CLI never loads grpcio.
"""

from __future__ import annotations

import os
import pwd

from .. import errors

UID_KEY = "x-pyslurm-uid"
USER_KEY = "x-pyslurm-user"
AUTH_KEY = "x-pyslurm-auth"

# gRPC status codes (google.rpc.Code), the numbers grpc.StatusCode carries and grpc-status sends.
(OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS,
 PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED,
 INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED) = range(17)

# status code -> the domain error a servicer raised (rpcutil.rpc_method maps the other way)
ERROR_OF_STATUS = {
    INVALID_ARGUMENT: errors.InvalidRequest,
    FAILED_PRECONDITION: errors.Unsatisfiable,
    NOT_FOUND: errors.NotFound,
    PERMISSION_DENIED: errors.PermissionDenied,
    ABORTED: errors.StaleState,
}
UNREACHABLE = "Unable to contact slurm controller (connect failure)"


def domain_error(code: int | None, details: str, unreachable_msg: str = UNREACHABLE) -> errors.SlurmError:
    """The domain error for a failed call: the server's message under its class, or, when the
    server could not be reached in time, ControllerUnreachable(unreachable_msg)."""
    if code in (UNAVAILABLE, DEADLINE_EXCEEDED):
        return errors.ControllerUnreachable(unreachable_msg)
    return ERROR_OF_STATUS.get(code, errors.SlurmError)(details)


def identity_metadata() -> tuple:
    """What a client attaches to every call: its uid and user name (see rpcutil.caller_of)."""
    uid = os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return ((UID_KEY, str(uid)), (USER_KEY, user))
