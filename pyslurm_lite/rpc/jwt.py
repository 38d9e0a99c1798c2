"""JSON Web Tokens (Slurm's auth/jwt): what `scontrol token` hands out and what the controller
accepts, with AuthAltTypes=auth/jwt, as the caller's identity (the REST server's
X-SLURM-USER-TOKEN travels this way). Made and checked here; no grpc, no policy on who may get
one (controller/token_mgr.py).

A token is HS256 over Slurm's claims, signed with the cluster's JWT key:

    {"alg": "HS256", "typ": "JWT"} . {"iat": 1764630000, "exp": 1764631800, "sun": "alice"} . MAC

`sun` ("slurm user name") is the only identity in it: the uid and gid are alice's in the
controller's user database, never a claim. Unlike a u1 token (tokens.py) a JWT has no nonce and is
good for every call until it expires, as in Slurm; so it is long-lived only as far as
MAX_LIFESPAN allows, and a caller proved by one may not mint another (token_mgr.py).

The key is AuthAltParameters=jwt_key=PATH, else StateSaveLocation/jwt_hs256.key (Slurm's name),
made by the controller on its first start: 32 random bytes, mode 0600. Only the primary makes it:
a backup (SlurmctldHost index > 0) that made its own would refuse every token the primary issued
after a failover, so there a missing key is a start-up error naming the file to copy. Whoever reads it can be
anyone, root included; so a key file group or others can read or write, or one owned by someone
other than root or the controller's user, is refused, as keys.py refuses the cluster key.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import stat
import threading
import time

import jwt as pyjwt

from ..errors import ConfigError, InvalidRequest
from .tokens import CLOCK_SKEW, AuthError, UserIdentity

PLUGIN = "auth/jwt"  # the AuthAltTypes= value that turns it on
ALGORITHM = "HS256"  # the only one made or accepted: "none", RS*, HS512 ... are refused
ISSUER = "jwt"  # UserIdentity.issuer of a caller a JWT proved (token_mgr refuses them new ones)
KEY_NAME = "jwt_hs256.key"
KEY_BYTES = 32  # RFC 7518 §3.2: an HS256 key at least as long as the hash
DEFAULT_LIFESPAN = 1800  # seconds (Slurm's DEFAULT_AUTH_TOKEN_LIFESPAN)
_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def enabled(cfg) -> bool:
    return PLUGIN in cfg.auth_alt_types


def key_path(cfg) -> str:
    return cfg.jwt_key_file or os.path.join(cfg.state_save_location, KEY_NAME)


def looks_like_jwt(token: str) -> bool:
    """Three base64url parts joined by dots: never a u1 or d1 token, whose parts are '|'-joined."""
    return bool(_SHAPE.fullmatch(token))


# ---- the key ------------------------------------------------------------------------------------
def _checked(fd: int, path: str) -> None:
    """The opened file itself is checked (fstat), so a swap after the check changes nothing."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"the JWT key {path} is not a regular file")
    if st.st_mode & 0o077:
        raise ConfigError(f"the JWT key {path} has mode {stat.S_IMODE(st.st_mode):04o}: whoever "
                          f"reads it can make a token for any user, and whoever writes it "
                          f"chooses the key; group and others must have no access "
                          f"(chmod 600 {path})")
    if st.st_uid not in (0, os.geteuid()):
        raise ConfigError(f"the JWT key {path} is owned by uid {st.st_uid}, not by root or the "
                          f"controller's user")


def _create(path: str) -> None:
    """32 random bytes, 0600, linked in whole: a controller starting beside another agrees on one."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(KEY_BYTES))
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another controller made it first: theirs is the key
    finally:
        os.unlink(tmp)


def load_key(path: str, create: bool = False) -> bytes:
    """The key in the file at path (all its bytes, as Slurm reads it); made first when absent
    and create is set (the default path only: a jwt_key= that names no file is a typo)."""
    if create and not os.path.lexists(path):
        _create(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    except OSError as e:
        raise ConfigError(f"cannot read the JWT key {path} (AuthAltParameters=jwt_key=): "
                          f"{e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        _checked(f.fileno(), path)
        key = f.read(1 << 16)
    if len(key) < KEY_BYTES:
        raise ConfigError(f"the JWT key {path} holds {len(key)} bytes: HS256 needs at least "
                          f"{KEY_BYTES} (head -c 32 /dev/urandom > {path})")
    return key


class KeyMissing(ConfigError):
    """A backup controller found no JWT key: it must be the primary's, copied or shared."""


