"""The GPU variables of a task (agent/env.py): MIG instances named by UUID in
CUDA_VISIBLE_DEVICES (whole GPUs by index), and no SLURM_GPUS_ON_NODE for the tasks of a job
that shares its GPU (gres/shard, gres/mps), as for its batch script."""

from __future__ import annotations

import pytest

from pyslurm_lite.agent.env import gpu_environment, task_environment
from pyslurm_lite.model import GpuDevice

DEVICES = [GpuDevice(index=0, uuid="GPU-0"), GpuDevice(index=1, uuid="GPU-1"),
           GpuDevice(index=2, uuid="MIG-a", mig_parent=1, mig_index=0),
           GpuDevice(index=3, uuid="MIG-b", mig_parent=1, mig_index=1)]


@pytest.mark.parametrize("gpus, fence, visible", [
    ([3, 2], None, "MIG-b,MIG-a"),  # in the task's order
    ([3], [2, 3], "MIG-b"),         # fenced: still the UUID, not its place
    ([0], None, "0"),               # a whole GPU: its index
    ([1, 0], [0, 1], "1,0"),
])
def test_mig_instances_by_uuid(gpus, fence, visible):
    env = task_environment({}, 0, 0, 0, [0], gpus, fence, devices=DEVICES)
    assert env["CUDA_VISIBLE_DEVICES"] == visible
    assert env["SLURM_JOB_GPUS"] == ",".join(map(str, gpus))


@pytest.mark.parametrize("share", ["shard", "mps"])
def test_sharing_task_has_no_gpu_count(share):
    step_env = {"SLURM_SHARDS_ON_NODE": "2", "SLURM_GPUS_ON_NODE": "1"}  # srun's own, say
    env = task_environment(step_env, 1, 1, 0, [0, 1], [1], None, devices=DEVICES, share=share)
    assert "SLURM_GPUS_ON_NODE" not in env and env["CUDA_VISIBLE_DEVICES"] == "1"


def test_whole_gpu_task_has_its_count():
    assert gpu_environment([0, 1], devices=DEVICES)["SLURM_GPUS_ON_NODE"] == "2"
