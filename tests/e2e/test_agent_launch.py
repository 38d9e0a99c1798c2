"""What a job's user can reach through the agent, checked with real unprivileged users.

The agent's launch side runs here in-process (a StepManager and TaskManager of node1, with a
cgroup scope of their own and their own spool), fed launch messages and credentials this test
signs with node1's key, as the controller does: so these tests hold whatever the controller
sends, and each names the attack it stops.
"""

from __future__ import annotations

import os
import queue
import signal
import stat
import subprocess
import time

import pytest

from pyslurm_lite import config
from pyslurm_lite._proto import agent_pb2, types_pb2
from pyslurm_lite.agent.cgroup import make_tracker, scope
from pyslurm_lite.agent.stepmgr import StepManager
from pyslurm_lite.agent.taskmgr import TaskManager
from pyslurm_lite.cli.cluster import write_config
from pyslurm_lite.model import Job, JobSpec, JobState, NodeAllocation
from pyslurm_lite.rpc import credential, keys, wire
from pyslurm_lite.rpc.credential import Claims, NodeShare

import userkit

pytestmark = pytest.mark.root

NODE = "node1"
CHDIR_ERROR = "slurmstepd: error: couldn't chdir to `{}': Permission denied: going to /tmp instead"


class Agent:
    """node1's launch side, in this process."""

    def __init__(self, directory: str):
        cfg = config.load(write_config(directory, 2, 2, 2000, 0))
        self.ring = keys.KeyRing(keys.CLUSTER, os.urandom(32).hex().encode())
        self.events: queue.Queue = queue.Queue()
        self.spool = os.path.join(directory, "spool")
        self.tracker = make_tracker(cfg.proctrack_type, scope(cfg, NODE) + "_launchtest")
        key = self.ring.key_for(f"node:{NODE}")
        self.steps = StepManager(cfg, NODE, self.spool, self.events.put, tracker=self.tracker,
                                 node_key=key)
        self.steps.tasks = self.tasks = TaskManager(self.steps, NODE, key)
        self.next_id = 900000 + os.getpid() % 10000 * 10

    def job(self, user, script: str = "", work_dir: str = "/tmp", mem: int = 200, **spec) -> Job:
        self.next_id += 1
        spec = JobSpec(script=script, work_dir=work_dir, uid=user.pw_uid, gid=user.pw_gid,
                       groups=[user.pw_gid], user=user.pw_name,
                       environment={"PATH": "/usr/bin:/bin", "HOME": user.pw_dir}, **spec)
        return Job(job_id=self.next_id, spec=spec, allocations=[NodeAllocation(NODE, 1, mem)],
                   state=JobState.RUNNING)

    def sign(self, job: Job, step=credential.BATCH, nodes=(NODE,), lifetime=120.0, now=None,
             uid=None, mem=None, restart_count=None) -> str:
        spec = job.spec
        a = job.allocations[0]
        claims = Claims(job_id=job.job_id, step=step,
                        restart_count=job.restart_count if restart_count is None else restart_count,
                        uid=spec.uid if uid is None else uid, gid=spec.gid, groups=list(spec.groups),
                        user=spec.user, nodes=list(nodes),
                        alloc={n: NodeShare(a.cpus, a.mem if mem is None else mem, []) for n in nodes},
                        # a step's credential signs its task layout: one task per node here
                        tasks=None if step == credential.BATCH else {n: [i] for i, n in enumerate(nodes)})
        return credential.sign(lambda n: self.ring.key_for(f"node:{n}"), claims, lifetime, now)

    def run_batch(self, job: Job, cred: str | None = None, timeout: float = 30) -> dict:
        """Launch a batch job; its ending (or launch failure) event."""
        self.steps.launch(job, {NODE: "127.0.0.1"}, self.sign(job) if cred is None else cred)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                e = self.events.get(timeout=0.5)
            except queue.Empty:
                continue
            if e["job_id"] == job.job_id and e["kind"] in ("ended", "launch_failed"):
                return e
        pytest.fail(f"job {job.job_id} did not end in {timeout}s")

    def run_step(self, job: Job, step_id: int, argv: list[str], cred: str, cwd: str = "/tmp",
                 env: dict | None = None, uid: int = 0) -> tuple[str, str, list]:
        """One step's tasks on node1 through LaunchStep's stream: (stdout, error, exits).
        The launch message claims uid 0 and no memory limit: only the credential may say."""
        launch = agent_pb2.StepLaunch(
            step_id=step_id, argv=argv, env=env or {"PATH": "/usr/bin:/bin"}, cwd=cwd, uid=uid,
            gid=uid, groups=[uid], task_ids=[0], credential=cred, step_nodes=[NODE],
            step_tasks_per_node=[1], node_addrs=[f"{NODE}=127.0.0.1"], cpus_per_task=1)
        msg = wire.to_msg(Job(job_id=job.job_id, spec=JobSpec(uid=uid, gid=uid, user="root"),
                              allocations=[NodeAllocation(NODE, 2, 0)], state=JobState.RUNNING),
                          types_pb2.Job)
        launch.job.CopyFrom(msg)
        out, error, exits = [], "", []
        for o in self.tasks.serve(iter([agent_pb2.StepInput(launch=launch)]), _Context()):
            error = error or o.error
            if o.data:
                out.append(o.data.decode(errors="replace"))
            if o.exited:
                exits.append((o.exit_code, o.exit_signal))
        return "".join(out), error, exits

    def close(self) -> None:
        for key in self.tracker.existing():
            self.tracker.kill_all(key, 0)
            self.tracker.remove(key)
        self.tracker.close()


