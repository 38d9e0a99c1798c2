"""gpu/nvml and gpu/generic: where an agent learns which GPUs its node has.

NvmlSource reads the real devices through pynvml (package nvidia-ml-py). ConfiguredSource takes
the GPUs configuration declares (gres.conf lines or NodeName Gres=gpu:N) and marks them
simulated, for machines without a GPU. `discover()` picks one as slurmd does with gres.conf:

  AutoDetect=off          gres.conf as written (else slurm.conf Gres=)
  AutoDetect=nvml         NVML's devices; those gres.conf names by File= for this node when it
                          names any (several nodes on one host each get their own GPUs)
  no AutoDetect           gres.conf lines for this node win; NVML supplies the details of the
                          devices their File= names when every one of them is a real GPU; a node
                          gres.conf says nothing about gets NVML's devices, else slurm.conf's

Both sources also `sample()` what their GPUs are doing now (GpuSample: utilization, memory in
use, the processes on it), for per-job accounting (acctgather.py) and the agent's /metrics.
A simulated GPU is idle and empty unless a file says otherwise: <agent spool>/simgpu/<index>
holding "UTIL [MEM_MB [PID ...]]" (e.g. "85 2048 4242"), written by root (only a file owned
by the agent's user and writable by nobody else is believed), so tests can make one busy.

`split()` deals a host's GPUs out to the nodes of a local cluster (`cluster up`): node1 gets the
first G, node2 the next G..., never one GPU to two nodes. The controller checks what an agent
reports against slurm.conf (controller/gres_check.py); this module only reports.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from dataclasses import dataclass, field, replace

from ..config import Config
from ..model import GpuDevice

log = logging.getLogger("pyslurm_lite.agent.gpu")

MIB = 1024 * 1024
SIM_DIR = "simgpu"  # under the agent's spool: the simulated GPUs' figures, one file per index


@dataclass
class GpuSample:
    """One GPU now: utilization (percent), memory in use (bytes), processes using it."""

    index: int
    util: float = 0.0
    memory_used: int = 0
    pids: list[int] = field(default_factory=list)


def slurm_type_name(model: str) -> str:
    """NVML's model name to Slurm's gres type: 'NVIDIA H200' -> 'h200', 'NVIDIA A100-SXM4-80GB' -> 'a100'."""
    name = model.lower().replace("nvidia", "").replace("geforce", "").replace("tesla", "").strip()
    name = re.split(r"[\s\-_]", name)[0] if name else ""
    return name or "gpu"


class NvmlSource:
    """Real GPUs through NVML. Raises ImportError/RuntimeError when NVML is unavailable."""

    def __init__(self, nvml=None, indices: list[int] | None = None,
                 migs: dict[int, tuple[int, int]] | None = None):
        if nvml is None:
            import pynvml as nvml
        self.nvml = nvml
        self.indices = indices  # the GPUs sample() reports (None: all)
        self.migs = migs or {}  # our index of a MIG instance -> (physical index, MIG slot)
        self._sampling = False  # NVML stays initialised between samples once sampling starts

    def sample(self) -> list[GpuSample]:
        """Each GPU's utilization rate, memory in use and compute and graphics processes."""
        nv = self.nvml
        if not self._sampling:
            nv.nvmlInit()
            self._sampling = True
        indices = self.indices if self.indices is not None else range(nv.nvmlDeviceGetCount())
        return [self._sample(nv, i, self.migs.get(i)) for i in indices]

    @staticmethod
    def _sample(nv, index: int, mig: tuple[int, int] | None = None) -> GpuSample:
        h = nv.nvmlDeviceGetHandleByIndex(index if mig is None else mig[0])
        if mig is not None:
            h = nv.nvmlDeviceGetMigDeviceHandleByIndex(h, mig[1])
        pids: list[int] = []
        for getter in ("nvmlDeviceGetComputeRunningProcesses",
                       "nvmlDeviceGetGraphicsRunningProcesses"):
            try:
                pids += [int(p.pid) for p in getattr(nv, getter)(h) if int(p.pid) not in pids]
            except Exception:  # not supported on every device and driver
                pass
        try:
            util = float(nv.nvmlDeviceGetUtilizationRates(h).gpu)
        except Exception:  # NVML_ERROR_NOT_SUPPORTED on a MIG instance; a whole GPU's is news
            if mig is None:
                raise
            util = 0.0
        return GpuSample(index=index, util=util,
                         memory_used=int(nv.nvmlDeviceGetMemoryInfo(h).used), pids=pids)

    def devices(self) -> list[GpuDevice]:
        nv = self.nvml
        nv.nvmlInit()
        try:
            found = [self._device(nv, i) for i in range(nv.nvmlDeviceGetCount())]
            return with_mig(nv, with_topology(nv, found))
        finally:
            nv.nvmlShutdown()

    @staticmethod
    def _text(value) -> str:
        return value.decode() if isinstance(value, bytes) else str(value)

    def _device(self, nv, index: int) -> GpuDevice:
        h = nv.nvmlDeviceGetHandleByIndex(index)
        name = self._text(nv.nvmlDeviceGetName(h))
        minor = int(nv.nvmlDeviceGetMinorNumber(h))
        pci = self._text(nv.nvmlDeviceGetPciInfo(h).busId)
        return GpuDevice(
            index=index, type=slurm_type_name(name), name=name,
            uuid=self._text(nv.nvmlDeviceGetUUID(h)),
            memory_mb=int(nv.nvmlDeviceGetMemoryInfo(h).total) // (1024 * 1024),
            minor=minor, pci_bus_id=pci, numa_node=_numa_node(nv, h, pci), simulated=False,
            file=f"/dev/nvidia{minor}")


