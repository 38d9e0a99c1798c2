"""What both client transports share, without importing grpc: gRPC status codes by number, the
domain error each one carries back to a caller, and the metadata key that carries a token.

grpcutil (grpcio: channels and servers) maps domain errors to these codes; the light
HTTP/2 client (h2client) uses them directly, so a short-lived CLI never loads grpcio.
"""

from __future__ import annotations

from .. import errors

AUTH_KEY = "x-pyslurm-auth"  # the metadata key of a user or daemon token (tokens.py)
CONTROLLER_AUDIENCE = "slurmctld"  # what a user token for the (primary) controller names (tokens.py)


def controller_audience(index: int) -> str:
    """The audience of a user token for SlurmctldHost= line `index`. Each controller of a pair
    takes only its own: a token sent to one (or to whoever listens on a dead one's port) is
    useless at another. The primary keeps the plain name, so a lone controller's are unchanged."""
    return CONTROLLER_AUDIENCE if index == 0 else f"{CONTROLLER_AUDIENCE}/{index}"


def user_metadata(auth_socket: str, audience: str = CONTROLLER_AUDIENCE) -> tuple:
    """A fresh user token for one call to a controller (controller_audience), from this host's
    auth socket."""
    from .authsock import fetch_token
    return ((AUTH_KEY, fetch_token(auth_socket, audience)),)

# gRPC status codes (google.rpc.Code), the numbers grpc.StatusCode carries and grpc-status sends.
(OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS,
 PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, UNIMPLEMENTED,
 INTERNAL, UNAVAILABLE, DATA_LOSS, UNAUTHENTICATED) = range(17)

# status code -> the domain error a servicer raised (grpcutil.rpc_method maps the other way)
ERROR_OF_STATUS = {
    INVALID_ARGUMENT: errors.InvalidRequest,
    FAILED_PRECONDITION: errors.Unsatisfiable,
    NOT_FOUND: errors.NotFound,
    PERMISSION_DENIED: errors.PermissionDenied,
    ABORTED: errors.StaleState,
    UNAUTHENTICATED: errors.Unauthenticated,
}
UNREACHABLE = "Unable to contact slurm controller (connect failure)"


def domain_error(code: int | None, details: str, unreachable_msg: str = UNREACHABLE) -> errors.SlurmError:
    """The domain error for a failed call: the server's message under its class, or, when the
    server could not be reached in time, ControllerUnreachable(unreachable_msg)."""
    if code in (UNAVAILABLE, DEADLINE_EXCEEDED):
        return errors.ControllerUnreachable(unreachable_msg)
    return ERROR_OF_STATUS.get(code, errors.SlurmError)(details)
