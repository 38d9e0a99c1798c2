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

`split()` deals a host's GPUs out to the nodes of a local cluster (`cluster up`): node1 gets the
first G, node2 the next G..., never one GPU to two nodes. The controller checks what an agent
reports against slurm.conf (controller/gres_check.py); this module only reports.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

from ..config import Config
from ..model import GpuDevice

log = logging.getLogger("pyslurm_lite.agent.gpu")


def slurm_type_name(model: str) -> str:
    """NVML's model name to Slurm's gres type: 'NVIDIA H200' -> 'h200', 'NVIDIA A100-SXM4-80GB' -> 'a100'."""
    name = model.lower().replace("nvidia", "").replace("geforce", "").replace("tesla", "").strip()
    name = re.split(r"[\s\-_]", name)[0] if name else ""
    return name or "gpu"


class NvmlSource:
    """Real GPUs through NVML. Raises ImportError/RuntimeError when NVML is unavailable."""

    def __init__(self, nvml=None):
        if nvml is None:
            import pynvml as nvml
        self.nvml = nvml

    def devices(self) -> list[GpuDevice]:
        nv = self.nvml
        nv.nvmlInit()
        try:
            return [self._device(nv, i) for i in range(nv.nvmlDeviceGetCount())]
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


class ConfiguredSource:
    """GPUs as configuration declares them for this node; simulated, no device behind them."""

    def __init__(self, cfg: Config, node: str):
        self.cfg, self.node = cfg, node

    def devices(self) -> list[GpuDevice]:
        declared = [d for d in self.cfg.gres_devices.get(self.node, []) if d.name == "gpu"]
        if declared:
            return [GpuDevice(index=i, type=d.type, file=d.file, simulated=True, name="simulated")
                    for i, d in enumerate(declared)]
        node = self.cfg.nodes.get(self.node)
        out: list[GpuDevice] = []
        for g in (node.gres if node else []):
            if g.name == "gpu":
                out += [GpuDevice(index=len(out) + i, type=g.type, simulated=True, name="simulated")
                        for i in range(g.count)]
        return out


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
