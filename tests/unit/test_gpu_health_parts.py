"""GPU health: which readings are faults, the simulated health files, and the NVML queries
against a fake NVML library with pynvml's call names and error codes (agent/gpu_health.py); what
the controller does with a fault, by GpuHealthAction (controller/node_mgr.py). The real library
is queried on a GPU machine by bench/gpu_check.sh."""

from __future__ import annotations

import logging
import os
import types

import pytest

from pyslurm_lite.agent import gpu_health
from pyslurm_lite.agent.gpu import NvmlSource
from pyslurm_lite.agent.gpu_health import (GpuHealth, NvmlHealth, SimHealth, describe, is_fatal,
                                           parse_health, watcher)
from pyslurm_lite.config import Config
from pyslurm_lite.controller.job_mgr import JobManager
from pyslurm_lite.controller.node_mgr import NodeManager
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.model import GpuDevice, GpuFault, NodeConfig


@pytest.mark.parametrize("kind, value, fatal", [
    ("xid", 79, True), ("xid", 48, True), ("xid", 94, True), ("xid", 95, True), ("xid", 119, True),
    ("xid", 13, False), ("xid", 31, False), ("xid", 43, False), ("xid", 45, False),
    ("ecc", 0, False), ("ecc", 3, True), ("retired_pending", 0, False), ("retired_pending", 1, True),
    ("remap_pending", 1, True), ("remap_failure", 0, False), ("lost", 1, True),
])
def test_which_readings_are_faults(kind, value, fatal):
    assert is_fatal(kind, value) is fatal


@pytest.mark.parametrize("kind, value, text", [
    ("xid", 79, "XID 79 (fallen off the bus)"), ("xid", 48, "XID 48 (double-bit ECC error)"),
    ("ecc", 3, "3 uncorrected ECC error(s)"), ("lost", 1, "GPU is lost"),
    ("retired_pending", 1, "retired pages pending (GPU reset needed)"),
])
def test_descriptions_people_read_in_reasons(kind, value, text):
    assert describe(kind, value) == text


@pytest.mark.parametrize("text, faults, benign", [
    ("xid 79\n", [("xid", "XID 79 (fallen off the bus)")], []),
    ("xid 13\n", [], [13]),
    ("# a comment\n\necc 0\nretired_pending 0\n", [], []),
    ("ecc 2\nlost\n", [("ecc", "2 uncorrected ECC error(s)"), ("lost", "GPU is lost")], []),
    ("XID 48  # upper case kind\nremap_failure 1", [("xid", "XID 48 (double-bit ECC error)"),
                                                    ("remap_failure", "row remapping failed")], []),
    ("xid\nxid seventy\nfire 1\necc 1 2\n", [], []),  # malformed lines: warned about, skipped
])
def test_health_file_lines(text, faults, benign):
    found, xids = parse_health(2, text, "test")
    assert [(f.kind, f.detail) for f in found] == faults
    assert all(f.index == 2 for f in found)
    assert xids == benign


def test_malformed_line_is_named_in_a_warning(caplog):
    with caplog.at_level(logging.WARNING, "pyslurm_lite.agent.gpu_health"):
        parse_health(0, "fire 1\n", "/spool/simgpu/0.health")
    assert "/spool/simgpu/0.health" in caplog.text and "fire 1" in caplog.text


def _write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def test_sim_health_reads_each_gpus_file(tmp_path):
    _write(tmp_path / "1.health", "xid 79\n")
    _write(tmp_path / "0", "50 100\n")  # the usage file is not a health file
    faults, benign = SimHealth(str(tmp_path), [0, 1]).check()
    assert [(f.index, f.kind) for f in faults] == [(1, "xid")] and benign == []


def test_sim_health_file_writable_by_others_is_not_believed(tmp_path, caplog):
    _write(tmp_path / "0.health", "lost\n", mode=0o666)
    with caplog.at_level(logging.WARNING, "pyslurm_lite.agent.gpu_health"):
        assert SimHealth(str(tmp_path), [0]).check() == ([], [])
    assert "writable by others" in caplog.text


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