class _Context:
    def add_callback(self, fn) -> None:
        pass


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    userkit.need_root()
    d = tmp_path_factory.mktemp("launch")
    for parent in [d, *d.parents]:  # users must reach their script in the spool (pytest: 0700)
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    a = Agent(str(d))
    try:
        yield a
    finally:
        a.close()


@pytest.fixture(scope="module")
def attacker():
    u = userkit.make_user("atk")
    try:
        yield u
    finally:
        userkit.drop_user(u)


@pytest.fixture(scope="module")
def victim():
    u = userkit.make_user("vic")
    project = os.path.join(u.pw_dir, "project")
    os.mkdir(project)
    secret = f"victim-secret-{os.urandom(8).hex()}"
    with open(os.path.join(project, "secret.txt"), "w") as f:
        f.write(secret + "\n")
    os.chmod(project, 0o755)
    os.chmod(os.path.join(project, "secret.txt"), 0o644)
    os.chown(project, u.pw_uid, u.pw_gid)
    os.chown(os.path.join(project, "secret.txt"), u.pw_uid, u.pw_gid)
    try:
        yield u, project, secret
    finally:
        userkit.drop_user(u)


@pytest.fixture
def outdir(attacker, tmp_path_factory):
    """A directory the attacker owns, outside any home, for its jobs' output."""
    d = tmp_path_factory.mktemp("out")
    for parent in [d, *d.parents]:
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    os.chown(d, attacker.pw_uid, attacker.pw_gid)
    return str(d)


# ---- 1. privilege drop, then chdir, then stdio --------------------------------------------------
def test_batch_cannot_enter_a_directory_its_user_may_not(agent, attacker, victim, outdir):
    """`sbatch -D /home/victim/project`: the agent (root) could enter it, the user cannot; the
    job runs in /tmp with Slurm's error line on its stderr, and never reads the secret."""
    _, project, secret = victim
    out = os.path.join(outdir, "chdir.out")
    job = agent.job(attacker, "#!/bin/sh\ncat secret.txt; pwd\n", work_dir=project, std_out=out)
    assert agent.run_batch(job)["kind"] == "ended"
    text = open(out).read()
    assert secret not in text
    assert CHDIR_ERROR.format(project) in text.splitlines()
    assert "/tmp" in text.splitlines()


