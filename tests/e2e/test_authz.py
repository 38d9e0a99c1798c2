"""Authorization with real, unprivileged users against a real cluster: the whole table of
controller/auth.py walked with the CLIs run as a job's owner, another user and an operator
(AdminUsers=), with PrivateData=jobs, each check on what happened (job and node states,
reservations, nice), not only on what was printed. Then the attacks: a client that lies about
its uid, fakeroot, a call with no token, a replayed token, a node speaking for another node, and
a controller listening on more than its address.

Users are made with useradd (tests/userkit.py) before the cluster starts, so AdminUsers= can name
one, and removed afterwards."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

import grpc
import pytest

from pyslurm_lite import config
from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc
from pyslurm_lite.rpc import keys, tokens
from pyslurm_lite.rpc.authsock import fetch_token
from pyslurm_lite.rpc.common import AUTH_KEY
from pyslurm_lite.rpc.grpcutil import daemon_metadata

from conftest import Cluster, configured_cluster, wait_final, wait_state
from userkit import as_user, drop_user, make_user, need_root, user_env, user_venv

pytestmark = [pytest.mark.root, pytest.mark.slow]

SHAPE = (2, 4, 4000, 0)  # nodes, CPUs, MiB, GPUs: eight small jobs run at once
SLEEP = ["--mem=50", "--wrap", "sleep 300"]
SETTLE = 1.5  # seconds to wait before checking that something did NOT happen


@dataclass
class World:
    cluster: Cluster
    owner: object  # pwd.struct_passwd
    other: object
    operator: object
    bin_dir: str
    cfg: object

    def run(self, user, cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """A command line run as user, with our commands first on PATH and the cluster's conf."""
        env = user_env(user, PATH=f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
                       PYSLURM_LITE_CONF=str(self.cluster.conf))
        return as_user(user, cmd, env=env, cwd=user.pw_dir, timeout=timeout)

    def sbatch(self, user, *args: str) -> int:
        r = self.run(user, shlex.join(["sbatch", "--parsable", *args]))
        assert r.returncode == 0 and r.stdout.strip().isdigit(), \
            f"sbatch as {user.pw_name}: rc={r.returncode} out={r.stdout!r} err={r.stderr!r}"
        return int(r.stdout.strip())

    def running(self, user) -> int:
        """A job of user's, RUNNING."""
        job_id = self.sbatch(user, *SLEEP)
        assert wait_state(self.cluster, job_id, "RUNNING") == "RUNNING"
        return job_id

    def job(self, job_id: int) -> dict[str, str]:
        """scontrol show job, as root (an operator: sees every job), as a dict."""
        r = self.cluster.run(["scontrol", "show", "job", str(job_id)])
        assert r.returncode == 0 and f"JobId={job_id} " in r.stdout, (r.stdout, r.stderr)
        return dict(re.findall(r"(\w+)=(\S*)", r.stdout))

    def node_state(self, name: str) -> str:
        r = self.cluster.run(["scontrol", "show", "node", name])
        assert r.returncode == 0, r.stderr
        return re.search(r"\bState=(\S+)", r.stdout).group(1)

    def reservations(self) -> str:
        return self.cluster.run(["scontrol", "show", "reservation"]).stdout

    def cancel(self, *job_ids: int) -> None:
        self.cluster.run(["scancel", *map(str, job_ids)])


def _open_up(cluster: Cluster) -> None:
    """Let the users reach slurm.conf and the auth sockets (DIR/run) and the agents' spool, as
    /etc and /run are; pytest's temporary directories are 0700. Nothing inside state/ changes."""
    for parent in [cluster.dir, *cluster.dir.parents]:
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    run = cluster.dir / "run"
    assert run.is_dir() and any(run.glob("*.socket")), f"no auth sockets in {run}"
    os.chmod(run, os.stat(run).st_mode | 0o055)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    need_root()
    made = []
    try:
        for prefix in ("pltown", "pltoth", "pltop"):
            made.append(make_user(prefix))
        owner, other, operator = made
        gen = configured_cluster(tmp_path_factory, "authz", SHAPE,
                                 extra=f"AdminUsers={operator.pw_name}\nPrivateData=jobs\n")
        cluster = next(gen)
        try:
            _open_up(cluster)
            bin_dir = user_venv(owner)
            for u in made:
                r = as_user(u, f"{bin_dir}/python -c 'import pyslurm_lite'")
                if r.returncode != 0:
                    pytest.skip(f"{u.pw_name} cannot run {bin_dir}/python: {r.stderr[-300:]}")
            w = World(cluster, owner, other, operator, bin_dir, config.load(str(cluster.conf)))
            r = w.run(owner, "squeue")
            assert r.returncode == 0, f"a user cannot reach the cluster: {r.stderr}"
            yield w
        finally:
            gen.close()  # cluster down
    finally:
        for u in made:
            drop_user(u)