class FakeNvml:
    """The health part of pynvml over a list of device dicts; XID events queued in `events`."""

    NVMLError = NVMLError
    NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_TIMEOUT, NVML_ERROR_GPU_IS_LOST = 3, 10, 15
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC = 1, 0
    nvmlEventTypeXidCriticalError = 8

    def __init__(self, devices):
        self.devices, self.events, self.registered, self.inited = devices, [], [], 0

    def nvmlInit(self):
        self.inited += 1

    def nvmlDeviceGetCount(self):
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, i):
        if self.devices[i].get("lost"):
            raise NVMLError(15)
        return self.devices[i]

    def nvmlDeviceGetIndex(self, h):
        return self.devices.index(h)

    def nvmlEventSetCreate(self):
        return "set"

    def nvmlDeviceRegisterEvents(self, h, kinds, event_set):
        if h.get("no_events"):
            raise NVMLError(3)
        self.registered.append((self.devices.index(h), kinds, event_set))

    def nvmlEventSetWait_v2(self, event_set, timeout_ms):
        assert timeout_ms == 0  # never blocks the agent
        if not self.events:
            raise NVMLError(10)
        index, xid = self.events.pop(0)
        return types.SimpleNamespace(device=self.devices[index], eventData=xid,
                                     eventType=self.nvmlEventTypeXidCriticalError)

    def nvmlDeviceGetTotalEccErrors(self, h, error_type, counter):
        assert (error_type, counter) == (1, 0)  # uncorrected, volatile (since the last reset)
        if "ecc" not in h:
            raise NVMLError(3)
        return h["ecc"]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h):
        return h.get("retired_pending", 0)

    def nvmlDeviceGetRemappedRows(self, h):
        return (0, 0, h.get("remap_pending", 0), h.get("remap_failure", 0))


def _kinds(faults):
    return sorted((f.index, f.kind, f.detail) for f in faults)


def test_nvml_healthy_gpus_have_no_faults():
    nv = FakeNvml([{"ecc": 0}, {}])
    health = NvmlHealth(nv, [0, 1])
    assert health.check() == ([], [])
    assert [r[0] for r in nv.registered] == [0, 1] and nv.inited == 1


def test_nvml_fatal_xid_stays_a_fault_benign_one_is_only_returned():
    nv = FakeNvml([{"id": 0}, {"id": 1}])  # handles told apart (NVML's are pointers)
    health = NvmlHealth(nv, [0, 1])
    health.start()
    nv.events = [(1, 79), (0, 13)]
    faults, benign = health.check()
    assert _kinds(faults) == [(1, "xid", "XID 79 (fallen off the bus)")] and benign == [(0, 13)]
    assert _kinds(health.check()[0]) == _kinds(faults)  # an XID is an event: it stays


def test_nvml_counters_ecc_retired_remapped():
    nv = FakeNvml([{"ecc": 4, "retired_pending": 1}, {"remap_pending": 1, "remap_failure": 1}])
    faults, _ = NvmlHealth(nv, [0, 1]).check()
    assert _kinds(faults) == [
        (0, "ecc", "4 uncorrected ECC error(s)"),
        (0, "retired_pending", "retired pages pending (GPU reset needed)"),
        (1, "remap_failure", "row remapping failed"),
        (1, "remap_pending", "row remapping pending (GPU reset needed)")]


def test_nvml_lost_gpu_by_error_code_and_by_count():
    nv = FakeNvml([{}, {"lost": True, "no_events": True}, {}])
    health = NvmlHealth(nv, [0, 1, 2])
    health.start()
    assert _kinds(health.check()[0]) == [(1, "lost", "GPU is lost")]
    nv.devices.pop()  # GPU 2 fell off the bus: NVML counts one fewer
    assert _kinds(health.check()[0]) == [(1, "lost", "GPU is lost"), (2, "lost", "GPU is lost")]


def test_nvml_query_not_supported_is_said_once(caplog):
    nv = FakeNvml([{}])  # no "ecc": NOT_SUPPORTED, as on a consumer board
    health = NvmlHealth(nv, [0])
    with caplog.at_level(logging.INFO, "pyslurm_lite.agent.gpu_health"):
        health.check()
        health.check()
    assert caplog.text.count("cannot report ecc") == 1


def test_nvml_event_wait_failing_is_said_once(caplog):
    nv = FakeNvml([{"ecc": 0}])
    nv.nvmlEventSetWait_v2 = lambda event_set, timeout_ms: (_ for _ in ()).throw(NVMLError(999))
    health = NvmlHealth(nv, [0])
    with caplog.at_level(logging.INFO, "pyslurm_lite.agent.gpu_health"):
        assert health.check() == ([], []) and health.check() == ([], [])
    assert caplog.text.count("cannot report XID events") == 1


