"""TLS on every gRPC link (`cluster up --tls`), `pyslurm-lite authd` on a login host, and per-node
keys (`pyslurm-lite keygen`), end to end: real daemons on loopback, real sockets.

One local cluster made with `pyslurm-lite cluster up --tls` serves the whole module. Its
daemons are only ever added to, never broken: the one test that replaces agent-node1 by an agent
of its own (holding only node1's derived key) brings the cluster's agent back with `cluster up`.
Daemons that must refuse to start run on copies of slurm.conf with their own state directory,
socket directory and ports, so that one which wrongly starts touches nothing shared.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import psutil
import pytest

from pyslurm_lite import config
from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc
from pyslurm_lite.client import Client
from pyslurm_lite.rpc import h2client, keys, tls, tokens
from pyslurm_lite.rpc.authsock import fetch_token
from pyslurm_lite.rpc.common import AUTH_KEY, DEADLINE_EXCEEDED, UNAVAILABLE
from pyslurm_lite.rpc.grpcutil import client_channel, daemon_metadata

from conftest import BIN_DIR, PYSLURM_LITE, UP_TIMEOUT, Cluster, cli_env, run_cmd, wait_final

if shutil.which("openssl") is None:  # .ci/run installs it; `cluster up --tls` needs it
    pytest.skip("no openssl command: cluster up --tls cannot make certificates", allow_module_level=True)

SHAPE = (2, 2, 2000, 0)  # nodes, CPUs, MiB, GPUs: no GPUs, so slurm.conf needs no gres.conf
TEST_USER = "pyslurmtest"
START_REFUSAL_TIMEOUT = 30.0  # seconds a daemon that must refuse to start is given


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A 2-node local cluster brought up by `pyslurm-lite cluster up --tls`."""
    directory = tmp_path_factory.mktemp("tls") / "c"
    conf = directory / "slurm.conf"
    c = Cluster(dir=directory, conf=conf, env=cli_env(conf), shape=SHAPE)
    nodes, cpus, mem, gpus = SHAPE
    r = run_cmd([PYSLURM_LITE, "cluster", "up", "--tls", "--nodes", nodes, "--cpus", cpus,
                 "--mem", mem, "--gpus", gpus, "--dir", directory], cli_env(), timeout=UP_TIMEOUT)
    if r.returncode != 0:
        c.down()
        pytest.fail(f"cluster up --tls failed: rc={r.returncode}\n{r.stdout}\n{r.stderr}\n"
                    f"{c.log_tails() if directory.exists() else ''}")
    assert f"export PYSLURM_LITE_CONF={conf}" in r.stdout, r.stdout
    try:
        yield c
    finally:
        r = c.down()
        assert r.returncode == 0, f"cluster down failed: {r.stdout}{r.stderr}"


# ---- helpers ------------------------------------------------------------------------------------
def _cfg(cluster) -> config.Config:
    return config.load(str(cluster.conf))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf_copy(cluster, dest: Path, settings: dict[str, str] | None = None,
               node_ports: dict[str, int] | None = None) -> Path:
    """A copy of the cluster's slurm.conf at dest: each Key=value of settings replaces that key's
    line (or is added), each node of node_ports listens on another port."""
    settings = settings or {}
    out = []
    for line in cluster.conf.read_text().splitlines():
        if line.split("=", 1)[0] in settings:
            continue
        for node, port in (node_ports or {}).items():
            line = re.sub(rf"^(NodeName={node} .*\bPort=)\d+", rf"\g<1>{port}", line)
        out.append(line)
    out += [f"{k}={v}" for k, v in settings.items()]
    dest.write_text("\n".join(out) + "\n")
    return dest


def _isolated_conf(cluster, tmp_path: Path, name: str, **settings: str) -> Path:
    """A conf copy for a daemon that must refuse to start: its own state, sockets and ports, so
    one that wrongly starts neither shares the cluster's database nor replaces its sockets."""
    base = tmp_path / name
    base.mkdir()
    cfg = _cfg(cluster)
    return _conf_copy(cluster, base / "slurm.conf",
                      {"StateSaveLocation": str(base / "state"),
                       "AuthInfo": f"socket={base / 'run' / 'sack.socket'}",
                       "SlurmctldPort": str(_free_port()), **settings},
                      {n: _free_port() for n in cfg.nodes})


