"""slurmrestd's REST API (v0.0.42) on a real cluster, driven over HTTP with tokens from
`scontrol token` run by real, unprivileged users: ping, submit (the job runs as the token's
user), jobs, job, update, cancel, nodes, partitions, reservations, diag; refusals (no token, a
tampered one, another user's job, bad job descriptions) in slurmrestd's error shape; every
answer validated against slurmrestd's published OpenAPI schema (restd/openapi/)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from pyslurm_lite import config
from pyslurm_lite.restd import openapi

from conftest import PYSLURM_LITE, Cluster, cli_env, start_cluster, wait_final, wait_state
from test_authz import _open_up
from userkit import drop_user, make_user, need_root, run_cli, token_of, user_venv

pytestmark = [pytest.mark.root, pytest.mark.slow]
pytest.importorskip("jsonschema")

SHAPE = (1, 2, 2000, 2)  # nodes, CPUs, MiB, GPUs
V = "/slurm/v0.0.42"


@dataclass
class World:
    cluster: Cluster
    alice: object  # pwd.struct_passwd
    bob: object
    bin_dir: str
    port: int

    def run(self, user, cmd: str) -> subprocess.CompletedProcess:
        return run_cli(user, self.bin_dir, self.cluster.conf, cmd)

    def token(self, user) -> str:
        return token_of(user, self.bin_dir, self.cluster.conf)

    def http(self, method: str, path: str, user=None, token=None, body=None, raw=None):
        """(status, parsed JSON or None); user/token as headers when given."""
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["X-SLURM-USER-TOKEN"] = token
        if user is not None:
            headers["X-SLURM-USER-NAME"] = user.pw_name
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                status, text = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, None

    def job_body(self, user, script="#!/bin/bash\necho rest-ok $SLURM_JOB_ID $(id -un)\n",
                 **job):
        return {"job": {"name": "rest", "current_working_directory": user.pw_dir,
                        "environment": ["PATH=/usr/local/bin:/usr/bin:/bin",
                                        f"HOME={user.pw_dir}"], "script": script, **job}}


def valid(schema: str, doc) -> None:
    errors = sorted(openapi.validator(schema).iter_errors(doc), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prepare(directory: Path) -> None:
    """slurm.conf as `cluster up` writes it, with RestPort and auth/jwt added if it has none."""
    from pyslurm_lite.cli.cluster import write_config
    directory.mkdir(exist_ok=True)
    conf = write_config(str(directory), *SHAPE)
    text = open(conf).read()
    if not re.search(r"(?im)^RestPort=", text):
        text += f"RestPort={_free_port()}\n"
    if not re.search(r"(?im)^AuthAltTypes=", text):
        text += "AuthAltTypes=auth/jwt\n"
    open(conf, "w").write(text)


def _listening(port: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def _standalone(cluster: Cluster, listen: str) -> subprocess.Popen:
    return subprocess.Popen([PYSLURM_LITE, "restd", "--conf", str(cluster.conf), "--listen",
                             listen], env=cli_env(cluster.conf), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    need_root()
    made, restd = [], None
    try:
        made += [make_user("pltra"), make_user("pltrb")]
        cluster = start_cluster(tmp_path_factory.mktemp("restd") / "c", shape=SHAPE,
                                prepare=_prepare)
        try:
            _open_up(cluster)
            port = config.load(str(cluster.conf)).rest_port
            # the controller serves RestPort itself; a build whose controller does not is
            # served by `pyslurm-lite restd` on the same port, as an operator would run it
            if not _listening(port, 5):
                restd = _standalone(cluster, f"127.0.0.1:{port}")
                assert _listening(port, 15), restd.stderr and restd.stderr.read()
            yield World(cluster, made[0], made[1], user_venv(made[0]), port)
        finally:
            if restd is not None:
                restd.terminate()
                restd.wait(10)
            cluster.down()
    finally:
        for u in made:
            drop_user(u)


@pytest.fixture(scope="module")
def tokens(world):
    return {u.pw_name: world.token(u) for u in (world.alice, world.bob)}


# ---- identity ---------------------------------------------------------------------------------
def test_ping_with_a_token(world, tokens):
    st, doc = world.http("GET", f"{V}/ping", world.alice, tokens[world.alice.pw_name])
    assert st == 200, doc
    valid("v0.0.42_openapi_ping_array_resp", doc)
    assert doc["pings"][0]["pinged"] == "UP" and doc["pings"][0]["primary"] is True
    assert doc["meta"]["client"]["user"] == world.alice.pw_name


def test_refusals_are_401_in_slurmrestds_shape(world, tokens):
    good = tokens[world.alice.pw_name]
    tampered = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    cases = {"no token": (None, None), "a tampered token": (world.alice, tampered),
             "not a JWT": (world.alice, "garbage"),
             "another user's name": (world.bob, good)}
    for label, (user, token) in cases.items():
        st, doc = world.http("GET", f"{V}/jobs", user, token)
        assert st == 401, (label, st, doc)
        valid("v0.0.42_openapi_resp", doc)
        assert doc["errors"] and doc["errors"][0]["error_number"] == 9008, (label, doc)
        assert doc["errors"][0]["description"], label


# ---- jobs -------------------------------------------------------------------------------------
def test_submit_runs_as_the_tokens_user(world, tokens):
    alice, token = world.alice, tokens[world.alice.pw_name]
    for body in (world.job_body(alice), {"script": world.job_body(alice)["job"].pop("script"),
                                         "job": world.job_body(alice)["job"]}):
        st, doc = world.http("POST", f"{V}/job/submit", alice, token, body)
        assert st == 200, doc
        valid("v0.0.42_openapi_job_submit_response", doc)
        jid = doc["job_id"]
        assert wait_final(world.cluster, jid) == "COMPLETED"
        out = Path(alice.pw_dir) / f"slurm-{jid}.out"
        assert out.read_text().split() == ["rest-ok", str(jid), alice.pw_name]
        assert out.stat().st_uid == alice.pw_uid
        r = world.cluster.run(["sacct", "-X", "-n", "-P", "-j", str(jid), "-o", "User"])
        assert r.stdout.split() == [alice.pw_name], r.stdout + r.stderr
        st, doc = world.http("GET", f"{V}/jobs", alice, token)
        assert st == 200 and jid in [j["job_id"] for j in doc["jobs"]], doc
        valid("v0.0.42_openapi_job_info_resp", doc)


def test_unimplemented_fields_come_back_as_warnings(world, tokens):
    alice = world.alice
    st, doc = world.http("POST", f"{V}/job/submit", alice, tokens[alice.pw_name],
                         world.job_body(alice, hold=True, licenses="matlab:1"))
    assert st == 200, doc
    assert any("'licenses'" in w["description"] for w in doc["warnings"]), doc
    world.cluster.run(["scancel", str(doc["job_id"])])


def test_job_update_and_cancel(world, tokens):
    alice, bob = world.alice, world.bob
    st, doc = world.http("POST", f"{V}/job/submit", alice, tokens[alice.pw_name],
                         world.job_body(alice, hold=True, time_limit={"set": True,
                                                                      "number": 30}))
    assert st == 200, doc
    jid = doc["job_id"]
    st, doc = world.http("GET", f"{V}/job/{jid}", alice, tokens[alice.pw_name])
    assert st == 200 and doc["jobs"][0]["job_state"] == ["PENDING"], doc
    assert doc["jobs"][0]["hold"] is True and doc["jobs"][0]["user_name"] == alice.pw_name
    valid("v0.0.42_openapi_job_info_resp", doc)

    st, doc = world.http("POST", f"{V}/job/{jid}", alice, tokens[alice.pw_name],
                         {"time_limit": {"set": True, "number": 20}, "name": "renamed"})
    assert st == 200, doc
    valid("v0.0.42_openapi_job_post_response", doc)
    st, doc = world.http("GET", f"{V}/job/{jid}", alice, tokens[alice.pw_name])
    assert doc["jobs"][0]["time_limit"]["number"] == 20 and doc["jobs"][0]["name"] == "renamed"

    # bob may not touch alice's job: the controller says so, in slurmrestd's shape
    for method, body in (("DELETE", None), ("POST", {"name": "bobs"})):
        st, doc = world.http(method, f"{V}/job/{jid}", bob, tokens[bob.pw_name], body)
        assert st == 403, (method, doc)
        valid("v0.0.42_openapi_resp", doc)
        assert doc["errors"][0]["error"] == "Access/permission denied", doc
    assert world.cluster.state(jid) == "PENDING"

    st, doc = world.http("DELETE", f"{V}/job/{jid}", alice, tokens[alice.pw_name])
    assert st == 200, doc
    valid("v0.0.42_openapi_kill_job_resp", doc)
    assert wait_final(world.cluster, jid) == "CANCELLED"
    st, doc = world.http("GET", f"{V}/job/999999", alice, tokens[alice.pw_name])
    assert st == 404 and doc["errors"][0]["error_number"] == 2017, doc


def test_signal_a_running_job(world, tokens):
    alice = world.alice
    st, doc = world.http("POST", f"{V}/job/submit", alice, tokens[alice.pw_name],
                         world.job_body(alice, script="#!/bin/bash\ntrap 'echo got-usr1; exit "
                                        "0' USR1\nwhile true; do sleep 0.1; done\n"))
    jid = doc["job_id"]
    wait_state(world.cluster, jid, "RUNNING")
    time.sleep(0.5)  # the trap is set
    st, doc = world.http("DELETE", f"{V}/job/{jid}?signal=SIGUSR1&flags=BATCH_JOB", alice,
                         tokens[alice.pw_name])
    assert st == 200, doc
    assert wait_final(world.cluster, jid) == "COMPLETED"
    assert "got-usr1" in (Path(alice.pw_dir) / f"slurm-{jid}.out").read_text()


@pytest.mark.parametrize("raw, words", [
    (b"{not json", "not JSON"),
    (json.dumps({"job": {"script": "#!/bin/sh\n", "tasks": "two"}}).encode(), "'tasks'"),
    (json.dumps({"job": {"name": "x"}}).encode(), "#!"),
])
def test_bad_submissions_are_400_and_submit_nothing(world, tokens, raw, words):
    alice = world.alice
    before = world.cluster.run(["squeue", "-h", "-o", "%i"]).stdout
    st, doc = world.http("POST", f"{V}/job/submit", alice, tokens[alice.pw_name], raw=raw)
    assert st == 400 and words in doc["errors"][0]["description"], doc
    valid("v0.0.42_openapi_resp", doc)
    assert world.cluster.run(["squeue", "-h", "-o", "%i"]).stdout == before


def _raw_exchange(port: int, head: bytes, parts) -> tuple[bytes, bool]:
    """Send head and then parts on one connection, stopping at the first the server refuses;
    (all the server answered, whether it closed the connection after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
        try:
            s.sendall(head)
            for part in parts:
                s.sendall(part)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while got := s.recv(65536):  # to the end: the server closes after its answer
                answer += got
        except (ConnectionResetError, socket.timeout):
            return answer, False
        return answer, True


def _head(path: str, token: str, length: str) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"X-SLURM-USER-TOKEN: {token}\r\n{length}\r\n").encode()


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_an_oversized_body_is_413_without_being_read(world, tokens, declared):
    """Refused by its Content-Length before a byte of it is read, or (chunked, no length) as
    soon as the running total passes the limit; then the connection is closed, so the server
    never reads the rest (here 100 MB declared, or chunks without end)."""
    from pyslurm_lite.restd.app import MAX_BODY_BYTES
    token, chunk = tokens[world.alice.pw_name], b"x" * 65536
    if declared:
        head = _head(f"{V}/job/submit", token, f"Content-Length: {100 << 20}\r\n")
        parts = [chunk]  # 64 KiB of the 100 MB: the answer comes without the rest
    else:
        head = _head(f"{V}/job/submit", token, "Transfer-Encoding: chunked\r\n")
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        parts = [framed] * (MAX_BODY_BYTES // len(chunk) + 1)  # just over; never the last chunk
    began = time.monotonic()
    answer, closed = _raw_exchange(world.port, head, parts)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    head, _, text = answer.partition(b"\r\n\r\n")
    # closed at once by its answer, not after the keep-alive timeout while it reads on
    assert b"\r\nconnection: close" in head.lower() and closed, head
    assert time.monotonic() - began < 15
    doc = json.loads(text)
    valid("v0.0.42_openapi_resp", doc)
    assert doc["errors"][0]["error_number"] == 9001 and "over" in doc["errors"][0]["description"]


# ---- resources --------------------------------------------------------------------------------
@pytest.mark.parametrize("path, schema, key", [
    ("/nodes", "v0.0.42_openapi_nodes_resp", "nodes"),
    ("/node/node1", "v0.0.42_openapi_nodes_resp", "nodes"),
    ("/partitions/", "v0.0.42_openapi_partition_resp", "partitions"),
    ("/reservations", "v0.0.42_openapi_reservation_resp", "reservations"),
    ("/diag", "v0.0.42_openapi_diag_resp", "statistics"),
])
def test_resources(world, tokens, path, schema, key):
    st, doc = world.http("GET", V + path, world.alice, tokens[world.alice.pw_name])
    assert st == 200, doc
    valid(schema, doc)
    assert key in doc


def test_node_and_partition_contents(world, tokens):
    token = tokens[world.alice.pw_name]
    _, doc = world.http("GET", f"{V}/node/node1", world.alice, token)
    node = doc["nodes"][0]
    assert node["name"] == "node1" and node["cpus"] == 2 and node["gres"] == "gpu:2", node
    _, doc = world.http("GET", f"{V}/partitions", world.alice, token)
    part = doc["partitions"][0]
    st, one = world.http("GET", f"{V}/partition/{part['name']}", world.alice, token)
    assert st == 200 and one["partitions"] == [part]
    st, doc = world.http("GET", f"{V}/node/nosuch", world.alice, token)
    assert st == 404, doc
    valid("v0.0.42_openapi_resp", doc)


def test_openapi_document_and_unknown_urls(world, tokens):
    st, doc = world.http("GET", "/openapi/v3")
    assert st == 200 and f"{V}/job/submit" in doc["paths"]
    st, doc = world.http("GET", "/slurm/v0.0.39/jobs", world.alice, tokens[world.alice.pw_name])
    assert st == 404 and doc["errors"][0]["error_number"] == 9006, doc


def test_standalone_restd(world, tokens):
    """`pyslurm-lite restd --listen` serves the same API apart from the controller."""
    port = _free_port()
    proc = _standalone(world.cluster, f"127.0.0.1:{port}")
    try:
        assert _listening(port, 15), proc.stderr.read() if proc.poll() is not None else "slow"
        other = World(world.cluster, world.alice, world.bob, world.bin_dir, port)
        st, doc = other.http("GET", f"{V}/ping", world.alice, tokens[world.alice.pw_name])
        assert st == 200 and doc["pings"][0]["pinged"] == "UP", doc
    finally:
        proc.terminate()
        assert proc.wait(10) == 0 or proc.returncode in (-15, 143)
    r = subprocess.run([PYSLURM_LITE, "restd", "--conf", str(world.cluster.conf), "--listen",
                        "nonsense"], env=cli_env(world.cluster.conf), capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and "--listen nonsense: want HOST:PORT" in r.stderr, r.stderr
