"""GPUs within a node chosen by interconnect: sched/gpu_topology.py through pick_gpus, the
wiring read from gres.conf (Links=, Cores=) and from NVML (agent/gpu_topology.py). Expectations
are written by hand: "lowest" marks what the old lowest-index choice would give instead."""

from __future__ import annotations

import dataclasses
import types

import pytest

from factories import job, node, snapshot
from pyslurm_lite import config
from pyslurm_lite.agent.gpu import ConfiguredSource, NvmlSource
from pyslurm_lite.model import GpuDevice
from pyslurm_lite.sched import schedule
from pyslurm_lite.sched.gpu_topology import NUMA, NVLINK, SWITCH, affinity
from pyslurm_lite.sched.select import pick_gpus


def pairs_nvlink(*groups, links=2):
    return tuple((a, b, NVLINK * links) for g in groups for i, a in enumerate(g) for b in g[i + 1:])


PAIRS_4 = pairs_nvlink((0, 1), (2, 3))  # NVLink pairs (0,1) and (2,3)
PAIRS_8 = pairs_nvlink((0, 1), (2, 3), (4, 5), (6, 7))
# two PCIe switches (0-3, 4-7), one NUMA node each, no NVLink
PCIE_8 = tuple((a, b, SWITCH + NUMA) for g in ((0, 1, 2, 3), (4, 5, 6, 7))
               for i, a in enumerate(g) for b in g[i + 1:])


def view(gpus, free, pairs):
    return dataclasses.replace(node("n1", cpus=16, gpus=gpus, free_gpus=free), gpu_affinity=pairs)


@pytest.mark.parametrize("gpus, free, pairs, count, expected", [
    pytest.param(4, (1, 2, 3), PAIRS_4, 2, [2, 3], id="linked-pair-not-lowest"),  # lowest: [1, 2]
    pytest.param(4, (1, 2, 3), PAIRS_4, 1, [1], id="single-keeps-pair-whole"),  # lowest: [1] too
    pytest.param(4, (0, 1, 3), PAIRS_4, 1, [3], id="single-takes-orphan"),  # lowest: [0]
    pytest.param(8, (1, 3, 4, 5, 6, 7), PAIRS_8, 2, [4, 5], id="8gpu-0-2-taken"),  # lowest: [1, 3]
    pytest.param(8, (1, 3, 4, 5, 6, 7), PAIRS_8, 4, [4, 5, 6, 7], id="two-pairs"),
    pytest.param(8, (2, 3, 4, 5, 6, 7), PCIE_8, 2, [2, 3], id="same-switch"),
    pytest.param(8, (3, 4, 5, 6, 7), PCIE_8, 2, [4, 5], id="switch-not-split"),  # lowest: [3, 4]
    pytest.param(8, (3, 4, 5, 6, 7), PCIE_8, 4, [4, 5, 6, 7], id="whole-switch"),
    pytest.param(4, (1, 2, 3), (), 2, [1, 2], id="no-topology-lowest"),
])
def test_pick_gpus_by_interconnect(gpus, free, pairs, count, expected):
    v = view(gpus, free, pairs)
    assert pick_gpus(job(1, gpus=count), v.free_gpus, v) == expected


def test_greedy_when_too_many_sets():
    """16 GPUs, 8 wanted: 12,870 sets, so the greedy path; NVLink quads 0-3 ... 12-15, quad
    0-3 half taken: the job gets two whole quads."""
    pairs = pairs_nvlink((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15), links=1)
    free = (2, 3) + tuple(range(4, 16))
    v = view(16, free, pairs)
    assert pick_gpus(job(1, gpus=8), v.free_gpus, v) == [4, 5, 6, 7, 8, 9, 10, 11]


def test_scheduler_places_linked_pair():
    """Through a whole pass: the job's allocation holds the NVLink pair."""
    plan = schedule(snapshot([job(1, gpus=2)], [view(4, (1, 2, 3), PAIRS_4)]), 0.0)
    assert [a.gpus for a in plan.starts[0].allocations] == [[2, 3]]


def test_affinity_from_devices():
    """NVLinks, a shared PCIe switch and a shared NUMA node (or Cores=) add up per pair."""
    devs = [GpuDevice(0, links=[-1, 2, 0], pci_switch="pcie0", numa_node=0),
            GpuDevice(1, links=[2, -1, 0], pci_switch="pcie0", numa_node=0),
            GpuDevice(2, links=[0, 0, -1], pci_switch="pcie2", numa_node=1, cores="4-7"),
            GpuDevice(3, cores="4-7")]
    assert affinity(devs) == ((0, 1, 2 * NVLINK + SWITCH + NUMA), (2, 3, NUMA))
    assert affinity([GpuDevice(0), GpuDevice(1)]) == ()


