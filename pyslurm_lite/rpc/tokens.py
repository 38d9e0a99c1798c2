"""User tokens (who is calling, as the kernel said) and daemon tokens (which daemon is calling
which method), made and checked; no grpc here.

A user token is what Slurm's auth/slurm "SACK" hands out: a local daemon that holds a key asks
the kernel who is on the other end of its Unix socket (SO_PEERCRED) and signs that, briefly:

    u1|KID|CLUSTER|AUDIENCE|UID|GID|HOST|ISSUED|EXPIRY|NONCE|MAC

KID names the issuer's scope (node:NAME, host:NAME, or cluster for the controller itself); the
MAC is HMAC-SHA256 with that scope's key (keys.py) over everything before it. The controller
checks MAC, audience, cluster, expiry and that the nonce was never seen (Replays), then takes the
uid and nothing else from the token; names and groups come from the system (identity.py).
AUDIENCE names one controller (controller_audience: "slurmctld" for the primary, "slurmctld/1"
for the first backup): each replay cache is one process's, so a token good at every controller
could be taken by a listener on a dead controller's port and replayed at the live one.

A daemon token proves a daemon made this call to this method:

    d1|SENDER|METHOD|ISSUED|NONCE|MAC

with the key of the agent involved (node:NAME), whichever way the call goes: an agent signs its
calls to the controller as SENDER=node:NAME, the controller signs its calls to that agent as
SENDER=slurmctld with that same node's key. So holding node1's key drives neither node2 nor the
controller on node2's behalf.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from ..errors import SlurmError, Unauthenticated

USER_VERSION, DAEMON_VERSION = "u1", "d1"
from .common import CONTROLLER_AUDIENCE, controller_audience

CONTROLLER = CONTROLLER_AUDIENCE  # the primary's audience (controller_audience), and the sender of its own calls
CLOCK_SKEW = 30.0  # seconds two hosts' clocks may disagree
DAEMON_TTL = 60.0  # seconds a daemon token is good for


AuthError = Unauthenticated


def controller_audiences(cfg) -> frozenset[str]:
    """What an auth socket hands out tokens for: one audience per SlurmctldHost= line."""
    count = len(getattr(cfg, "controller_hosts", None) or ()) or 1
    return frozenset(controller_audience(i) for i in range(count))


@dataclass(frozen=True)
class UserIdentity:
    uid: int
    gid: int
    host: str
    issuer: str  # the scope whose key signed it


def _mac(key: bytes, text: str) -> str:
    return hmac.digest(key, text.encode(), "sha256").hex()  # one-shot, C: every call pays it


def _clean(value: str) -> str:
    if "|" in value or not value.isprintable():
        raise AuthError(f"cannot put {value!r} in a token")
    return value


def make_user_token(key: bytes, issuer: str, cluster: str, audience: str, uid: int, gid: int,
                    host: str, ttl: float, now: float | None = None) -> str:
    now = time.time() if now is None else now
    body = "|".join([USER_VERSION, _clean(issuer), _clean(cluster), _clean(audience), str(uid),
                     str(gid), _clean(host), f"{now:.3f}", f"{now + min(ttl, 60.0):.3f}",
                     secrets.token_hex(12)])
    return f"{body}|{_mac(key, body)}"


class Replays:
    """Nonces seen, kept until their token expires: a token is good for one call."""

    MAX = 1_000_000  # nonces held at most: past that, calls are refused rather than memory grown

    def __init__(self):
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()
        self._next_purge = 0.0

    def admit(self, nonce: str, expiry: float, now: float) -> None:
        with self._lock:
            if now >= self._next_purge or len(self._seen) >= self.MAX:
                self._seen = {n: e for n, e in self._seen.items() if e + CLOCK_SKEW >= now}
                self._next_purge = now + 5.0
                if len(self._seen) >= self.MAX:
                    raise AuthError("too many authentications in flight; try again")
            if nonce in self._seen:
                raise AuthError("replayed authentication token")
            self._seen[nonce] = expiry


def _numbers(*values: str) -> list[float]:
    try:
        return [float(v) for v in values]
    except ValueError:
        raise AuthError("malformed authentication token") from None


def verify_user_token(token: str, key_of, cluster: str, audience: str, replays: Replays,
                      now: float | None = None) -> UserIdentity:
    """The identity in a user token; AuthError saying what is wrong otherwise. key_of(scope)
    gives the key of the scope that issued it (raising for a scope it cannot give)."""
    parts = token.split("|")
    if len(parts) != 11 or parts[0] != USER_VERSION:
        raise AuthError("malformed authentication token")
    _, issuer, tcluster, taud, uid, gid, host, issued, expiry, nonce, mac = parts
    try:
        key = key_of(issuer)
    except SlurmError:
        raise AuthError(f"token issued by {issuer}, whose key this daemon cannot check") from None
    if not hmac.compare_digest(mac, _mac(key, token.rsplit("|", 1)[0])):
        raise AuthError("invalid authentication token (bad signature: is the key the cluster's?)")
    if tcluster != cluster:
        raise AuthError(f"authentication token for cluster {tcluster}, not {cluster}")
    if taud != audience:
        raise AuthError(f"authentication token for {taud}, not {audience}")
    now = time.time() if now is None else now
    t_issued, t_expiry = _numbers(issued, expiry)
    if t_issued > now + CLOCK_SKEW or now > t_expiry + CLOCK_SKEW or t_expiry - t_issued > 60.0:
        raise AuthError("expired authentication token (are the hosts' clocks in step?)")
    if not (uid.isdigit() and gid.isdigit()):
        raise AuthError("malformed authentication token")
    replays.admit(nonce, t_expiry, now)
    return UserIdentity(int(uid), int(gid), host, issuer)


def make_daemon_token(key: bytes, sender: str, method: str, now: float | None = None) -> str:
    now = time.time() if now is None else now
    body = "|".join([DAEMON_VERSION, _clean(sender), _clean(method), f"{now:.3f}", secrets.token_hex(12)])
    return f"{body}|{_mac(key, body)}"


def daemon_sender(token: str) -> str:
    """Who a daemon token says sent it (unchecked: to pick the key to check it with)."""
    parts = token.split("|")
    return parts[1] if len(parts) == 6 and parts[0] == DAEMON_VERSION else ""


def daemon_method(method: str, index: int) -> str:
    """What a daemon token names for a call of `method` to controller line `index`: the method
    alone for the primary (a lone controller's tokens unchanged), method@slurmctld/N for a backup,
    so a token a fake controller collected on a dead one's port is refused by the live one."""
    return method if index == 0 else f"{method}@{controller_audience(index)}"


def verify_daemon_token(token: str, key: bytes, sender: str, method: str, replays: Replays,
                        now: float | None = None) -> None:
    parts = token.split("|")
    if len(parts) != 6 or parts[0] != DAEMON_VERSION:
        raise AuthError("missing or malformed daemon token (cluster key)")
    _, tsender, tmethod, issued, nonce, mac = parts
    if not hmac.compare_digest(mac, _mac(key, token.rsplit("|", 1)[0])):
        raise AuthError("invalid daemon token (bad or missing cluster key)")
    if tsender != sender or tmethod != method:
        raise AuthError(f"daemon token of {tsender} for {tmethod}, used by {sender} for {method}")
    now = time.time() if now is None else now
    (t_issued,) = _numbers(issued)
    if abs(now - t_issued) > DAEMON_TTL:
        raise AuthError("expired daemon token (are the hosts' clocks in step?)")
    replays.admit(nonce, t_issued + DAEMON_TTL, now)
