"""PyTorch DDP across two real network hosts (network namespaces, each with its own address):
sbatch + srun launch 2 nodes x 2 tasks of examples/ddp_train.py with the gloo backend and
init_method=env://; every rank must agree on the all-reduced value. Also: PyTorch Lightning's and
submitit's own SLURM environment classes read the right ranks from our variables."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from netns_cluster import NetnsCluster, available

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    why = available()
    if why:
        pytest.skip(why)
    c = NetnsCluster(tmp_path_factory.mktemp("netns"))
    try:
        c.start_controller()
        for i in (1, 2):
            c.start_agent(i)
        c.wait_nodes(2)
        yield c
    finally:
        c.stop()


def _state(c: NetnsCluster, job_id: int) -> str:
    return c.run(["squeue", "-h", "-j", str(job_id), "-o", "%T"]).stdout.strip()


def _wait(c: NetnsCluster, job_id: int, timeout: float) -> str:
    import time
    deadline, st = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        st = _state(c, job_id)
        if st in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
            return st
        time.sleep(0.5)
    return st or "unknown"


def test_ddp_two_hosts_two_tasks_each_agree(hosts, tmp_path):
    for f in ("ddp_train.py", "ddp.sbatch"):
        shutil.copy(EXAMPLES / f, tmp_path / f)
    hosts.env.update(GLOO_SOCKET_IFNAME="eth0", DDP_FORCE_CPU="1")
    r = hosts.run(["sbatch", "--parsable", "ddp.sbatch", "--steps", "30"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    job_id = int(r.stdout)
    state = _wait(hosts, job_id, 300)
    out = (tmp_path / f"ddp-{job_id}.out").read_text() if (tmp_path / f"ddp-{job_id}.out").exists() else ""
    assert state == "COMPLETED", f"{state}\n{out}\n{hosts.logs()}"
    values = dict(re.findall(r"rank (\d) allreduce=([\d.]+)", out))
    assert sorted(values) == ["0", "1", "2", "3"], out
    assert set(values.values()) == {"10.0"}, out  # 1+2+3+4 on every rank
    assert f"master {hosts.addrs[0]}:" in out  # the first node's own address, reachable by all


LIGHTNING_PROBE = r'''
import os
from lightning_fabric.plugins.environments import SLURMEnvironment
import submitit
os.environ.setdefault("SUBMITIT_EXECUTOR", "slurm")  # what submitit's own sbatch script exports
env = SLURMEnvironment()
sub = submitit.JobEnvironment()
print(f"L {os.environ['SLURM_PROCID']} {SLURMEnvironment.detect()} {env.global_rank()} {env.local_rank()} "
      f"{env.node_rank()} {env.world_size()} {env.main_address} {env.main_port}")
print(f"S {os.environ['SLURM_PROCID']} {sub.global_rank} {sub.local_rank} {sub.node} {sub.num_tasks} "
      f"{sub.num_nodes} {sub.job_id}")
'''


def test_lightning_and_submitit_read_our_variables(hosts, tmp_path):
    pytest.importorskip("lightning_fabric", reason="lightning is not installed")
    pytest.importorskip("submitit", reason="submitit is not installed")
    (tmp_path / "probe.py").write_text(LIGHTNING_PROBE)
    # Lightning refuses --ntasks without --ntasks-per-node (with real Slurm too): users write this
    r = hosts.run(["srun", "-N2", "--ntasks-per-node=2", "-J", "probe", "python3", str(tmp_path / "probe.py")],
                  cwd=tmp_path, timeout=180)
    assert r.returncode == 0, r.stderr
    lightning = sorted(line.split()[1:] for line in r.stdout.splitlines() if line.startswith("L "))
    assert [row[:7] for row in lightning] == [
        ["0", "True", "0", "0", "0", "4", hosts.addrs[0]], ["1", "True", "1", "1", "0", "4", hosts.addrs[0]],
        ["2", "True", "2", "0", "1", "4", hosts.addrs[0]], ["3", "True", "3", "1", "1", "4", hosts.addrs[0]]]
    submit = sorted(line.split()[1:7] for line in r.stdout.splitlines() if line.startswith("S "))
    assert submit == [["0", "0", "0", "0", "4", "2"], ["1", "1", "1", "0", "4", "2"],
                      ["2", "2", "0", "1", "4", "2"], ["3", "3", "1", "1", "4", "2"]]