def _denied(r: subprocess.CompletedProcess) -> None:
    assert r.returncode != 0, f"not refused: out={r.stdout!r} err={r.stderr!r}"
    assert "denied" in (r.stdout + r.stderr).lower(), (r.stdout, r.stderr)


# ---- the table, walked with the CLIs ------------------------------------------------------------
def test_cancel_is_for_the_owner_and_operators(world):
    w = world
    mine = w.running(w.owner)
    _denied(w.run(w.other, f"scancel {mine}"))
    _denied(w.run(w.other, f"scancel --full --signal=KILL {mine}"))
    _denied(w.run(w.other, f"scancel -u {w.owner.pw_name}"))
    time.sleep(SETTLE)
    assert w.cluster.state(mine) == "RUNNING"

    assert w.run(w.owner, f"scancel {mine}").returncode == 0
    assert wait_final(w.cluster, mine) == "CANCELLED"

    by_operator = w.running(w.owner)
    killed = w.running(w.owner)
    r = w.run(w.operator, f"scancel --full --signal=KILL {killed}")
    assert r.returncode == 0, r.stderr
    assert wait_final(w.cluster, killed) != "RUNNING"
    assert w.run(w.operator, f"scancel {by_operator}").returncode == 0
    assert wait_final(w.cluster, by_operator) == "CANCELLED"


def test_signal_is_for_the_owner_and_operators(world):
    """A signal the job traps leaves a mark: only the owner's and the operator's arrive."""
    w = world
    script = ("#!/bin/bash\ntrap 'echo got-usr1 >> \"$HOME/sig-$SLURM_JOB_ID\"' USR1\n"
              "for i in $(seq 600); do sleep 0.5; done\n")
    path = os.path.join(w.owner.pw_dir, "trap.sh")
    with open(path, "w") as f:
        f.write(script)
    os.chown(path, w.owner.pw_uid, w.owner.pw_gid)
    job = w.sbatch(w.owner, "--mem=50", "trap.sh")
    assert wait_state(w.cluster, job, "RUNNING") == "RUNNING"
    marks = os.path.join(w.owner.pw_dir, f"sig-{job}")
    time.sleep(1.0)  # the trap is set
    _denied(w.run(w.other, f"scancel --batch --signal=USR1 {job}"))
    time.sleep(SETTLE)
    assert not os.path.exists(marks) and w.cluster.state(job) == "RUNNING"
    for n, user in enumerate((w.operator, w.owner), 1):  # one at a time: pending USR1s merge
        assert w.run(user, f"scancel --batch --signal=USR1 {job}").returncode == 0
        assert _wait_marks(marks, n) == n, user.pw_name
    assert w.cluster.state(job) == "RUNNING"
    w.cancel(job)


def _wait_marks(path: str, n: int, timeout: float = 20.0) -> int:
    deadline, count = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        count = open(path).read().count("got-usr1") if os.path.exists(path) else 0
        if count >= n:
            break
        time.sleep(0.2)
    return count


def test_hold_and_release(world):
    w = world
    job = w.sbatch(w.owner, "--begin=now+1hour", *SLEEP)
    assert w.job(job)["JobState"] == "PENDING"
    _denied(w.run(w.other, f"scontrol hold {job}"))
    assert "Held" not in w.job(job)["Reason"]

    assert w.run(w.owner, f"scontrol hold {job}").returncode == 0
    assert w.job(job)["Reason"] == "JobHeldUser"
    _denied(w.run(w.other, f"scontrol release {job}"))
    assert w.job(job)["Reason"] == "JobHeldUser"
    assert w.run(w.owner, f"scontrol release {job}").returncode == 0
    assert "Held" not in w.job(job)["Reason"]

    # an operator's hold is an admin hold: its owner cannot release it, an operator can
    assert w.run(w.operator, f"scontrol hold {job}").returncode == 0
    assert w.job(job)["Reason"] == "JobHeldAdmin"
    _denied(w.run(w.owner, f"scontrol release {job}"))
    assert w.job(job)["Reason"] == "JobHeldAdmin"
    _denied(w.run(w.other, f"scontrol release {job}"))
    assert w.run(w.operator, f"scontrol release {job}").returncode == 0
    assert "Held" not in w.job(job)["Reason"]
    assert w.job(job)["JobState"] == "PENDING"
    w.cancel(job)


