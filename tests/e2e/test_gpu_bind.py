"""Placement and binding on a real cluster (2 nodes x 4 CPUs x 4 simulated GPUs; gres.conf
NVLink pairs (0,2) and (1,3), GPUs 0 and 2 close to core 1, 1 and 3 to core 0: the
lowest GPU is not beside the lowest core, so a binding by Cores= shows): best-fit nodes,
GPUs chosen by NVLink, --gpu-bind per task, --gres-flags checked at submit."""

from __future__ import annotations

import os
import re

import pytest

from conftest import start_cluster, wait_final, wait_state

GRES = "".join(f"NodeName=node[1-2] Name=gpu Links={links} Cores={core}\n" for links, core in (
    ("-1,0,2,0", 1), ("0,-1,0,2", 0), ("2,0,-1,0", 1), ("0,2,0,-1", 0)))


@pytest.fixture(scope="module")
def gcluster(tmp_path_factory):
    from pyslurm_lite.cli.cluster import write_config

    def prepare(directory):
        directory.mkdir(exist_ok=True)
        write_config(str(directory), 2, 4, 4000, 4)
        (directory / "gres.conf").write_text(GRES)
    c = start_cluster(tmp_path_factory.mktemp("gpubind") / "c", shape=(2, 4, 4000, 4), prepare=prepare)
    try:
        yield c
    finally:
        c.down()


def _node_of(c, job: int) -> str:
    return c.run(["squeue", "-h", "-j", str(job), "-o", "%N"]).stdout.strip()


def _running(c, *args) -> int:
    j = c.sbatch("-o", "/dev/null", "-c1", *args, "--wrap", "sleep 60")
    assert wait_state(c, j, "RUNNING", 20) == "RUNNING"
    return j


def test_best_fit_fills_the_used_node_first(gcluster):
    """A 1-GPU job runs beside a 4-GPU one that then ends: the next 1-GPU job joins it (first
    fit would take the empty node first) and a 4-GPU job still finds a whole node."""
    c = gcluster
    whole = _running(c, "--gres=gpu:4")
    a = _running(c, "--gres=gpu:1")
    c.run(["scancel", str(whole)])
    wait_final(c, whole, 30)
    b = _running(c, "--gres=gpu:1")
    big = _running(c, "--gres=gpu:4")
    try:
        assert _node_of(c, a) == _node_of(c, b) != _node_of(c, big)
    finally:
        c.run(["scancel", str(a), str(b), str(big)])
        for j in (a, b, big):
            wait_final(c, j, 30)


def test_two_gpus_are_an_nvlink_pair(gcluster, tmp_path):
    """On an idle node the lowest indices would be 0,1: no link between them; 0 and 2 share
    two NVLinks."""
    j = gcluster.sbatch("--gres=gpu:2", "-o", str(tmp_path / "out"), "--wrap", "echo G=$SLURM_JOB_GPUS")
    assert wait_final(gcluster, j) == "COMPLETED"
    assert "G=0,2" in (tmp_path / "out").read_text()


ALLOWED = '$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)'
TASK = 'echo "P=$SLURM_PROCID C=$CUDA_VISIBLE_DEVICES S=$SLURM_STEP_GPUS N=$SLURM_GPUS_ON_NODE"'


def _by_task(text: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"P=(\d+) C=(\S*) S=\S* N=4", text)}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
@pytest.mark.parametrize("bind, expected", [
    ("closest", {0: "1,3", 1: "0,2"}),  # task 0 on CPU 0: the GPUs of core 0
    ("map_gpu:3,0", {0: "3", 1: "0"}),
    ("mask_gpu:0x6,0x9", {0: "1,2", 1: "0,3"}),
    ("single:1", {0: "0", 1: "1"}),
    ("none", {0: "0,1,2,3", 1: "0,1,2,3"}),
])
def test_gpu_bind_gives_each_task_its_gpus(gcluster, bind, expected):
    r = gcluster.run(["srun", "-N1", "-n2", "--gres=gpu:4", "--cpu-bind=map_cpu:0,1",
                      f"--gpu-bind={bind}", "bash", "-c", TASK])
    assert r.returncode == 0, r.stderr
    assert _by_task(r.stdout) == expected, r.stdout


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_batch_gpu_bind_reaches_its_steps_and_verbose(gcluster, tmp_path):
    """sbatch --gpu-bind sets SLURM_GPU_BIND, which srun inside reads (Slurm's input variable)."""
    out = tmp_path / "out"
    j = gcluster.sbatch("-n2", "--gres=gpu:4", "--gpu-bind=verbose,map_gpu:2,1", "-o", str(out),
                        "--wrap", f'echo B=$SLURM_GPU_BIND; srun -n2 bash -c \'{TASK}\'')
    assert wait_final(gcluster, j) == "COMPLETED"
    text = out.read_text()
    assert "B=verbose,map_gpu:2,1" in text and _by_task(text) == {0: "2", 1: "1"}, text
    assert "gpu-bind: usable_gres=0x4; bit_alloc=0xf; local_inx=0; global_list=2; local_list=2" in text