def _cfg(tmp_path, gres):
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=t\nSlurmctldHost=c\nNodeName=n1 CPUs=8 Gres=gpu:4\n"
        "PartitionName=p Nodes=n1 Default=YES\n")
    (tmp_path / "gres.conf").write_text(gres)
    return config.load(str(tmp_path / "slurm.conf"))


def test_gres_conf_links_and_cores(tmp_path):
    cfg = _cfg(tmp_path, "NodeName=n1 Name=gpu File=/dev/nvidia0 Links=-1,2,0,0 Cores=0-3\n"
                         "NodeName=n1 Name=gpu File=/dev/nvidia1 Links=2,-1,0,0 Cores=0-3\n"
                         "NodeName=n1 Name=gpu File=/dev/nvidia[2-3] Cores=4-7\n")
    devs = ConfiguredSource(cfg, "n1").devices()
    assert [(d.links, d.cores) for d in devs] == [([-1, 2, 0, 0], "0-3"), ([2, -1, 0, 0], "0-3"),
                                                  ([], "4-7"), ([], "4-7")]
    assert affinity(devs) == ((0, 1, 2 * NVLINK + NUMA), (2, 3, NUMA))


@pytest.mark.parametrize("line", ["Links=-1,two", "Cores=0-3;5", "Cores=a"])
def test_gres_conf_bad_topology_refused(tmp_path, line):
    with pytest.raises(config.ConfigError):
        _cfg(tmp_path, f"NodeName=n1 Name=gpu File=/dev/nvidia0 {line}\n")


class TopoNvml:
    """The pynvml calls discovery makes, for 4 GPUs: NVLink pairs (0,1) and (2,3) with 2 links
    each, GPUs 0-1 and 2-3 each behind one PCIe switch, a host bridge between the pairs."""

    BUSES = ["00000000:18:00.0", "00000000:19:00.0", "00000000:AF:00.0", "00000000:B0:00.0"]
    PEER = {0: 1, 1: 0, 2: 3, 3: 2}

    def nvmlInit(self): pass
    def nvmlShutdown(self): pass
    def nvmlDeviceGetCount(self): return 4
    def nvmlDeviceGetHandleByIndex(self, i): return i
    def nvmlDeviceGetName(self, h): return "NVIDIA H100 80GB HBM3"
    def nvmlDeviceGetUUID(self, h): return f"GPU-{h}"
    def nvmlDeviceGetMinorNumber(self, h): return h
    def nvmlDeviceGetPciInfo(self, h): return types.SimpleNamespace(busId=self.BUSES[h].encode())
    def nvmlDeviceGetMemoryInfo(self, h): return types.SimpleNamespace(total=80 << 30)
    def nvmlDeviceGetNumaNodeId(self, h): return h // 2

    def nvmlDeviceGetNvLinkState(self, h, link):
        if link >= 4:
            raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")  # fewer links than the maximum
        return 1 if link < 2 else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return types.SimpleNamespace(busId=self.BUSES[self.PEER[h]][4:])  # 4-digit domain

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return 10 if a // 2 == b // 2 else 30  # NVML_TOPOLOGY_SINGLE, _HOSTBRIDGE


def test_nvml_topology():
    devs = NvmlSource(nvml=TopoNvml()).devices()
    assert [d.links for d in devs] == [[-1, 2, 0, 0], [2, -1, 0, 0], [0, 0, -1, 2], [0, 0, 2, -1]]
    assert [d.pci_switch for d in devs] == ["pcie0", "pcie0", "pcie2", "pcie2"]
    assert affinity(devs)[0] == (0, 1, 2 * NVLINK + SWITCH + NUMA)


def test_nvml_without_topology_queries():
    """A driver without NVLink or topology queries: nothing is said, discovery still works."""
    nv = TopoNvml()
    nv.nvmlDeviceGetNvLinkState = nv.nvmlDeviceGetTopologyCommonAncestor = None
    devs = NvmlSource(nvml=nv).devices()
    assert [(d.links, d.pci_switch) for d in devs] == [([], "")] * 4
