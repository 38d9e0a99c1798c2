"""The cluster key and the keys derived from it (Slurm's slurm.key, munge.key's role).

The controller holds the cluster key. Every other key is derived from it for one scope, so a
host that holds only its own derived key can prove itself and check what concerns it, and
nothing more:

  node:NAME   an agent: its daemon tokens both ways, the launch credentials for its node, the
              user tokens it issues on its socket
  host:NAME   `pyslurm-lite authd` on a login host: the user tokens it issues

A key file holds either the cluster key (one line of hex, what `cluster up` makes) or one derived
key (`pyslurm-lite keygen --scope node:node1` prints it as `node:node1 <hex>`). A file group or
others may read, or an empty one, is refused: whoever reads it can be anyone on the cluster.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat

from ..errors import ConfigError

CLUSTER = "cluster"
MIN_KEY_BYTES = 16


def derive(cluster_key: bytes, scope: str) -> bytes:
    """The key for one scope (node:NAME, host:NAME), from the cluster key."""
    return hmac.new(cluster_key, b"pyslurm-lite/v1/" + scope.encode(), hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """A short public name for a key (which key signed a token), not a secret."""
    return hashlib.sha256(b"kid" + key).hexdigest()[:12]


class KeyRing:
    """What this host holds: the cluster key (the controller; any key derives from it) or one
    scope's key. `key_for(scope)` raises ConfigError for a scope it cannot make."""

    def __init__(self, scope: str, key: bytes):
        self.scope, self._key = scope, key
        self._derived: dict[str, bytes] = {}

    @property
    def is_cluster(self) -> bool:
        return self.scope == CLUSTER

    def key_for(self, scope: str) -> bytes:
        if self.is_cluster:
            k = self._derived.get(scope)
            if k is None:
                k = self._derived[scope] = derive(self._key, scope)
            return k
        if scope != self.scope:
            raise ConfigError(f"this host holds the key of {self.scope}, not of {scope}")
        return self._key

    def can_sign_for(self, scope: str) -> bool:
        return self.is_cluster or scope == self.scope


def check_key_file(path: str) -> None:
    """Refuse a key file that others could read or replace (as munged does)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise ConfigError(f"cannot read the cluster key {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"the cluster key {path} is not a regular file")
    if st.st_mode & 0o077:
        raise ConfigError(f"the cluster key {path} has mode {stat.S_IMODE(st.st_mode):04o}: group "
                          f"and others must have no access (chmod 600 {path})")
    if st.st_uid not in (0, os.geteuid()):
        raise ConfigError(f"the cluster key {path} is owned by uid {st.st_uid}, not by root or "
                          f"this daemon's user")


def parse_key_text(text: str, path: str) -> KeyRing:
    words = text.split()
    if len(words) == 1:
        scope, hexkey = CLUSTER, words[0]
    elif len(words) == 2 and words[0].startswith(("node:", "host:")):
        scope, hexkey = words
    else:
        raise ConfigError(f"the cluster key {path} is empty or malformed: expected one line of hex "
                          f"(the cluster key) or 'node:NAME HEX' (a node's key)")
    try:
        raw = bytes.fromhex(hexkey)
    except ValueError:
        raise ConfigError(f"the key in {path} is not hex") from None
    if len(raw) < MIN_KEY_BYTES:
        raise ConfigError(f"the key in {path} is too short ({len(raw)} bytes; at least {MIN_KEY_BYTES})")
    # the cluster key signs as its hex text (as auth.key always has), a derived key as bytes
    return KeyRing(scope, hexkey.encode() if scope == CLUSTER else raw)


def load(path: str) -> KeyRing:
    """The key ring in the key file at path, after checking who may read the file."""
    check_key_file(path)
    with open(path, "rb") as f:
        text = f.read().decode("ascii", errors="replace")
    return parse_key_text(text, path)


def load_or_create(path: str) -> KeyRing:
    """The key file at path, created (0600, a new cluster key) if absent. Creation is atomic,
    so a controller and agents starting together agree on one key."""
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_hex(32).encode() + b"\n")
        try:
            os.link(tmp, path)  # fails if another process won the race; then theirs is the key
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    return load(path)


def scoped_key_text(ring: KeyRing, scope: str) -> str:
    """The key file for one scope (keygen's output), from a cluster key."""
    if not scope.startswith(("node:", "host:")) or len(scope) < 6:
        raise ConfigError(f"bad scope '{scope}': node:NAME or host:NAME")
    return f"{scope} {ring.key_for(scope).hex()}\n"
