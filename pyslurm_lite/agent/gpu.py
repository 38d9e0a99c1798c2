"""gpu/nvml and gpu/generic: where an agent learns which GPUs its host has.

NvmlSource reads the real devices through pynvml (package nvidia-ml-py). ConfiguredSource takes
the GPUs configuration declares (gres.conf File= lines or NodeName Gres=gpu:N) and marks them
simulated, for machines without a GPU. `discover()` picks one by what is present and configured.
"""

from __future__ import annotations

import logging
import re

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
    """NVML when configured (AutoDetect=nvml) or when devices exist; else configuration."""
    try:
        found = NvmlSource().devices()
        if found:
            log.info("NVML found %d GPU(s): %s", len(found), ", ".join(g.name for g in found))
            return found
    except Exception as e:  # no driver, no library: the generic source is the documented fallback
        if cfg.gres_autodetect == "nvml":
            log.warning("AutoDetect=nvml but NVML is unavailable (%s); using configured GPUs", e)
    return ConfiguredSource(cfg, node).devices()