def test_watcher_logs_each_new_fault_once(tmp_path, caplog):
    _write(tmp_path / "0.health", "xid 79\nxid 13\n")
    w = GpuHealth(SimHealth(str(tmp_path), [0]))
    with caplog.at_level(logging.INFO, "pyslurm_lite.agent.gpu_health"):
        for _ in range(3):
            w.run_once()
    assert caplog.text.count("XID 79") == 1 and caplog.text.count("XID 13") == 1
    assert [f.kind for f in w.faults] == ["xid"]
    _write(tmp_path / "0.health", "")
    assert w.run_once() == []


def test_watcher_keeps_last_answer_when_the_backend_fails():
    class Broken:
        def check(self):
            raise RuntimeError("NVML gone")
    w = GpuHealth(Broken())
    assert w.run_once() == []


def test_watcher_matches_the_gpu_source(tmp_path):
    nv = FakeNvml([{}, {}])
    assert isinstance(watcher(NvmlSource(nvml=nv, indices=[1]), "").backend, NvmlHealth)
    assert watcher(NvmlSource(nvml=nv, indices=[]), "") is None
    assert watcher(object(), "") is None
    assert gpu_health.FATAL_XIDS[79] == "fallen off the bus"


# ---- the controller's side (controller/node_mgr.py) -------------------------------------------
XID79 = GpuFault(1, "xid", "XID 79 (fallen off the bus)")
ECC2 = GpuFault(1, "ecc", "2 uncorrected ECC error(s)")


def _nodes(tmp_path, action):
    cfg = Config(gpu_health_action=action, nodes={"node1": NodeConfig(name="node1", cpus=4)})
    s = ClusterState(cfg, Store(f"sqlite:///{tmp_path}/{action}.db", clock=lambda: 100.0),
                     clock=lambda: 100.0)
    s.nodes["node1"].gpus = [GpuDevice(0), GpuDevice(1)]
    return s, NodeManager(s, JobManager(s))


@pytest.mark.parametrize("action, drained, reason, schedulable", [
    ("drain", True, "gpu 1: XID 79 (fallen off the bus)", (0, 1)),
    ("gpu", False, "", (0,)),
    ("none", False, "", (0, 1)),
])
def test_controller_acts_on_a_new_fault_by_gpu_health_action(tmp_path, action, drained, reason,
                                                              schedulable):
    s, nodes = _nodes(tmp_path, action)
    nodes.gpu_health("node1", [XID79])
    node = s.nodes["node1"]
    assert (node.drain, node.reason) == (drained, reason)
    assert tuple(i for i, _ in s.node_view(node).gpus) == schedulable


def test_a_resume_stands_until_a_new_fault(tmp_path):
    s, nodes = _nodes(tmp_path, "drain")
    node = s.nodes["node1"]
    nodes.gpu_health("node1", [XID79])
    nodes.update(["node1"], "RESUME", "")
    nodes.gpu_health("node1", [XID79])  # the same fault at the next heartbeat
    assert not node.drain
    nodes.gpu_health("node1", [XID79, ECC2])
    assert node.drain and node.reason == "gpu 1: 2 uncorrected ECC error(s)"


def test_an_operators_drain_reason_is_kept(tmp_path):
    s, nodes = _nodes(tmp_path, "drain")
    nodes.update(["node1"], "DRAIN", "bios update")
    nodes.gpu_health("node1", [XID79])
    assert s.nodes["node1"].reason == "bios update"


def test_gpu_action_resume_gives_the_gpu_back(tmp_path):
    s, nodes = _nodes(tmp_path, "gpu")
    nodes.gpu_health("node1", [XID79])
    nodes.update(["node1"], "RESUME", "")
    nodes.gpu_health("node1", [XID79])
    assert tuple(i for i, _ in s.node_view(s.nodes["node1"]).gpus) == (0, 1)


def test_nvml_mig_instances_carry_their_boards_faults():
    nv = FakeNvml([{"id": 0, "ecc": 1}, {"id": 1}])
    # ours: 0 and 1 are MIG instances of board 0, 2 is board 1 whole
    faults, _ = NvmlHealth(nv, [0, 1, 2], physical={0: 0, 1: 0, 2: 1}).check()
    assert _kinds(faults) == [(0, "ecc", "1 uncorrected ECC error(s)"),
                              (1, "ecc", "1 uncorrected ECC error(s)")]
    w = watcher(NvmlSource(nvml=nv, indices=[5, 6], migs={5: (1, 0), 6: (1, 1)}), "")
    assert w.backend.ours == {5: 1, 6: 1} and w.backend.indices == [1]