def _write_private(path: Path, text: str, mode: int = 0o600) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, mode)  # whatever the umask
    return path


def _keygen(cluster, scope: str) -> str:
    r = cluster.run([PYSLURM_LITE, "keygen", "--conf", cluster.conf, "--scope", scope])
    assert r.returncode == 0, f"keygen --scope {scope}: rc={r.returncode} {r.stdout}{r.stderr}"
    return r.stdout


def _start_refused(args: list, timeout: float = START_REFUSAL_TIMEOUT) -> subprocess.CompletedProcess:
    """Run a daemon that must refuse to start; fail if it is still running after timeout."""
    try:
        r = run_cmd([PYSLURM_LITE, *args], cli_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pyslurm-lite {' '.join(map(str, args))} did not refuse to start "
                    f"(still running after {timeout:.0f}s)")
    assert r.returncode != 0, f"started and exited 0: {r.stdout}{r.stderr}"
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _wait_for(predicate, timeout: float, what: str, details=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"{what} not within {timeout:.0f}s\n{details()}")


def _make_ca(directory: Path, name: str) -> Path:
    key, crt = directory / f"{name}.key", directory / f"{name}.crt"
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                        "-out", crt, "-days", "2", "-subj", f"/CN={name}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return crt


def _user_token(cfg) -> tuple:
    return ((AUTH_KEY, fetch_token(cfg.auth_socket, tokens.CONTROLLER)),)


