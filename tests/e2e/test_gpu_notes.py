"""scontrol show node's Comment on a real cluster (GpuHealthAction=gpu, ForeignGpuAction=report):
a GPU out of scheduling for a fault is named with the fault, and a GPU used by processes no job
started says it is still scheduled; scontrol show config prints those settings and cgroup.conf's
section. Simulated GPUs: <agent spool>/simgpu/<index>.health and <index> files."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from conftest import configured_cluster

SHAPE = (1, 4, 4000, 2)
NODE = "node1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    extra = ("\nGpuHealthAction=gpu\nForeignGpuAction=report\nMpiDefault=pmi2\n"
             "JobAcctGatherFrequency=1\n")  # the agent looks for foreign GPU users each period
    yield from configured_cluster(tmp_path_factory, "gpunotes", SHAPE, extra=extra)


def simgpu(cluster, name: str, text: str | None) -> None:
    path = cluster.dir / "state" / f"agent-{NODE}" / "simgpu" / name
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o644)


def comment_when(cluster, wanted: str, timeout: float = 15.0) -> str:
    deadline, shown = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        shown = cluster.run(["scontrol", "show", "node", NODE]).stdout
        if wanted in shown:
            break
        time.sleep(0.3)
    return next((x.strip() for x in shown.splitlines() if x.strip().startswith("Comment=")), "")


def test_faulty_and_foreign_gpus_in_the_comment(cluster):
    outsider = subprocess.Popen(["sleep", "60"])
    try:
        simgpu(cluster, "1.health", "xid 79\n")
        simgpu(cluster, "0", f"40 512 {outsider.pid}")
        line = comment_when(cluster, "still scheduled")
        assert line == (f"Comment=GPU(s) 0 used by processes no job started (pids {outsider.pid}),"
                        " still scheduled (ForeignGpuAction=report); GPU fault(s) gpu 1: XID 79 "
                        "(fallen off the bus), out of scheduling until the node is resumed"), line
    finally:
        simgpu(cluster, "1.health", None)
        simgpu(cluster, "0", None)
        outsider.kill()
        outsider.wait()
        cluster.run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"])


def test_show_config_has_the_gpu_mpi_and_cgroup_settings(cluster):
    out = cluster.run(["scontrol", "show", "config"]).stdout.splitlines()
    for line in ("ForeignGpuAction        = report", "GpuHealthAction         = gpu",
                 "MpiDefault              = pmi2", "TopologyPlugin          = topology/none",
                 "Cgroup Support Configuration:", "ConstrainDevices        = yes"):
        assert line in out, "\n".join(out)
