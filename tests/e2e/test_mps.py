"""gres/mps and (simulated) MIG instances on a real cluster, as Slurm 22.05 schedules them:
Gres=gpu:2,mps:200 gives each GPU 100; --gres=mps:50 runs with
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 on one GPU; two mps:60 jobs cannot share a GPU; mps:101 is
more than any GPU has and is refused at submit; gres.conf Type=1g.10gb GPUs are asked for by
type. With MpsControlProgram= (a stand-in here that records how it is called) and jobs fenced
to their GPU (mknod'd device files), the agent starts one daemon per GPU with -d, the jobs get
its pipe directory and CUDA_VISIBLE_DEVICES=0, and `quit` goes to it after the last job there;
with a program that is not there the jobs keep their GPU's own CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import os
import re
import time

import pytest
from conftest import start_cluster, wait_final, wait_state

SHAPE = (1, 4, 4000, 2)  # nodes, CPUs, MiB, GPUs


def _prepare(directory):
    from pyslurm_lite.cli.cluster import write_config
    directory.mkdir(exist_ok=True)
    conf = write_config(str(directory), *SHAPE)
    text = open(conf).read().replace("Gres=gpu:2", "Gres=gpu:2,mps:200")
    # a program that is not there: the agent warns and the jobs still run
    open(conf, "w").write(text + f"GresTypes=gpu,mps\nMpsControlProgram={directory}/no-mps\n")
    # simulated MIG instances (the configured backend's form of them): typed GPUs
    (directory / "gres.conf").write_text("NodeName=node1 Name=gpu Type=1g.10gb Count=1\n"
                                         "NodeName=node1 Name=gpu Type=3g.40gb Count=1\n"
                                         "NodeName=node1 Name=mps Count=200\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("mps") / "c", shape=SHAPE, prepare=_prepare)
    try:
        yield c
    finally:
        c.down()


SCRIPT = ('echo "P=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE JG=$SLURM_JOB_GPUS CVD=$CUDA_VISIBLE_DEVICES '
          'PIPE=$CUDA_MPS_PIPE_DIRECTORY"; while [ ! -e "$STOP" ]; do sleep 0.2; done')


def _line(cluster, job_id):
    text = (cluster.dir / f"mps-{job_id}.out").read_text()
    return re.search(r"P=(\S*) JG=(\S*) CVD=(\S*) PIPE=(\S*)", text).groups()


def test_mps_jobs_get_their_share_of_one_gpu(cluster):
    stop = cluster.dir / "stop"
    env = {"STOP": str(stop)}
    out = str(cluster.dir / "mps-%j.out")
    ids = [cluster.sbatch("--gres=mps:60", "-c", "1", "-o", out, "--wrap", SCRIPT, env=env)
           for _ in range(2)]
    small = cluster.sbatch("--gres=mps:40", "-c", "1", "-o", out, "--wrap", SCRIPT, env=env)
    third = cluster.sbatch("--gres=mps:60", "-c", "1", "-o", out, "--wrap", SCRIPT, env=env)
    try:
        for j in (*ids, small):
            assert wait_state(cluster, j, "RUNNING", 30) == "RUNNING"
        time.sleep(1.0)
        assert cluster.state(third) == "PENDING"  # 60 + 60 > 100 on either GPU
    finally:
        stop.touch()
    for j in (*ids, small, third):
        assert wait_final(cluster, j, 30) == "COMPLETED"
    lines = {j: _line(cluster, j) for j in (*ids, small)}
    assert [lines[j][0] for j in (*ids, small)] == ["60", "60", "40"]
    assert {lines[j][1] for j in ids} == {"0", "1"}  # SLURM_JOB_GPUS: one GPU each
    # no MPS daemon (its program is not there): each job names its own GPU, and no pipe
    assert all(cvd == gpu and pipe == "" for _, gpu, cvd, pipe in lines.values()), lines


def test_more_mps_than_a_gpu_has_is_refused(cluster):
    r = cluster.run(["sbatch", "--gres=mps:101", "-o", "/dev/null", "--wrap", "true"])
    assert r.returncode != 0 and "Requested node configuration is not available" in r.stderr


def test_simulated_mig_instances_are_typed_gpus(cluster):
    j = cluster.sbatch("--gres=gpu:3g.40gb:1", "-o", str(cluster.dir / "mig-%j.out"),
                       "--wrap", 'echo "JG=$SLURM_JOB_GPUS"')
    assert wait_final(cluster, j, 30) == "COMPLETED"
    assert (cluster.dir / f"mig-{j}.out").read_text().split() == ["JG=1"]
    node = cluster.run(["scontrol", "show", "node", "node1"]).stdout
    assert "Gres=gpu:1g.10gb:1,gpu:3g.40gb:1,mps:200" in node, node


# ---- MPS daemons, with jobs fenced to their GPU --------------------------------------------------
STAND_IN = """#!/bin/sh
printf '%s|%s|%s|%s\\n' "$*" "$CUDA_VISIBLE_DEVICES" "$CUDA_DEVICE_ORDER" \\
    "$( [ "$1" = -d ] || cat )" >> "$(dirname "$0")/calls"
