"""auth/jwt piece by piece: tokens made and checked (rpc/jwt.py), the key file, and who may have
a token for whom (controller/token_mgr.py). Every refusal here is one an attacker would try:
a changed payload, a forged or missing signature, another algorithm, an old token, a key
someone else could write."""

from __future__ import annotations

import base64
import json
import os
import pwd
import stat
import warnings

import jwt as pyjwt
import pytest

from pyslurm_lite.config import Config
from pyslurm_lite.controller import token_mgr
from pyslurm_lite.controller.auth import Caller
from pyslurm_lite.errors import ConfigError, InvalidRequest, PermissionDenied, Unauthenticated
from pyslurm_lite.rpc import jwt, tokens

KEY = b"k" * 32
OTHER_KEY = b"o" * 32
NOW = 1_764_630_000.0


def _b64(obj) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def _swap_payload(token: str, **claims) -> str:
    """The same header and signature over a payload with claims changed."""
    head, body, sig = token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return ".".join([head, _b64({**payload, **claims}), sig])


# ---- tokens ---------------------------------------------------------------------------------------
def test_round_trip_carries_slurms_claims():
    token, exp = jwt.make(KEY, "alice", 1800, now=NOW)
    assert exp == int(NOW) + 1800
    assert pyjwt.get_unverified_header(token)["alg"] == "HS256"
    claims = pyjwt.decode(token, KEY, algorithms=["HS256"], options={"verify_exp": False})
    assert claims == {"iat": int(NOW), "exp": int(NOW) + 1800, "sun": "alice"}
    assert jwt.verify(token, KEY, now=NOW + 1799) == "alice"
    assert jwt.looks_like_jwt(token)


def _forged(kind: str) -> str:
    with warnings.catch_warnings():  # HS384/HS512 with a 32-byte key: the very forgery tried
        warnings.simplefilter("ignore", pyjwt.InsecureKeyLengthWarning)
        return _forgery(kind)


def _forgery(kind: str) -> str:
    good, _ = jwt.make(KEY, "alice", 600, now=NOW)
    head, body, sig = good.split(".")
    claims = {"iat": int(NOW), "exp": int(NOW) + 600, "sun": "alice"}
    return {
        "payload changed": _swap_payload(good, sun="root"),
        "expiry stretched": _swap_payload(good, exp=int(NOW) + 10**8),
        "signature changed": f"{head}.{body}.{sig[:-4]}{'AAAA' if not sig.endswith('AAAA') else 'BBBB'}",
        "signature dropped": f"{head}.{body}.",
        "alg none": pyjwt.encode(claims, None, algorithm="none"),
        "alg none, hand made": f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{body}.",
        "HS512 with the key": pyjwt.encode(claims, KEY, algorithm="HS512"),
        "HS384 with the key": pyjwt.encode(claims, KEY, algorithm="HS384"),
        "another key": pyjwt.encode(claims, OTHER_KEY, algorithm="HS256"),
        "no sun": pyjwt.encode({"iat": int(NOW), "exp": int(NOW) + 600}, KEY, algorithm="HS256"),
        "no exp": pyjwt.encode({"iat": int(NOW), "sun": "alice"}, KEY, algorithm="HS256"),
        "no iat": pyjwt.encode({"exp": int(NOW) + 600, "sun": "alice"}, KEY, algorithm="HS256"),
        "sun not a string": pyjwt.encode({**claims, "sun": 0}, KEY, algorithm="HS256"),
        "exp not a number": pyjwt.encode({**claims, "exp": "never"}, KEY, algorithm="HS256"),
        "exp a boolean": pyjwt.encode({**claims, "exp": True}, KEY, algorithm="HS256"),
        "issued in the future": pyjwt.encode({**claims, "iat": int(NOW) + 300}, KEY, algorithm="HS256"),
        "garbage": "eyJhbGciOi.eyJzdW4i.abc",
    }[kind]


@pytest.mark.parametrize("kind", ["payload changed", "expiry stretched", "signature changed",
                                  "signature dropped", "alg none", "alg none, hand made",
                                  "HS512 with the key", "HS384 with the key", "another key",
                                  "no sun", "no exp", "no iat", "sun not a string",
                                  "exp not a number", "exp a boolean", "issued in the future",
                                  "garbage"])
