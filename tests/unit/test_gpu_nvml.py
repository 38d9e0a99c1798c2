"""gpu/nvml against a fake NVML library with the real pynvml call names, and the configured
(simulated) source. The real library is exercised on a GPU machine by bench/gpu_check.sh."""

from __future__ import annotations

import types

import pytest

from pyslurm_lite import config
from pyslurm_lite.agent.gpu import ConfiguredSource, NvmlSource, discover, slurm_type_name


class FakeNvml:
    """The subset of pynvml the agent calls, over a list of device dicts."""

    def __init__(self, devices, fail_init=False):
        self.devices, self.fail_init, self.inited = devices, fail_init, 0

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")
        self.inited += 1

    def nvmlShutdown(self):
        self.inited -= 1

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.devices[i]

    def nvmlDeviceGetName(self, h):
        return h["name"].encode()  # older pynvml returns bytes

    def nvmlDeviceGetUUID(self, h):
        return h["uuid"]

    def nvmlDeviceGetMinorNumber(self, h):
        return h["minor"]

    def nvmlDeviceGetPciInfo(self, h):
        return types.SimpleNamespace(busId=h["bus"])

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(total=h["mem"])

    def nvmlDeviceGetNumaNodeId(self, h):
        return h["numa"]


DEVICES = [
    {"name": "NVIDIA H200", "uuid": "GPU-aaaa", "minor": 0, "bus": "00000000:18:00.0",
     "mem": 141 * 1024 ** 3, "numa": 0},
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-bbbb", "minor": 3, "bus": "00000000:AF:00.0",
     "mem": 80 * 1024 ** 3, "numa": 1},
]


@pytest.mark.parametrize("model, expected", [
    ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100"), ("Tesla V100-PCIE-32GB", "v100"),
    ("NVIDIA GeForce RTX 4090", "rtx"), ("NVIDIA L40S", "l40s"), ("", "gpu"),
])
def test_slurm_type_names(model, expected):
    assert slurm_type_name(model) == expected


def test_nvml_source_reads_every_field():
    fake = FakeNvml(DEVICES)
    gpus = NvmlSource(nvml=fake).devices()
    assert fake.inited == 0  # shut down again
    assert [(g.index, g.type, g.uuid, g.minor, g.numa_node, g.simulated) for g in gpus] == [
        (0, "h200", "GPU-aaaa", 0, 0, False), (1, "a100", "GPU-bbbb", 3, 1, False)]
    assert gpus[0].memory_mb == 141 * 1024 and gpus[1].file == "/dev/nvidia3"
    assert gpus[1].pci_bus_id == "00000000:AF:00.0" and gpus[0].name == "NVIDIA H200"


def test_nvml_failure_falls_back_to_configured_gpus(monkeypatch, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=2 RealMemory=100 Gres=gpu:a100:2\nPartitionName=p Nodes=n1\n")
    (tmp_path / "gres.conf").write_text("AutoDetect=nvml\n")
    cfg = config.load(str(conf))
    monkeypatch.setattr("pyslurm_lite.agent.gpu.NvmlSource.devices",
                        lambda self: FakeNvml([], fail_init=True).nvmlInit())
    gpus = discover(cfg, "n1")
    assert [(g.index, g.type, g.simulated) for g in gpus] == [(0, "a100", True), (1, "a100", True)]


def test_configured_source_takes_gres_conf_files_and_types(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n[1-2] CPUs=2 RealMemory=100 Gres=gpu:4\nPartitionName=p Nodes=ALL\n")
    (tmp_path / "gres.conf").write_text("NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n"
                                        "NodeName=n1 Name=gpu Type=t4 File=/dev/nvidia[2-3]\n")
    cfg = config.load(str(conf))
    n1 = ConfiguredSource(cfg, "n1").devices()
    assert [(g.index, g.type, g.file) for g in n1] == [
        (0, "a100", "/dev/nvidia0"), (1, "a100", "/dev/nvidia1"), (2, "t4", "/dev/nvidia2"),
        (3, "t4", "/dev/nvidia3")]
    n2 = ConfiguredSource(cfg, "n2").devices()  # no gres.conf line: from NodeName Gres=
    assert len(n2) == 4 and all(g.simulated and not g.file for g in n2)
