"""PyTorch Lightning, unchanged, against our cluster: a batch job of two nodes (one task each)
runs `srun python lightning_train.py`; Lightning detects Slurm (SLURMEnvironment), takes global
rank, world size and the rendezvous node and port from our SLURM_* variables, and trains a tiny
model with DDP over gloo to its last step. Both ranks must agree on an all-reduced value."""

from __future__ import annotations

import re

import pytest

from compat_cluster import HERE, assert_queue_drains, compat_cluster
from conftest import wait_final

pytest.importorskip("pytorch_lightning", reason="pytorch-lightning is not installed (.ci/run installs it)")

TRAIN_TIMEOUT = 150.0  # seconds: two ranks import torch and Lightning on a 2-CPU machine
STEPS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from compat_cluster(tmp_path_factory, "lightning")


def test_ddp_training_over_two_nodes_runs_to_its_last_step(cluster):
    out = cluster.dir / "work" / "train-%j.out"
    job = cluster.sbatch("-N2", "--ntasks-per-node=1", "-c1", "--mem=900", "-J", "train",
                         "-o", str(out), "--wrap",
                         f"srun python {HERE}/lightning_train.py {STEPS}")
    state = wait_final(cluster, job, TRAIN_TIMEOUT)
    text = (cluster.dir / "work" / f"train-{job}.out").read_text(errors="replace")
    assert state == "COMPLETED", f"{state}\n{text[-4000:]}\n{cluster.log_tails()}"
    ranks = dict(re.findall(r"^rank (\d) of 2 env SLURMEnvironment (.*)$", text, re.M))
    assert sorted(ranks) == ["0", "1"], text[-4000:]
    for line in ranks.values():
        assert f"steps {STEPS} sum 3" in line, line  # 1 + 2 on both ranks
        # the first node of the job: by name from SLURM_NODELIST, or by the NodeAddr our srun
        # exports as MASTER_ADDR (Lightning prefers MASTER_ADDR when it is set)
        assert re.search(r"master (node1|127\.0\.0\.1):\d+ ", line), line
    assert {re.search(r"node (node\d)", line).group(1) for line in ranks.values()} == {"node1", "node2"}
    assert_queue_drains(cluster)