def test_forged_tokens_are_refused(kind):
    with pytest.raises(Unauthenticated):
        jwt.verify(_forged(kind), KEY, now=NOW + 1)


def test_expired_is_refused_at_exp_without_grace():
    token, exp = jwt.make(KEY, "alice", 60, now=NOW)
    assert jwt.verify(token, KEY, now=exp - 1) == "alice"
    with pytest.raises(Unauthenticated, match="expired"):
        jwt.verify(token, KEY, now=exp)


def test_issue_time_may_be_ahead_by_the_clock_skew_only():
    token, _ = jwt.make(KEY, "alice", 600, now=NOW + tokens.CLOCK_SKEW)
    assert jwt.verify(token, KEY, now=NOW) == "alice"
    token, _ = jwt.make(KEY, "alice", 600, now=NOW + tokens.CLOCK_SKEW + 2)
    with pytest.raises(Unauthenticated, match="future"):
        jwt.verify(token, KEY, now=NOW)


def test_identity_is_the_user_databases_never_a_claim():
    nobody = pwd.getpwnam("nobody")
    token = pyjwt.encode({"iat": int(NOW), "exp": int(NOW) + 60, "sun": "nobody", "uid": 0,
                          "gid": 0}, KEY, algorithm="HS256")
    who = jwt.identity(token, KEY, now=NOW)
    assert (who.uid, who.gid, who.issuer) == (nobody.pw_uid, nobody.pw_gid, jwt.ISSUER)


def test_unknown_user_is_refused():
    token, _ = jwt.make(KEY, "no-such-user-here", 60, now=NOW)
    with pytest.raises(Unauthenticated, match="not a user"):
        jwt.identity(token, KEY, now=NOW)


@pytest.mark.parametrize("token,shape", [
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJhIn0.c2ln", True),
    ("u1|cluster|local|slurmctld|0|0|h|1.0|2.0|n|m", False),
    ("d1|node:node1|Ping|0|00|00", False),
    ("a.b", False), ("a.b.c.d", False), ("", False), ("a|b.c.d", False)])
def test_a_jwt_is_told_from_our_tokens_by_shape(token, shape):
    assert jwt.looks_like_jwt(token) is shape


def test_without_auth_jwt_every_jwt_is_refused(tmp_path):
    cfg = Config(state_save_location=str(tmp_path))
    check = jwt.acceptor(cfg)
    token, _ = jwt.make(KEY, "root", 60)
    with pytest.raises(Unauthenticated, match="AuthAltTypes"):
        check(token)
    assert not os.path.exists(tmp_path / jwt.KEY_NAME), "a key made for a feature that is off"


# ---- the key file ---------------------------------------------------------------------------------
def test_default_key_is_made_once_0600_32_bytes(tmp_path):
    path = str(tmp_path / "state" / jwt.KEY_NAME)
    key = jwt.load_key(path, create=True)
    st = os.stat(path)
    assert len(key) == 32 and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    assert jwt.load_key(path, create=True) == key  # kept, not remade


def test_a_named_key_that_is_absent_is_an_error_not_made(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the JWT key"):
        jwt.load_key(str(tmp_path / "typo.key"))
    assert not os.path.exists(tmp_path / "typo.key")


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o640, 0o604, 0o660])
def test_key_others_can_touch_is_refused(tmp_path, mode):
    path = tmp_path / "jwt.key"
    path.write_bytes(os.urandom(32))
    os.chmod(path, mode)
    with pytest.raises(ConfigError, match="chmod 600"):
        jwt.load_key(str(path))


def test_key_owned_by_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    path = tmp_path / "jwt.key"
    path.write_bytes(os.urandom(32))
    os.chmod(path, 0o600)
    os.chown(path, pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(ConfigError, match="owned by uid"):
        jwt.load_key(str(path))


def test_only_a_lone_controller_or_the_primary_makes_the_key(tmp_path):
    pair = Config(state_save_location=str(tmp_path), auth_alt_types=["auth/jwt"],
                  controller_hosts=[("c1", "10.0.0.1", 0), ("c2", "10.0.0.2", 0)])
    path = jwt.key_path(pair)
    with pytest.raises(jwt.KeyMissing, match="backup controller .*index 1"):
        jwt.cluster_key(pair, 1)
    assert not os.path.lexists(path)
    key = jwt.cluster_key(pair, 0)
    assert len(key) == jwt.KEY_BYTES and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    alone = Config(state_save_location=str(tmp_path / "alone"), auth_alt_types=["auth/jwt"],
                   controller_hosts=[("c1", "10.0.0.1", 0)])
    assert len(jwt.cluster_key(alone, 1)) == jwt.KEY_BYTES  # no pair: index means nothing


def test_short_key_is_refused(tmp_path):
    path = tmp_path / "jwt.key"
    path.write_bytes(b"short")
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError, match="at least 32"):
        jwt.load_key(str(path))