def _numa_node(nv, handle, pci: str) -> int:
    getter = getattr(nv, "nvmlDeviceGetNumaNodeId", None)
    if getter is not None:
        try:
            return int(getter(handle))
        except Exception:  # not supported on every driver
            pass
    try:
        bus = pci.lower()
        if bus.count(":") == 2 and len(bus.split(":")[0]) == 8:
            bus = bus[4:]  # NVML pads the PCI domain to 8 digits, sysfs uses 4
        with open(f"/sys/bus/pci/devices/{bus}/numa_node") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return -1


def with_topology(nv, found: list[GpuDevice]) -> list[GpuDevice]:
    """The devices with NVML's NVLinks and PCIe switches (agent/gpu_topology.py)."""
    from . import gpu_topology
    try:
        handles = [nv.nvmlDeviceGetHandleByIndex(g.index) for g in found]
    except Exception as e:  # topology is a preference: without it GPUs are still found
        log.warning("NVML: no GPU topology (%s): GPUs are picked by index", e)
        return found
    links = gpu_topology.nvlinks(nv, handles, [g.pci_bus_id for g in found])
    switches = gpu_topology.pci_switches(nv, handles)
    return [replace(g, links=links[i], pci_switch=switches[i]) for i, g in enumerate(found)]


NVML_DEVICE_MIG_ENABLE = 1  # nvmlDeviceGetMigMode's current mode when MIG is on
MIG_MINORS = "/proc/driver/nvidia-caps/mig-minors"  # "gpu0/gi1/access 12" lines
CAPS_DIR = "/dev/nvidia-caps"


def with_mig(nv, found: list[GpuDevice], minors_path: str = "") -> list[GpuDevice]:
    """A GPU in MIG mode replaced by its MIG instances, each a GPU of its own to schedule, typed
    by its profile (gpu:1g.10gb), named by its UUID (MIG-...), fenced by its own capability
    devices. Their indices follow NVML's physical ones (count, count+1...): CUDA names them by
    UUID, never by index."""
    out: list[GpuDevice] = []
    migs: list[GpuDevice] = []
    minors = None
    for g in found:
        instances = _mig_handles(nv, g.index)
        if not instances:
            out.append(g)
            continue
        if minors is None:
            minors = read_mig_minors(minors_path or MIG_MINORS)
        for j, mh in instances:
            migs.append(_mig_device(nv, g, j, mh, len(found) + len(migs), minors))
    return out + migs


def _mig_handles(nv, index: int) -> list:
    """(MIG index, handle) of each instance on physical GPU `index`; [] when MIG is off."""
    try:
        h = nv.nvmlDeviceGetHandleByIndex(index)
        current, _pending = nv.nvmlDeviceGetMigMode(h)
        if current != NVML_DEVICE_MIG_ENABLE:
            return []
        most = int(nv.nvmlDeviceGetMaxMigDeviceCount(h))
    except Exception:  # no MIG support on this GPU or driver
        return []
    out = []
    for j in range(most):
        try:
            out.append((j, nv.nvmlDeviceGetMigDeviceHandleByIndex(h, j)))
        except Exception:  # NVML_ERROR_NOT_FOUND: no instance in that slot
            continue
    return out