def test_requeue(world):
    w = world
    job = w.running(w.owner)
    _denied(w.run(w.other, f"scontrol requeue {job}"))
    time.sleep(SETTLE)
    assert w.cluster.state(job) == "RUNNING" and w.job(job)["Restarts"] == "0"
    assert w.run(w.owner, f"scontrol requeue {job}").returncode == 0
    assert w.job(job)["Restarts"] == "1"
    assert wait_state(w.cluster, job, "RUNNING", timeout=90) == "RUNNING"
    assert w.run(w.operator, f"scontrol requeue {job}").returncode == 0
    assert w.job(job)["Restarts"] == "2"
    w.cancel(job)


def test_node_updates_are_for_operators(world):
    w = world
    assert "DRAIN" not in w.node_state("node1")
    try:
        for user in (w.owner, w.other):
            _denied(w.run(user, "scontrol update NodeName=node1 State=DRAIN Reason=x"))
            assert "DRAIN" not in w.node_state("node1")
        r = w.run(w.operator, "scontrol update NodeName=node1 State=DRAIN Reason=x")
        assert r.returncode == 0, r.stderr
        assert "DRAIN" in w.node_state("node1")
        for user in (w.owner, w.other):
            _denied(w.run(user, "scontrol update NodeName=node1 State=RESUME"))
            assert "DRAIN" in w.node_state("node1")
        r = w.run(w.operator, "scontrol update NodeName=node1 State=RESUME")
        assert r.returncode == 0, r.stderr
        assert "DRAIN" not in w.node_state("node1")
    finally:
        w.cluster.run(["scontrol", "update", "NodeName=node1", "State=RESUME"])


def test_reservations_are_for_operators(world):
    w = world
    create = ("scontrol create reservation ReservationName={name} StartTime=now+1day "
              "Duration=60 Nodes=node2 Users={user}")
    try:
        _denied(w.run(w.other, create.format(name="byother", user=w.other.pw_name)))
        assert "byother" not in w.reservations()
        r = w.run(w.operator, create.format(name="byop", user=w.operator.pw_name))
        assert r.returncode == 0 and "Reservation created: byop" in r.stdout, (r.stdout, r.stderr)
        assert "ReservationName=byop" in w.reservations()
        for user in (w.owner, w.other):
            _denied(w.run(user, "scontrol delete ReservationName=byop"))
            assert "ReservationName=byop" in w.reservations()
        assert w.run(w.operator, "scontrol delete ReservationName=byop").returncode == 0
        assert "byop" not in w.reservations()
    finally:
        for name in ("byop", "byother"):
            w.cluster.run(["scontrol", "delete", f"ReservationName={name}"])


def _jobs_of(w: World, user) -> set[int]:
    r = w.cluster.run(["squeue", "-h", "-u", user.pw_name, "-o", "%i"])
    assert r.returncode == 0, r.stderr
    return {int(x) for x in r.stdout.split()}


def test_negative_nice_is_for_operators(world):
    w = world
    before = _jobs_of(w, w.other)
    r = w.run(w.other, "sbatch --parsable --hold --nice=-5 --mem=50 --wrap true")
    assert r.returncode != 0 and not r.stdout.strip().isdigit(), (r.stdout, r.stderr)
    assert _jobs_of(w, w.other) == before  # nothing was submitted
    up = w.sbatch(w.other, "--hold", "--nice=5", "--mem=50", "--wrap", "true")
    assert w.job(up)["Nice"] == "5"
    boosted = w.sbatch(w.operator, "--hold", "--nice=-5", "--mem=50", "--wrap", "true")
    assert w.job(boosted)["Nice"] == "-5"
    w.cancel(up, boosted)


