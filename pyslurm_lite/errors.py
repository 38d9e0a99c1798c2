"""The exception tree. Every error the domain raises is a SlurmError carrying a message that the
CLIs print as it is, and a `kind` that the one RPC error mapper turns into a gRPC status code."""


class SlurmError(Exception):
    """Root of every domain error. `message` is what a user reads."""

    kind = "invalid"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidRequest(SlurmError):
    """A request that is malformed: bad option value, bad time, bad directive."""

    kind = "invalid"


class Unsatisfiable(SlurmError):
    """A request no configured node can ever satisfy (Slurm rejects these at submit)."""

    kind = "unsatisfiable"


class NotFound(SlurmError):
    """An unknown job id, node name, partition or step."""

    kind = "not_found"


class PermissionDenied(SlurmError):
    """A user acting on another user's job, or a non-operator using an operator command."""

    kind = "permission"


class ConfigError(SlurmError):
    """A malformed or inconsistent configuration file; the message names file and line."""

    kind = "invalid"


class ControllerUnreachable(SlurmError):
    """The controller could not be reached (down, wrong port, wrong host)."""

    kind = "unavailable"


class StaleState(SlurmError):
    """A state transition that no longer applies (the job already ended, say)."""

    kind = "conflict"


class Unauthenticated(SlurmError):
    """A call whose caller could not be proved (no token, a bad or expired one); the message
    says what to do."""

    kind = "unauthenticated"
