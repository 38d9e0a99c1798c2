"""MIG through gpu/nvml (agent/gpu.py with_mig) against a fake NVML library with the real pynvml
call names: a GPU in MIG mode becomes its instances, typed by profile (1g.10gb), named by UUID,
with their capability devices from mig-minors. On a GPU machine bench/gpu_check.sh runs the real
library."""

from __future__ import annotations

import types

import pytest

from pyslurm_lite.agent.gpu import NvmlSource, mig_profile, read_mig_minors, visible_devices

GIB = 1024 ** 3


class NotFound(Exception):
    """pynvml's NVMLError_NotFound."""


class FakeMigNvml:
    """Physical GPUs as dicts; one in MIG mode has "migs": slots -> instance dicts (None: empty)."""

    def __init__(self, devices):
        self.devices = devices

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        return self.devices[i]

    def nvmlDeviceGetName(self, h):
        return h["name"]

    def nvmlDeviceGetUUID(self, h):
        return h["uuid"]

    def nvmlDeviceGetMinorNumber(self, h):
        return h["minor"]

    def nvmlDeviceGetPciInfo(self, h):
        return types.SimpleNamespace(busId=h.get("bus", "00000000:18:00.0"))

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(total=h["mem"], used=h.get("used", 0))

    def nvmlDeviceGetNumaNodeId(self, h):
        return 0

    def nvmlDeviceGetUtilizationRates(self, h):
        if "slices" in h:
            raise NotFound("Not Supported")
        return types.SimpleNamespace(gpu=h.get("util", 0))

    def nvmlDeviceGetMigMode(self, h):
        if "migs" not in h:
            raise NotFound("Not Supported")  # a GPU without MIG
        return [1, 1] if h["migs"] else [0, 0]

    def nvmlDeviceGetMaxMigDeviceCount(self, h):
        return len(h["migs"])

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h, j):
        mig = h["migs"][j]
        if mig is None:
            raise NotFound("Not Found")
        return mig

    def nvmlDeviceGetAttributes(self, mh):
        return types.SimpleNamespace(gpuInstanceSliceCount=mh["slices"], memorySizeMB=mh["mb"])

    def nvmlDeviceGetGpuInstanceId(self, mh):
        return mh["gi"]

    def nvmlDeviceGetComputeInstanceId(self, mh):
        return mh["ci"]


def _mig(uuid, slices, mb, gi, ci=0):
    return {"uuid": uuid, "slices": slices, "mb": mb, "gi": gi, "ci": ci, "mem": mb * 1024 ** 2}


DEVICES = [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaa", "minor": 0, "mem": 80 * GIB,
     "migs": [_mig("MIG-1111", 1, 9856, gi=7), None, _mig("MIG-3333", 3, 40192, gi=2)]},
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-bbbb", "minor": 1, "mem": 80 * GIB, "migs": []},
    {"name": "NVIDIA T4", "uuid": "GPU-cccc", "minor": 2, "mem": 16 * GIB},
]

MINORS = ("gpu0/gi7/access 66\ngpu0/gi7/ci0/access 67\ngpu0/gi2/access 21\n"
          "gpu0/gi2/ci0/access 22\nconfig 1\nmonitor 2\n")


@pytest.fixture
def minors(tmp_path, monkeypatch):
    path = tmp_path / "mig-minors"
    path.write_text(MINORS)
    monkeypatch.setattr("pyslurm_lite.agent.gpu.MIG_MINORS", str(path))
    return path


def test_mig_instances_become_typed_gpus(minors):
    gpus = NvmlSource(nvml=FakeMigNvml(DEVICES)).devices()
    # GPU 0 (MIG on) is replaced by its two instances, numbered after the physical GPUs
    assert [(g.index, g.type, g.uuid, g.mig_parent, g.mig_index) for g in gpus] == [
        (1, "a100", "GPU-bbbb", -1, -1), (2, "t4", "GPU-cccc", -1, -1),
        (3, "1g.10gb", "MIG-1111", 0, 0), (4, "3g.40gb", "MIG-3333", 0, 2)]
    small = gpus[2]
    assert small.file == "/dev/nvidia-caps/nvidia-cap66"
    assert small.mig_files == ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap66",
                               "/dev/nvidia-caps/nvidia-cap67"]
    assert small.memory_mb == 9856 and not small.simulated and small.minor == 0
    assert gpus[0].file == "/dev/nvidia1" and gpus[0].mig_files == []


def test_mig_caps_unreadable_leaves_instances_unfenced(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr("pyslurm_lite.agent.gpu.MIG_MINORS", str(tmp_path / "absent"))
    gpus = NvmlSource(nvml=FakeMigNvml(DEVICES[:1])).devices()
    assert [g.type for g in gpus] == ["1g.10gb", "3g.40gb"]
    assert gpus[0].file == "" and gpus[0].mig_files == ["/dev/nvidia0"]
    assert "are not fenced" in caplog.text


@pytest.mark.parametrize("slices, mb, expected", [
    (1, 9856, "1g.10gb"), (1, 4864, "1g.5gb"), (3, 19968, "3g.20gb"), (7, 81920, "7g.80gb"),
    (2, 20096, "2g.20gb"),
])
def test_profile_names(slices, mb, expected):
    assert mig_profile(slices, mb) == expected


def test_read_mig_minors_skips_what_is_not_a_pair(tmp_path):
    path = tmp_path / "m"
    path.write_text("gpu0/gi1/access 12\nbroken\ngpu0/gi1/ci0/access x\n")
    assert read_mig_minors(str(path)) == {"gpu0/gi1/access": 12}


def test_visible_devices_are_uuids_for_mig(minors):
    gpus = NvmlSource(nvml=FakeMigNvml(DEVICES)).devices()
    assert visible_devices(gpus, [4, 3]) == "MIG-3333,MIG-1111"
    assert visible_devices(gpus, [1, 2]) is None  # whole GPUs: indices as before


def test_sampling_a_mig_instance(minors):
    fake = FakeMigNvml(DEVICES)
    gpus = NvmlSource(nvml=fake).devices()
    migs = {g.index: (g.mig_parent, g.mig_index) for g in gpus if g.mig_parent >= 0}
    source = NvmlSource(nvml=fake, indices=[g.index for g in gpus], migs=migs)
    DEVICES[0]["migs"][2]["used"] = 5 * 1024 ** 2
    try:
        samples = {s.index: s for s in source.sample()}
    finally:
        del DEVICES[0]["migs"][2]["used"]
    assert samples[4].memory_used == 5 * 1024 ** 2 and samples[4].util == 0.0
    assert set(samples) == {1, 2, 3, 4}
