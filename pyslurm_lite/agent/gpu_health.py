"""GPU health: the faults of this node's GPUs that make them unfit for jobs, as the agent sees
them (what DCGM's health watches and Slurm sites' NHC GPU checks look at).

    fault            NVML (gpu/nvml)                                   simulated file line
    xid N            nvmlEventTypeXidCriticalError events (fatal ones) "xid 79"
    ecc N            nvmlDeviceGetTotalEccErrors(uncorrected, volatile) "ecc 3"
    retired_pending  nvmlDeviceGetRetiredPagesPendingStatus            "retired_pending 1"
    remap_pending    nvmlDeviceGetRemappedRows: isPending              "remap_pending 1"
    remap_failure    nvmlDeviceGetRemappedRows: failureOccurred        "remap_failure 1"
    lost             NVML_ERROR_GPU_IS_LOST, or fewer GPUs than found   "lost"

A simulated GPU's faults are in <agent spool>/simgpu/<index>.health, believed only when owned
by the agent's user and writable by nobody else (the rule of the other simgpu files). The
file says what is wrong now; an XID from NVML is an event, so it stays a fault until the agent
restarts (an XID that needs a GPU reset is not cured by time).

The agent sends the faults it sees now on every heartbeat (GpuFault: index, kind, detail); the
controller acts once per new fault (controller/node_mgr.py: drain the node, or take the GPU out
of scheduling, by GpuHealthAction). Must not: decide anything about jobs or nodes, or block
the agent (a failing query is logged once and skipped).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import replace

from ..model import GpuFault
from .gpu import SIM_DIR, ConfiguredSource, NvmlSource

log = logging.getLogger("pyslurm_lite.agent.gpu_health")

# XIDs that mean the GPU needs a reset, a reboot or a replacement: those whose immediate action
# in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors, "Resolution Bucket") is RESET_GPU,
# RESTART_BM or CONTACT_SUPPORT, the set DCGM's health watches (DCGM_HEALTH_WATCH_MEM/PCIE/
# NVLINK/...) report as failures. Others (13 graphics exception, 31 page fault, 43 stopped
# processing, 45 preemptive cleanup...) are the application's doing: logged only.
FATAL_XIDS = {
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping event",
    64: "ECC page retirement or row remapping failure",
    74: "NVLink error",
    79: "fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
}
KINDS = ("xid", "ecc", "retired_pending", "remap_pending", "remap_failure", "lost")
HEALTH_SUFFIX = ".health"  # <sim dir>/<index>.health
MAX_FILE = 4096  # bytes of a health file read

# NVML's return codes (nvml.h), for an nvml module that does not name them
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_GPU_IS_LOST = 15


def describe(kind: str, value: int = 0) -> str:
    """A fault as people read it in a drain reason: 'XID 79 (fallen off the bus)'."""
    if kind == "xid":
        return f"XID {value} ({FATAL_XIDS.get(value, 'not fatal')})"
    return {
        "ecc": f"{value} uncorrected ECC error(s)",
        "retired_pending": "retired pages pending (GPU reset needed)",
        "remap_pending": "row remapping pending (GPU reset needed)",
        "remap_failure": "row remapping failed",
        "lost": "GPU is lost",
    }[kind]


def fault(index: int, kind: str, value: int = 0) -> GpuFault:
    return GpuFault(index=index, kind=kind, detail=describe(kind, value))


def is_fatal(kind: str, value: int) -> bool:
    """Whether a reading is a fault: a fatal XID, any uncorrected error, any flag set."""
    if kind == "xid":
        return value in FATAL_XIDS
    return kind == "lost" or value > 0


# ---- simulated GPUs ----------------------------------------------------------------------------
def parse_health(index: int, text: str, where: str = "") -> tuple[list[GpuFault], list[int]]:
    """The faults a health file states, and the benign XIDs it names (logged, not faults).
    Lines are 'KIND [VALUE]' ('xid 79', 'ecc 3', 'lost'); '#' starts a comment."""
    faults: list[GpuFault] = []
    benign: list[int] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        kind = words[0].lower()
        try:
            value = int(words[1]) if len(words) > 1 else (1 if kind == "lost" else None)
        except ValueError:
            value = None
        if kind not in KINDS or value is None or len(words) > 2:
            log.warning("%s: expected 'KIND VALUE' with KIND one of %s, got %r", where,
                        ", ".join(KINDS), line.strip()[:80])
            continue
        if is_fatal(kind, value):
            faults.append(fault(index, kind, value))
        elif kind == "xid":
            benign.append(value)
    return faults, benign


def read_health_file(sim_dir: str, index: int) -> str:
    """<sim_dir>/<index>.health's text; "" when absent or writable by others than the agent's
    user (anyone else could make a healthy node drain, or hide a fault)."""
    path = os.path.join(sim_dir, f"{index}{HEALTH_SUFFIX}")
    try:  # no symlink followed, no FIFO or device opened (a blocking read in root)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        with os.fdopen(fd) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return ""
            if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                log.warning("%s is writable by others than uid %d: ignored", path, os.geteuid())
                return ""
            return f.read(MAX_FILE)
    except OSError:
        return ""


class SimHealth:
    """gpu/generic's GPUs: their health files."""

    def __init__(self, sim_dir: str, indices: list[int]):
        self.sim_dir, self.indices = sim_dir, indices

    def check(self) -> tuple[list[GpuFault], list[tuple[int, int]]]:
        faults, benign = [], []
        for i in self.indices:
            found, xids = parse_health(i, read_health_file(self.sim_dir, i),
                                       os.path.join(self.sim_dir, f"{i}{HEALTH_SUFFIX}"))
            faults += found
            benign += [(i, x) for x in xids]
        return faults, benign