def test_gpu_bind_naming_a_gpu_outside_the_step_fails_the_step(gcluster):
    r = gcluster.run(["srun", "-n1", "--gres=gpu:1", "--gpu-bind=map_gpu:3", "true"])
    assert r.returncode != 0 and "names no GPU of this step" in r.stderr, r.stderr


@pytest.mark.parametrize("args, message", [
    (["--gpu-bind=nearest"], "Invalid --gpu-bind argument: nearest"),
    (["--gres-flags=sometimes"], "Invalid --gres-flags specification"),
])
def test_bad_values_are_refused_at_submit(gcluster, args, message):
    r = gcluster.run(["sbatch", *args, "--wrap", "true"])
    assert r.returncode != 0 and message in r.stderr and "Submitted" not in r.stdout, r.stderr


@pytest.mark.parametrize("flags", ["", "--gres-flags=enforce-binding"])
def test_job_cores_are_its_gpus_cores(gcluster, tmp_path, flags):
    """The job's CPU is a core gres.conf binds its GPU to (GPUs 0, 2: core 1; 1, 3: core 0),
    by default as with enforce-binding (which only may not fall back to other cores)."""
    out = tmp_path / "out"
    j = gcluster.sbatch("-c1", "--gres=gpu:1", *filter(None, [flags]), "-w", "node1",
                        "-o", str(out), "--wrap",
                        'echo G=$SLURM_JOB_GPUS A=' + ALLOWED)
    assert wait_final(gcluster, j) == "COMPLETED"
    text = out.read_text()
    gpu = re.search(r"G=(\d)", text).group(1)
    assert f"A={'1' if gpu in '02' else '0'}\n" in text, text


def test_srun_gpu_bind_inside_an_allocation(gcluster, tmp_path):
    """srun --gpu-bind in a batch job of 2 GPUs binds its task (srun passes it as
    SLURM_GPU_BIND, over the job's none): map_gpu names the job's second GPU (the node's
    index: this cluster does not fence devices)."""
    out = tmp_path / "out"
    j = gcluster.sbatch("-n1", "--gres=gpu:2", "--gpu-bind=none", "-o", str(out), "--wrap",
                        'G=${SLURM_JOB_GPUS#*,}; echo J=$SLURM_JOB_GPUS; '
                        'srun -n1 --gpu-bind=map_gpu:$G bash -c \'echo T=$CUDA_VISIBLE_DEVICES\'')
    assert wait_final(gcluster, j) == "COMPLETED", out.read_text()
    text = out.read_text()
    second = re.search(r"J=\d+,(\d+)", text).group(1)
    assert f"T={second}\n" in text, text


def test_oversized_gpu_bind_from_the_environment_fails_the_step_at_once(gcluster):
    """The agent (root) reads SLURM_GPU_BIND from the user's environment: a value past its
    bounds fails the launch with Slurm's message instead of building four billion entries."""
    r = gcluster.run(["srun", "-n1", "--gres=gpu:1", "true"],
                     env={"SLURM_GPU_BIND": "map_gpu:0*4000000000"}, timeout=30)
    assert r.returncode != 0, r.stderr
    assert "launch failed: Invalid --gpu-bind argument: map_gpu:0*4000000000" in r.stderr, r.stderr


def test_enforce_binding_without_cores_says_it_has_no_effect(cluster, gcluster, tmp_path):
    """Nothing silent: where no GPU names its cores (gres.conf Cores=), enforce-binding cannot
    change anything and sbatch says so; where they do (gcluster), no warning."""
    args = ("--gres=gpu:1", "--gres-flags=enforce-binding", "-o", "/dev/null", "--parsable",
            "--wrap", "true")
    plain = cluster.run(["sbatch", *args], cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "sbatch: warning: --gres-flags=enforce-binding has no effect here" in plain.stderr
    bound = gcluster.run(["sbatch", *args], cwd=tmp_path)
    assert bound.returncode == 0, bound.stderr
    assert "enforce-binding" not in bound.stderr
