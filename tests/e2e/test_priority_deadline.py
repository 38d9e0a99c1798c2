"""sbatch --priority and --deadline, and scontrol update Priority=, on a real cluster, as Slurm
22.05: an operator's priority is kept, a user's is dropped with a warning (Slurm drops it
without one), 0 holds; a user may only lower a priority, and is told it will not last; a job
that can no longer end by its deadline ends DEADLINE (reason DeadLine), in squeue and sacct."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest

from conftest import configured_cluster, wait_final, wait_state
from userkit import as_user, drop_user, make_user, need_root, user_env, user_venv

pytestmark = [pytest.mark.root, pytest.mark.slow]

SHAPE = (1, 2, 2000, 0)  # nodes, CPUs, MiB, GPUs
LATER = "--begin=now+1hour"  # pending, not held: its priority is shown as it is


class World:
    def __init__(self, cluster, user, bin_dir: str):
        self.cluster, self.user, self.bin_dir = cluster, user, bin_dir

    def as_user(self, cmd: list[str]) -> subprocess.CompletedProcess:
        env = user_env(self.user, PATH=f"{self.bin_dir}:/usr/local/bin:/usr/bin:/bin",
                       PYSLURM_LITE_CONF=str(self.cluster.conf))
        return as_user(self.user, shlex.join(cmd), env=env, cwd=self.user.pw_dir)

    def as_root(self, cmd: list[str]) -> subprocess.CompletedProcess:
        return self.cluster.run(cmd, cwd=self.cluster.dir)

    def field(self, job_id: int, name: str) -> str:
        r = self.as_root(["scontrol", "show", "job", str(job_id)])
        m = re.search(rf"\b{name}=(\S*)", r.stdout)
        return m.group(1) if m else f"<no {name}: {r.stdout!r} {r.stderr!r}>"


def _submitted(r: subprocess.CompletedProcess) -> int:
    assert r.returncode == 0 and r.stdout.strip().isdigit(), (r.returncode, r.stdout, r.stderr)
    return int(r.stdout.strip())


def _open_up(cluster) -> None:
    """Let the user reach slurm.conf and the auth sockets (pytest's directories are 0700)."""
    for parent in [cluster.dir, *cluster.dir.parents]:
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    run = cluster.dir / "run"
    os.chmod(run, os.stat(run).st_mode | 0o055)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    need_root()
    user = make_user("pltprio")
    try:
        gen = configured_cluster(tmp_path_factory, "prio", SHAPE)
        cluster = next(gen)
        try:
            _open_up(cluster)
            w = World(cluster, user, user_venv(user))
            r = w.as_user(["squeue"])
            if r.returncode != 0:
                pytest.skip(f"the user cannot reach the cluster: {r.stderr[-300:]}")
            yield w
        finally:
            gen.close()
    finally:
        drop_user(user)


SB = ["sbatch", "--parsable", "-o", "/dev/null"]


def test_operator_priority_is_kept(world):
    r = world.as_root([*SB, "--priority=1234", LATER, "--wrap", "true"])
    job_id = _submitted(r)
    assert r.stderr == ""
    assert world.field(job_id, "Priority") == "1234"
    world.as_root(["scancel", str(job_id)])


def test_user_priority_is_dropped_with_a_warning(world):
    r = world.as_user([*SB, "--priority=1234", LATER, "--wrap", "true"])
    job_id = _submitted(r)
    assert "sbatch: warning: --priority=1234 was ignored: only an operator" in r.stderr
    assert world.field(job_id, "Priority") not in ("1234", "0")
    world.as_root(["scancel", str(job_id)])


def test_priority_zero_holds(world):
    job_id = _submitted(world.as_user([*SB, "--priority=0", "--wrap", "true"]))
    assert (world.field(job_id, "JobState"), world.field(job_id, "Reason")) == \
        ("PENDING", "JobHeldUser")
    world.as_root(["scancel", str(job_id)])


def test_update_priority_user_lowers_operator_sets(world):
    job_id = _submitted(world.as_user([*SB, LATER, "--wrap", "true"]))
    prio = int(world.field(job_id, "Priority"))
    r = world.as_user(["scontrol", "update", f"JobId={job_id}", f"Priority={prio + 10}"])
    assert r.returncode == 1 and "Access/permission denied" in r.stderr, (r.stdout, r.stderr)
    assert world.field(job_id, "Priority") == str(prio)
    r = world.as_user(["scontrol", "update", f"JobId={job_id}", f"Priority={prio - 10}"])
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Changes to job priority are not persistent, change nice instead" in r.stderr
    assert world.field(job_id, "Priority") == str(prio - 10)  # made, as Slurm does
    r = world.as_root(["scontrol", "update", f"JobId={job_id}", "Priority=77"])
    assert (r.returncode, r.stderr) == (0, "")
    assert world.field(job_id, "Priority") == "77"
    r = world.as_user(["scontrol", "update", f"JobId={job_id}", "Priority=0"])  # a hold
    assert r.returncode == 0, r.stderr
    assert world.field(job_id, "Reason") == "JobHeldUser"
    r = world.as_user(["scontrol", "update", f"JobId={job_id}", "Priority=5"])
    assert r.returncode == 1 and "Job is in held state, pending scheduler release" in r.stderr
    world.as_root(["scancel", str(job_id)])


@pytest.mark.parametrize("args, words", [
    (["--deadline=2000-01-01T00:00:00"],
     "Requested time limit is invalid (missing or exceeds some limit)"),
    (["--begin=now+2hours", "--deadline=now+1hour"],
     "Incompatible begin and deadline time specification"),
    (["--deadline=soon"], "Invalid --deadline specification"),
    (["--priority=-3"], "Priority must be >= 0"),
])
def test_refused_at_submit(world, args, words):
    r = world.as_user([*SB, *args, "--wrap", "true"])
    assert r.returncode != 0 and words in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""


def test_deadline_too_close_ends_deadline(world):
    """Accepted at submit (Slurm checks only a past deadline there), then ended by the
    scheduler: 10 minutes cannot end within 5."""
    job_id = _submitted(world.as_user([*SB, "--time=10", "--deadline=now+5minutes",
                                       "--wrap", "true"]))
    assert wait_final(world.cluster, job_id, timeout=20) == "DEADLINE"
    assert world.field(job_id, "Reason") == "DeadLine"
    r = world.as_root(["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T %r"])
    assert r.stdout.split() == ["DEADLINE", "DeadLine"], (r.stdout, r.stderr)
    r = world.as_root(["sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "State"])
    assert r.stdout.strip() == "DEADLINE", (r.stdout, r.stderr)


def test_deadline_limits_a_job_without_time(world):
    """No --time: the job's time limit becomes the minutes left to its deadline, so it ends
    (TIMEOUT) by then, as Slurm's scheduler does."""
    job_id = _submitted(world.as_user([*SB, "--deadline=now+1hour", "--wrap", "sleep 60"]))
    assert wait_state(world.cluster, job_id, "RUNNING") == "RUNNING"
    assert world.field(job_id, "TimeLimit") in ("00:59:00", "01:00:00")
    world.as_root(["scancel", str(job_id)])
