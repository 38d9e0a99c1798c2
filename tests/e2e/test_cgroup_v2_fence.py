"""Device fencing on cgroup v2 with a BPF program (agent/bpf_devices.py), chosen by cgroup.conf:
the kernel runs the program we assemble (EPERM for a denied device, ENXIO for an allowed one
with no driver behind it), a job given one of two mknod'd GPUs that unsets CUDA_VISIBLE_DEVICES
still cannot open the other, from a cgroup v2 of its own and no v1 devices cgroup; cgroup/v1
still fences by v1; ConstrainDevices=no fences nothing; a bad CgroupPlugin stops the agent."""

from __future__ import annotations

import errno
import logging
import os
import re
import subprocess

import pytest

from conftest import start_cluster, wait_final
from pyslurm_lite.agent import bpf_devices
from pyslurm_lite.agent.cgroup import CgroupV1, CgroupV2, Constrain, Limits, unified_mount

UNIFIED = unified_mount()
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups, bpf(2), mknod)"),
              pytest.mark.skipif(UNIFIED is None, reason="no cgroup2 mount on this host")]
SHAPE = (1, 2, 2000, 2)
# a job's view: its GPUs as told, its unified and v1 devices cgroups, then each device opened
FENCE_SCRIPT = """\
echo "CVD=$CUDA_VISIBLE_DEVICES JG=$SLURM_JOB_GPUS"
unset CUDA_VISIBLE_DEVICES
awk -F: '$1 == "0" && $2 == "" {{ print "CGV2 " $3 }} $2 ~ /(^|,)devices(,|$)/ {{ print "CGDEV " $3 }}' /proc/self/cgroup
for i in 0 1; do m=$( {{ head -c0 < {dev}/nvidia$i; }} 2>&1 ) && echo "DEV$i opened" || echo "DEV$i $m"; done
"""


def _own(field: str) -> str:
    """This test process's unified (CGV2) or v1 devices (CGDEV) cgroup path."""
    for line in open("/proc/self/cgroup").read().splitlines():
        n, names, path = line.split(":", 2)
        if (field == "CGV2" and n == "0" and names == "") or \
                (field == "CGDEV" and "devices" in names.split(",")):
            return path
    return ""


@pytest.fixture(scope="module")
def devices(tmp_path_factory):
    """Two char devices with NVIDIA's major and no driver: an open let through gives ENXIO."""
    dev = tmp_path_factory.mktemp("dev")
    for i in range(2):
        try:
            os.mknod(dev / f"nvidia{i}", 0o666 | 0o020000, os.makedev(195, 220 + i))
        except OSError as e:
            pytest.skip(f"cannot mknod under {dev}: {e}")
    try:
        open(dev / "nvidia0", "rb").close()
    except OSError as e:
        if e.errno != 6:  # ENXIO
            pytest.skip(f"a driverless char device opens with '{e}' here, not ENXIO")
    return dev


def _in_cgroup(cg: str, script: str) -> str:
    """Run script (bash) as a process placed in cgroup cg before it starts; its output."""
    r, w = os.pipe()
    proc = subprocess.Popen(["bash", "-c", "read _; " + script], stdin=r,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.close(r)
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(proc.pid))
    os.write(w, b"go\n")
    os.close(w)
    return proc.communicate(timeout=10)[0]


# ---- the program in the kernel ---------------------------------------------------------------
def test_the_kernel_runs_the_program_on_the_cgroup_and_its_children(devices):
    job = os.path.join(UNIFIED, f"pyslurm_lite_fence_test_{os.getpid()}")
    step = os.path.join(job, "step_0")
    os.makedirs(step)
    try:
        bpf_devices.fence(job, [(195, 220)])
        assert len(bpf_devices.attached(job)) == 1 and bpf_devices.attached(step) == []
        for cg in (job, step):  # the step's cgroup runs its parent's program (ALLOW_MULTI)
            out = _in_cgroup(cg, f"head -c0 < {devices}/nvidia0; head -c0 < {devices}/nvidia1")
            assert "nvidia0: Operation not permitted" in out, out
            assert "nvidia1: No such device or address" in out, out
        out = _in_cgroup(job, "head -c0 < /dev/null && echo null-ok")
        assert "null-ok" in out, out
    finally:
        for cg in (step, job):
            os.rmdir(cg)


def test_a_bpf_failure_is_logged_and_nothing_claims_to_be_fenced(monkeypatch, caplog):
    monkeypatch.setattr(bpf_devices, "SYSCALL_BPF", {})  # bpf(2) unknown: ENOSYS
    with caplog.at_level(logging.ERROR, logger="pyslurm_lite.agent.cgroup"):
        tracker = CgroupV2(f"fence-test-{os.getpid()}", UNIFIED)
    try:
        assert tracker.fences_devices is False
        assert "cannot fence devices" in caplog.text and "NOT fenced" in caplog.text
        tracker.create("job_1", Limits(deny_devices=[(195, 220)]))  # runs, unfenced, as said
        assert os.path.isdir(os.path.join(tracker.base, "job_1"))
    finally:
        tracker.remove("job_1")
        tracker.close()


