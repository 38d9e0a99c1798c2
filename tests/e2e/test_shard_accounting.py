"""A gres/shard job in TRES terms on a real cluster, as Slurm 22.05 counts it: Gres=gpu:2,shard:8
and a job holding shard:3 shows gres/shard=3 and no gres/gpu in scontrol show job's TRES,
scontrol -d's JOB_GRES, the node's AllocTRES and GresUsed (gpu:0(IDX:N/A),shard:3), sacct's
AllocTRES, and bills its shards under TRESBillingWeights GRES/shard=."""

from __future__ import annotations

import time

import pytest
from conftest import start_cluster, wait_final, wait_state

SHAPE = (1, 4, 4000, 2)  # nodes, CPUs, MiB, GPUs


def _prepare(directory):
    from pyslurm_lite.cli.cluster import write_config
    directory.mkdir(exist_ok=True)
    conf = write_config(str(directory), *SHAPE)
    text = open(conf).read().replace("Gres=gpu:2", "Gres=gpu:2,shard:8").replace(
        "PartitionName=main", 'PartitionName=main TRESBillingWeights="CPU=1.0,GRES/shard=2.0"')
    open(conf, "w").write(text + "GresTypes=gpu,shard\n")
    (directory / "gres.conf").write_text("NodeName=node1 Name=gpu Count=2\n"
                                         "NodeName=node1 Name=shard Count=8\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("sharetres") / "c", shape=SHAPE, prepare=_prepare)
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def running_shard_job(cluster):
    """One --gres=shard:3 job, running until the module's checks are done."""
    stop = cluster.dir / "stop"
    job = cluster.sbatch("--gres=shard:3", "-c", "1", "--mem=100", "-o", "/dev/null", "--wrap",
                         'while [ ! -e "$STOP" ]; do sleep 0.2; done', env={"STOP": str(stop)})
    assert wait_state(cluster, job, "RUNNING", 30) == "RUNNING"
    yield job
    stop.touch()
    assert wait_final(cluster, job, 30) == "COMPLETED"


def _field(text: str, key: str) -> str:
    for word in text.split():
        if word.startswith(key + "="):
            return word[len(key) + 1:]
    raise AssertionError(f"no {key}= in {text}")


def test_job_tres_counts_shards_not_a_gpu(cluster, running_shard_job):
    out = cluster.run(["scontrol", "-d", "show", "job", str(running_shard_job)]).stdout
    # billing: 1 CPU x 1.0 + 3 shards x 2.0
    assert _field(out, "TRES") == "cpu=1,mem=100M,node=1,billing=7,gres/shard=3", out
    assert "JOB_GRES=shard:3\n" in out, out
    assert "GRES=shard:3(IDX:" in out, out


def test_node_shows_shards_in_use(cluster, running_shard_job):
    used = cluster.run(["sinfo", "-h", "-N", "-O", "GresUsed:60"]).stdout.strip()
    assert used == "gpu:0(IDX:N/A),shard:3", used
    out = cluster.run(["scontrol", "-d", "show", "node", "node1"]).stdout
    assert _field(out, "AllocTRES") == "cpu=1,mem=100M,gres/shard=3", out
    assert _field(out, "CfgTRES") == "cpu=4,mem=4000M,billing=4,gres/gpu=2,gres/shard=8", out
    assert _field(out, "GresUsed") == "gpu:0(IDX:N/A),shard:3", out


def test_sacct_alloc_tres_of_an_ended_shard_job(cluster, running_shard_job):
    job = cluster.sbatch("--gres=shard:2", "-c", "1", "--mem=100", "-o", "/dev/null", "--wrap",
                         "true")
    assert wait_final(cluster, job, 30) == "COMPLETED"
    deadline, tres = time.monotonic() + 10, ""
    while time.monotonic() < deadline and "gres/shard" not in tres:
        tres = cluster.run(["sacct", "-X", "-n", "-P", "-j", str(job), "-o",
                            "AllocTRES,ReqTRES"]).stdout.strip()
        time.sleep(0.3)
    assert tres == ("billing=5,cpu=1,gres/shard=2,mem=100M,node=1|"
                    "billing=5,cpu=1,gres/shard=2,mem=100M,node=1"), tres