def test_private_data_hides_other_users_jobs(world):
    w = world
    job = w.running(w.owner)
    jid = str(job)

    def sees(user) -> dict[str, bool]:
        out = {}
        r = w.run(user, "squeue -h -o %i")
        assert r.returncode == 0, r.stderr
        out["squeue"] = jid in r.stdout.split()
        r = w.run(user, f"squeue -h -j {job} -o %i")
        out["squeue -j"] = jid in r.stdout.split()
        r = w.run(user, f"scontrol show job {job}")
        out["scontrol"] = f"JobId={jid} " in r.stdout
        r = w.run(user, f"sacct -a -n -X -P -o JobID -j {job}")  # -a: not only the caller's
        out["sacct -j"] = jid in r.stdout.split()
        r = w.run(user, "sacct -a -n -X -P -o JobID")
        out["sacct -a"] = jid in r.stdout.split()
        return out

    for state in ("running", "ended"):
        assert sees(w.other) == dict.fromkeys(("squeue", "squeue -j", "scontrol", "sacct -j",
                                               "sacct -a"), False), state
        for user in (w.owner, w.operator):
            seen = sees(user)
            assert seen["scontrol"] and seen["sacct -j"] and seen["sacct -a"], (user.pw_name, state, seen)
            if state == "running":  # (an ended job leaves squeue's default listing)
                assert seen["squeue"] and seen["squeue -j"], (user.pw_name, state, seen)
        w.cancel(job)
        wait_final(w.cluster, job)


# ---- attacks ------------------------------------------------------------------------------------
LIAR = r'''
import os, pwd, sys
victim, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
pw = pwd.getpwnam(victim)
uid, gid = pw.pw_uid, pw.pw_gid
groups = os.getgrouplist(victim, gid)
os.getuid = os.geteuid = lambda: uid
os.getgid = os.getegid = lambda: gid
os.getresuid = lambda: (uid, uid, uid)
os.getresgid = lambda: (gid, gid, gid)
os.getgroups = lambda: list(groups)
os.getlogin = lambda: victim
os.environ.update(USER=victim, LOGNAME=victim)
from importlib.metadata import entry_points
ep = next(e for e in entry_points(group="console_scripts") if e.name == script)
print("LYING-AS", victim, "uid", os.getuid(), flush=True)
sys.argv = [script, *args]
rc = ep.load()()
sys.exit(rc if isinstance(rc, int) else 0)
'''


@pytest.fixture(scope="module")
def liar(world):
    d = tempfile.mkdtemp(prefix="plt-liar-", dir="/tmp")
    os.chmod(d, 0o755)
    path = os.path.join(d, "liar.py")
    with open(path, "w") as f:
        f.write(LIAR)
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(d, ignore_errors=True)


def test_lying_about_the_uid_in_process_does_not_cancel_the_victims_job(world, liar):
    w = world
    victim_job = w.running(w.owner)
    r = w.run(w.other, f"{w.bin_dir}/python {liar} {w.owner.pw_name} scancel {victim_job}")
    assert f"LYING-AS {w.owner.pw_name} uid {w.owner.pw_uid}" in r.stdout, (r.stdout, r.stderr)
    assert r.returncode != 0, (r.stdout, r.stderr)
    time.sleep(SETTLE)
    assert w.cluster.state(victim_job) == "RUNNING"
    # ... nor does it submit a job as the victim
    before = _jobs_of(w, w.owner)
    r = w.run(w.other, f"{w.bin_dir}/python {liar} {w.owner.pw_name} sbatch --hold --mem=50 --wrap true")
    assert "LYING-AS" in r.stdout, (r.stdout, r.stderr)
    assert _jobs_of(w, w.owner) == before
    # the same harness, run by the job's real owner, does cancel it: the lie was what failed
    r = w.run(w.owner, f"{w.bin_dir}/python {liar} {w.other.pw_name} scancel {victim_job}")
    assert "LYING-AS" in r.stdout and r.returncode == 0, (r.stdout, r.stderr)
    assert wait_final(w.cluster, victim_job) == "CANCELLED"


def _fakeroot() -> str:
    found = shutil.which("fakeroot")
    if found is None and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-q", "fakeroot"], capture_output=True, timeout=300)
        found = shutil.which("fakeroot")
    if found is None:
        pytest.skip("no fakeroot and it could not be installed")
    return found