# ---- who may have a token for whom ----------------------------------------------------------------
ALICE = Caller(uid=1001, user="alice")
OPERATOR = Caller(uid=0, user="root", operator=True)
SLURM_USER = Caller(uid=64030, user="slurm", operator=True)  # the cfg fixture's SlurmUser
ADMIN = Caller(uid=1002, user="carol", operator=True)  # an operator by AdminUsers only


def _pwnam(name):
    if name not in ("alice", "bob", "root"):
        raise KeyError(name)
    return name


@pytest.fixture
def cfg(tmp_path):
    return Config(state_save_location=str(tmp_path), auth_alt_types=["auth/jwt"],
                  slurm_user="slurm")


@pytest.mark.parametrize("caller,user_name,lifespan,want_user,want_span", [
    (ALICE, "", 0, "alice", 1800),
    (ALICE, "alice", 60, "alice", 60),
    (ALICE, "", token_mgr.MAX_LIFESPAN, "alice", token_mgr.MAX_LIFESPAN),
    (OPERATOR, "bob", 0, "bob", 1800),
    (OPERATOR, "", token_mgr.MAX_SLURM_USER_LIFESPAN, "root", token_mgr.MAX_SLURM_USER_LIFESPAN),
    (SLURM_USER, "bob", token_mgr.MAX_SLURM_USER_LIFESPAN, "bob", token_mgr.MAX_SLURM_USER_LIFESPAN),
    (ADMIN, "", token_mgr.MAX_LIFESPAN, "carol", token_mgr.MAX_LIFESPAN),
])
def test_issued(cfg, caller, user_name, lifespan, want_user, want_span):
    got = token_mgr.issue(cfg, caller, False, user_name, lifespan, NOW, getpwnam=_pwnam)
    assert (got.user_name, got.expires) == (want_user, int(NOW) + want_span)
    assert jwt.verify(got.token, jwt.cluster_key(cfg), now=NOW) == want_user


@pytest.mark.parametrize("caller,by_jwt,user_name,lifespan,error,text", [
    (ALICE, False, "bob", 0, PermissionDenied, "Invalid user id"),
    (ALICE, True, "", 0, PermissionDenied, "authenticated by a JWT"),
    (OPERATOR, True, "bob", 0, PermissionDenied, "authenticated by a JWT"),
    (OPERATOR, False, "ghost", 0, InvalidRequest, "Invalid user id"),
    (ALICE, False, "", token_mgr.MAX_LIFESPAN + 1, InvalidRequest, "time limit is invalid"),
    (ALICE, False, "", -5, InvalidRequest, "time limit is invalid"),
    (OPERATOR, False, "", 2**31 - 2, InvalidRequest, "time limit is invalid"),
    # Slurm: only root and SlurmUser get tokens for others; AdminUsers do not
    (ADMIN, False, "bob", 0, PermissionDenied, "only root and SlurmUser"),
    # ours: root's token (every user's rights) only to root
    (SLURM_USER, False, "root", 0, PermissionDenied, "only root may get a token for root"),
    (ADMIN, False, "", token_mgr.MAX_LIFESPAN + 1, InvalidRequest, "time limit is invalid"),
    (OPERATOR, False, "", token_mgr.MAX_SLURM_USER_LIFESPAN + 1, InvalidRequest,
     "time limit is invalid"),
])
def test_refused(cfg, caller, by_jwt, user_name, lifespan, error, text):
    with pytest.raises(error, match=text):
        token_mgr.issue(cfg, caller, by_jwt, user_name, lifespan, NOW, getpwnam=_pwnam)


def test_not_configured_says_so(tmp_path):
    off = Config(state_save_location=str(tmp_path))
    with pytest.raises(InvalidRequest, match="Required plugin type not loaded.*AuthAltTypes"):
        token_mgr.issue(off, OPERATOR, False, "", 0, NOW)