def test_step_cannot_enter_a_directory_its_user_may_not(agent, attacker, victim):
    _, project, secret = victim
    job = agent.job(attacker)
    out, error, exits = agent.run_step(job, 0, ["/bin/sh", "-c", "cat secret.txt; pwd"],
                                       agent.sign(job, step=0), cwd=project)
    assert not error and exits
    assert secret not in out and "/tmp" in out.splitlines()


def test_batch_work_dir_the_user_may_enter(agent, attacker, outdir):
    job = agent.job(attacker, "#!/bin/sh\npwd; id -u\n", work_dir=outdir, std_out="ok-%j.out")
    assert agent.run_batch(job)["kind"] == "ended"
    lines = open(os.path.join(outdir, f"ok-{job.job_id}.out")).read().split()
    assert lines == [outdir, str(attacker.pw_uid)]


# ---- 2. the submitter's umask -------------------------------------------------------------------
def test_umask_077_gives_private_output(agent, attacker, outdir):
    job = agent.job(attacker, "#!/bin/sh\necho hi; touch made-by-job\n", work_dir=outdir,
                    std_out="umask-%j.out")
    job.spec.environment["SLURM_UMASK"] = "0077"
    assert agent.run_batch(job)["kind"] == "ended"
    for name in (f"umask-{job.job_id}.out", "made-by-job"):
        mode = stat.S_IMODE(os.stat(os.path.join(outdir, name)).st_mode)
        assert mode == 0o600, f"{name}: {mode:04o}"


def test_step_umask_from_srun(agent, attacker, outdir):
    job = agent.job(attacker)
    _, error, exits = agent.run_step(job, 0, ["/bin/touch", "step-file"], agent.sign(job, step=0),
                                     cwd=outdir, env={"PATH": "/usr/bin:/bin", "SLURM_UMASK": "0027"})
    assert not error and exits == [(0, 0)]
    assert stat.S_IMODE(os.stat(os.path.join(outdir, "step-file")).st_mode) == 0o640


def test_users_sbatch_sends_its_umask(attacker):
    bin_dir = userkit.user_venv(attacker)
    r = userkit.as_user(attacker, f"umask 077; '{bin_dir}/python' -c 'import os; "
                        f"from pyslurm_lite.cli.sbatch import with_umask; "
                        f"print(with_umask(os.environ)[\"SLURM_UMASK\"])'")
    assert r.stdout.strip() == "0077", r.stderr


# ---- 3. the spool is root's ---------------------------------------------------------------------
def test_job_cannot_plant_files_in_its_spool_dir(agent, attacker, outdir):
    out = os.path.join(outdir, "plant.out")
    script = ('#!/bin/sh\nd=$(dirname "$0")\necho "dir=$d"\n'
              'touch "$d/pid" && echo TOUCHED\nln -s /etc/shadow "$d/link" && echo LINKED\n'
              'echo x > "$0" && echo REWROTE\n')
    job = agent.job(attacker, script, work_dir=outdir, std_out=out)
    assert agent.run_batch(job)["kind"] == "ended"
    text = open(out).read()
    assert "TOUCHED" not in text and "LINKED" not in text and "REWROTE" not in text, text
    jdir = text.split("dir=")[1].split()[0]
    assert not os.path.lexists(jdir), "the job's spool directory outlived it"


def test_spool_dir_is_roots_and_the_script_the_users(agent, attacker, outdir):
    out = os.path.join(outdir, "stat.out")
    job = agent.job(attacker, '#!/bin/sh\nstat -c "%u %a" "$(dirname "$0")" "$0"\n',
                    work_dir=outdir, std_out=out)
    assert agent.run_batch(job)["kind"] == "ended"
    assert open(out).read().split() == [str(os.geteuid()), "711", str(attacker.pw_uid), "500"]