# ---- 1. TLS -------------------------------------------------------------------------------------
def test_tls_files_and_config(tls_cluster):
    """`cluster up --tls` made a CA and the daemons' certificate with openssl, keys private, and
    named them in TLSParameters=."""
    tls = tls_cluster.dir / "tls"
    cfg = _cfg(tls_cluster)
    assert (cfg.tls_ca, cfg.tls_cert, cfg.tls_key) == \
        (str(tls / "ca.crt"), str(tls / "daemon.crt"), str(tls / "daemon.key"))
    assert re.search(r"^TLSParameters=ca_cert_file=\S+,cert_file=\S+,cert_key_file=\S+$",
                     tls_cluster.conf.read_text(), re.M)
    for name in ("ca.crt", "daemon.crt"):
        assert (tls / name).read_text().startswith("-----BEGIN CERTIFICATE-----"), name
    for name in ("daemon.key", "ca.key"):
        mode = stat.S_IMODE(os.stat(tls / name).st_mode)
        assert mode == 0o600, f"{name} has mode {mode:04o}"
    # the daemon certificate is signed by that CA (what every client checks)
    r = subprocess.run(["openssl", "verify", "-CAfile", tls / "ca.crt", tls / "daemon.crt"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


def test_tls_batch_job_over_both_transports(tls_cluster, tmp_path):
    """sbatch (the light h2 transport, over TLS) submits; the controller launches on an agent
    over TLS and the job completes; squeue over grpcio (TLS) sees it."""
    out = tmp_path / "out-%j"
    job_id = tls_cluster.sbatch("-o", str(out), "--wrap", "echo tls-batch-ok", cwd=tmp_path)
    assert wait_final(tls_cluster, job_id) == "COMPLETED", tls_cluster.log_tails()
    assert (tmp_path / f"out-{job_id}").read_text().strip() == "tls-batch-ok"
    for transport in ("grpcio", "h2"):
        r = tls_cluster.run(["squeue", "-h", "-j", str(job_id), "-o", "%i %T"],
                            env={"PYSLURM_LITE_TRANSPORT": transport})
        assert r.returncode == 0, f"{transport}: {r.stderr}"
        assert r.stdout.split() == [str(job_id), "COMPLETED"], f"{transport}: {r.stdout!r}"


def test_tls_srun_reaches_agents(tls_cluster, tmp_path):
    """srun streams to the agents of both nodes over TLS and prints each task's output."""
    r = tls_cluster.run(["srun", "-N2", "bash", "-c", "echo task-$SLURM_PROCID-on-$SLURMD_NODENAME"],
                        cwd=tmp_path)
    assert r.returncode == 0, f"rc={r.returncode} {r.stdout}{r.stderr}\n{tls_cluster.log_tails()}"
    assert sorted(r.stdout.split()) == ["task-0-on-node1", "task-1-on-node2"], r.stdout
    r = tls_cluster.run(["srun", "-N2", "hostname"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [socket.gethostname()] * 2, r.stdout


def test_tls_cleartext_clients_get_no_reply(tls_cluster):
    """A cleartext client, even with a valid user token, gets no answer from the controller or
    an agent: grpcio's insecure channel sees UNAVAILABLE, h2client without TLS a failure."""
    cfg = _cfg(tls_cluster)
    node = cfg.nodes["node1"]
    for target in (cfg.controller_target, f"{node.addr}:{node.port}"):
        stub = controller_pb2_grpc.ControllerStub(grpc.insecure_channel(target))
        with pytest.raises(grpc.RpcError) as e:
            stub.GetJobs(pb.GetJobsRequest(), metadata=_user_token(cfg), timeout=10)
        assert e.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), \
            f"{target}: {e.value.code()} {e.value.details()}"
    channel = h2client.Channel(cfg.controller_target)  # no ssl_context: cleartext h2c
    try:
        with pytest.raises(h2client.RpcFailure) as e:
            channel.unary("/pyslurm_lite.v1.Controller/GetJobs", pb.GetJobsRequest().SerializeToString(),
                          _user_token(cfg), timeout=10)
        assert e.value.code in (UNAVAILABLE, DEADLINE_EXCEEDED), (e.value.code, e.value.message)
    finally:
        channel.close()
    # the same call over TLS is answered (so the refusals above are about cleartext)
    channel = h2client.Channel(cfg.controller_target, ssl_context=tls.ssl_context(cfg))
    try:
        raw = channel.unary("/pyslurm_lite.v1.Controller/GetJobs", pb.GetJobsRequest().SerializeToString(),
                            _user_token(cfg), timeout=10)
        pb.GetJobsReply.FromString(raw)
    finally:
        channel.close()


def test_tls_client_trusting_another_ca_is_refused(tls_cluster, tmp_path):
    """A client whose CA did not sign the daemons' certificate refuses the server: at the TLS
    handshake (certificate verify failed), through h2client, through grpcio, and as a CLI."""
    cfg = _cfg(tls_cluster)
    other_ca = _make_ca(tmp_path, "other-ca")
    host, _, port = cfg.controller_target.rpartition(":")

    def handshake(cafile) -> str:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(cafile))
        ctx.set_alpn_protocols(["h2"])
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as s:
                return s.selected_alpn_protocol()

    assert handshake(cfg.tls_ca) == "h2"  # the cluster's own CA: accepted
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        handshake(other_ca)

    cfg.tls_ca = str(other_ca)
    channel = h2client.Channel(cfg.controller_target, ssl_context=tls.ssl_context(cfg))
    try:
        with pytest.raises(h2client.RpcFailure) as e:
            channel.unary("/pyslurm_lite.v1.Controller/GetJobs", pb.GetJobsRequest().SerializeToString(),
                          _user_token(cfg), timeout=10)
        assert e.value.code == UNAVAILABLE and "certificate verify failed" in e.value.message, \
            e.value.message
    finally:
        channel.close()
    stub = controller_pb2_grpc.ControllerStub(client_channel(cfg.controller_target, cfg))
    with pytest.raises(grpc.RpcError) as e:
        stub.GetJobs(pb.GetJobsRequest(), metadata=_user_token(cfg), timeout=10)
    assert e.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

    conf = _conf_copy(tls_cluster, tmp_path / "other-ca.conf",
                      {"TLSParameters": f"ca_cert_file={other_ca}"})
    for transport in ("h2", "grpcio"):
        r = run_cmd(["squeue"], cli_env(conf, PYSLURM_LITE_TRANSPORT=transport))
        assert r.returncode != 0 and "Traceback" not in r.stderr, f"{transport}: {r.stdout}{r.stderr}"
        assert "Unable to contact slurm controller" in r.stderr, f"{transport}: {r.stderr}"


# ---- 2. authd -----------------------------------------------------------------------------------
def _test_user():
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        r = subprocess.run(["useradd", "-m", TEST_USER], capture_output=True)
        return pwd.getpwnam(TEST_USER) if r.returncode == 0 else None


def test_authd_serves_the_only_tokens_on_a_login_host(tls_cluster, tmp_path):
    """With a slurm.conf whose AuthInfo=socket= is in a directory of its own, commands get their
    tokens from `pyslurm-lite authd --host login1` only (holding host:login1's key): sbatch and
    squeue work and the job is the submitter's; once authd stops, the same commands fail with a
    message naming the agent and authd, exit non-zero, print no traceback."""
    # a public directory (pytest's are 0700): the copy, its CA and the socket, for another user
    public = Path(tempfile.mkdtemp(prefix="pyslurm-authd-"))
    authd = None
    try:
        os.chmod(public, 0o755)
        cfg = _cfg(tls_cluster)
        shutil.copy(cfg.tls_ca, public / "ca.crt")
        os.chmod(public / "ca.crt", 0o644)
        key_text = _keygen(tls_cluster, "host:login1")
        assert re.fullmatch(r"host:login1 [0-9a-f]{64}\n", key_text), key_text
        key_file = _write_private(tmp_path / "login1.key", key_text)
        sock = public / "run" / "sack.socket"
        conf = _conf_copy(tls_cluster, public / "slurm.conf",
                          {"AuthInfo": f"socket={sock}", "AuthKeyFile": str(key_file),
                           "TLSParameters": f"ca_cert_file={public / 'ca.crt'}"})
        os.chmod(conf, 0o644)
        env = cli_env(conf)
        log = open(tmp_path / "authd.log", "wb")
        authd = subprocess.Popen([PYSLURM_LITE, "authd", "--conf", str(conf), "--host", "login1"],
                                 env=cli_env(), stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT)
        _wait_for(lambda: sock.exists() or authd.poll() is not None, 30, "authd's socket",
                  lambda: (tmp_path / "authd.log").read_text())
        assert authd.poll() is None, (tmp_path / "authd.log").read_text()
        assert sorted(p.name for p in sock.parent.iterdir()) == ["sack.socket"]

        # the token authd issues is signed as host:login1 for this host's caller
        token = fetch_token(str(sock), tokens.CONTROLLER)
        assert token.split("|")[1:2] == ["host:login1"] and token.split("|")[4] == str(os.getuid())

        r = run_cmd(["sbatch", "--parsable", "--wrap", "true"], env, cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.strip().isdigit(), r.stdout + r.stderr
        job_id = int(r.stdout)
        assert wait_final(tls_cluster, job_id) == "COMPLETED"
        r = run_cmd(["squeue", "-h", "-j", str(job_id), "-o", "%i %u %T"], env)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [str(job_id), pwd.getpwuid(os.getuid()).pw_name, "COMPLETED"]
        r = run_cmd(["squeue"], env)  # a plain listing (a finished job is no longer in it)
        assert r.returncode == 0 and r.stdout.split()[:2] == ["JOBID", "PARTITION"], r.stdout + r.stderr

        user = _test_user()
        if user is not None:  # another user: authd's token names that user (SO_PEERCRED), not root
            as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"]
            r = run_cmd([*as_user, sys.executable, "-c",
                         "import sys; from pyslurm_lite.rpc.authsock import fetch_token; "
                         "print(fetch_token(sys.argv[1], 'slurmctld'))", str(sock)], env, cwd=public)
            assert r.returncode == 0, r.stdout + r.stderr
            fields = r.stdout.strip().split("|")
            assert (fields[1], fields[4], fields[5]) == \
                ("host:login1", str(user.pw_uid), str(user.pw_gid)), r.stdout
            held = []
            try:
                r = run_cmd(["sbatch", "--parsable", "--hold", "--wrap", "true"], env, cwd=tmp_path)
                assert r.returncode == 0, r.stderr
                held.append(r.stdout.strip())  # root's
                r = run_cmd([*as_user, os.path.join(BIN_DIR, "sbatch"), "--parsable", "--hold",
                             "--wrap", "true"], env, cwd=public)
                assert r.returncode == 0 and r.stdout.strip().isdigit(), r.stdout + r.stderr
                held.append(r.stdout.strip())  # the user's
                r = run_cmd(["squeue", "-h", "-j", held[1], "-o", "%u"], env)
                assert r.stdout.split() == [TEST_USER], r.stdout + r.stderr
                r = run_cmd(["scontrol", "show", "job", held[1]], env)
                assert f"UserId={TEST_USER}({user.pw_uid})" in r.stdout, r.stdout + r.stderr
                # the controller takes that user for who calls: root's job is not theirs to cancel
                r = run_cmd([*as_user, os.path.join(BIN_DIR, "scancel"), held[0]], env, cwd=public)
                assert r.returncode != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
                assert tls_cluster.state(int(held[0])) == "PENDING"
            finally:
                if held:
                    run_cmd(["scancel", *held], env)

        _stop(authd)
        assert authd.returncode == 0, (tmp_path / "authd.log").read_text()
        for cmd in (["sbatch", "--wrap", "true"], ["squeue"]):
            r = run_cmd(cmd, env, cwd=tmp_path)
            assert r.returncode != 0, f"{cmd} without authd: {r.stdout}{r.stderr}"
            assert "Traceback" not in r.stderr, r.stderr
            assert "cannot authenticate" in r.stderr and "authd" in r.stderr \
                and "agent" in r.stderr and str(sock) in r.stderr, r.stderr
            assert r.stdout == "", r.stdout
    finally:
        if authd is not None:
            _stop(authd)
        shutil.rmtree(public, ignore_errors=True)


def test_authd_refuses_another_hosts_key(tls_cluster, tmp_path):
    """authd holding host:login1's key will not serve as login2."""
    key_file = _write_private(tmp_path / "login1.key", _keygen(tls_cluster, "host:login1"))
    conf = _isolated_conf(tls_cluster, tmp_path, "authd2", AuthKeyFile=str(key_file))
    r = _start_refused(["authd", "--conf", conf, "--host", "login2"])
    assert "host:login1" in r.stderr and "host:login2" in r.stderr, r.stderr


# ---- 3. keygen and per-node keys ----------------------------------------------------------------
def test_keygen_node_key_signs_for_its_node_only(tls_cluster, tmp_path):
    """keygen prints node1's derived key; loaded, the ring signs for node1 only; a daemon token
    made with it is accepted for node1's heartbeat and refused for node2's."""
    cfg = _cfg(tls_cluster)
    text = _keygen(tls_cluster, "node:node1")
    assert re.fullmatch(r"node:node1 [0-9a-f]{64}\n", text), text
    key_file = _write_private(tmp_path / "node1.key", text)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    ring = keys.load(str(key_file))
    assert ring.scope == "node:node1" and not ring.is_cluster
    assert ring.can_sign_for("node:node1") and not ring.can_sign_for("node:node2")
    assert not ring.can_sign_for("host:login1") and not ring.can_sign_for(keys.CLUSTER)
    with pytest.raises(keys.ConfigError):
        ring.key_for("node:node2")
    key = ring.key_for("node:node1")
    assert key == keys.load(cfg.key_path).key_for("node:node1")
    assert key != keys.load(cfg.key_path).key_for("node:node2")

    stub = controller_pb2_grpc.ControllerStub(client_channel(cfg.controller_target, cfg))
    ok = stub.NodeHeartbeat(pb.NodeHeartbeatRequest(node="node1", instance="keygen-test"),
                            metadata=daemon_metadata(key, "node:node1", "NodeHeartbeat"), timeout=10)
    assert ok.reregister is True  # answered: an instance the controller does not know
    for sender, node, code in (("node:node1", "node2", grpc.StatusCode.PERMISSION_DENIED),
                               ("node:node2", "node2", grpc.StatusCode.UNAUTHENTICATED)):
        with pytest.raises(grpc.RpcError) as e:
            stub.NodeHeartbeat(pb.NodeHeartbeatRequest(node=node, instance="keygen-test"),
                               metadata=daemon_metadata(key, sender, "NodeHeartbeat"), timeout=10)
        assert e.value.code() == code, (sender, node, e.value.code(), e.value.details())


def test_keygen_refuses_a_bad_scope(tls_cluster):
    r = tls_cluster.run([PYSLURM_LITE, "keygen", "--conf", tls_cluster.conf, "--scope", "cluster"])
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "bad scope" in r.stderr and r.stdout == ""


def test_agent_with_another_nodes_key_refuses_to_start(tls_cluster, tmp_path):
    key_file = _write_private(tmp_path / "node1.key", _keygen(tls_cluster, "node:node1"))
    conf = _isolated_conf(tls_cluster, tmp_path, "node2-with-node1-key", AuthKeyFile=str(key_file))
    r = _start_refused(["agent", "--node", "node2", "--conf", conf])
    assert f"pyslurm-lite: error: {key_file} holds the key of node:node1, not of node:node2" \
        in r.stderr, r.stderr


@pytest.mark.parametrize("daemon", ["controller", "agent"])
def test_group_readable_key_file_is_refused(tls_cluster, tmp_path, daemon):
    """A key file group may read (0640) stops the daemon at start, naming the file and its mode."""
    cfg = _cfg(tls_cluster)
    if daemon == "controller":
        text = open(cfg.key_path).read()  # the cluster key
        args = ["controller"]
    else:
        text = _keygen(tls_cluster, "node:node1")
        args = ["agent", "--node", "node1"]
    key_file = _write_private(tmp_path / "group-readable.key", text, mode=0o640)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o640
    conf = _isolated_conf(tls_cluster, tmp_path, daemon, AuthKeyFile=str(key_file))
    r = _start_refused([*args, "--conf", conf])
    assert f"the cluster key {key_file} has mode 0640" in r.stderr, r.stderr
    assert f"chmod 600 {key_file}" in r.stderr, r.stderr
    # the same file, 0600, is accepted as far as the key goes (the control for the check above)
    os.chmod(key_file, 0o600)
    keys.load(str(key_file))


def test_agent_with_only_its_nodes_key_registers_and_runs_jobs(tls_cluster, tmp_path):
    """The cluster's agent-node1 is replaced by one whose AuthKeyFile holds node1's derived key
    only: it registers, node1 is up and responding, and a job on node1 runs there (the
    controller's TLS launch, token and credential all checked with node1's key). Then the
    cluster's own agent is restored with `cluster up`."""
    key_file = _write_private(tmp_path / "node1.key", _keygen(tls_cluster, "node:node1"))
    conf = _conf_copy(tls_cluster, tmp_path / "node1.conf", {"AuthKeyFile": str(key_file)})
    old = psutil.Process(tls_cluster.pid_of("agent-node1"))
    log_path = tmp_path / "agent-node1.log"
    agent = None
    try:
        old.terminate()
        old.wait(20)
        log = open(log_path, "wb")
        agent = subprocess.Popen([PYSLURM_LITE, "agent", "--node", "node1", "--conf", str(conf)],
                                 env=cli_env(), stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for(lambda: "registered with controller" in log_path.read_text()
                  or agent.poll() is not None, 60, "our agent's registration",
                  lambda: log_path.read_text()[-2000:])
        assert agent.poll() is None, log_path.read_text()[-2000:]
        client = Client(_cfg(tls_cluster), transport="grpcio")

        def node1_up():
            nodes, _ = client.nodes(names=["node1"])
            return nodes and nodes[0].responding and nodes[0].state not in ("DOWN", "UNKNOWN") \
                and nodes[0]
        _wait_for(node1_up, 30, "node1 up and responding", tls_cluster.log_tails)
        job_id = tls_cluster.sbatch("-w", "node1", "-o", str(tmp_path / "out-%j"),
                                    "--wrap", "echo $SLURMD_NODENAME", cwd=tmp_path)
        assert wait_final(tls_cluster, job_id) == "COMPLETED", \
            tls_cluster.log_tails() + log_path.read_text()[-2000:]
        assert (tmp_path / f"out-{job_id}").read_text().strip() == "node1"
        assert agent.poll() is None and not old.is_running()
        assert "Traceback" not in log_path.read_text()
    finally:
        if agent is not None:
            _stop(agent)
        r = tls_cluster.up()
        assert r.returncode == 0, f"cluster up (restore): {r.stdout}{r.stderr}"
