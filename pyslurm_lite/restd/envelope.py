"""slurmrestd's response envelope: every body is the payload plus `meta`, `errors` and
`warnings` (v0.0.42_openapi_resp), and an error is answered in that same shape with an HTTP
status chosen in one table (RestError.status) from our exception kinds.

    {"jobs": [...], "meta": {"plugin": {...}, "client": {...}, "slurm": {...}},
     "errors": [], "warnings": [{"description": "...", "source": "..."}]}

Error numbers and texts are Slurm's (slurm/slurm_errno.h, slurm_strerror()), so a client that
switches on error_number behaves as against slurmrestd. Nothing here does I/O.
"""

from __future__ import annotations

from ..version import SLURM_VERSION

DATA_PARSER = "data_parser/v0.0.42"

# slurm_errno.h numbers and slurm_strerror() texts for the errors this server answers with
SLURM_ERROR = -1
ESLURM_INVALID_PARTITION_NAME = 2000
ESLURM_ACCESS_DENIED = 2002
ESLURM_INVALID_JOB_ID = 2017
SLURM_COMMUNICATIONS_CONNECTION_ERROR = 1001
ESLURM_REST_INVALID_QUERY = 9000
ESLURM_REST_FAIL_PARSING = 9001
ESLURM_REST_EMPTY_RESULT = 9003
ESLURM_REST_UNKNOWN_URL = 9006
ESLURM_REST_AUTH_FAIL = 9008
ESLURM_REST_BAD_REQUEST = 9009

STRERROR = {
    SLURM_ERROR: "Unspecified error",
    ESLURM_INVALID_PARTITION_NAME: "Invalid partition name specified",
    ESLURM_ACCESS_DENIED: "Access/permission denied",
    ESLURM_INVALID_JOB_ID: "Invalid job id specified",
    SLURM_COMMUNICATIONS_CONNECTION_ERROR: "Communication connection failure",
    ESLURM_REST_INVALID_QUERY: "Query empty or incorrect type",
    ESLURM_REST_FAIL_PARSING: "Unable to parse request",
    ESLURM_REST_EMPTY_RESULT: "Nothing found with query",
    ESLURM_REST_UNKNOWN_URL: "Unable to find requested URL endpoint. Please query the "
                             "'/openapi/v3' endpoint for the list of this server's endpoints.",
    ESLURM_REST_AUTH_FAIL: "Authentication failure",
    ESLURM_REST_BAD_REQUEST: "Request failed to be processed",
}

# our exception kinds (errors.py) -> (HTTP status, Slurm error number), as slurmrestd answers
# the matching slurmctld errors; "unauthenticated" is slurmrestd's 401 for a token it refuses
_BY_KIND = {
    "unauthenticated": (401, ESLURM_REST_AUTH_FAIL),
    "permission": (403, ESLURM_ACCESS_DENIED),
    "not_found": (404, ESLURM_REST_EMPTY_RESULT),
    "invalid": (400, ESLURM_REST_BAD_REQUEST),
    "unsatisfiable": (400, ESLURM_REST_BAD_REQUEST),
    "conflict": (409, ESLURM_REST_BAD_REQUEST),
    "unavailable": (503, SLURM_COMMUNICATIONS_CONNECTION_ERROR),
}


class RestError(Exception):
    """An answer in slurmrestd's error shape: the HTTP status, Slurm's error number, what the
    caller reads (description) and which operation said so (source)."""

    def __init__(self, status: int, error_number: int, description: str, source: str = ""):
        super().__init__(description)
        self.status, self.error_number = status, error_number
        self.description, self.source = description, source

    @classmethod
    def from_domain(cls, err, source: str,
                    not_found: int = ESLURM_REST_EMPTY_RESULT) -> "RestError":
        """A SlurmError from the controller (its `kind` picks the status); `not_found` is the
        number for an unknown name (ESLURM_INVALID_JOB_ID for a job)."""
        status, number = _BY_KIND.get(getattr(err, "kind", ""), (500, SLURM_ERROR))
        if status == 404:
            number = not_found
        return cls(status, number, getattr(err, "message", str(err)), source)

    def entry(self) -> dict:
        return {"description": self.description, "error_number": self.error_number,
                "error": STRERROR.get(self.error_number, f"Unknown error {self.error_number}"),
                "source": self.source}


def meta(cluster: str, user: str = "", source: str = "") -> dict:
    """v0.0.42_openapi_meta: who answered (plugin, data parser, Slurm version) and for whom."""
    major, minor, micro = (SLURM_VERSION.split(".") + ["", "", ""])[:3]
    return {"plugin": {"type": "openapi/slurmctld", "name": "Slurm OpenAPI slurmctld",
                       "data_parser": DATA_PARSER, "accounting_storage": ""},
            "client": {"source": source, "user": user, "group": ""},
            "command": [],
            "slurm": {"version": {"major": major, "micro": micro, "minor": minor},
                      "release": SLURM_VERSION, "cluster": cluster}}


def body(payload: dict, cluster: str, user: str = "", source: str = "",
         warnings: list[dict] | None = None, errors: list[dict] | None = None) -> dict:
    return {**payload, "meta": meta(cluster, user, source), "errors": list(errors or []),
            "warnings": list(warnings or [])}


def warning(description: str, source: str) -> dict:
    return {"description": description, "source": source}
