"""gres/shard on a real cluster, as Slurm 22.05 schedules it: Gres=gpu:2,shard:8 gives each GPU 4
shards; a job's shards come from one GPU, so three shard:3 jobs run two at a time, each on its
own GPU with SLURM_SHARDS_ON_NODE; a GPU carrying shards is not given whole; requests Slurm
refuses (shard beside gpu, more shards than a GPU has, a gres GresTypes does not name) are
refused at submit."""

from __future__ import annotations

import re
import time

import pytest
from conftest import start_cluster, wait_final, wait_state

SHAPE = (1, 4, 4000, 2)  # nodes, CPUs, MiB, GPUs


def _prepare(directory):
    from pyslurm_lite.cli.cluster import write_config
    directory.mkdir(exist_ok=True)
    conf = write_config(str(directory), *SHAPE)
    text = open(conf).read().replace("Gres=gpu:2", "Gres=gpu:2,shard:8")
    open(conf, "w").write(text + "GresTypes=gpu,shard\n")
    (directory / "gres.conf").write_text("NodeName=node1 Name=gpu Count=2\n"
                                         "NodeName=node1 Name=shard Count=8\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("shards") / "c", shape=SHAPE, prepare=_prepare)
    try:
        yield c
    finally:
        c.down()


def _out(cluster, job_id: int, timeout: float = 10.0) -> str:
    path = cluster.dir / f"sh-{job_id}.out"
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline and "END" not in text:
        time.sleep(0.2)
        text = path.read_text() if path.exists() else ""
    return text


def test_three_shard_jobs_run_two_at_a_time_on_their_own_gpus(cluster):
    script = ('echo "S=$SLURM_SHARDS_ON_NODE CVD=$CUDA_VISIBLE_DEVICES JG=${SLURM_JOB_GPUS-unset} '
              'GN=${SLURM_GPUS_ON_NODE-unset}"; '
              'while [ ! -e "$STOP" ]; do sleep 0.2; done; echo END')
    stop = cluster.dir / "stop-shards"
    env = {"STOP": str(stop)}
    ids = [cluster.sbatch("--gres=shard:3", "-c", "1", "-o", str(cluster.dir / "sh-%j.out"),
                          "--wrap", script, env=env) for _ in range(3)]
    try:
        for j in ids[:2]:
            assert wait_state(cluster, j, "RUNNING", 30) == "RUNNING"
        time.sleep(1.0)  # a full scheduling pass: the third must still wait
        assert cluster.state(ids[2]) == "PENDING"
        reason = cluster.run(["squeue", "-h", "-j", str(ids[2]), "-o", "%r"]).stdout.strip()
        assert reason == "Resources"
        # both GPUs carry shards now: a whole GPU is not there to give
        whole = cluster.sbatch("--gres=gpu:1", "-c", "1", "-o", "/dev/null", "--wrap", "true")
        time.sleep(1.0)
        assert cluster.state(whole) == "PENDING"
        cluster.run(["scancel", str(whole)])
    finally:
        stop.touch()
    for j in ids:
        assert wait_final(cluster, j, 30) == "COMPLETED"
    lines = [re.search(r"S=(\S*) CVD=(\S*) JG=(\S*) GN=unset", _out(cluster, j)) for j in ids]
    assert all(m and m.group(1) == "3" for m in lines), [m and m.group(0) for m in lines]
    assert {lines[0].group(2), lines[1].group(2)} == {"0", "1"}  # one GPU each
    assert all(m.group(3) == m.group(2) for m in lines)  # SLURM_JOB_GPUS names it, as Slurm


def test_shards_of_one_gpu_are_shared_by_two_jobs(cluster):
    stop = cluster.dir / "stop-pairs"
    ids = [cluster.sbatch("--gres=shard:2", "-c", "1", "-o", str(cluster.dir / "sh-%j.out"),
                          "--wrap", 'echo "CVD=$CUDA_VISIBLE_DEVICES"; while [ ! -e "$STOP" ]; '
                          'do sleep 0.2; done; echo END', env={"STOP": str(stop)})
           for _ in range(2)]
    try:
        for j in ids:
            assert wait_state(cluster, j, "RUNNING", 30) == "RUNNING"
        # 2 + 2 shards fill one GPU (filled first): the other is still whole
        whole = cluster.sbatch("--gres=gpu:1", "-c", "1", "-o", "/dev/null", "--wrap", "true")
        assert wait_final(cluster, whole, 30) == "COMPLETED"
    finally:
        stop.touch()
    for j in ids:
        assert wait_final(cluster, j, 30) == "COMPLETED"
    assert len({_out(cluster, j).split()[0] for j in ids}) == 1


@pytest.mark.parametrize("args, message", [
    (["--gres=shard:5"], "Requested node configuration is not available"),  # 4 per GPU
    (["--gres=gpu:1,shard:1"], "Invalid generic resource (gres) specification"),
    (["--gpus=1", "--gres=shard:1"], "Invalid generic resource (gres) specification"),
    (["--gres=mps:10"], "Invalid generic resource (gres) specification"),  # not in GresTypes
])
def test_refused_at_submit(cluster, args, message):
    r = cluster.run(["sbatch", *args, "-o", "/dev/null", "--wrap", "true"])
    assert r.returncode != 0 and message in r.stderr, r.stderr
