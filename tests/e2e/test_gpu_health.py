"""GPU health end to end: real daemons, simulated GPUs whose faults the tests state in the agent's
<spool>/simgpu/<index>.health files. GpuHealthAction=drain (the default) drains the node with a
reason naming the GPU and the fault, running jobs keep running, a resume stands until a new
fault; GpuHealthAction=gpu takes only the faulty GPU out of scheduling until the node is resumed."""

from __future__ import annotations

import os
import re
import time

import pytest

from conftest import configured_cluster

SHAPE = (1, 4, 4000, 2)  # one node, 4 CPUs, 4000 MiB, 2 GPUs
NODE = "node1"


@pytest.fixture(scope="module")
def drain_cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "gpuhealth", SHAPE)


@pytest.fixture(scope="module")
def gpu_cluster(tmp_path_factory):
    extra = "\nGpuHealthAction=gpu\nForeignGpuAction=report\nJobAcctGatherFrequency=1\n"
    yield from configured_cluster(tmp_path_factory, "gpuhealthgpu", SHAPE, extra=extra)


def health_file(cluster, index: int, text: str | None, suffix: str = ".health") -> None:
    """What simulated GPU `index` suffers from, as the agent reads it (None: nothing); with
    suffix "", its usage file ("UTIL MEM_MB PID...")."""
    path = cluster.dir / "state" / f"agent-{NODE}" / "simgpu" / f"{index}{suffix}"
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o644)


def show_node(cluster) -> str:
    return cluster.run(["scontrol", "show", "node", NODE]).stdout


def wait_for(what, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.3)
    return what()


def squeue(cluster, job: int, fmt: str) -> str:
    return cluster.run(["squeue", "-h", "-j", str(job), "-o", fmt]).stdout.strip()


def resume(cluster) -> None:
    r = cluster.run(["scontrol", "update", f"NodeName={NODE}", "State=RESUME"])
    assert r.returncode == 0, r.stderr


def test_xid_79_drains_the_node_running_job_keeps_running_resume_stands(drain_cluster):
    c = drain_cluster
    running = c.sbatch("-o", "/dev/null", "--gres=gpu:1", "--wrap", "sleep 120")
    assert wait_for(lambda: c.state(running) == "RUNNING"), c.log_tails()
    try:
        health_file(c, 1, "xid 13\nxid 79\n")  # 13 is the application's: logged only
        text = wait_for(lambda: "Reason=gpu 1" in show_node(c) and show_node(c))
        assert text, show_node(c) + c.log_tails()
        assert re.search(r"^\s*Reason=gpu 1: XID 79 \(fallen off the bus\) \[root@\S+\]$", text,
                         re.M), text
        assert re.search(r"State=\S*DRAIN", text), text
        assert c.state(running) == "RUNNING"  # Slurm drains, it does not kill
        waiting = c.sbatch("-o", "/dev/null", "--gres=gpu:1", "--wrap", "true")
        time.sleep(1)  # a scheduling pass runs at each submission
        assert c.state(waiting) == "PENDING"

        # the operator resumes: the fault still reported is not new, so the resume stands
        resume(c)
        assert wait_for(lambda: c.state(waiting) not in ("PENDING", "")), c.state(waiting)
        time.sleep(2.5)  # two heartbeats (HeartbeatInterval=1) carrying the same fault
        assert "Reason=" not in show_node(c) and "DRAIN" not in show_node(c), show_node(c)

        # a new fault drains it again
        health_file(c, 1, "xid 79\necc 2\n")
        text = wait_for(lambda: "DRAIN" in show_node(c) and show_node(c))
        assert text and "Reason=gpu 1: 2 uncorrected ECC error(s) [root@" in text, text
        log = (c.dir / "controller.log").read_text(errors="replace")
        assert log.count("gpu 1: XID 79 (fallen off the bus)") == 1, log[-3000:]
    finally:
        health_file(c, 1, None)
        c.run(["scancel", str(running)])
        resume(c)


def test_gpu_action_takes_only_the_faulty_gpu_out_until_resumed(gpu_cluster):
    c = gpu_cluster
    health_file(c, 0, "lost\n")
    log = c.dir / "controller.log"
    assert wait_for(lambda: "gpu 0: GPU is lost (GpuHealthAction=gpu)" in log.read_text(
        errors="replace")), c.log_tails()
    try:
        both = c.sbatch("-o", "/dev/null", "--gres=gpu:2", "--wrap", "true")
        one = c.sbatch("-o", "/dev/null", "--gres=gpu:1", "--wrap", "sleep 120")
        assert wait_for(lambda: c.state(one) == "RUNNING"), c.log_tails()
        assert c.state(both) == "PENDING"
        reason = squeue(c, both, "%r")
        assert reason in ("ReqNodeNotAvail", "Resources"), reason
        text = show_node(c)
        assert "DRAIN" not in text and "Reason=" not in text, text  # the node is not drained
        assert squeue(c, one, "%b").endswith("gpu:1"), squeue(c, one, "%b")

        # the resume gives GPU 0 back; the lone job ending frees GPU 1 for the two-GPU one
        resume(c)
        c.run(["scancel", str(one)])
        assert wait_for(lambda: c.state(both) not in ("PENDING", ""), 20), \
            squeue(c, both, "%T %r")
    finally:
        health_file(c, 0, None)


def test_foreign_gpu_action_report_keeps_a_busy_gpu_in_scheduling(gpu_cluster):
    c = gpu_cluster
    health_file(c, 1, f"60 1024 {os.getpid()}", suffix="")  # a process no job started
    log = c.dir / "controller.log"
    try:
        assert wait_for(lambda: "still scheduled (ForeignGpuAction=report)" in log.read_text(
            errors="replace")), c.log_tails()
        both = c.sbatch("-o", "/dev/null", "--gres=gpu:2", "--wrap", "true")
        assert wait_for(lambda: c.state(both) not in ("PENDING", "")), squeue(c, both, "%T %r")
    finally:
        health_file(c, 1, None, suffix="")