_keys: dict[str, bytes] = {}
_keys_lock = threading.Lock()


def cluster_key(cfg, index: int = 0) -> bytes:
    """The cluster's JWT key, read once per process (the controller's start reads it first;
    IssueToken and the checks then use that same key until a restart, as slurmctld does).
    `index`: this controller's SlurmctldHost line (a backup never makes the key)."""
    path = key_path(cfg)
    backup = index > 0 and len(cfg.controller_hosts) > 1
    with _keys_lock:
        if path not in _keys:
            if backup and not cfg.jwt_key_file and not os.path.lexists(path):
                raise KeyMissing(
                    f"the JWT key {path} does not exist: a backup controller (SlurmctldHost "
                    f"index {index}) never makes one, since every controller must check tokens "
                    f"with the same key: copy {path} from the primary (mode 0600, owned by "
                    f"SlurmUser), or name a file both read with AuthAltParameters=jwt_key=")
            _keys[path] = load_key(path, create=not cfg.jwt_key_file and not backup)
        return _keys[path]


# ---- tokens -------------------------------------------------------------------------------------
def make(key: bytes, user_name: str, lifespan: int, now: float | None = None) -> tuple[str, int]:
    """A token for user_name good for lifespan seconds; (token, expiry as epoch seconds)."""
    if lifespan <= 0:
        raise InvalidRequest(f"cannot issue a token with lifespan {lifespan}")
    iat = int(time.time() if now is None else now)
    exp = iat + int(lifespan)
    token = pyjwt.encode({"iat": iat, "exp": exp, "sun": user_name}, key, algorithm=ALGORITHM)
    return token, exp


def _decoded(token: str, key: bytes) -> dict:
    """The claims, once the signature holds under HS256 and no other algorithm."""
    try:
        alg = pyjwt.get_unverified_header(token).get("alg")
    except pyjwt.PyJWTError:
        raise AuthError("malformed JWT") from None
    if alg != ALGORITHM:
        raise AuthError(f"JWT signed with {alg!r}: only {ALGORITHM} is accepted")
    try:
        # the times are checked below against an injectable clock; PyJWT checks the signature
        return pyjwt.decode(token, key, algorithms=[ALGORITHM],
                            options={"verify_exp": False, "verify_iat": False,
                                     "verify_nbf": False, "require": ["iat", "exp", "sun"]})
    except pyjwt.InvalidSignatureError:
        raise AuthError("invalid JWT (bad signature: was it made with this cluster's key?)") from None
    except pyjwt.MissingRequiredClaimError as e:
        raise AuthError(f"JWT without the '{e.claim}' claim") from None
    except pyjwt.PyJWTError:
        raise AuthError("malformed JWT") from None


def verify(token: str, key: bytes, now: float | None = None) -> str:
    """The user name a valid token names; AuthError saying what is wrong otherwise."""
    claims = _decoded(token, key)
    iat, exp, sun = claims["iat"], claims["exp"], claims["sun"]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (iat, exp)):
        raise AuthError("malformed JWT (iat and exp must be whole seconds)")
    if not isinstance(sun, str) or not sun or not sun.isprintable() or len(sun) > 256:
        raise AuthError("malformed JWT (sun must be a user name)")
    now = time.time() if now is None else now
    if now >= exp:  # Slurm allows no grace past exp
        raise AuthError(f"expired JWT (for {sun}: get a new one with scontrol token)")
    if iat > now + CLOCK_SKEW:
        raise AuthError("JWT issued in the future (are the controllers' clocks in step?)")
    return sun


def identity(token: str, key: bytes, now: float | None = None, getpwnam=pwd.getpwnam) -> UserIdentity:
    """Who a valid token proves: sun's uid and primary gid from the user database."""
    sun = verify(token, key, now)
    try:
        pw = getpwnam(sun)
    except (KeyError, ValueError):
        raise AuthError(f"JWT for {sun}, who is not a user on the controller's host") from None
    return UserIdentity(uid=pw.pw_uid, gid=pw.pw_gid, host="", issuer=ISSUER)


def acceptor(cfg, index: int = 0):
    """check(token) -> UserIdentity for the controller's authenticator. Without
    AuthAltTypes=auth/jwt every JWT is refused; with it the key is read (or made) now, at start."""
    if not enabled(cfg):
        def refuse(token: str) -> UserIdentity:
            raise AuthError("a JWT, but this cluster does not accept them (AuthAltTypes=auth/jwt "
                            "is not set)")
        return refuse
    key = cluster_key(cfg, index)
    return lambda token: identity(token, key)