# ---- real GPUs ---------------------------------------------------------------------------------
def _code(nv, e: Exception) -> int | None:
    return getattr(e, "value", None) if isinstance(e, getattr(nv, "NVMLError", Exception)) else None


class NvmlHealth:
    """gpu/nvml's GPUs: XID events as they come, and the health counters read at each check.
    A MIG instance has its physical GPU's health (XIDs, ECC and memory rows are the board's):
    `physical` maps such an index of ours to NVML's index of the board."""

    def __init__(self, nvml, indices: list[int], physical: dict[int, int] | None = None):
        self.nv = nvml
        self.ours = {i: (physical or {}).get(i, i) for i in indices}  # our index -> NVML's
        self.indices = sorted(set(self.ours.values()))  # the boards queried
        self.xids: dict[int, set[int]] = {}  # GPU index -> fatal XIDs seen (they stay faults)
        self.events = None  # the nvmlEventSet, once made
        self.unsupported: set[tuple[int, str]] = set()  # (GPU, query) NVML said it cannot answer
        self.lost_code = getattr(nvml, "NVML_ERROR_GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST)

    def start(self) -> None:
        """NVML initialised for good (nvmlInit counts its callers) and XID events registered
        on each GPU that has them (not every board or driver does)."""
        nv = self.nv
        nv.nvmlInit()
        self.events = nv.nvmlEventSetCreate()
        for i in self.indices:
            try:
                nv.nvmlDeviceRegisterEvents(nv.nvmlDeviceGetHandleByIndex(i),
                                            nv.nvmlEventTypeXidCriticalError, self.events)
            except Exception as e:  # NVML_ERROR_NOT_SUPPORTED on some boards: still read counters
                log.warning("GPU %d: no XID events from NVML (%s): ECC, retired pages and row "
                            "remapping are still checked", i, e)

    def check(self) -> tuple[list[GpuFault], list[tuple[int, int]]]:
        if self.events is None:
            self.start()
        benign = self._take_xids()
        try:
            count = int(self.nv.nvmlDeviceGetCount())
        except Exception as e:
            log.warning("nvmlDeviceGetCount failed: %s", e)
            count = None
        faults: list[GpuFault] = []
        for i in self.indices:
            if count is not None and i >= count:
                faults.append(fault(i, "lost"))  # gone from the bus: NVML no longer counts it
                continue
            faults += [fault(i, "xid", x) for x in sorted(self.xids.get(i, ()))]
            faults += self._counters(i)
        return self._as_ours(faults), benign

    def _as_ours(self, faults: list[GpuFault]) -> list[GpuFault]:
        """A board's faults, once for each GPU of ours on it (one, or its MIG instances)."""
        return [replace(f, index=mine) for mine, board in sorted(self.ours.items())
                for f in faults if f.index == board]

    def _take_xids(self) -> list[tuple[int, int]]:
        """The XID events waiting in the set (a wait of 0 ms returns NVML_ERROR_TIMEOUT when none
        is left); fatal ones are kept per GPU, the others returned to be logged."""
        nv, benign = self.nv, []
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        while True:
            try:
                data = wait(self.events, 0)
            except Exception as e:
                if _code(nv, e) != getattr(nv, "NVML_ERROR_TIMEOUT", NVML_ERROR_TIMEOUT):
                    self._unsupported(-1, "XID events", e)
                return benign
            try:
                index = int(nv.nvmlDeviceGetIndex(data.device))
            except Exception:
                continue  # the GPU went away meanwhile: the count check says so
            xid = int(data.eventData)
            if xid in FATAL_XIDS:
                self.xids.setdefault(index, set()).add(xid)
            else:
                benign.append((index, xid))

    def _counters(self, index: int) -> list[GpuFault]:
        nv = self.nv
        try:
            h = nv.nvmlDeviceGetHandleByIndex(index)
        except Exception as e:
            if _code(nv, e) == self.lost_code:
                return [fault(index, "lost")]
            log.warning("GPU %d: no handle from NVML: %s", index, e)
            return []
        readings = [
            ("ecc", lambda: nv.nvmlDeviceGetTotalEccErrors(
                h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC)),
            ("retired_pending", lambda: nv.nvmlDeviceGetRetiredPagesPendingStatus(h)),
            ("remap", lambda: nv.nvmlDeviceGetRemappedRows(h)),
        ]
        out: list[GpuFault] = []
        for name, query in readings:
            try:
                value = query()
            except Exception as e:
                if _code(nv, e) == self.lost_code:
                    return [fault(index, "lost")]
                self._unsupported(index, name, e)
                continue
            if name == "remap":  # (corrected rows, uncorrected rows, pending, failure occurred)
                _, _, pending, failed = value
                out += [fault(index, k, 1) for k, v in (("remap_pending", pending),
                                                        ("remap_failure", failed)) if v]
            elif is_fatal(name, int(value)):
                out.append(fault(index, name, int(value)))
        return out

    def _unsupported(self, index: int, query: str, e: Exception) -> None:
        """Older boards lack row remapping, consumer ones ECC: said once, then skipped."""
        if (index, query) not in self.unsupported:
            self.unsupported.add((index, query))
            log.info("%s: NVML cannot report %s (%s)", f"GPU {index}" if index >= 0 else "GPUs",
                     query, e)


# ---- the watcher -------------------------------------------------------------------------------
class GpuHealth:
    """The faults seen at the last check (what heartbeats carry); each new one logged once."""

    def __init__(self, backend):
        self.backend = backend
        self.faults: list[GpuFault] = []
        self._logged: set[tuple[int, str, str]] = set()
        self._failing = False  # the last check raised (logged once until one succeeds)

    def run_once(self) -> list[GpuFault]:
        try:
            faults, benign = self.backend.check()
        except Exception as e:  # NVML gone altogether: keep the last answer, say so once
            if not self._failing:
                log.warning("GPU health check failed: %s", e)
            self._failing = True
            return self.faults
        self._failing = False
        # a file states its benign XIDs at every check, NVML's events come once: each logged
        # once while it lasts
        now = {(i, "benign", str(x)) for i, x in benign} | {(f.index, f.kind, f.detail) for f in faults}
        for index, xid in benign:
            if (index, "benign", str(xid)) not in self._logged:
                log.info("GPU %d: XID %d (the application's error, not a GPU fault: logged only)",
                         index, xid)
        for f in faults:
            if (f.index, f.kind, f.detail) not in self._logged:
                log.warning("GPU %d: %s", f.index, f.detail)
        self._logged = now
        self.faults = faults
        return faults

    def run_forever(self, stop: threading.Event, interval: float) -> None:
        while not stop.is_set():
            self.run_once()
            stop.wait(max(interval, 1.0))


def watcher(source, spool: str) -> GpuHealth | None:
    """The health backend matching the GPU source (gpu.sampler's): None without GPUs."""
    if isinstance(source, NvmlSource):
        indices = source.indices or []  # gpu.sampler always names the node's GPUs
        physical = {i: parent for i, (parent, _) in getattr(source, "migs", {}).items()}
        return GpuHealth(NvmlHealth(source.nvml, indices, physical)) if indices else None
    if isinstance(source, ConfiguredSource):
        indices = [g.index for g in source.devices()]
        sim_dir = source.sim_dir or os.path.join(spool, SIM_DIR)
        return GpuHealth(SimHealth(sim_dir, indices)) if indices else None
    return None
