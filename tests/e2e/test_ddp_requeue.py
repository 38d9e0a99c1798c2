"""A 2-node DDP run whose second node's agent is killed: the node goes DOWN, the job is requeued
under the same id, resumes from its checkpoint on the nodes left, and completes with
SLURM_RESTART_COUNT=1 (the srun issue's example, examples/ddp_train.py)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import configured_cluster, wait_final

pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "ddpq", (3, 2, 3000, 1),
                                  replace={"SlurmdTimeout=30": "SlurmdTimeout=4"})


@pytest.mark.slow
def test_agent_killed_mid_training_requeues_and_resumes_from_checkpoint(three, tmp_path):
    shutil.copy(EXAMPLES / "ddp_train.py", tmp_path)
    shutil.copy(EXAMPLES / "ddp.sbatch", tmp_path)
    ckpt = tmp_path / "ckpt"
    env = {"DDP_FORCE_CPU": "1", "CKPT_DIR": str(ckpt)}
    job = three.sbatch("-N2", "--ntasks-per-node=1", "ddp.sbatch", "--steps", "80", "--step-seconds",
                       "0.15", "--checkpoint-every", "5", cwd=tmp_path, env=env)
    out = tmp_path / f"ddp-{job}.out"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(ckpt.glob("*.pt")):
        time.sleep(0.3)
    assert list(ckpt.glob("*.pt")), out.read_text() if out.exists() else "no output"
    nodes = re.search(r"on (node\S+?),", out.read_text()).group(1)
    victim = "node2" if "node[1-2]" in nodes or "node2" in nodes else "node3"
    os.kill(three.pid_of(f"agent-{victim}"), signal.SIGKILL)
    assert wait_final(three, job, 240) == "COMPLETED", out.read_text()
    text = out.read_text()
    assert re.search(r"restart=0 resuming_from_step=0", text), text
    resumed = re.search(r"restart=1 resuming_from_step=(\d+)", text)
    assert resumed and int(resumed.group(1)) >= 5, text
    assert set(re.findall(r"allreduce=([\d.]+)", text)) == {"3.0"}  # 1 + 2 over 2 ranks
    r = three.run(["scontrol", "show", "job", str(job)])
    assert "Restarts=1" in r.stdout