def test_reused_job_dir_symlink_is_not_followed(agent, attacker, outdir):
    """A run whose directory already holds a planted `slurm_script` symlink: root must neither
    write through it nor chown its target."""
    target = os.path.join(outdir, "roots-file")
    with open(target, "w") as f:
        f.write("root's\n")
    os.chown(target, 0, 0)
    job = agent.job(attacker, "#!/bin/sh\ntrue\n", work_dir=outdir, std_out="/dev/null")
    jdir = agent.steps._job_dir(job)
    os.makedirs(jdir, exist_ok=True)
    os.chown(jdir, attacker.pw_uid, attacker.pw_gid)
    os.symlink(target, os.path.join(jdir, "slurm_script"))
    assert agent.run_batch(job)["kind"] == "ended"
    st = os.stat(target)
    assert open(target).read() == "root's\n" and (st.st_uid, st.st_gid) == (0, 0)


def _leftover(agent, job_name: str, owner: int, dir_owner: int, link: bool = False):
    """A sleeping process group and a pid file naming it in spool/job_name."""
    victim_proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    jdir = os.path.join(agent.spool, job_name)
    os.makedirs(jdir, mode=0o711, exist_ok=True)
    os.chown(jdir, dir_owner, -1)
    pid_file = os.path.join(jdir, "pid")
    if link:
        real = os.path.join(agent.spool, f"{job_name}-real")
        with open(real, "w") as f:
            f.write(f"{victim_proc.pid} 0\n")
        os.symlink(real, pid_file)
    else:
        with open(pid_file, "w") as f:
            f.write(f"{victim_proc.pid} 0\n")
        os.chown(pid_file, owner, -1)
    return victim_proc


@pytest.mark.parametrize("who", ["user_file", "user_dir", "symlink"])
def test_planted_pid_file_is_not_trusted(agent, attacker, who):
    """A pid file the user wrote (or could have) never makes root kill a process group."""
    uid = attacker.pw_uid
    owner, dir_owner = {"user_file": (uid, 0), "user_dir": (0, uid), "symlink": (0, 0)}[who]
    proc = _leftover(agent, "job00000077.0", owner, dir_owner, link=who == "symlink")
    try:
        agent.steps.clear_leftovers()
        time.sleep(0.2)
        assert proc.poll() is None, "root killed the process group a planted pid file named"
        assert not os.path.lexists(os.path.join(agent.spool, "job00000077.0"))
    finally:
        proc.kill()
        proc.wait()
        userkit_remove(os.path.join(agent.spool, "job00000077.0-real"))


def test_own_pid_file_is_trusted(agent):
    """The control: what the agent itself wrote is what clear_leftovers acts on."""
    proc = _leftover(agent, "job00000078.0", 0, 0)
    try:
        agent.steps.clear_leftovers()
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def userkit_remove(path: str) -> None:
    if os.path.lexists(path):
        os.unlink(path)


# ---- 4. launch credentials ----------------------------------------------------------------------
def test_identity_and_memory_come_from_the_credential(agent, attacker):
    """The message says uid 0 and no memory limit (as an salloc's first step could); the
    credential says the user and 300 MiB: the task runs as the user, in a cgroup of 300 MiB."""
    job = agent.job(attacker, mem=300)
    out, error, exits = agent.run_step(job, 0, ["/usr/bin/id", "-u"], agent.sign(job, step=0))
    assert not error and exits == [(0, 0)]
    assert out.split() == [str(attacker.pw_uid)]
    limit = _memory_limit(agent, job.job_id)
    if limit is None:
        pytest.skip("no memory cgroup controller here")
    assert limit == 300 * 1024 * 1024