def test_an_unprivileged_load_is_eperm():
    """What an agent without CAP_BPF/CAP_SYS_ADMIN meets (kernel.unprivileged_bpf_disabled or
    not, a device program needs privilege)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child drops root and tries
        said = b"loaded"
        try:
            os.setgid(65534)
            os.setuid(65534)
            os.close(bpf_devices.load([]))
        except bpf_devices.BpfError as e:
            said = str(e.errno).encode()
        except BaseException as e:
            said = repr(e).encode()
        os.write(w, said)
        os._exit(0)
    os.close(w)
    said = os.read(r, 1000).decode()
    os.close(r)
    os.waitpid(pid, 0)
    assert said == str(errno.EPERM), said


def test_constrain_devices_no_attaches_nothing():
    tracker = CgroupV2(f"fence-test-{os.getpid()}", UNIFIED, Constrain(devices=False))
    try:
        assert tracker.fences_devices is False
        tracker.create("job_2", Limits(deny_devices=[(195, 220)]))
        assert bpf_devices.attached(os.path.join(tracker.base, "job_2")) == []
    finally:
        tracker.remove("job_2")
        tracker.close()


@pytest.mark.skipif(not os.path.exists("/sys/fs/cgroup/memory/cgroup.procs"), reason="no cgroup v1 here")
@pytest.mark.parametrize("constrain,limited", [(Constrain(), True), (Constrain(ram=False), False)])
def test_constrain_ram_space(constrain, limited):
    """ConstrainRAMSpace=no: the job's memory cgroup (still its process list) sets no limit."""
    tracker = CgroupV1(f"ram-test-{os.getpid()}", constrain=constrain)
    try:
        tracker.create("job_3", Limits(mem_mb=64))
        limit = int(open(os.path.join(tracker.base["memory"], "job_3", "memory.limit_in_bytes")).read())
        assert (limit == 64 << 20) is limited
    finally:
        tracker.remove("job_3")
        tracker.close()


# ---- through the daemons ---------------------------------------------------------------------
def _cluster(tmp_path_factory, devices, name: str, cgroup_conf: str):
    from pyslurm_lite.cli.cluster import write_config
    d = tmp_path_factory.mktemp(name)

    def prepare(directory):
        directory.mkdir(exist_ok=True)
        write_config(str(directory), *SHAPE)
        (directory / "gres.conf").write_text(f"NodeName=node1 Name=gpu File={devices}/nvidia[0-1]\n")
        (directory / "cgroup.conf").write_text(cgroup_conf)

    return start_cluster(d / "cluster", shape=SHAPE, prepare=prepare), d


def _fence_job(c, d, devices) -> dict[str, str]:
    work = d / "work"
    work.mkdir(exist_ok=True)
    j = c.sbatch("--gres=gpu:1", "-o", str(work / "fence-%j.out"), cwd=work,
                 input="#!/bin/bash\n" + FENCE_SCRIPT.format(dev=devices))
    assert wait_final(c, j) == "COMPLETED", c.log_tails()
    out = (work / f"fence-{j}.out").read_text()
    seen = dict(re.findall(r"^(CGV2|CGDEV|DEV0|DEV1|CVD=\S*) ?(.*)$", out, re.M))
    mine = re.search(r"JG=(\d)", out).group(1)
    seen["mine"], seen["other"] = f"DEV{mine}", f"DEV{1 - int(mine)}"
    seen["out"] = out
    return seen


@pytest.mark.parametrize("conf,version", [("CgroupPlugin=cgroup/v2\n", "v2"),
                                          ("CgroupPlugin=cgroup/v1\n", "v1")], ids=["v2", "v1"])
def test_a_job_cannot_open_the_other_gpu(tmp_path_factory, devices, conf, version):
    if version == "v1" and not os.path.exists("/sys/fs/cgroup/devices/cgroup.procs"):
        pytest.skip("no cgroup v1 devices controller on this host")
    c, d = _cluster(tmp_path_factory, devices, f"fence-{version}", conf)
    try:
        seen = _fence_job(c, d, devices)
        out = seen["out"]
        assert "Operation not permitted" in seen[seen["other"]], out
        assert "No such device or address" in seen[seen["mine"]], out
        assert "CVD=0" in seen, out  # numbered as the job sees its GPUs, fenced
        if version == "v2":  # fenced by the unified hierarchy, not by v1's devices controller
            assert seen["CGV2"] != _own("CGV2") and "/job_" in seen["CGV2"], out
            assert seen.get("CGDEV", "") == _own("CGDEV"), out
            log = (c.dir / "agent-node1.log").read_text()
            assert "proctrack/cgroup (v2)" in log
            assert "has no memory controller" in log or "memory" in open(
                os.path.join(UNIFIED, "cgroup.controllers")).read()
        else:
            assert seen["CGDEV"] != _own("CGDEV") and "/job_" in seen["CGDEV"], out
            assert seen["CGV2"] == _own("CGV2"), out
    finally:
        c.down()


def test_constrain_devices_no_fences_nothing(tmp_path_factory, devices):
    c, d = _cluster(tmp_path_factory, devices, "fence-off", "CgroupPlugin=cgroup/v2\nConstrainDevices=no\n")
    try:
        seen = _fence_job(c, d, devices)
        assert "No such device or address" in seen["DEV0"] and "No such device or address" in seen["DEV1"], \
            seen["out"]
        assert f"CVD={seen['mine'][-1]}" in seen, seen["out"]  # the host's numbering: not fenced
    finally:
        c.down()


def test_an_unknown_cgroup_plugin_stops_the_agent(tmp_path_factory):
    from pyslurm_lite.cli.cluster import write_config
    from conftest import Cluster, cli_env
    d = tmp_path_factory.mktemp("badplugin")
    write_config(str(d), 1, 2, 2000, 0)
    (d / "cgroup.conf").write_text("CgroupPlugin=cgroup/v3\n")
    c = Cluster(dir=d, conf=d / "slurm.conf", env=cli_env(d / "slurm.conf"), shape=(1, 2, 2000, 0))
    try:
        r = c.up()
        assert r.returncode != 0
        said = r.stdout + r.stderr + c.log_tails()
        assert "unknown CgroupPlugin=cgroup/v3; valid: autodetect, cgroup/v1, cgroup/v2" in said, said
    finally:
        c.down()
