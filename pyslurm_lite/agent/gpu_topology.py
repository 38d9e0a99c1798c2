"""What NVML says about how a node's GPUs are wired, for GpuDevice.links and .pci_switch (the
scheduler then picks GPUs that talk fast: sched/gpu_topology.py).

Worked example (an HGX-like board, GPUs 0-3): nvmlDeviceGetNvLinkRemotePciInfo on GPU 0's enabled
links names GPU 1's bus id twice -> links [-1, 2, 0, 0]; nvmlDeviceGetTopologyCommonAncestor(0, 2)
is NVML_TOPOLOGY_SINGLE (one PCIe switch between them) -> GPUs 0 and 2 get one pci_switch name.

Only reads; every query may be unsupported by a driver or a board: it then says nothing (links
left empty, no switch), never fails discovery.
"""

from __future__ import annotations

import logging

log = logging.getLogger("pyslurm_lite.agent.gpu")

NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS (H100: 18; older boards have fewer)
TOPOLOGY_MULTIPLE = 20  # NVML_TOPOLOGY_MULTIPLE: reached through PCIe switches only, no host bridge


def _bus(value) -> str:
    text = value.decode() if isinstance(value, bytes) else str(value)
    return text.lower()[-12:]  # NVML pads the domain to 8 digits in some fields, 4 in others


def nvlinks(nv, handles: list, buses: list[str]) -> list[list[int]]:
    """Per GPU, NVLinks to each GPU (-1 itself), [] for all when NVLink is not queryable."""
    index_of = {_bus(b): i for i, b in enumerate(buses)}
    out = []
    for i, h in enumerate(handles):
        row = [0] * len(handles)
        row[i] = -1
        for link in range(NVLINK_MAX_LINKS):
            try:
                if not nv.nvmlDeviceGetNvLinkState(h, link):
                    continue
                peer = index_of.get(_bus(nv.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId))
            except Exception:  # no such link on this board, or no NVLink at all
                continue
            if peer is not None and peer != i:
                row[peer] += 1
        out.append(row)
    if all(sum(x for x in row if x > 0) == 0 for row in out):
        return [[] for _ in handles]  # no NVLink: say nothing rather than "none"
    return out


def pci_switches(nv, handles: list) -> list[str]:
    """Per GPU, a name shared by the GPUs that reach each other through PCIe switches without
    a host bridge (common ancestor SINGLE or MULTIPLE); "" when NVML cannot say."""
    group = list(range(len(handles)))

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i
    known = False
    for i in range(len(handles)):
        for j in range(i + 1, len(handles)):
            try:
                level = int(nv.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j]))
            except Exception:  # not supported here (virtual machines, some drivers)
                continue
            known = True
            if level <= TOPOLOGY_MULTIPLE:
                group[root(j)] = root(i)
    if not known:
        return [""] * len(handles)
    return [f"pcie{root(i)}" for i in range(len(handles))]