def test_fakeroot_sbatch_never_runs_as_root(world):
    w = world
    fakeroot = _fakeroot()
    assert w.run(w.other, f"{fakeroot} id -u").stdout.strip() == "0"  # fakeroot does lie
    out = os.path.join(w.other.pw_dir, "fakeroot-id")
    r = w.run(w.other, f"{fakeroot} sbatch --parsable --mem=50 --wrap 'id -u > {out}'")
    if r.returncode == 0:  # accepted: then as the real user
        job = int(r.stdout.strip().splitlines()[-1])
        assert w.job(job)["UserId"] == f"{w.other.pw_name}({w.other.pw_uid})"
        assert wait_final(w.cluster, job) == "COMPLETED"
        assert open(out).read().strip() == str(w.other.pw_uid)
    else:  # refused: nothing ran, nothing was queued as root
        assert not os.path.exists(out)
        assert not any(w.job(j)["UserId"].startswith("root(") for j in _jobs_of(w, w.other))
        r0 = w.cluster.run(["squeue", "-h", "-u", "root", "-o", "%i"])
        assert r0.stdout.strip() == "", r0.stdout


def _stub(w: World):
    channel = grpc.insecure_channel(w.cfg.controller_target)
    return controller_pb2_grpc.ControllerStub(channel)