def _memory_limit(agent, job_id: int) -> int | None:
    t = agent.tracker
    if hasattr(t, "base") and isinstance(t.base, dict):  # v1
        path = os.path.join(t.base.get("memory", "/nonexistent"), f"job_{job_id}",
                            "memory.limit_in_bytes")
    elif hasattr(t, "_dir"):
        path = os.path.join(t._dir(f"job_{job_id}"), "memory.max")
    else:
        return None
    try:
        return int(open(path).read().strip())
    except (OSError, ValueError):
        return None


def test_step_credential_cannot_be_replayed(agent, attacker):
    job = agent.job(attacker)
    cred = agent.sign(job, step=0)
    _, error, exits = agent.run_step(job, 0, ["/bin/true"], cred)
    assert not error and exits == [(0, 0)]
    out, error, exits = agent.run_step(job, 0, ["/usr/bin/id", "-u"], cred)
    assert "already used" in error and not exits and not out


def test_no_launch_after_the_job_was_cancelled(agent, attacker):
    job = agent.job(attacker)
    cred = agent.sign(job, step=1)  # issued before the cancel, still within its lifetime
    agent.steps.terminate([job.job_id], "cancelled", [job.restart_count])
    out, error, exits = agent.run_step(job, 1, ["/usr/bin/id", "-u"], cred)
    assert "revoked" in error and not exits
    # and the batch script of that run is refused too, reported as a launch failure
    batch = agent.job(attacker, "#!/bin/sh\ntrue\n", std_out="/dev/null")
    batch.job_id = job.job_id
    e = agent.run_batch(batch)
    assert e["kind"] == "launch_failed" and "revoked" in e["message"]


def test_no_step_after_the_batch_script_ended(agent, attacker):
    job = agent.job(attacker, "#!/bin/sh\ntrue\n", std_out="/dev/null")
    cred = agent.sign(job, step=0)
    assert agent.run_batch(job)["kind"] == "ended"
    _, error, exits = agent.run_step(job, 0, ["/bin/true"], cred)
    assert "revoked" in error and not exits


@pytest.mark.parametrize("how", ["tampered", "expired", "other_node", "other_step", "none"])
def test_bad_step_credential_is_refused(agent, attacker, how):
    job = agent.job(attacker)
    if how == "tampered":  # the claims rewritten to run as root: the MAC no longer matches
        good = agent.sign(job, step=0)
        forged = agent.sign(job, step=0, uid=0)
        cred = f"{forged.split('.')[0]}.{forged.split('.')[1]}.{good.split('.', 2)[2]}"
    elif how == "expired":
        cred = agent.sign(job, step=0, now=time.time() - 1000, lifetime=120)
    elif how == "other_node":
        cred = agent.sign(job, step=0, nodes=("node2",))
    elif how == "other_step":
        cred = agent.sign(job, step=5)
    else:
        cred = ""
    out, error, exits = agent.run_step(job, 0, ["/usr/bin/id", "-u"], cred)
    assert error and not exits and not out


@pytest.mark.parametrize("how", ["none", "step_credential", "expired"])
def test_bad_batch_credential_is_refused(agent, attacker, outdir, how):
    marker = os.path.join(outdir, f"ran-{how}")
    job = agent.job(attacker, f"#!/bin/sh\ntouch {marker}\n", std_out="/dev/null")
    cred = {"none": "", "step_credential": agent.sign(job, step=0),
            "expired": agent.sign(job, now=time.time() - 1000)}[how]
    e = agent.run_batch(job, cred)
    assert e["kind"] == "launch_failed" and e["message"]
    assert not os.path.exists(marker)


def test_batch_runs_as_the_credentials_user(agent, attacker, outdir):
    """The launch message says root; the credential says the user."""
    out = os.path.join(outdir, "who.out")
    job = agent.job(attacker, "#!/bin/sh\nid -u\n", work_dir=outdir, std_out=out)
    cred = agent.sign(job)
    job.spec.uid = job.spec.gid = 0
    job.spec.groups = [0]
    assert agent.run_batch(job, cred)["kind"] == "ended"
    assert open(out).read().split() == [str(attacker.pw_uid)]
