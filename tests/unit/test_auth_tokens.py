"""Authenticated identity, piece by piece: the keys (keys.py), user and daemon tokens
(tokens.py), the local auth socket that hands out user tokens (authsock.py) and the launch
credentials the agents act on (credential.py). Every refusal here is one an attacker would try."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time

import pytest

from pyslurm_lite.errors import ConfigError, Unauthenticated
from pyslurm_lite.rpc import authsock, credential, keys, tokens

CLUSTER_KEY_TEXT = "0123456789abcdef" * 4  # what `cluster up` writes: one line of hex
CLUSTER, AUD = "local", tokens.CONTROLLER


def _ring() -> keys.KeyRing:
    return keys.parse_key_text(CLUSTER_KEY_TEXT + "\n", "test.key")


def _key_file(tmp_path, text: str, mode: int = 0o600) -> str:
    path = str(tmp_path / "auth.key")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


# ---- keys ---------------------------------------------------------------------------------------
def test_derive_is_per_scope_and_per_cluster():
    k = CLUSTER_KEY_TEXT.encode()
    assert keys.derive(k, "node:node1") == keys.derive(k, "node:node1")
    assert keys.derive(k, "node:node1") != keys.derive(k, "node:node2")
    assert keys.derive(k, "node:node1") != keys.derive(k, "host:node1")
    assert keys.derive(k, "node:node1") != keys.derive(b"f" * 64, "node:node1")
    assert len(keys.derive(k, "node:node1")) == 32
    ring = _ring()
    assert ring.is_cluster and ring.key_for("node:node1") == keys.derive(k, "node:node1")
    assert keys.key_id(ring.key_for("node:node1")) != keys.key_id(ring.key_for("node:node2"))


def test_key_file_round_trip(tmp_path):
    ring = keys.load(_key_file(tmp_path, CLUSTER_KEY_TEXT + "\n"))
    assert ring.is_cluster and ring.key_for("node:n1") == _ring().key_for("node:n1")
    scoped = keys.scoped_key_text(ring, "node:n1")
    node_ring = keys.load(_key_file(tmp_path, scoped))
    assert node_ring.scope == "node:n1" and not node_ring.is_cluster
    assert node_ring.key_for("node:n1") == ring.key_for("node:n1")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o606, 0o644, 0o610])
def test_key_file_readable_by_group_or_others_is_refused(tmp_path, mode):
    path = _key_file(tmp_path, CLUSTER_KEY_TEXT + "\n", mode)
    with pytest.raises(ConfigError, match="chmod 600"):
        keys.load(path)


def test_key_file_must_be_a_regular_file(tmp_path):
    path = str(tmp_path / "keydir")
    os.mkdir(path, 0o700)
    with pytest.raises(ConfigError, match="not a regular file"):
        keys.load(path)
    with pytest.raises(ConfigError, match="cannot read"):
        keys.load(str(tmp_path / "absent.key"))


@pytest.mark.parametrize("text", [
    "",                                             # empty
    "\n\n",                                         # only blank lines
    "abc def ghi\n",                                # three words
    f"cluster {CLUSTER_KEY_TEXT}\n",                # a scope that is neither node: nor host:
    "node:n1 zz" + "00" * 20 + "\n",                # a node key that is not hex
    "node:n1 " + "ab" * 8 + "\n",                   # ... too short (8 bytes)
    "0123456789\n",                                 # a cluster key too short
])
def test_empty_or_malformed_key_file_is_refused(tmp_path, text):
    with pytest.raises(ConfigError):
        keys.load(_key_file(tmp_path, text))


def test_cluster_key_must_be_hex_of_enough_bytes(tmp_path):
    with pytest.raises(ConfigError):
        keys.load(_key_file(tmp_path, "not-hex-but-long-enough-to-pass\n"))
    with pytest.raises(ConfigError):
        keys.load(_key_file(tmp_path, "0123456789abcdef\n"))  # 8 bytes of key


def test_node_key_cannot_make_another_scopes_key(tmp_path):
    ring = keys.load(_key_file(tmp_path, keys.scoped_key_text(_ring(), "node:node1")))
    assert ring.can_sign_for("node:node1")
    for other in ("node:node2", "host:login", keys.CLUSTER):
        assert not ring.can_sign_for(other)
        with pytest.raises(ConfigError):
            ring.key_for(other)
    with pytest.raises(ConfigError):
        keys.scoped_key_text(_ring(), "cluster")


def test_load_or_create_makes_a_private_key(tmp_path):
    path = str(tmp_path / "state" / "auth.key")
    old = os.umask(0)  # whatever the daemon's umask, the key is 0600
    try:
        ring = keys.load_or_create(path)
    finally:
        os.umask(old)
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_ISREG(st.st_mode)
    assert ring.is_cluster
    assert keys.load_or_create(path).key_for("node:x") == ring.key_for("node:x")  # kept, not remade
    assert [n for n in os.listdir(tmp_path / "state")] == ["auth.key"]  # no temporary left


# ---- user tokens --------------------------------------------------------------------------------
def _user_token(issuer="node:node1", uid=1234, gid=5678, cluster=CLUSTER, audience=AUD, ttl=10.0,
                now=None, key=None) -> str:
    key = _ring().key_for(issuer) if key is None else key
    return tokens.make_user_token(key, issuer, cluster, audience, uid, gid, "host1", ttl, now)


def _verify(token: str, replays=None, now=None, cluster=CLUSTER, audience=AUD, key_of=None):
    return tokens.verify_user_token(token, key_of or _ring().key_for, cluster, audience,
                                    replays or tokens.Replays(), now)


def _resign(fields: list[str], key: bytes) -> str:
    body = "|".join(fields)
    return f"{body}|{tokens._mac(key, body)}"


def test_user_token_round_trip():
    ident = _verify(_user_token())
    assert ident == tokens.UserIdentity(uid=1234, gid=5678, host="host1", issuer="node:node1")
    # the controller checks a token made with the cluster key, or any scope's
    assert _verify(_user_token(issuer=keys.CLUSTER, uid=0, gid=0)).uid == 0
    assert _verify(_user_token(issuer="host:login1")).issuer == "host:login1"


@pytest.mark.parametrize("field,value", [(4, "0"), (5, "0"), (6, "otherhost"), (1, "node:node2"),
                                         (8, "9999999999.000"), (9, "00" * 12)])
def test_tampered_user_token_field_is_refused(field, value):
    parts = _user_token().split("|")
    assert parts[field] != value
    parts[field] = value
    with pytest.raises(tokens.AuthError, match="signature|malformed"):
        _verify("|".join(parts))


def test_tampered_or_missing_user_token_mac_is_refused():
    token = _user_token()
    body, mac = token.rsplit("|", 1)
    flipped = ("0" if mac[0] != "0" else "1") + mac[1:]
    for bad in (f"{body}|{flipped}", f"{body}|", f"{body}|{mac[:-2]}"):
        with pytest.raises(tokens.AuthError, match="signature"):
            _verify(bad)
    for bad in ("", "u1", body, token + "|x", "u2" + token[2:]):
        with pytest.raises(tokens.AuthError, match="malformed"):
            _verify(bad)


def test_user_token_for_another_cluster_or_audience_is_refused():
    with pytest.raises(tokens.AuthError, match="cluster"):
        _verify(_user_token(cluster="othercluster"))
    with pytest.raises(tokens.AuthError, match="not slurmctld"):
        _verify(_user_token(audience="slurmd"))
    # the same token, checked as if this were another cluster or service
    with pytest.raises(tokens.AuthError, match="cluster"):
        _verify(_user_token(), cluster="othercluster")
    with pytest.raises(tokens.AuthError, match="slurmd"):
        _verify(_user_token(), audience="slurmd")


def test_expired_user_token_is_refused():
    now = time.time()
    token = _user_token(ttl=10, now=now)
    with pytest.raises(tokens.AuthError, match="expired"):
        _verify(token, now=now + 10 + tokens.CLOCK_SKEW + 1)
    assert _verify(token, now=now + 10 + tokens.CLOCK_SKEW - 1).uid == 1234  # skew tolerated


def test_user_token_issued_in_the_future_is_refused():
    now = time.time()
    token = _user_token(now=now + tokens.CLOCK_SKEW + 60)
    with pytest.raises(tokens.AuthError, match="expired"):
        _verify(token, now=now)


def test_user_token_living_longer_than_a_minute_is_refused():
    """make_user_token caps ttl at 60 s; a token signed (by a key holder) with a longer life is
    still refused, so a leaked token is good briefly at most."""
    key, now = _ring().key_for("node:node1"), time.time()
    assert float(_user_token(ttl=3600, now=now).split("|")[8]) == pytest.approx(now + 60, abs=0.01)
    parts = _user_token(now=now).split("|")[:-1]
    parts[8] = f"{now + 3600:.3f}"
    with pytest.raises(tokens.AuthError, match="expired"):
        _verify(_resign(parts, key), now=now + 1)


def test_user_token_with_a_signed_bad_uid_is_refused():
    key = _ring().key_for("node:node1")
    for field, value in ((4, "-1"), (4, "root"), (5, "x"), (7, "soon")):
        parts = _user_token().split("|")[:-1]
        parts[field] = value
        with pytest.raises(tokens.AuthError, match="malformed"):
            _verify(_resign(parts, key))


def test_replayed_user_token_is_refused():
    replays, token = tokens.Replays(), _user_token()
    assert _verify(token, replays).uid == 1234
    with pytest.raises(tokens.AuthError, match="replayed"):
        _verify(token, replays)
    assert _verify(_user_token(), replays).uid == 1234  # a fresh token from the same user is fine


def test_replays_forget_only_expired_nonces():
    replays, now = tokens.Replays(), 1000.0
    replays.admit("n1", now + 10, now)
    with pytest.raises(tokens.AuthError):
        replays.admit("n1", now + 10, now + 20)  # still within expiry + skew
    replays.admit("n1", now + 10, now + 10 + tokens.CLOCK_SKEW + 6)  # purged long after expiry


def test_user_token_of_a_scope_whose_key_differs_is_refused():
    other_ring = keys.parse_key_text("fedcba9876543210" * 4, "other.key")
    # signed by node1 of another cluster (another cluster key), claiming to be node1 of ours
    with pytest.raises(tokens.AuthError, match="signature"):
        _verify(_user_token(key=other_ring.key_for("node:node1")))
    # node2's key used for a token that says node1 issued it
    with pytest.raises(tokens.AuthError, match="signature"):
        _verify(_user_token(issuer="node:node1", key=_ring().key_for("node:node2")))
    # a token claiming to come from the controller (cluster scope) made with a node's key
    with pytest.raises(tokens.AuthError, match="signature"):
        _verify(_user_token(issuer=keys.CLUSTER, key=_ring().key_for("node:node1")))


def test_user_token_of_a_scope_the_checker_cannot_key_is_refused():
    node_ring = keys.parse_key_text(keys.scoped_key_text(_ring(), "node:node1"), "n1.key")
    with pytest.raises(tokens.AuthError, match="cannot check"):
        _verify(_user_token(issuer="node:node2"), key_of=node_ring.key_for)


def test_user_token_refuses_separators_in_fields():
    with pytest.raises(tokens.AuthError):
        tokens.make_user_token(b"k" * 32, "node:n1", "local|x", AUD, 1, 1, "h", 10)
    with pytest.raises(tokens.AuthError):
        tokens.make_user_token(b"k" * 32, "node:n1", "local", AUD, 1, 1, "h\n", 10)


# ---- daemon tokens ------------------------------------------------------------------------------
NODE1 = "node:node1"


def _node1_key() -> bytes:
    return _ring().key_for(NODE1)


def test_daemon_token_round_trip():
    token = tokens.make_daemon_token(_node1_key(), NODE1, "NodeHeartbeat")
    assert tokens.daemon_sender(token) == NODE1
    tokens.verify_daemon_token(token, _node1_key(), NODE1, "NodeHeartbeat", tokens.Replays())
    # the controller's call to node1's agent, with node1's key
    token = tokens.make_daemon_token(_node1_key(), tokens.CONTROLLER, "LaunchJobs")
    tokens.verify_daemon_token(token, _node1_key(), tokens.CONTROLLER, "LaunchJobs", tokens.Replays())


def test_daemon_token_is_bound_to_its_method():
    token = tokens.make_daemon_token(_node1_key(), NODE1, "NodeHeartbeat")
    with pytest.raises(tokens.AuthError, match="for NodeHeartbeat, used by .* for RegisterNode"):
        tokens.verify_daemon_token(token, _node1_key(), NODE1, "RegisterNode", tokens.Replays())


def test_daemon_token_is_bound_to_its_sender():
    token = tokens.make_daemon_token(_node1_key(), NODE1, "NodeHeartbeat")
    with pytest.raises(tokens.AuthError, match="used by node:node2"):
        tokens.verify_daemon_token(token, _node1_key(), "node:node2", "NodeHeartbeat", tokens.Replays())
    # node1's agent cannot pass for the controller when calling another agent with its key
    with pytest.raises(tokens.AuthError):
        tokens.verify_daemon_token(token, _node1_key(), tokens.CONTROLLER, "NodeHeartbeat",
                                   tokens.Replays())
    # nor rewrite the sender: the MAC covers it
    forged = token.replace(NODE1, "node:node2", 1)
    with pytest.raises(tokens.AuthError, match="invalid"):
        tokens.verify_daemon_token(forged, _node1_key(), "node:node2", "NodeHeartbeat", tokens.Replays())


def test_daemon_token_with_another_key_is_refused():
    node2_key = _ring().key_for("node:node2")
    token = tokens.make_daemon_token(node2_key, NODE1, "NodeHeartbeat")  # node2 posing as node1
    with pytest.raises(tokens.AuthError, match="invalid"):
        tokens.verify_daemon_token(token, _node1_key(), NODE1, "NodeHeartbeat", tokens.Replays())
    for bad in ("", "d1|x", "u1|" + "|".join("x" * 10)):
        with pytest.raises(tokens.AuthError, match="malformed"):
            tokens.verify_daemon_token(bad, _node1_key(), NODE1, "NodeHeartbeat", tokens.Replays())


def test_replayed_daemon_token_is_refused():
    replays = tokens.Replays()
    token = tokens.make_daemon_token(_node1_key(), NODE1, "NodeHeartbeat")
    tokens.verify_daemon_token(token, _node1_key(), NODE1, "NodeHeartbeat", replays)
    with pytest.raises(tokens.AuthError, match="replayed"):
        tokens.verify_daemon_token(token, _node1_key(), NODE1, "NodeHeartbeat", replays)


def test_expired_daemon_token_is_refused():
    now = time.time()
    old = tokens.make_daemon_token(_node1_key(), NODE1, "NodeHeartbeat", now=now - tokens.DAEMON_TTL - 1)
    with pytest.raises(tokens.AuthError, match="expired"):
        tokens.verify_daemon_token(old, _node1_key(), NODE1, "NodeHeartbeat", tokens.Replays(), now)
    future = tokens.make_daemon_token(_node1_key(), NODE1, "NodeHeartbeat", now=now + tokens.DAEMON_TTL + 1)
    with pytest.raises(tokens.AuthError, match="expired"):
        tokens.verify_daemon_token(future, _node1_key(), NODE1, "NodeHeartbeat", tokens.Replays(), now)


# ---- the auth socket ----------------------------------------------------------------------------
@pytest.fixture
def sock_dir():
    """A short, world-traversable directory (AF_UNIX paths are short; another user may connect)."""
    d = tempfile.mkdtemp(prefix="plt-sack-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _issuer(scope=NODE1):
    key = _ring().key_for(scope)

    def issue(uid: int, gid: int, audience: str) -> str:
        return tokens.make_user_token(key, scope, CLUSTER, audience, uid, gid, "host1", 10)
    return issue


@pytest.fixture
def server(sock_dir):
    srv = authsock.AuthSocketServer(os.path.join(sock_dir, "slurmd-node1.socket"), _issuer(),
                                    frozenset({AUD}))
    srv.start()
    yield srv
    srv.close()


def test_fetch_token_names_the_callers_real_uid_and_gid(server, monkeypatch):
    # the client's own idea of who it is is never asked, so lying about it changes nothing
    monkeypatch.setattr(os, "getuid", lambda: 4242)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    monkeypatch.setattr(os, "getgid", lambda: 4343)
    token = authsock.fetch_token(server.path, AUD)
    monkeypatch.undo()
    ident = _verify(token)
    assert (ident.uid, ident.gid) == (os.getuid(), os.getgid())
    assert ident.issuer == NODE1
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o666  # any local user may ask


def test_fetch_token_as_another_user_names_that_user(server):
    """Run by a real other user (nobody), the token names nobody's uid and gid."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user")
    import pwd
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    # plain sockets and the protocol (nobody may not be able to import this project)
    code = ("import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
            "s.sendall(b'TOKEN slurmctld\\n'); print(s.recv(4096).decode().strip())")
    r = subprocess.run(["/usr/bin/python3", "-c", code, server.path], capture_output=True,
                       text=True, user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
                       timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("OK "), (r.stdout, r.stderr)
    ident = _verify(r.stdout[3:].strip())
    assert (ident.uid, ident.gid) == (nobody.pw_uid, nobody.pw_gid)


def _raw(path: str, data: bytes) -> str:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
        s.sendall(data)
        out = b""
        while not out.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
        return out.decode()
    finally:
        s.close()


def test_bad_request_gets_err(server):
    for request in (b"HELLO\n", b"TOKEN\n", b"TOKEN slurmd\n", b"TOKEN slurmctld extra\n",
                    b"token slurmctld\n", b"\n"):
        reply = _raw(server.path, request)
        assert reply.startswith("ERR ") and "bad request" in reply, (request, reply)
    assert _raw(server.path, b"TOKEN slurmctld\n").startswith("OK u1|")
    with pytest.raises(Unauthenticated, match="bad request"):
        authsock.fetch_token(server.path, "slurmd")  # an audience it does not serve


def test_issuer_refusal_is_an_err_with_its_message(sock_dir):
    def refuse(uid, gid, audience):
        raise ValueError(f"uid {uid} may not have tokens here")
    srv = authsock.AuthSocketServer(os.path.join(sock_dir, "authd.socket"), refuse, frozenset({AUD}))
    srv.start()
    try:
        assert _raw(srv.path, b"TOKEN slurmctld\n").startswith(f"ERR uid {os.getuid()} may not")
        with pytest.raises(Unauthenticated, match="may not have tokens here"):
            authsock.fetch_token(srv.path, AUD)
    finally:
        srv.close()
    assert not os.path.exists(srv.path)


def test_fetch_token_falls_back_to_another_socket_in_the_directory(server, sock_dir):
    configured = os.path.join(sock_dir, "sack.socket")  # AuthInfo=socket=, no authd running
    assert not os.path.exists(configured)
    assert _verify(authsock.fetch_token(configured, AUD)).issuer == NODE1
    # a dead socket left at the configured path (a killed authd) is passed over too
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(configured)
    dead.close()
    assert _verify(authsock.fetch_token(configured, AUD)).issuer == NODE1
    assert next(authsock.socket_paths(configured)) == configured


def test_fetch_token_without_any_socket_says_what_to_do(sock_dir):
    configured = os.path.join(sock_dir, "sack.socket")
    with open(os.path.join(sock_dir, "notes.txt"), "w") as f:
        f.write("not a socket")
    for path in (configured, os.path.join(sock_dir, "absent-dir", "sack.socket")):
        with pytest.raises(Unauthenticated) as e:
            authsock.fetch_token(path, AUD)
        msg = str(e.value.message if hasattr(e.value, "message") else e.value)
        assert "agent" in msg and "authd" in msg and path in msg, msg


def test_server_does_not_replace_a_file_that_is_not_a_socket(sock_dir):
    path = os.path.join(sock_dir, "slurmctld.socket")
    with open(path, "w") as f:
        f.write("precious")
    with pytest.raises(OSError, match="not a socket"):
        authsock.AuthSocketServer(path, _issuer(), frozenset({AUD})).start()
    assert open(path).read() == "precious"


# ---- launch credentials -------------------------------------------------------------------------
def _node_key(node: str) -> bytes:
    return _ring().key_for(f"node:{node}")


def _claims(nodes=("node1", "node2"), job_id=7, restart=0, alloc_nodes=None) -> credential.Claims:
    return credential.Claims(
        job_id=job_id, step=credential.BATCH, restart_count=restart, uid=1234, gid=5678,
        groups=[5678, 27], user="alice", nodes=list(nodes),
        alloc={n: credential.NodeShare(2, 100, [0]) for n in (alloc_nodes or nodes)})


def test_credential_round_trip():
    cred = credential.sign(_node_key, _claims(), 60)
    for node in ("node1", "node2"):
        c = credential.verify(cred, _node_key(node), node)
        assert (c.job_id, c.step, c.restart_count, c.uid, c.gid, c.groups, c.user) == \
            (7, credential.BATCH, 0, 1234, 5678, [5678, 27], "alice")
        assert c.nodes == ["node1", "node2"] and c.alloc[node] == credential.NodeShare(2, 100, [0])
        assert c.expiry - c.issued == pytest.approx(60) and c.nonce


def test_credential_with_another_nodes_mac_is_refused():
    # node2 (holding only its own key) forges a credential for node1
    forged = credential.sign(lambda n: _node_key("node2"), _claims(), 60)
    with pytest.raises(credential.CredentialError, match="invalid launch credential for node1"):
        credential.verify(forged, _node_key("node1"), "node1")
    # node2's genuine MAC, relabelled as node1's
    cred = credential.sign(_node_key, _claims(nodes=("node2",)), 60)
    version, body, mac = cred.split(".", 2)
    relabelled = f"{version}.{body}.{mac.replace('node2=', 'node1=')}"
    with pytest.raises(credential.CredentialError, match="invalid"):
        credential.verify(relabelled, _node_key("node1"), "node1")
    # a credential that has no MAC for this node at all
    with pytest.raises(credential.CredentialError, match="invalid"):
        credential.verify(cred, _node_key("node1"), "node1")


def test_credential_with_tampered_claims_is_refused():
    cred = credential.sign(_node_key, _claims(), 60)
    version, body, macs = cred.split(".", 2)
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    for key, value in (("uid", 0), ("gid", 0), ("groups", [0]), ("user", "root"), ("job", 8),
                       ("expiry", claims["expiry"] + 3600), ("restart", 1)):
        changed = dict(claims, **{key: value})
        new_body = credential._b64(json.dumps(changed, separators=(",", ":"), sort_keys=True).encode())
        with pytest.raises(credential.CredentialError, match="invalid"):
            credential.verify(f"{version}.{new_body}.{macs}", _node_key("node1"), "node1")
    for bad in ("", "c1", "c1.x", f"c2.{body}.{macs}", f"{version}.{body}.garbage"):
        with pytest.raises(credential.CredentialError):
            credential.verify(bad, _node_key("node1"), "node1")


def test_expired_credential_is_refused():
    now = time.time()
    cred = credential.sign(_node_key, _claims(), 60, now=now - 61)
    with pytest.raises(credential.CredentialError, match="expired"):
        credential.verify(cred, _node_key("node1"), "node1", now=now)
    assert credential.verify(cred, _node_key("node1"), "node1", now=now - 2).job_id == 7


def test_credential_not_covering_this_node_is_refused():
    # node3's MAC is genuine (the controller's key made it) but the claims do not name node3
    cred = credential.sign(_node_key, _claims(nodes=("node1",)), 60)
    body = cred.split(".", 2)[1]
    extended = f"{cred},node3={credential._mac(_node_key('node3'), body, 'node3')}"
    with pytest.raises(credential.CredentialError, match="does not cover node3"):
        credential.verify(extended, _node_key("node3"), "node3")
    # an allocation on node3, and node3's genuine MAC, but node3 is not among the nodes
    cred = credential.sign(_node_key, _claims(nodes=("node1",), alloc_nodes=("node1", "node3")), 60)
    body = cred.split(".", 2)[1]
    extended = f"{cred},node3={credential._mac(_node_key('node3'), body, 'node3')}"
    with pytest.raises(credential.CredentialError, match="does not cover node3"):
        credential.verify(extended, _node_key("node3"), "node3")
    # named among the nodes, but given no allocation there
    cred = credential.sign(_node_key, _claims(nodes=("node1", "node2"), alloc_nodes=("node1",)), 60)
    with pytest.raises(credential.CredentialError, match="does not cover node2"):
        credential.verify(cred, _node_key("node2"), "node2")


def test_credential_replays_admit_once():
    replays = credential.Replays()
    cred = credential.sign(_node_key, _claims(), 60)
    claims = credential.verify(cred, _node_key("node1"), "node1")
    assert not replays.seen(claims)
    replays.admit(claims)
    assert replays.seen(claims)
    with pytest.raises(credential.CredentialError, match="already used"):
        replays.admit(credential.verify(cred, _node_key("node1"), "node1"))
    # another credential for the same run (a new nonce) is another launch
    replays.admit(credential.verify(credential.sign(_node_key, _claims(), 60), _node_key("node1"), "node1"))


def test_revocations_refuse_the_ended_run_and_earlier_and_admit_a_later_one():
    revoked = credential.Revocations()
    revoked.revoke(7, 2)
    for restart in (0, 1, 2):
        with pytest.raises(credential.CredentialError, match="revoked"):
            revoked.check(_claims(restart=restart))
    revoked.check(_claims(restart=3))  # the job was requeued: its next run may start
    revoked.check(_claims(job_id=8, restart=0))  # other jobs are untouched
    revoked.revoke(7, 1)  # an older run's late ending does not lower the bar
    with pytest.raises(credential.CredentialError):
        revoked.check(_claims(restart=2))


def test_a_step_credential_carries_the_steps_gpus_and_the_jobs():
    """The job's cgroup is fenced to the job's GPUs whichever launch makes it first; the step's
    tasks get the step's."""
    from types import SimpleNamespace as NS
    job = NS(job_id=7, restart_count=0, spec=NS(uid=1000, gid=1000, groups=[1000], user="u"),
             allocations=[NS(node="node1", cpus=2, mem=100, gpus=[2, 3])])
    key = b"k" * 32
    text = credential.sign_job(lambda n: key, job, 0, ["node1"], 60, step_gpus={"node1": [3]})
    share = credential.verify(text, key, "node1").alloc["node1"]
    assert (share.gpus, share.fence_gpus) == ([3], [2, 3])
    text = credential.sign_job(lambda n: key, job, "batch", ["node1"], 60)
    share = credential.verify(text, key, "node1").alloc["node1"]
    assert (share.gpus, share.fence_gpus, share.job_gpus) == ([2, 3], [2, 3], None)
