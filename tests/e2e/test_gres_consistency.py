"""One view of GPUs: slurm.conf's Gres=, gres.conf and what the agents find agree, or the nodes
are drained with Slurm's reason; a drain lifts (scontrol update State=RESUME) only once they agree;
typed requests run where the types match; a request no node can ever satisfy is refused at
submit time."""

from __future__ import annotations

import re

import pytest

from conftest import start_cluster, wait_final, wait_state
from pyslurm_lite.cli.cluster import write_config

SHAPE = (2, 2, 2000, 4)
UNTYPED = "NodeName=node[1-2] Name=gpu Count=4\n"  # as `cluster up` writes it on a host without GPUs
TYPED = "NodeName=node[1-2] Name=gpu Type=a100 Count=4\n"


def _set_gres(directory, gres: str, gres_conf: str) -> None:
    conf = directory / "slurm.conf"
    conf.write_text(re.sub(r"Gres=\S+", f"Gres={gres}", conf.read_text()))
    (directory / "gres.conf").write_text(gres_conf)


@pytest.fixture(scope="module")
def typed_cluster(tmp_path_factory):
    def prepare(directory):
        directory.mkdir(exist_ok=True)
        write_config(str(directory), *SHAPE)
        _set_gres(directory, "gpu:a100:4", UNTYPED)

    c = start_cluster(tmp_path_factory.mktemp("gres") / "c", shape=SHAPE, prepare=prepare)
    try:
        yield c
    finally:
        c.down()


def _node(c, name: str) -> str:
    r = c.run(["scontrol", "show", "node", name])
    assert r.returncode == 0, r.stderr
    return r.stdout


def _restart(c) -> None:
    assert c.down().returncode == 0
    r = c.up()
    assert r.returncode == 0, r.stderr + c.log_tails()


def test_disagreeing_gpus_drain_the_nodes_with_slurms_reason(typed_cluster):
    c = typed_cluster
    for name in ("node1", "node2"):
        out = _node(c, name)
        assert "State=IDLE+DRAIN " in out, out
        assert re.search(r"^   Reason=gres/gpu:a100 count too low \(0 < 4\) \[root@", out, re.M), out
    r = c.run(["sinfo", "-h", "-R", "-o", "%E|%N"])
    assert r.stdout.strip() == "gres/gpu:a100 count too low (0 < 4)|node[1-2]", r.stdout


def test_resume_is_refused_while_the_gpus_still_disagree(typed_cluster):
    c = typed_cluster
    r = c.run(["scontrol", "update", "NodeName=node[1-2]", "State=RESUME"])
    assert r.returncode != 0
    assert "node1 cannot be resumed: gres/gpu:a100 count too low (0 < 4)" in r.stderr, r.stderr
    assert "State=IDLE+DRAIN " in _node(c, "node2")  # nothing changed, for either node


def test_a_type_no_node_has_is_refused_at_submit(typed_cluster):
    r = typed_cluster.run(["sbatch", "--gres=gpu:v100:1", "--wrap", "true"])
    assert r.returncode != 0
    assert "Requested node configuration is not available" in r.stderr, r.stderr


def test_typed_gres_conf_then_resume_runs_typed_jobs(typed_cluster, tmp_path):
    c = typed_cluster
    (c.dir / "gres.conf").write_text(TYPED)
    _restart(c)
    assert "State=IDLE+DRAIN " in _node(c, "node1")  # a drain outlives the restart, as in Slurm
    r = c.run(["scontrol", "update", "NodeName=node[1-2]", "State=RESUME"])
    assert r.returncode == 0, r.stderr
    j = c.sbatch("--gres=gpu:a100:2", "-o", str(tmp_path / "out"), "--wrap", "echo CVD=$CUDA_VISIBLE_DEVICES")
    assert wait_final(c, j, timeout=30) == "COMPLETED"
    assert re.fullmatch(r"CVD=\d,\d\n", (tmp_path / "out").read_text())


def test_untyped_slurm_conf_learns_the_types_gres_conf_gives(typed_cluster, tmp_path):
    c = typed_cluster
    _set_gres(c.dir, "gpu:4", TYPED)
    _restart(c)
    out = _node(c, "node1")
    assert "   Gres=gpu:a100:4\n" in out and "State=IDLE " in out, out
    j = c.sbatch("--gres=gpu:a100:1", "-o", str(tmp_path / "out"), "--wrap", "true")
    assert wait_final(c, j, timeout=30) == "COMPLETED"


def test_gpus_in_use_per_node_in_sinfo_and_scontrol(typed_cluster, tmp_path):
    c = typed_cluster
    j = c.sbatch("--gres=gpu:a100:3", "-o", "/dev/null", "--wrap", "sleep 30")
    try:
        assert wait_state(c, j, "RUNNING") == "RUNNING"
        busy = c.run(["squeue", "-h", "-j", str(j), "-o", "%N"]).stdout.strip()
        idle = {"node1": "node2", "node2": "node1"}[busy]
        r = c.run(["sinfo", "-N", "-h", "-O", "NodeList:6,GresUsed:.22,AllocMem:.6"])
        want = {busy: f"{busy:<6}{'gpu:a100:3(IDX:0-2)':>22}{'1000':>6}",
                idle: f"{idle:<6}{'gpu:a100:0(IDX:N/A)':>22}{'0':>6}"}
        assert r.stdout.splitlines() == [want["node1"], want["node2"]], r.stdout
        r = c.run(["sinfo", "-N", "-h", "-S", "-N", "-o", "%N"], env={"SINFO_FORMAT": "%t"})
        assert r.stdout.split() == ["node2", "node1"], r.stdout
        out = _node(c, busy)
        assert "   CfgTRES=cpu=2,mem=2000M,billing=2,gres/gpu=4\n" in out, out
        assert "   AllocTRES=cpu=1,mem=1000M,gres/gpu=3\n" in out, out
    finally:
        c.run(["scancel", str(j)])
