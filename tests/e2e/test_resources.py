"""GPUs, consumable resources and isolation, end to end on a real local cluster with real cgroups:
disjoint GPUs, Reason=Resources, --exclusive, OUT_OF_MEMORY, no process escapes scancel, the
time limit (TIMEOUT, SIGTERM) and --signal warnings, device fencing, and nothing left behind."""

from __future__ import annotations

import os
import re
import time

import pytest

from pyslurm_lite import config
from pyslurm_lite.agent.cgroup import detect, make_tracker, scope
from pyslurm_lite.cli.cluster import write_config

from conftest import start_cluster, wait_final, wait_state

needs_cgroups = pytest.mark.skipif(detect() == "none", reason="needs root and a usable cgroup hierarchy")


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    """1 node x 2 CPUs x 4000 MiB x 4 GPUs, like the resources acceptance check."""
    c = start_cluster(tmp_path_factory.mktemp("res"), shape=(1, 2, 4000, 4))
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def timed_job(res, tmp_path_factory):
    """Submitted first, checked last: --time=1 with a B:USR1 warning 50 s before the limit. The
    script traps both signals; the other tests run while it waits out its minute."""
    work = tmp_path_factory.mktemp("timed")
    script = work / "timed.sh"
    script.write_text("#!/bin/bash\n#SBATCH --time=1\n#SBATCH --signal=B:USR1@50\n"
                      "trap 'echo GOT_USR1 $(date +%s)' USR1\n"
                      "trap 'echo GOT_TERM $(date +%s); exit 143' TERM\n"
                      "echo START $(date +%s)\n"
                      "while true; do sleep 1; done\n")
    job_id = res.sbatch("-c", "1", "--mem=100", str(script), cwd=work)
    return job_id, work


def _gpus(path) -> list[str]:
    m = re.search(r"JG=([0-9,]*)", path.read_text())
    return m.group(1).split(",") if m and m.group(1) else []


def test_two_gpu_jobs_get_disjoint_gpus_and_third_waits_for_resources(res, tmp_path):
    """Two 2-GPU 1-CPU jobs run at once on the 4-GPU 2-CPU node with disjoint GPUs; a third
    waits with Reason=Resources (no CPU left)."""
    wrap = 'echo "CVD=$CUDA_VISIBLE_DEVICES JG=$SLURM_JOB_GPUS N=$SLURM_GPUS_ON_NODE"; sleep 4'
    a = res.sbatch("--gres=gpu:2", "-c", "1", "--mem=200", "--wrap", wrap, cwd=tmp_path)
    b = res.sbatch("--gres=gpu:2", "-c", "1", "--mem=200", "--wrap", wrap, cwd=tmp_path)
    c = res.sbatch("--gres=gpu:1", "-c", "1", "--mem=200", "--wrap", "true", cwd=tmp_path)
    wait_state(res, a, "RUNNING")
    wait_state(res, b, "RUNNING")
    r = res.run(["squeue", "-h", "-j", str(c), "-o", "%T %r"])
    assert r.stdout.split() == ["PENDING", "Resources"], r.stdout
    assert wait_final(res, a) == wait_final(res, b) == wait_final(res, c) == "COMPLETED"
    ga, gb = _gpus(tmp_path / f"slurm-{a}.out"), _gpus(tmp_path / f"slurm-{b}.out")
    assert len(ga) == len(gb) == 2 and not set(ga) & set(gb), (ga, gb)
    assert "N=2" in (tmp_path / f"slurm-{a}.out").read_text()


def test_typed_and_per_node_gpu_requests_fit(res, timed_job, tmp_path):
    j = res.sbatch("--gpus-per-node=3", "--cpus-per-gpu=0", "--mem-per-gpu=100", "--wrap",
                   'echo "JG=$SLURM_JOB_GPUS"', cwd=tmp_path)
    assert wait_final(res, j, 90) == "COMPLETED"
    assert len(_gpus(tmp_path / f"slurm-{j}.out")) == 3


def test_impossible_gpu_requests_are_refused_at_submit(res):
    for args in (["--gres=gpu:5"], ["--gpus-per-node=a100:1"], ["--constraint=nosuchfeature"]):
        r = res.run(["sbatch", *args, "--wrap", "true"])
        assert r.returncode != 0 and "error" in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


@needs_cgroups
def test_job_over_its_memory_ends_out_of_memory(res, tmp_path):
    j = res.sbatch("--mem=100M", "-c", "1", "--wrap",
                   'python3 -c "a = bytearray(600 * 1024 * 1024)"; echo after=$?', cwd=tmp_path)
    assert wait_final(res, j) == "OUT_OF_MEMORY"
    assert "after=137" in (tmp_path / f"slurm-{j}.out").read_text()  # the shell saw SIGKILL
    assert res.run(["sinfo", "-h", "-o", "%T"]).stdout.split()[0].rstrip("*") in ("idle", "mixed")