"""


@pytest.fixture(scope="module")
def fenced(tmp_path_factory):
    from pyslurm_lite.agent.cgroup import detect
    from pyslurm_lite.cli.cluster import write_config
    if detect() == "none" or not os.path.exists("/sys/fs/cgroup/devices/cgroup.procs"):
        pytest.skip("needs root and the cgroup v1 devices controller (device fencing)")
    d = tmp_path_factory.mktemp("mpsd")
    dev = d / "dev"
    dev.mkdir()
    for i in range(2):  # no driver behind them: only their numbers matter, to the devices cgroup
        os.mknod(dev / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, 240 + i))
    program = d / "nvidia-cuda-mps-control"
    program.write_text(STAND_IN)
    program.chmod(0o755)

    def prepare(directory):
        directory.mkdir(exist_ok=True)
        conf = write_config(str(directory), *SHAPE)
        text = open(conf).read().replace("Gres=gpu:2", "Gres=gpu:2,mps:200")
        open(conf, "w").write(text + f"GresTypes=gpu,mps\nMpsControlProgram={program}\n")
        (directory / "gres.conf").write_text(f"NodeName=node1 Name=gpu File={dev}/nvidia[0-1]\n"
                                             "NodeName=node1 Name=mps Count=200\n")
    c = start_cluster(d / "c", shape=SHAPE, prepare=prepare)
    c.calls = d / "calls"
    try:
        yield c
    finally:
        c.down()


def _calls(c) -> list[list[str]]:
    return [line.split("|") for line in c.calls.read_text().splitlines()] if c.calls.exists() else []


def _quits(c) -> list[str]:
    return [gpu for args, gpu, _, stdin in _calls(c) if stdin == "quit"]


def test_one_daemon_per_gpu_quit_after_its_last_job(fenced):
    c = fenced
    out = str(c.dir / "mps-%j.out")
    stops = {n: c.dir / f"stop-{n}" for n in "abc"}
    jobs = {n: c.sbatch("--gres=mps:" + share, "-c", "1", "-o", out, "--wrap", SCRIPT,
                        env={"STOP": str(stops[n])})
            for n, share in (("a", "40"), ("b", "40"), ("c", "60"))}  # fits however placed
    try:
        for j in jobs.values():
            assert wait_state(c, j, "RUNNING", 30) == "RUNNING"
        time.sleep(0.5)  # each has printed its line
        lines = {n: _line(c, j) for n, j in jobs.items()}
        gpus = {n: line[1] for n, line in lines.items()}
        for n, (_, gpu, cvd, pipe) in lines.items():
            assert cvd == "0" and pipe == str(c.dir / f"state/agent-node1/mps/{gpu}/pipe"), lines
        started = [(args, gpu, order) for args, gpu, order, _ in _calls(c)]
        assert sorted(started) == sorted(("-d", g, "PCI_BUS_ID") for g in set(gpus.values()))
        for n in "abc":  # each GPU's daemon quits when its last job has ended, not before
            stops[n].touch()
            assert wait_final(c, jobs[n], 30) == "COMPLETED"
            left = {gpus[m] for m in "abc" if not stops[m].exists()}
            wanted = sorted(set(gpus[m] for m in "abc" if stops[m].exists()) - left)
            deadline = time.monotonic() + 10
            while sorted(_quits(c)) != wanted and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(0.3)
            assert sorted(_quits(c)) == wanted, _calls(c)
    finally:
        for stop in stops.values():
            stop.touch()


def test_second_user_cannot_share_a_daemon(fenced):
    """One control daemon serves one user at a time: with root's mps jobs on both GPUs, another
    user's mps step fails at launch with the reason, and no daemon is started for it."""
    from userkit import as_user, drop_user, make_user, user_env, user_venv
    c = fenced
    user = make_user("pltmps")
    stop = c.dir / "stop-root"
    try:
        for parent in [c.dir, *c.dir.parents]:  # the conf and auth sockets, as /etc and /run are
            if str(parent) in ("/", "/tmp"):
                break
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
        os.chmod(c.dir / "run", os.stat(c.dir / "run").st_mode | 0o055)
        bin_dir = user_venv(user)
        held = [c.sbatch("--gres=mps:60", "-c", "1", "-o", "/dev/null", "--wrap", SCRIPT,
                         env={"STOP": str(stop)}) for _ in range(2)]  # one on each GPU
        for j in held:
            assert wait_state(c, j, "RUNNING", 30) == "RUNNING"
        before = len(_calls(c))
        env = user_env(user, PATH=f"{bin_dir}:/usr/bin:/bin", PYSLURM_LITE_CONF=str(c.conf))
        r = as_user(user, "srun --gres=mps:40 -c 1 true", env=env, cwd=user.pw_dir, timeout=60)
        assert r.returncode != 0, (r.stdout, r.stderr)
        assert "serves the running jobs of uid 0; one daemon serves one user" in r.stderr, r.stderr
        assert len(_calls(c)) == before
    finally:
        stop.touch()
        drop_user(user)
