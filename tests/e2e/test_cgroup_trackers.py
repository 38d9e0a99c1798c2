"""The cgroup trackers against the real kernel: a process put in a job's cgroup is listed,
its setsid'd descendants too, kill_all leaves nothing, and the cgroups are removed. v1 runs where
the memory hierarchy is v1 (this machine); v2 runs on the unified mount, with limits checked only
where the kernel lets memory/cpuset be enabled there (else that part is skipped, saying why)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from pyslurm_lite.agent.cgroup import CgroupV1, CgroupV2, Limits, _read

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create cgroups")

V1_MEMORY = "/sys/fs/cgroup/memory/cgroup.procs"


def _unified_mount() -> str | None:
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(os.path.join(path, "cgroup.controllers")):
            return path
    return None


def _spawn_family():
    """A shell that starts a setsid'd grandchild, waiting on a gate until it is placed."""
    r, w = os.pipe()
    proc = subprocess.Popen(["/bin/sh", "-c", "read _; setsid sleep 300 & sleep 300"], stdin=r,
                            start_new_session=True)
    os.close(r)
    return proc, w


def _exercise(tracker, key, limits=Limits()):
    tracker.create(key, limits)
    proc, gate = _spawn_family()
    try:
        tracker.add(key, proc.pid, "batch")
        os.close(gate)
        deadline = time.monotonic() + 5
        while len(tracker.pids(key)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        pids = tracker.pids(key)
        assert proc.pid in pids and len(pids) >= 3, pids  # shell, sleep, setsid'd sleep
        tracker.kill_all(key, proc.pid)
        proc.wait(timeout=5)
        assert tracker.pids(key) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        tracker.remove(key)
    assert key not in tracker.existing()


@pytest.mark.skipif(not os.path.exists(V1_MEMORY), reason="no cgroup v1 memory hierarchy here")
def test_v1_tracks_and_kills_everything_and_cleans_up():
    tracker = CgroupV1("testnode-v1")
    _exercise(tracker, "job_1", Limits(mem_mb=64))
    _exercise(tracker, "job_2", Limits(mem_mb=64, cpus=[0]))
    tracker.close()
    assert not any(os.path.exists(b) for b in tracker.base.values())


@pytest.mark.skipif(not os.path.exists(V1_MEMORY), reason="no cgroup v1 memory hierarchy here")
def test_v1_memory_limit_is_written():
    tracker = CgroupV1("testnode-v1")
    tracker.create("job_3", Limits(mem_mb=64))
    try:
        path = os.path.join(tracker.base["memory"], "job_3", "memory.limit_in_bytes")
        assert int(_read(path)) == 64 * 1024 * 1024
    finally:
        tracker.remove("job_3")
        tracker.close()


@pytest.mark.skipif(not os.path.exists(V1_MEMORY), reason="no cgroup v1 memory hierarchy here")
def test_v1_kills_a_job_that_keeps_forking_through_a_freezer_made_on_demand():
    """Freezer cgroups are made only when something outlives its job: the forking loop must
    still end with nothing left, and the freezer cgroup must go with the job's others."""
    tracker = CgroupV1("testnode-v1")
    if "freezer" not in tracker.base:
        pytest.skip("no v1 freezer hierarchy here")
    key = "job_4"
    tracker.create(key, Limits(mem_mb=256))
    freezer = os.path.join(tracker.base["freezer"], key)
    r, w = os.pipe()
    proc = subprocess.Popen(["/bin/sh", "-c", "read _; while :; do sleep 300 & done"], stdin=r,
                            start_new_session=True)
    os.close(r)
    try:
        tracker.add(key, proc.pid, "batch")
        assert not os.path.exists(freezer)  # not made for a job that has not needed it
        os.close(w)
        deadline = time.monotonic() + 5
        while len(tracker.pids(key)) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(tracker.pids(key)) >= 20
        tracker.kill_all(key, proc.pid)
        proc.wait(timeout=5)
        assert tracker.pids(key) == []
        assert os.path.isdir(freezer)  # the kill went through it
    finally:
        if proc.poll() is None:
            proc.kill()
        tracker.remove(key)
    assert not os.path.exists(freezer)
    assert key not in tracker.existing()
    tracker.close()


@pytest.mark.skipif(_unified_mount() is None, reason="no cgroup2 mount")
def test_v2_tracks_and_kills_everything_and_cleans_up():
    tracker = CgroupV2("testnode-v2", _unified_mount())
    _exercise(tracker, "job_1")
    tracker.close()
    assert not os.path.exists(tracker.base)


@pytest.mark.skipif(_unified_mount() is None, reason="no cgroup2 mount")
def test_v2_memory_limit_where_the_kernel_allows_it():
    mount = _unified_mount()
    tracker = CgroupV2("testnode-v2", mount)
    if "memory" not in tracker.controllers:
        pytest.skip(f"cgroup v2 at {mount} offers only {sorted(tracker.controllers) or 'nothing'}: "
                    "the memory controller is bound to the v1 hierarchy on this host")
    tracker.create("job_2", Limits(mem_mb=64))
    try:
        assert int(_read(os.path.join(tracker.base, "job_2", "memory.max"))) == 64 * 1024 * 1024
    finally:
        tracker.remove("job_2")
        tracker.close()
