"""Who a REST request is from: the X-SLURM-USER-TOKEN header (a JWT from `scontrol token`) and
the optional X-SLURM-USER-NAME, as slurmrestd's rest_auth/jwt reads them.

This module does NOT prove anything: the token travels to the controller as the caller's
identity (Client(cfg, token=...)), which checks its signature and expiry and applies its own
authorization, so a REST caller can do exactly what a CLI of that user can. The claims are read
here unverified only to refuse obvious mismatches early and to name the job's user in a submit
(the controller refuses a submission whose uid is not the token's user).
"""

from __future__ import annotations

import base64
import binascii
import json
import pwd
from dataclasses import dataclass

from .envelope import ESLURM_REST_AUTH_FAIL, RestError

TOKEN_HEADER = "x-slurm-user-token"
USER_HEADER = "x-slurm-user-name"
MAX_TOKEN_BYTES = 8192  # far above any token we issue; a longer header is refused unread


@dataclass(frozen=True)
class Identity:
    token: str  # the JWT as sent: the only credential that leaves this process
    user: str  # its `sun` claim, unverified (the controller verifies)


def identify(headers, source: str) -> Identity:
    """The caller of one request, or RestError(401) in slurmrestd's shape."""
    token = (headers.get(TOKEN_HEADER) or "").strip()
    if not token:
        raise _refused("no X-SLURM-USER-TOKEN header: get a token with `scontrol token` and "
                       "send it as X-SLURM-USER-TOKEN", source)
    user = unverified_user(token)
    if user is None:
        raise _refused("X-SLURM-USER-TOKEN is not a JWT from `scontrol token`", source)
    named = (headers.get(USER_HEADER) or "").strip()
    if named and named != user:
        raise _refused(f"X-SLURM-USER-NAME {named} does not match the token's user {user}",
                       source)
    return Identity(token=token, user=user)


def unverified_user(token: str) -> str | None:
    """The `sun` claim of a well-formed JWT, signature unchecked; None when it is not one."""
    if len(token) > MAX_TOKEN_BYTES or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    sun = claims.get("sun") if isinstance(claims, dict) else None
    return sun if isinstance(sun, str) and sun and sun.isprintable() else None


def job_owner(identity: Identity, source: str) -> tuple[int, int]:
    """(uid, primary gid) a submission by this caller runs as: the token's user, looked up on
    this host as the controller does (the REST server itself runs as root)."""
    try:
        pw = pwd.getpwnam(identity.user)
    except KeyError:
        raise _refused(f"the token's user {identity.user} is not a user on this host",
                       source) from None
    return pw.pw_uid, pw.pw_gid


def _refused(description: str, source: str) -> RestError:
    return RestError(401, ESLURM_REST_AUTH_FAIL, description, source)
