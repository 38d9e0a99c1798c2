"""agent/mps.py: the variables of a gres/mps or gres/shard job, and the MPS control daemon per
GPU, started for the first mps job on a GPU and stopped after the last, run through a stand-in
executable that records how it was called (it is our code under test, not NVIDIA's)."""

from __future__ import annotations

import logging
import os

import pytest

from factories import model_job
from pyslurm_lite.agent.env import gpu_environment
from pyslurm_lite.agent.mps import MpsBusy, MpsControl, share_environment
from pyslurm_lite.config import parse
from pyslurm_lite.model import GresRequest

STAND_IN = """#!/bin/sh
printf '%s|%s|%s|%s|%s\\n' "$*" "$CUDA_VISIBLE_DEVICES" "$CUDA_MPS_PIPE_DIRECTORY" \\
    "$CUDA_MPS_LOG_DIRECTORY" "$( [ "$1" = -d ] || cat )" >> "$(dirname "$0")/calls"
"""


def _cfg(extra=""):
    return parse("ClusterName=c\nControlMachine=localhost\nGresTypes=gpu,shard,mps\n"
                 "StateSaveLocation=/tmp/h2-mps-state\n"
                 "NodeName=node1 CPUs=4 RealMemory=1000 Gres=gpu:2,mps:200\n"
                 "NodeName=node2 CPUs=4 RealMemory=1000 Gres=gpu:2,shard:8\n"
                 "PartitionName=main Nodes=ALL Default=YES\n" + extra, "slurm.conf")


def _job(job_id, name, count, gpus, node="node1", uid=1000):
    j = model_job(job_id, nodes=(node,), gpus=gpus)
    j.spec.uid = uid
    j.spec.gres = [GresRequest(name, "", count)]
    return j