def test_call_without_a_token_is_unauthenticated_and_says_what_to_do(world):
    w = world
    stub = _stub(w)
    before = _jobs_of(w, w.other)
    for call, req in ((stub.GetJobs, pb.GetJobsRequest()), (stub.Ping, pb.PingRequest()),
                      (stub.SubmitJobs, pb.SubmitJobsRequest())):
        with pytest.raises(grpc.RpcError) as e:
            call(req, timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, e.value.details()
        assert "no authentication token" in e.value.details(), e.value.details()
    for forged in ("u1|x", "garbage", tokens.make_user_token(b"k" * 32, keys.CLUSTER, "local",
                                                             tokens.CONTROLLER, 0, 0, "h", 10)):
        with pytest.raises(grpc.RpcError) as e:
            stub.GetJobs(pb.GetJobsRequest(), metadata=((AUTH_KEY, forged),), timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, e.value.details()
    assert _jobs_of(w, w.other) == before


def test_captured_token_works_once(world):
    """A user's token, captured: the first call with it does what the user could; the second
    is refused and changes nothing."""
    w = world
    first, second = w.running(w.owner), w.running(w.owner)
    code = (f"from pyslurm_lite.rpc.authsock import fetch_token; "
            f"print(fetch_token({w.cfg.auth_socket!r}, 'slurmctld'))")
    r = w.run(w.owner, f"{w.bin_dir}/python -c {shlex.quote(code)}")
    assert r.returncode == 0, r.stderr
    token = r.stdout.strip()
    assert token.split("|")[4] == str(w.owner.pw_uid)
    stub, md = _stub(w), ((AUTH_KEY, token),)
    reply = stub.CancelJobs(pb.CancelJobsRequest(filter=pb.JobFilter(job_ids=[first])), metadata=md,
                            timeout=10)
    assert list(reply.job_ids) == [first] and not reply.errors
    with pytest.raises(grpc.RpcError) as e:
        stub.CancelJobs(pb.CancelJobsRequest(filter=pb.JobFilter(job_ids=[second])), metadata=md,
                        timeout=10)
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED and "replayed" in e.value.details()
    assert wait_final(w.cluster, first) == "CANCELLED"
    time.sleep(SETTLE)
    assert w.cluster.state(second) == "RUNNING"
    # and root's own token, fetched here, the same
    md = ((AUTH_KEY, fetch_token(w.cfg.auth_socket, tokens.CONTROLLER)),)
    stub.GetJobs(pb.GetJobsRequest(), metadata=md, timeout=10)
    with pytest.raises(grpc.RpcError) as e:
        stub.GetJobs(pb.GetJobsRequest(), metadata=md, timeout=10)
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED and "replayed" in e.value.details()
    w.cancel(second)


def test_node_cannot_report_for_another_node(world):
    """node1's key signs a heartbeat naming node2 with a failed health check: refused, and node2
    is not drained."""
    w = world
    node1_key = keys.load(w.cfg.key_path).key_for("node:node1")
    stub = _stub(w)
    assert "DRAIN" not in w.node_state("node2")
    request = pb.NodeHeartbeatRequest(node="node2", instance="forged", health_error="forged by node1")
    try:
        with pytest.raises(grpc.RpcError) as e:
            stub.NodeHeartbeat(request, metadata=daemon_metadata(node1_key, "node:node1", "NodeHeartbeat"),
                               timeout=10)
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED, e.value.details()
        # claiming to be node2 with node1's key fails authentication outright
        with pytest.raises(grpc.RpcError) as e:
            stub.NodeHeartbeat(request, metadata=daemon_metadata(node1_key, "node:node2", "NodeHeartbeat"),
                               timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED, e.value.details()
        assert "DRAIN" not in w.node_state("node2")
    finally:
        w.cluster.run(["scontrol", "update", "NodeName=node2", "State=RESUME"])


def test_controller_listens_only_on_its_address(world):
    import psutil
    w = world
    assert w.cfg.controller_addr == "127.0.0.1"
    port, pid = w.cfg.controller_port, w.cluster.pid_of("controller")
    listening = [c for c in psutil.net_connections(kind="tcp")
                 if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]
    assert listening, f"nothing listens on port {port}"
    # grpc may listen on an IPv6 socket bound to the v4-mapped loopback: the same address
    assert {c.laddr.ip.removeprefix("::ffff:") for c in listening} == {"127.0.0.1"}, listening
    assert {c.pid for c in listening} == {pid}


# ---- stated identity fields: refused, or replaced by the system's ---------------------------------
def _submit_in_process(w: World, user, spec_fields: str) -> subprocess.CompletedProcess:
    """The Python client, run as user, submitting a JobSpec with the fields the user states."""
    code = ("import os\n"
            "from pyslurm_lite.client import Client\n"
            "from pyslurm_lite.model import JobSpec\n"
            f"spec = JobSpec(script='#!/bin/sh\\nid -u; id -g; id -G\\n', work_dir=os.getcwd(), {spec_fields})\n"
            "print(Client().submit(spec))\n")
    return w.run(user, f"{w.bin_dir}/python -c {shlex.quote(code)}")


def test_stated_gid_outside_the_users_groups_is_refused(world):
    w, u = world, world.owner
    r = _submit_in_process(w, u, f"uid={u.pw_uid}, gid=0, groups=[0, 42, 6], user='root'")
    _denied(r)
    assert not re.search(r"^\d+$", r.stdout, re.M), "a job was queued"


def test_stated_groups_and_name_are_replaced_by_the_systems(world, tmp_path):
    w, u = world, world.owner
    r = _submit_in_process(w, u, f"uid={u.pw_uid}, gid={u.pw_gid}, groups=[0, 42, 6], "
                                 f"user='{w.other.pw_name}', std_out='/tmp/plt-groups-%j.out'")
    assert r.returncode == 0, r.stderr
    job_id = int(r.stdout.split()[-1])
    try:
        assert wait_final(w.cluster, job_id) == "COMPLETED"
        out = open(f"/tmp/plt-groups-{job_id}.out").read().split("\n")
        real = sorted(os.getgrouplist(u.pw_name, u.pw_gid))
        assert out[0] == str(u.pw_uid) and out[1] == str(u.pw_gid)
        assert sorted(map(int, out[2].split())) == real  # not root's 0, 42, 6
        assert w.job(job_id)["UserId"].startswith(f"{u.pw_name}(")
    finally:
        if os.path.exists(f"/tmp/plt-groups-{job_id}.out"):
            os.unlink(f"/tmp/plt-groups-{job_id}.out")


def test_a_step_in_another_users_job_is_refused(world):
    """srun --jobid=VICTIM as another user: refused, and nothing of it runs in the job."""
    w = world
    victim_job = w.running(w.owner)
    try:
        marker = f"/tmp/plt-step-{victim_job}"
        r = w.run(w.other, f"srun --jobid={victim_job} touch {marker}", timeout=60)
        _denied(r)
        time.sleep(SETTLE)
        assert not os.path.exists(marker)
        r = w.run(w.operator, f"srun --jobid={victim_job} id -u", timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == str(w.owner.pw_uid), (r.stdout, r.stderr)
    finally:
        w.cancel(victim_job)