@needs_cgroups
def test_setsid_double_forked_process_dies_with_scancel(res, tmp_path):
    pid_file = tmp_path / "escaped.pid"
    j = res.sbatch("-c", "1", "--mem=100", "--wrap",
                   f"setsid bash -c 'sleep 300 & echo $! > {pid_file}; wait' & sleep 300", cwd=tmp_path)
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    escaped = int(pid_file.read_text())
    assert os.getpgid(escaped) != os.getpgid(os.getpid())
    assert res.run(["scancel", str(j)]).returncode == 0
    assert wait_final(res, j) == "CANCELLED"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(escaped):
        time.sleep(0.2)
    assert not _alive(escaped), "a setsid'd grandchild survived scancel"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_exclusive_job_keeps_others_off(res, timed_job, tmp_path):
    """While the timed job runs, an --exclusive job cannot start; a normal 1-CPU job can."""
    ex = res.sbatch("--exclusive", "--wrap", "true", cwd=tmp_path)
    time.sleep(1.5)
    r = res.run(["squeue", "-h", "-j", str(ex), "-o", "%T %r"])
    assert r.stdout.split() == ["PENDING", "Resources"], r.stdout
    assert res.run(["scancel", str(ex)]).returncode == 0


def test_time_limit_ends_timeout_after_the_signal_warning(res, timed_job):
    job_id, work = timed_job
    assert wait_final(res, job_id, 120) == "TIMEOUT"
    # The job is TIMEOUT from the moment its SIGTERM is sent (squeue shows no COMPLETING yet);
    # its trap may still be writing: give it KillWait.
    out, deadline = "", time.monotonic() + 6
    while "GOT_TERM" not in out and time.monotonic() < deadline:
        out = (work / f"slurm-{job_id}.out").read_text()
        time.sleep(0.2)
    stamps = {k: int(v) for k, v in re.findall(r"(START|GOT_USR1|GOT_TERM) (\d+)", out)}
    assert set(stamps) == {"START", "GOT_USR1", "GOT_TERM"}, out
    assert 5 <= stamps["GOT_USR1"] - stamps["START"] <= 25  # 50 s before a 60 s limit
    assert 55 <= stamps["GOT_TERM"] - stamps["START"] <= 75
    r = res.run(["scontrol", "show", "job", str(job_id)])
    assert "JobState=TIMEOUT" in r.stdout and "Reason=TimeLimit" in r.stdout


@needs_cgroups
def test_nothing_is_left_behind(res, timed_job):
    """After every job has ended, no job cgroup remains on the node (scanned last)."""
    deadline = time.monotonic() + 15
    tracker = make_tracker("proctrack/auto", scope(config.load(str(res.conf)), "node1"))
    while tracker.existing() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert tracker.existing() == []


# ---- device fencing: real character devices made for the test --------------------------------
@needs_cgroups
def test_job_sees_only_its_gpus_device_files(tmp_path_factory):
    if not os.path.exists("/sys/fs/cgroup/devices/cgroup.procs"):
        pytest.skip("no cgroup v1 devices controller on this host (v2 fencing needs BPF)")
    d = tmp_path_factory.mktemp("fence")
    dev = d / "dev"
    dev.mkdir()
    for i in range(2):  # major 195 as NVIDIA's; no driver behind it, so an allowed open -> ENXIO
        os.mknod(dev / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, 200 + i))

    def prepare(directory):
        directory.mkdir(exist_ok=True)
        write_config(str(directory), 1, 2, 2000, 2)
        (directory / "gres.conf").write_text(f"NodeName=node1 Name=gpu File={dev}/nvidia[0-1]\n")

    c = start_cluster(d / "cluster", shape=(1, 2, 2000, 2), prepare=prepare)
    try:
        work = d / "work"
        work.mkdir()
        j = c.sbatch("--gres=gpu:1", "--wrap",
                     f'echo "CVD=$CUDA_VISIBLE_DEVICES JG=$SLURM_JOB_GPUS"; '
                     f'for i in 0 1; do cat {dev}/nvidia$i 2>&1 | sed "s/^/dev$i: /"; done', cwd=work)
        assert wait_final(c, j) in ("COMPLETED", "FAILED")
        out = (work / f"slurm-{j}.out").read_text()
        mine = re.search(r"JG=(\d)", out).group(1)
        other = "1" if mine == "0" else "0"
        assert "CVD=0 " in out  # relative to what the job can see, as Slurm with ConstrainDevices
        assert re.search(rf"dev{other}: .*Operation not permitted", out), out
        assert not re.search(rf"dev{mine}: .*Operation not permitted", out), out
    finally:
        c.down()