@pytest.mark.parametrize("name, count, node, want, gone", [
    ("mps", 50, "node1", {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50"}, "SLURM_SHARDS_ON_NODE"),
    ("mps", 100, "node1", {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100"}, "SLURM_GPUS_ON_NODE"),
    ("mps", 1, "node1", {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "1"}, "SLURM_GPUS_ON_NODE"),
    ("shard", 3, "node2", {"SLURM_SHARDS_ON_NODE": "3"}, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
    ("shard", 3, "node2", {"CUDA_VISIBLE_DEVICES": "1", "SLURM_JOB_GPUS": "1"},
     "SLURM_GPUS_ON_NODE"),
])
def test_environment(name, count, node, want, gone):
    env = {"CUDA_VISIBLE_DEVICES": "1", "SLURM_JOB_GPUS": "1", "SLURM_GPUS_ON_NODE": "1"}
    share_environment(env, _job(7, name, count, [1], node), _cfg(), node)
    assert {k: env.get(k) for k in want} == want and gone not in env
    assert "CUDA_MPS_PIPE_DIRECTORY" not in env  # no MpsControlProgram: no daemon of ours


def test_pipe_directory_only_from_the_agent():
    """share_environment alone never says a daemon runs: the agent does (gpu_options)."""
    env = {"CUDA_VISIBLE_DEVICES": "1"}
    share_environment(env, _job(7, "mps", 25, [1]), _cfg("MpsControlProgram=/x/mps\n"), "node1")
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25"
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "CUDA_MPS_PIPE_DIRECTORY" not in env


def test_mps_view_when_the_daemon_runs():
    env = gpu_environment([1], [1], share="mps", mps_pipe="/s/mps/1/pipe")
    assert env["CUDA_VISIBLE_DEVICES"] == "0"  # the one GPU its MPS server sees
    assert env["CUDA_MPS_PIPE_DIRECTORY"] == "/s/mps/1/pipe"
    assert "SLURM_GPUS_ON_NODE" not in env and env["SLURM_JOB_GPUS"] == "1"


def test_whole_gpu_job_untouched():
    env = {"SLURM_JOB_GPUS": "0"}
    share_environment(env, model_job(7, gpus=[0]), _cfg(), "node1")
    assert env == {"SLURM_JOB_GPUS": "0"}


def _calls(tmp_path):
    path = tmp_path / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_daemon_per_gpu_started_once_stopped_after_last_job(tmp_path):
    program = tmp_path / "nvidia-cuda-mps-control"
    program.write_text(STAND_IN)
    program.chmod(0o755)
    spool = tmp_path / "spool"
    mps = MpsControl(str(program), str(spool))
    mps.job_started(_job(1, "mps", 50, [0]), "node1")
    mps.job_started(_job(2, "mps", 50, [0]), "node1")  # same GPU: no second daemon
    mps.job_started(_job(3, "mps", 30, [1]), "node1")
    mps.job_started(_job(4, "shard", 3, [1]), "node1")  # not mps: nothing
    pipe0, log0 = spool / "mps/0/pipe", spool / "mps/0/log"
    pipe1, log1 = spool / "mps/1/pipe", spool / "mps/1/log"
    assert _calls(tmp_path) == [f"-d|0|{pipe0}|{log0}|", f"-d|1|{pipe1}|{log1}|"]
    assert pipe0.is_dir() and log1.is_dir()
    mps.job_ended(1)
    assert len(_calls(tmp_path)) == 2  # job 2 still uses GPU 0's daemon
    mps.job_ended(3)
    mps.job_ended(2)
    assert _calls(tmp_path)[2:] == [f"|1|{pipe1}|{log1}|quit", f"|0|{pipe0}|{log0}|quit"]
    mps.job_ended(4)
    assert len(_calls(tmp_path)) == 4


def test_no_program_warns_and_the_job_goes_on(tmp_path, caplog):
    mps = MpsControl(str(tmp_path / "absent"), str(tmp_path / "spool"))
    with caplog.at_level(logging.WARNING, logger="pyslurm_lite.agent.mps"):
        mps.job_started(_job(1, "mps", 50, [0]), "node1")
    assert "cannot start the MPS control daemon of GPU 0" in caplog.text
    assert mps.users == {0: {1}}  # still counted: its end stops nothing that is not there
    mps.job_ended(1)
    assert os.path.isdir(tmp_path / "spool/mps/0/pipe")


def _stand_in(tmp_path, text=STAND_IN):
    program = tmp_path / "nvidia-cuda-mps-control"
    program.write_text(text)
    program.chmod(0o755)
    return str(program)


def test_one_user_per_daemon(tmp_path):
    mps = MpsControl(_stand_in(tmp_path), str(tmp_path / "spool"))
    mps.job_started(_job(1, "mps", 50, [0], uid=1000), "node1")
    mps.job_started(_job(2, "mps", 30, [0], uid=1000), "node1")  # same user: shares it
    with pytest.raises(MpsBusy, match="GPU 0 serves the running jobs of uid 1000"):
        mps.job_started(_job(3, "mps", 10, [0], uid=1001), "node1")
    mps.job_started(_job(4, "mps", 10, [1], uid=1001), "node1")  # another GPU: its own daemon
    assert mps.users == {0: {1, 2}, 1: {4}} and mps.ready(0) and mps.ready(1)
    mps.job_ended(1)
    mps.job_ended(2)
    assert not mps.ready(0)
    mps.job_started(_job(5, "mps", 10, [0], uid=1001), "node1")  # the daemon is free again
    assert mps.ready(0) and len(_calls(tmp_path)) == 4  # started 0, 1; quit 0; started 0


def test_a_failed_start_is_not_ready_and_not_quit(tmp_path):
    mps = MpsControl(_stand_in(tmp_path, STAND_IN + "exit 3\n"), str(tmp_path / "spool"))
    mps.job_started(_job(1, "mps", 50, [0]), "node1")
    assert not mps.ready(0)
    mps.job_ended(1)
    assert len(_calls(tmp_path)) == 1  # the -d only


def test_daemon_names_a_real_gpu_by_uuid(tmp_path):
    from pyslurm_lite.model import GpuDevice
    devices = [GpuDevice(index=0, uuid="GPU-aaaa"), GpuDevice(index=1, uuid="GPU-bbbb")]
    mps = MpsControl(_stand_in(tmp_path), str(tmp_path / "spool"), devices)
    mps.job_started(_job(1, "mps", 50, [1]), "node1")
    assert _calls(tmp_path)[0].split("|")[1] == "GPU-bbbb"
    assert mps._env(1)["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