def _mig_device(nv, parent: GpuDevice, j: int, mh, index: int, minors: dict[str, int]
                ) -> GpuDevice:
    attrs = nv.nvmlDeviceGetAttributes(mh)
    gi, ci = int(nv.nvmlDeviceGetGpuInstanceId(mh)), int(nv.nvmlDeviceGetComputeInstanceId(mh))
    caps = [f"{CAPS_DIR}/nvidia-cap{minors[k]}" for k in (
        f"gpu{parent.minor}/gi{gi}/access", f"gpu{parent.minor}/gi{gi}/ci{ci}/access")
        if k in minors]
    profile = mig_profile(int(attrs.gpuInstanceSliceCount), int(attrs.memorySizeMB))
    return GpuDevice(
        index=index, type=profile, name=f"{parent.name} MIG {profile}",
        uuid=NvmlSource._text(nv.nvmlDeviceGetUUID(mh)), memory_mb=int(attrs.memorySizeMB),
        minor=parent.minor, pci_bus_id=parent.pci_bus_id, numa_node=parent.numa_node,
        simulated=False, pci_switch=parent.pci_switch, cores=parent.cores,
        # its GPU instance's capability: what fencing denies to the jobs not given it (the
        # parent's /dev/nvidiaN is shared by all its instances and is never fenced for them)
        file=caps[0] if caps else "", mig_parent=parent.index, mig_index=j,
        mig_files=[parent.file, *caps])


def mig_profile(slices: int, memory_mb: int) -> str:
    """Slurm's MIG type from the instance's attributes: 1 slice, 9856 MiB -> '1g.10gb'."""
    return f"{slices}g.{-(-memory_mb // 1024)}gb"


def read_mig_minors(path: str = MIG_MINORS) -> dict[str, int]:
    """'gpu0/gi1/ci0/access' -> its /dev/nvidia-caps/nvidia-cap<N> minor N; {} when unreadable."""
    out: dict[str, int] = {}
    try:
        with open(path) as f:
            for line in f:
                words = line.split()
                if len(words) == 2 and words[1].isdigit():
                    out[words[0]] = int(words[1])
    except OSError as e:
        log.warning("cannot read %s (%s): MIG instances are not fenced from each other", path, e)
    return out


def visible_devices(devices: list[GpuDevice], indices: list[int]) -> str | None:
    """CUDA_VISIBLE_DEVICES for these GPUs when one of them is a MIG instance (CUDA names MIG
    instances by UUID only); None when they are all whole GPUs (indices do)."""
    chosen = [g for g in devices if g.index in indices]
    if not any(g.mig_parent >= 0 for g in chosen):
        return None
    return ",".join(g.uuid for g in sorted(chosen, key=lambda g: indices.index(g.index)))


class ConfiguredSource:
    """GPUs as configuration declares them for this node; simulated, no device behind them."""

    def __init__(self, cfg: Config, node: str, sim_dir: str = ""):
        self.cfg, self.node = cfg, node
        self.sim_dir = sim_dir  # where the simulated GPUs' figures are ("": always idle)

    def sample(self) -> list[GpuSample]:
        return [read_sim_file(self.sim_dir, g.index) for g in self.devices()]

    def devices(self) -> list[GpuDevice]:
        declared = [d for d in self.cfg.gres_devices.get(self.node, []) if d.name == "gpu"]
        if declared:
            return [GpuDevice(index=i, type=d.type, file=d.file, simulated=True, name="simulated",
                              links=list(d.links), cores=d.cores)  # gres.conf Links=, Cores=
                    for i, d in enumerate(declared)]
        node = self.cfg.nodes.get(self.node)
        out: list[GpuDevice] = []
        for g in (node.gres if node else []):
            if g.name == "gpu":
                out += [GpuDevice(index=len(out) + i, type=g.type, simulated=True, name="simulated")
                        for i in range(g.count)]
        return out


def read_sim_file(sim_dir: str, index: int) -> GpuSample:
    """A simulated GPU's figures from <sim_dir>/<index> ("UTIL [MEM_MB [PID ...]]"); idle and
    empty without a file, or with one that anyone but the agent's user could have written."""
    path = os.path.join(sim_dir, str(index)) if sim_dir else ""
    try:
        with open(path) as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.geteuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                log.warning("%s is writable by others than uid %d: ignored", path, os.geteuid())
                return GpuSample(index)
            words = f.read(4096).split()
    except OSError:
        return GpuSample(index)
    return parse_sim(index, words, path)


