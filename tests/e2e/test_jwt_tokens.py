"""auth/jwt on a real cluster (AuthAltTypes=auth/jwt) with real, unprivileged users: `scontrol
token` as Slurm prints it, the token as the caller's identity through the Python client (what
the REST server does with X-SLURM-USER-TOKEN), and the refusals: another user's token for a
non-operator, a token minting tokens, an expired, tampered or foreign token, and a cluster
without AuthAltTypes=auth/jwt refusing the very same token."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from dataclasses import dataclass

import jwt as pyjwt
import pytest

from pyslurm_lite import config
from pyslurm_lite.client import Client
from pyslurm_lite.errors import PermissionDenied, Unauthenticated
from pyslurm_lite.model import JobSpec
from pyslurm_lite.rpc import jwt

from conftest import Cluster, configured_cluster, wait_final, wait_state
from test_authz import _open_up
from userkit import drop_user, make_user, need_root, run_cli, token_of, user_venv

pytestmark = [pytest.mark.root, pytest.mark.slow]

SHAPE = (1, 2, 2000, 0)  # nodes, CPUs, MiB, GPUs


@dataclass
class World:
    cluster: Cluster
    alice: object  # pwd.struct_passwd
    bob: object
    bin_dir: str
    cfg: object

    def run(self, user, cmd: str) -> subprocess.CompletedProcess:
        return run_cli(user, self.bin_dir, self.cluster.conf, cmd)

    def token(self, user) -> str:
        return token_of(user, self.bin_dir, self.cluster.conf)

    def held_job(self, user) -> int:
        r = self.run(user, "sbatch --parsable --hold --wrap true")
        assert r.returncode == 0 and r.stdout.strip().isdigit(), (r.stdout, r.stderr)
        return int(r.stdout)

    def key(self) -> bytes:
        return jwt.load_key(jwt.key_path(self.cfg))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    need_root()
    made = []
    try:
        made += [make_user("pltja"), make_user("pltjb")]
        gen = configured_cluster(tmp_path_factory, "jwt", SHAPE, extra="AuthAltTypes=auth/jwt\n")
        cluster = next(gen)
        try:
            _open_up(cluster)
            bin_dir = user_venv(made[0])
            yield World(cluster, made[0], made[1], bin_dir, config.load(str(cluster.conf)))
        finally:
            gen.close()
    finally:
        for u in made:
            drop_user(u)


def _spec(home: str, **fields) -> JobSpec:
    return JobSpec(name="jwt", script="#!/bin/sh\nid -u\n", work_dir=home,
                   std_out=os.path.join(home, "jwt-%j.out"), **fields)


def test_the_controller_made_its_key_0600(world):
    st = os.stat(jwt.key_path(world.cfg))
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0 and st.st_size == jwt.KEY_BYTES


def test_scontrol_token_prints_slurm_jwt_for_the_caller(world):
    token = world.token(world.alice)
    claims = pyjwt.decode(token, world.key(), algorithms=["HS256"])
    assert claims["sun"] == world.alice.pw_name
    assert claims["exp"] - claims["iat"] == 1800  # Slurm's default lifespan
    r = world.run(world.alice, "scontrol token lifespan=60")
    claims = pyjwt.decode(r.stdout.strip().split("=", 1)[1], world.key(), algorithms=["HS256"])
    assert claims["exp"] - claims["iat"] == 60


def test_a_token_acts_as_its_user_and_only_as_them(world):
    alice, client = world.alice, Client(world.cfg, token=world.token(world.alice))
    # the request says root: refused, never believed, and nothing queued
    with pytest.raises(PermissionDenied):
        client.submit(_spec(alice.pw_dir, uid=0, gid=0, user="root"))
    job_id = client.submit(_spec(alice.pw_dir, uid=alice.pw_uid, gid=alice.pw_gid, user=alice.pw_name))
    assert wait_final(world.cluster, job_id) == "COMPLETED"
    r = world.cluster.run(["sacct", "-X", "-n", "-P", "-j", str(job_id), "-o", "User"])
    assert r.stdout.split() == [alice.pw_name], (r.stdout, r.stderr)
    with open(os.path.join(alice.pw_dir, f"jwt-{job_id}.out")) as f:
        assert f.read().strip() == str(alice.pw_uid)
    jobs, _ = client.jobs(job_ids=[job_id], include_finished=True)
    assert [j.job_id for j in jobs] == [job_id]


def test_alices_token_cannot_cancel_bobs_job(world):
    bobs = world.held_job(world.bob)
    try:
        _, errors = Client(world.cfg, token=world.token(world.alice)).cancel(job_ids=[bobs])
        assert errors and "denied" in errors[0][1].lower(), errors
        time.sleep(0.5)
        assert world.cluster.state(bobs) == "PENDING"
    finally:
        world.cluster.run(["scancel", str(bobs)])


def test_another_users_token_is_for_operators_only(world):
    r = world.run(world.alice, f"scontrol token username={world.bob.pw_name}")
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    assert r.stderr.startswith("scontrol: error: slurm_fetch_token: error with request: "
                               "Invalid user id"), r.stderr
    r = world.run(world.alice, f"scontrol token username={world.alice.pw_name}")  # one's own: fine
    assert r.returncode == 0, r.stderr
    # root may, and the token is bob's: it cancels bob's job
    r = world.cluster.run(["scontrol", "token", f"username={world.bob.pw_name}"])
    assert r.returncode == 0 and r.stdout.startswith("SLURM_JWT="), (r.stdout, r.stderr)
    bobs = world.held_job(world.bob)
    cancelled, errors = Client(world.cfg, token=r.stdout.strip()[10:]).cancel(job_ids=[bobs])
    assert (cancelled, errors) == ([bobs], [])
    assert wait_state(world.cluster, bobs, "CANCELLED").startswith("CANCELLED")


def test_a_token_cannot_mint_tokens(world):
    client = Client(world.cfg, token=world.token(world.alice))
    with pytest.raises(PermissionDenied, match="authenticated by a JWT"):
        client._call("IssueToken", client._pb().IssueTokenRequest())


def test_expired_tampered_and_foreign_tokens_are_refused(world):
    key, name = world.key(), world.alice.pw_name
    expired, _ = jwt.make(key, name, 5, now=time.time() - 60)
    good = world.token(world.alice)
    head, body, sig = good.split(".")
    tampered = f"{head}.{body}.{sig[:-4]}{'AAAA' if not sig.endswith('AAAA') else 'BBBB'}"
    foreign, _ = jwt.make(os.urandom(32), name, 600)
    for what, token, text in [("expired", expired, "expired"), ("tampered", tampered, "signature"),
                              ("another key's", foreign, "signature")]:
        with pytest.raises(Unauthenticated, match=text):
            Client(world.cfg, token=token).jobs()
    Client(world.cfg, token=good).jobs()  # and the good one still works, again and again
    Client(world.cfg, token=good).jobs()


@pytest.mark.parametrize("args,err", [
    ("bogus", "Invalid option: `bogus`\n"),
    ("lifespan=abc", 'scontrol: error: Invalid numeric value "abc" for lifespan.\n'),
    ("lifespan=0", 'scontrol: error: Invalid numeric value "0" for lifespan.\n'),
])
def test_scontrol_token_bad_arguments(world, args, err):
    r = world.run(world.alice, f"scontrol token {args}")
    assert (r.returncode, r.stdout, r.stderr) == (1, "", err)


def test_scontrol_token_lifespan_over_the_cap(world):
    r = world.run(world.alice, "scontrol token lifespan=infinite")
    assert r.returncode == 1 and r.stdout == ""
    assert "Requested time limit is invalid" in r.stderr and "at most 86400" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def without_jwt(world, tmp_path_factory):
    """A second cluster with the same JWT key but no AuthAltTypes=auth/jwt."""
    yield from configured_cluster(tmp_path_factory, "nojwt", (1, 1, 500, 0),
                                  replace={"AuthAltTypes=auth/jwt": ""},  # cluster up's
                                  extra=f"AuthAltParameters=jwt_key={jwt.key_path(world.cfg)}\n")


def test_without_auth_jwt_the_same_token_is_refused(world, without_jwt):
    token = world.token(world.alice)
    other = config.load(str(without_jwt.conf))
    with pytest.raises(Unauthenticated, match="AuthAltTypes=auth/jwt is not set"):
        Client(other, token=token).jobs()
    r = without_jwt.run(["scontrol", "token"])
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == ("scontrol: error: slurm_fetch_token: error with request: Required plugin "
                        "type not loaded or initialized (AuthAltTypes=auth/jwt is not set in "
                        "slurm.conf)\n"), r.stderr
