"""IssueToken (`scontrol token`): who may have a JWT for whom, and for how long; the token is
made by rpc/jwt.py. Slurm's rules (slurmctld's _slurm_rpc_auth_token), with ours marked:

  - a caller gets a token for themselves; for another user only root or SlurmUser (Slurm's
    validate_slurm_user), not AdminUsers: a token for someone is that someone's every right;
  - ours: a token naming root only to root itself (SlurmUser, root's equal in Slurm, is not
    root's equal on the host: root's token would be every user's);
  - lifespan 0 is Slurm's default of 1800 s; longer up to a cap (ours: Slurm has none unless
    AuthAltParameters=max_token_lifespan=): a day for users, a week for root and SlurmUser,
    whose tokens usually stand behind a service such as the REST server (renewed weekly);
  - ours: a call proved by a JWT gets no new one, so a stolen token cannot renew itself past its
    expiry; a new token takes the CLI's own authentication (the kernel's word, tokens.py).
"""

from __future__ import annotations

import logging
import pwd
from dataclasses import dataclass

from ..errors import InvalidRequest, PermissionDenied
from ..rpc import jwt
from .auth import DENIED, Caller

log = logging.getLogger("pyslurm_lite.controller.token_mgr")

MAX_LIFESPAN = 86400  # seconds a user's token may be good for
MAX_SLURM_USER_LIFESPAN = 7 * 86400  # seconds one root or SlurmUser asks for may
NOT_LOADED = "Required plugin type not loaded or initialized"  # Slurm's ESLURM_PLUGIN_NOT_LOADED
BAD_LIFESPAN = "Requested time limit is invalid (missing or exceeds some limit)"
INVALID_USER = "Invalid user id"  # Slurm's ESLURM_USER_ID_MISSING


@dataclass(frozen=True)
class IssuedToken:
    token: str
    expires: int  # epoch seconds
    user_name: str


def is_slurm_user(cfg, caller: Caller) -> bool:
    """Slurm's validate_slurm_user: root or SlurmUser, never AdminUsers."""
    return caller.uid == 0 or caller.user == cfg.slurm_user


def lifespan_cap(cfg, caller: Caller) -> int:
    return MAX_SLURM_USER_LIFESPAN if is_slurm_user(cfg, caller) else MAX_LIFESPAN


def _subject(cfg, caller: Caller, user_name: str, getpwnam) -> str:
    """Whose token: the caller's own, or (root and SlurmUser only) a user the system knows."""
    if not user_name or user_name == caller.user:
        return caller.user
    if not is_slurm_user(cfg, caller):
        raise PermissionDenied(f"{INVALID_USER}: only root and SlurmUser ({cfg.slurm_user}) may "
                               f"get a token for another user")
    try:
        pw = getpwnam(user_name)
    except (KeyError, ValueError):  # ValueError: a NUL in the name
        raise InvalidRequest(f"{INVALID_USER}: {user_name} is not a user on the controller's "
                             f"host") from None
    if caller.uid != 0 and (user_name == "root" or getattr(pw, "pw_uid", None) == 0):
        raise PermissionDenied(f"{INVALID_USER}: only root may get a token for root")
    return user_name


def issue(cfg, caller: Caller, by_jwt: bool, user_name: str, lifespan: int, now: float,
          getpwnam=pwd.getpwnam) -> IssuedToken:
    if not jwt.enabled(cfg):
        raise InvalidRequest(f"{NOT_LOADED} (AuthAltTypes=auth/jwt is not set in slurm.conf)")
    if by_jwt:
        raise PermissionDenied(f"{DENIED}: a call authenticated by a JWT cannot get a new token")
    name = _subject(cfg, caller, user_name, getpwnam)
    cap = lifespan_cap(cfg, caller)
    span = lifespan or jwt.DEFAULT_LIFESPAN
    if not 0 < span <= cap:
        raise InvalidRequest(f"{BAD_LIFESPAN}: lifespan={span}; at most {cap} seconds here")
    token, expires = jwt.make(jwt.cluster_key(cfg), name, span, now)
    log.info("created token for %s for %d seconds (asked by %s)", name, span, caller.user)
    return IssuedToken(token, expires, name)