def parse_sim(index: int, words: list[str], where: str = "") -> GpuSample:
    try:
        util = min(max(float(words[0]), 0.0), 100.0) if words else 0.0
        mem = int(float(words[1]) * MIB) if len(words) > 1 else 0
        return GpuSample(index, util, mem, [int(p) for p in words[2:]])
    except ValueError:
        log.warning("%s: expected 'UTIL [MEM_MB [PID ...]]', got %r", where, " ".join(words))
        return GpuSample(index)


def sampler(devices: list[GpuDevice], cfg: Config, node: str, spool: str):
    """The backend that samples this node's GPUs: NVML for real ones, else the simulated files."""
    if devices and not any(g.simulated for g in devices):
        try:
            return NvmlSource(indices=[g.index for g in devices],
                              migs={g.index: (g.mig_parent, g.mig_index) for g in devices
                                    if g.mig_parent >= 0})
        except ImportError:
            log.warning("real GPUs but no pynvml: GPU usage is not sampled")
    sim_dir = os.path.join(spool, SIM_DIR)
    try:
        os.makedirs(sim_dir, mode=0o755, exist_ok=True)
    except OSError as e:
        log.warning("cannot make %s: %s", sim_dir, e)
    return ConfiguredSource(cfg, node, sim_dir)


def discover(cfg: Config, node: str) -> list[GpuDevice]:
    """This node's GPUs, by the rules in the module docstring."""
    declared = [d for d in cfg.gres_devices.get(node, []) if d.name == "gpu"]
    configured = ConfiguredSource(cfg, node).devices
    mode = cfg.gres_autodetect
    if mode == "off" or (declared and mode != "nvml" and not all(d.file for d in declared)):
        return configured()
    try:
        found = NvmlSource().devices()
    except Exception as e:  # no driver, no library: the generic source is the documented fallback
        if mode == "nvml":
            log.warning("AutoDetect=nvml but NVML is unavailable (%s); using configured GPUs", e)
        return configured()
    files = [d.file for d in declared if d.file]
    if files:
        mine = by_files(found, declared)
        if mine is not None:
            return mine
        if mode == "nvml":
            log.warning("gres.conf File= for %s names devices NVML does not have (%s); using "
                        "gres.conf as written", node, ", ".join(files))
        return configured()
    if found:
        log.info("NVML found %d GPU(s): %s", len(found), ", ".join(g.name for g in found))
        return found
    return configured()


def by_files(found: list[GpuDevice], declared) -> list[GpuDevice] | None:
    """The NVML devices gres.conf names by File=, in gres.conf's order, its Type= winning over
    NVML's model name; None when one of the files is not a device NVML has. NVML's indices are
    kept: they are what CUDA_VISIBLE_DEVICES counts on the host."""
    by_file = {g.file: g for g in found}
    out = []
    for d in declared:
        g = by_file.get(d.file)
        if g is None:
            return None
        out.append(replace(g, type=d.type or g.type))
    return out


class NotEnoughGpus(ValueError):
    """The host has fewer GPUs than a local cluster's nodes were asked to get."""


def split(found: list[GpuDevice], nodes: list[str], per_node: int) -> dict[str, list[GpuDevice]]:
    """Deal the host's GPUs to the nodes, per_node each in NVML order: node1 gets GPUs 0-1,
    node2 2-3... (per_node=2). NotEnoughGpus when there are fewer than len(nodes) * per_node."""
    wanted = len(nodes) * per_node
    if len(found) < wanted:
        raise NotEnoughGpus(f"this host has {len(found)} GPU(s), fewer than the {wanted} asked "
                            f"({len(nodes)} node(s) x {per_node})")
    ordered = sorted(found, key=lambda g: g.index)
    return {name: ordered[i * per_node:(i + 1) * per_node] for i, name in enumerate(nodes)}


def foreign_devices(cfg: Config, node: str) -> list[str]:
    """Device files gres.conf gives to the other nodes at this node's address (a local cluster's
    nodes share one host): a job here must be fenced from them too, or a fenced job counting
    CUDA devices from 0 would see a neighbour's GPU first."""
    me = cfg.nodes.get(node)
    mine = {d.file for d in cfg.gres_devices.get(node, []) if d.file}
    out: list[str] = []
    for other, devices in cfg.gres_devices.items():
        peer = cfg.nodes.get(other)
        if other == node or me is None or peer is None or peer.addr != me.addr:
            continue
        out += [d.file for d in devices if d.name == "gpu" and d.file and d.file not in mine
                and d.file not in out]
    return out


def host_gpus() -> list[GpuDevice]:
    """The real GPUs of this host, [] when there is no NVML or no GPU."""
    try:
        return NvmlSource().devices()
    except Exception:  # no driver, no library: no real GPU to share out
        return []
