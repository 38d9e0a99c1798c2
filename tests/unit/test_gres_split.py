"""A local cluster on a GPU host deals the host's GPUs out to its nodes (cluster.gres_conf,
gpu.split), and each agent then discovers only its own through NVML (gpu.discover against a fake
NVML library): never one GPU on two nodes."""

from __future__ import annotations

import pytest

from pyslurm_lite import config
from pyslurm_lite.agent import gpu
from pyslurm_lite.cli.cluster import gres_conf
from pyslurm_lite.model import GpuDevice

from test_gpu_nvml import FakeNvml


def host(n: int, model: str = "NVIDIA H200") -> list[dict]:
    return [{"name": model, "uuid": f"GPU-{i}", "minor": i, "bus": f"00000000:{16 + i:02X}:00.0",
             "mem": 141 * 1024 ** 3, "numa": i // 4} for i in range(n)]


def devices(n: int) -> list[GpuDevice]:
    return gpu.NvmlSource(nvml=FakeNvml(host(n))).devices()


@pytest.mark.parametrize("found, nodes, per_node, dealt", [
    (4, ["node1", "node2"], 2, {"node1": [0, 1], "node2": [2, 3]}),
    (8, ["node1", "node2", "node3"], 2, {"node1": [0, 1], "node2": [2, 3], "node3": [4, 5]}),
    (1, ["node1"], 1, {"node1": [0]}),
])
def test_split_deals_disjoint_gpus_in_order(found, nodes, per_node, dealt):
    out = gpu.split(devices(found), nodes, per_node)
    assert {n: [d.index for d in ds] for n, ds in out.items()} == dealt


@pytest.mark.parametrize("found, nodes, per_node", [(1, 2, 4), (3, 2, 2), (0, 1, 1)])
def test_split_refuses_fewer_gpus_than_asked(found, nodes, per_node):
    with pytest.raises(gpu.NotEnoughGpus, match=rf"this host has {found} GPU\(s\), fewer than the "
                                                 rf"{nodes * per_node} asked"):
        gpu.split(devices(found), [f"node{i}" for i in range(1, nodes + 1)], per_node)


def _cluster(tmp_path, nodes: int, per_node: int, found: int):
    names = [f"node{i}" for i in range(1, nodes + 1)]
    (tmp_path / "slurm.conf").write_text(
        f"NodeName=node[1-{nodes}] NodeAddr=127.0.0.1 CPUs=2 RealMemory=100 Gres=gpu:{per_node}\n"
        "PartitionName=p Nodes=ALL\n")
    text, said = gres_conf(names, per_node, devices(found))
    (tmp_path / "gres.conf").write_text(text)
    return config.load(str(tmp_path / "slurm.conf")), names, text, said


def test_each_agent_discovers_only_its_share(tmp_path, monkeypatch):
    cfg, names, text, said = _cluster(tmp_path, 2, 2, 4)
    assert text.splitlines()[0] == "AutoDetect=nvml"
    assert "node1: /dev/nvidia0,/dev/nvidia1; node2: /dev/nvidia2,/dev/nvidia3" in said
    monkeypatch.setattr(gpu, "NvmlSource", lambda real=gpu.NvmlSource: real(nvml=FakeNvml(host(4))))
    seen = {n: [(g.index, g.type, g.file, g.simulated) for g in gpu.discover(cfg, n)] for n in names}
    assert seen == {"node1": [(0, "h200", "/dev/nvidia0", False), (1, "h200", "/dev/nvidia1", False)],
                    "node2": [(2, "h200", "/dev/nvidia2", False), (3, "h200", "/dev/nvidia3", False)]}


def test_too_few_gpus_gives_simulated_ones_and_says_so(tmp_path, monkeypatch):
    cfg, names, text, said = _cluster(tmp_path, 2, 4, 1)
    assert "this host has 1 GPU(s), fewer than the 8 asked (2 node(s) x 4)" in said
    assert "ask for --nodes 1 --gpus 1 to use" in said and text.startswith("AutoDetect=off\n")
    monkeypatch.setattr(gpu, "NvmlSource", lambda real=gpu.NvmlSource: real(nvml=FakeNvml(host(1))))
    for n in names:
        found = gpu.discover(cfg, n)
        assert len(found) == 4 and all(g.simulated and not g.file for g in found)


def test_no_gpu_host_keeps_the_count_line(tmp_path):
    text, said = gres_conf(["node1", "node2"], 4, [])
    assert (text, said) == ("NodeName=node[1-2] Name=gpu Count=4\n", "")


def test_a_node_knows_the_gpus_dealt_to_its_neighbours_on_the_same_host(tmp_path):
    cfg, names, text, said = _cluster(tmp_path, 2, 2, 4)
    assert gpu.foreign_devices(cfg, "node1") == ["/dev/nvidia2", "/dev/nvidia3"]
    assert gpu.foreign_devices(cfg, "node2") == ["/dev/nvidia0", "/dev/nvidia1"]
    cfg.nodes["node2"].addr = "10.0.0.2"  # another host: its /dev/nvidia2 is not this host's
    assert gpu.foreign_devices(cfg, "node1") == []
