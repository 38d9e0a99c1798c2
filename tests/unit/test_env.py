"""agent/env.py and agent/iopaths.py (the pure parts of launching a job): Slurm's run-length
counts, filename patterns, output paths, and the environment a batch script sees."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite import config
from pyslurm_lite.agent.env import batch_environment, compress_counts, gpu_environment
from pyslurm_lite.agent.iopaths import expand_pattern, output_paths


@pytest.mark.parametrize("counts, text", [
    ([], ""),
    ([1], "1"),
    ([2, 2], "2(x2)"),
    ([2, 2, 1], "2(x2),1"),
    ([1, 2, 2, 2], "1,2(x3)"),
    ([1, 2, 1], "1,2,1"),
    ([4, 4, 4, 4, 3, 3], "4(x4),3(x2)"),
    ([16], "16"),
])
def test_compress_counts(counts, text):
    assert compress_counts(counts) == text


JOB = model_job(42, name="train", user="alice")


@pytest.mark.parametrize("pattern, text", [
    ("slurm-%j.out", "slurm-42.out"),
    ("%j", "42"),
    ("%J", "42"),
    ("%x", "train"),
    ("%u", "alice"),
    ("%N", "node1"),
    ("%n", "0"),
    ("%t", "0"),
    ("%s", "batch"),
    ("%A", "42"),
    ("%a", "4294967294"),        # not an array job: Slurm's NO_VAL
    ("%%", "%"),
    ("100%%-%j", "100%-42"),
    ("%5j", "00042"),            # zero-padded to the width
    ("%1j", "42"),               # never truncated
    ("%10j.out", "0000000042.out"),
    ("%3x", "train"),            # width applies to numbers only
    ("%x-%j-%N.log", "train-42-node1.log"),
    ("out/%u/%x_%j.txt", "out/alice/train_42.txt"),
    ("plain.txt", "plain.txt"),
    ("end%", "end%"),            # a lone trailing % is kept
    ("%q", "%q"),                # unknown letters are kept as written
])
def test_expand_pattern(pattern, text):
    assert expand_pattern(pattern, JOB, "node1") == text


@pytest.mark.parametrize("std_out, std_err, work_dir, out, err", [
    ("", "", "/home/alice/run", "/home/alice/run/slurm-42.out", "/home/alice/run/slurm-42.out"),
    ("o-%j.txt", "", "/w", "/w/o-42.txt", "/w/o-42.txt"),          # -e defaults to -o
    ("o-%j.txt", "e-%j.txt", "/w", "/w/o-42.txt", "/w/e-42.txt"),
    ("", "e.txt", "/w", "/w/slurm-42.out", "/w/e.txt"),
    ("/abs/%x.out", "", "/w", "/abs/train.out", "/abs/train.out"),   # absolute paths are kept
    ("sub/%j.out", "", "/w", "/w/sub/42.out", "/w/sub/42.out"),
])
def test_output_paths(std_out, std_err, work_dir, out, err):
    job = model_job(42, name="train", std_out=std_out, std_err=std_err, work_dir=work_dir)
    assert output_paths(job, "node1") == (out, err)


CFG = config.parse("ClusterName=lab\nSlurmctldHost=head(10.9.0.1)\nSlurmctldPort=7817\n"
                   "NodeName=node[1-2] CPUs=4 Gres=gpu:4\nPartitionName=main Nodes=ALL\n",
                   "/etc/lab/slurm.conf")
ADDRS = {"node1": "10.0.0.1", "node2": "10.0.0.2"}


def two_node_gpu_job(**spec):
    job = model_job(42, nodes=("node1", "node2"), cpus=2, gpus=[0, 1], name="train",
                    user="alice", work_dir="/home/alice/run", **spec)
    job.spec.environment = {"FOO": "bar", "SLURM_JOB_ID": "7", "HOME": "/home/alice"}
    return job


def test_batch_environment_two_nodes_with_gpus():
    job = two_node_gpu_job()
    env = batch_environment(job, CFG, "node1", ADDRS, gpu_environment([0, 1]))
    expected = {
        "SLURM_JOB_ID": "42", "SLURM_JOBID": "42",        # overrides the submitter's stale one
        "SLURM_JOB_NAME": "train", "SLURM_JOB_USER": "alice",
        "SLURM_JOB_UID": "1000", "SLURM_JOB_GID": "1000",
        "SLURM_JOB_PARTITION": "main", "SLURM_SUBMIT_DIR": "/home/alice/run",
        "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_NODELIST": "node[1-2]",
        "SLURM_JOB_NUM_NODES": "2", "SLURM_NNODES": "2",
        "SLURM_NTASKS": "2", "SLURM_NPROCS": "2",
        "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_JOB_CPUS_PER_NODE": "2(x2)",
        "SLURM_CPUS_ON_NODE": "2", "SLURMD_NODENAME": "node1", "SLURM_CLUSTER_NAME": "lab",
        "SLURM_CONF": "/etc/lab/slurm.conf", "SLURM_NODEID": "0", "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0", "ENVIRONMENT": "BATCH", "SLURM_RESTART_COUNT": "0",
        "SLURM_WORKING_CLUSTER": "lab:10.9.0.1:7817:9728:109",  # 22.05 protocol, cons_tres
        "SLURM_NODE_ALIASES": "(null)", "SLURM_PRIO_PROCESS": "0",
        "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_GPUS": "0,1", "SLURM_STEP_GPUS": "0,1",
        "GPU_DEVICE_ORDINAL": "0,1", "SLURM_GPUS_ON_NODE": "2",
        "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29542",
        "SLURM_JOB_START_TIME": str(int(job.start_time)),
        "SLURM_JOB_END_TIME": str(int(job.start_time) + 60 * 60),  # time limit 60 minutes
        "FOO": "bar", "HOME": "/home/alice",                       # --export=ALL keeps these
    }
    assert {k: env.get(k) for k in expected} == expected
    assert "SLURM_CPUS_PER_TASK" not in env  # only set when -c > 1


@pytest.mark.parametrize("changes, present, absent", [
    (dict(export="NONE"), {}, ["FOO", "HOME"]),
    (dict(cpus_per_task=2), {"SLURM_CPUS_PER_TASK": "2"}, []),
    (dict(mem_per_node=1500), {"SLURM_MEM_PER_NODE": "1500"}, ["SLURM_MEM_PER_CPU"]),
    (dict(mem_per_cpu=300), {"SLURM_MEM_PER_CPU": "300"}, ["SLURM_MEM_PER_NODE"]),
    (dict(account="physics"), {"SLURM_JOB_ACCOUNT": "physics"}, []),
    (dict(ntasks_per_node=2), {"SLURM_NTASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "2(x2)"}, []),
    (dict(num_tasks=3), {"SLURM_NTASKS": "3", "SLURM_TASKS_PER_NODE": "2,1"}, []),
    (dict(dependency="afterok:7"), {"SLURM_JOB_DEPENDENCY": "afterok:7"}, []),
    (dict(gpus_per_node=2), {"SLURM_GPUS_PER_NODE": "2"}, ["SLURM_GPUS", "SLURM_GPUS_PER_TASK"]),
    (dict(gpus_per_node=2, gpu_type="a100"), {"SLURM_GPUS_PER_NODE": "a100:2"}, []),
    (dict(gpus=3), {"SLURM_GPUS": "3"}, ["SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK"]),
    (dict(gpus=4, gpus_per_task=2), {"SLURM_GPUS_PER_TASK": "2"}, ["SLURM_GPUS"]),
    (dict(cpus_per_gpu=3, mem_per_gpu=512), {"SLURM_CPUS_PER_GPU": "3", "SLURM_MEM_PER_GPU": "512"},
     []),
    (dict(), {}, ["SLURM_JOB_DEPENDENCY", "SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_CPUS_PER_GPU"]),
])
def test_batch_environment_follows_the_spec(changes, present, absent):
    job = two_node_gpu_job()
    for k, v in changes.items():
        setattr(job.spec, k, v)
    env = batch_environment(job, CFG, "node1", ADDRS, {})
    assert {k: env.get(k) for k in present} == present
    assert [k for k in absent if k in env] == []
    assert env["SLURM_JOB_ID"] == "42"  # Slurm's own variables are set whatever --export says


def test_gpu_environment_empty_without_gpus():
    assert gpu_environment([]) == {}
    env = batch_environment(model_job(5), CFG, "node1", ADDRS, gpu_environment([]))
    assert "CUDA_VISIBLE_DEVICES" not in env and "SLURM_JOB_GPUS" not in env


def test_user_master_addr_wins():
    job = two_node_gpu_job()
    job.spec.environment["MASTER_ADDR"] = "192.168.0.9"
    assert batch_environment(job, CFG, "node1", ADDRS, {})["MASTER_ADDR"] == "192.168.0.9"


def test_restart_count_pattern_names_each_run():
    from pyslurm_lite.agent.iopaths import expand_pattern
    from factories import model_job
    job = model_job(7)
    job.restart_count = 2
    assert expand_pattern("run-%j-%r.out", job, "node1") == "run-7-2.out"


def test_a_fenced_steps_gpus_are_numbered_by_their_place_among_the_jobs():
    """The devices cgroup shows the job its own GPUs (here 4 and 6) as 0 and 1: a step or task
    holding only GPU 6 must be told 1, or it would use the job's first GPU."""
    assert gpu_environment([6], [4, 6])["CUDA_VISIBLE_DEVICES"] == "1"
    assert gpu_environment([4, 6], [4, 6])["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert gpu_environment([6])["CUDA_VISIBLE_DEVICES"] == "6"  # unfenced: the indices
    assert gpu_environment([6], [4, 6])["SLURM_STEP_GPUS"] == "6"
