"""proctrack/cgroup and task/cgroup on cgroup v2 (the unified hierarchy): a leaf cgroup per step
under the job's, limits on the job's, devices fenced by a BPF program (bpf_devices.py). See
cgroup.py for the whole picture and how a version is chosen.

Must not: decide what a job gets (the controller did) or talk to anyone.
"""

from __future__ import annotations

import os
import signal
import time

from . import bpf_devices
from .cgroup_common import (KILL_PAUSE, KILL_ROUNDS, Constrain, Limits, _CgroupTracker, _own_cgroup,
                            _read, _rmdir_empty, _rmtree, _subdirs, _write, log)


class CgroupV2(_CgroupTracker):
    """v2: a leaf per step under the job's cgroup; devices fenced by a BPF program on the
    job's cgroup (steps run it too). What the mount lacks is said once, at start."""

    name = "proctrack/cgroup (v2)"

    def __init__(self, node: str, mount: str, constrain: Constrain = Constrain()):
        self.mount, self.constrain = mount, constrain
        self.base = os.path.join(mount, _own_cgroup(None).lstrip("/"), "pyslurm_lite", node)
        self.controllers = set(_read(os.path.join(mount, "cgroup.controllers")).split())
        self.step_mem, self.pinned = {}, {}
        self.bpf_error = self._probe_bpf() if constrain.devices else "ConstrainDevices=no"
        self._say_what_is_missing()

    def _probe_bpf(self) -> str:
        """Whether this agent can fence devices here: tried on its scope, which is left as it
        was found (made now and removed, when no job has made it yet)."""
        made = not os.path.isdir(self.base)
        try:
            os.makedirs(self.base, exist_ok=True)
            bpf_devices.probe(self.base)
        except OSError as e:
            log.error("cgroup v2: cannot fence devices with a BPF program in %s (bpf(2): %s): "
                      "jobs' GPUs are NOT fenced", self.base, e)
            return str(e)
        finally:
            if made:
                _rmdir_empty(self.base)
        return ""

    def _say_what_is_missing(self) -> None:
        if self.constrain.ram and "memory" not in self.controllers:
            log.warning("cgroup v2 at %s has no memory controller (on a hybrid host it is v1's): "
                        "jobs' memory limits (--mem) are not enforced", self.mount)
        if self.constrain.cores and "cpuset" not in self.controllers:
            log.warning("cgroup v2 at %s has no cpuset controller: jobs are pinned to their CPUs "
                        "by affinity instead (sched_setaffinity), which a job may widen", self.mount)

    @property
    def fences_devices(self) -> bool:
        return not self.bpf_error

    def _dir(self, job_key: str) -> str:
        return os.path.join(self.base, job_key)

    def create(self, job_key: str, limits: Limits) -> None:
        path = self._dir(job_key)
        self._enable_down_to(path)
        os.makedirs(path, exist_ok=True)
        if limits.mem_mb and self.constrain.ram and os.path.exists(os.path.join(path, "memory.max")):
            _write(os.path.join(path, "memory.max"), str(limits.mem_mb * 1024 * 1024))
            if os.path.exists(os.path.join(path, "memory.swap.max")):
                _write(os.path.join(path, "memory.swap.max"), "0")
        if limits.cpus and self.constrain.cores and os.path.exists(os.path.join(path, "cpuset.cpus")):
            _write(os.path.join(path, "cpuset.cpus"), ",".join(map(str, limits.cpus)))
        elif limits.cpus:
            self.pinned[job_key] = list(limits.cpus)
        if limits.deny_devices and self.fences_devices:
            try:
                bpf_devices.fence(path, limits.deny_devices)
            except OSError as e:  # never run a job unfenced that was promised fenced
                _rmtree(path)
                raise OSError(e.errno, f"cannot fence the devices of {job_key} (bpf(2): {e})") from None

    def _enable_down_to(self, path: str) -> None:
        """Make memory/cpuset/pids available from the agent's cgroup down to the job's parent.
        (v2's rule: no processes in a cgroup that hands controllers down, so jobs live in leaves.)"""
        wanted = [c for c in ("memory", "cpuset", "pids") if c in self.controllers]
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        p = os.path.join(self.mount, _own_cgroup(None).lstrip("/"))
        for part in os.path.relpath(parent, p).split(os.sep):
            for c in wanted:
                try:
                    _write(os.path.join(p, "cgroup.subtree_control"), f"+{c}")
                except OSError:
                    pass  # not delegated to us: run without that controller
            p = os.path.join(p, part)

    def add(self, job_key: str, pid: int, step: str = "batch") -> None:
        # v2: no processes in a cgroup that hands controllers down, so every step is a leaf
        path = os.path.join(self._dir(job_key), f"step_{step}")
        if not os.path.isdir(path) and self._step_limit(job_key, step):
            self._step_memory(path, self._step_limit(job_key, step))
        os.makedirs(path, exist_ok=True)
        _write(os.path.join(path, "cgroup.procs"), str(pid))
        self._pin(job_key, pid)

    def _step_memory(self, path: str, mem_mb: int) -> None:
        """A step cgroup with its own memory.max: the job's cgroup hands memory down first
        (it holds no processes itself, v2's rule for doing so)."""
        try:
            _write(os.path.join(os.path.dirname(path), "cgroup.subtree_control"), "+memory")
        except OSError as e:
            log.warning("step memory limit not set in %s: %s", path, e)
            return
        os.makedirs(path, exist_ok=True)
        _write(os.path.join(path, "memory.max"), str(mem_mb * 1024 * 1024))
        if os.path.exists(os.path.join(path, "memory.swap.max")):
            _write(os.path.join(path, "memory.swap.max"), "0")

    def pids(self, job_key: str, leader: int = 0) -> list[int]:
        path = self._dir(job_key)
        procs = {int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()}
        for sub in _subdirs(path):
            procs |= {int(p) for p in _read(os.path.join(sub, "cgroup.procs")).split()}
        return sorted(procs)

    def step_pids(self, job_key: str, step: str, leaders: list[int]) -> list[int]:
        path = os.path.join(self._dir(job_key), f"step_{step}", "cgroup.procs")
        return sorted(int(p) for p in _read(path).split())

    def step_cpu(self, job_key: str, step: str) -> tuple[float, float] | None:
        text = _read(os.path.join(self._dir(job_key), f"step_{step}", "cpu.stat"))
        return parse_cpu_stat_v2(text) if text else None

    def kill_all(self, job_key: str, leader: int) -> None:
        kill_file = os.path.join(self._dir(job_key), "cgroup.kill")
        for _ in range(KILL_ROUNDS):
            if not self.pids(job_key):
                break
            if os.path.exists(kill_file):
                _write(kill_file, "1")
            else:
                self.signal(job_key, signal.SIGKILL, leader)
            time.sleep(KILL_PAUSE)

    def oom_killed(self, job_key: str) -> bool:
        for line in _read(os.path.join(self._dir(job_key), "memory.events")).splitlines():
            if line.startswith("oom_kill ") and int(line.split()[1]) > 0:
                return True
        return False

    def remove(self, job_key: str) -> None:
        _rmtree(self._dir(job_key))  # its device program goes with it
        self.step_mem.pop(job_key, None)
        self.pinned.pop(job_key, None)

    def existing(self) -> list[str]:
        return sorted(os.path.basename(p) for p in _subdirs(self.base))

    def close(self) -> None:
        _rmdir_empty(self.base)


def parse_cpu_stat_v2(text: str) -> tuple[float, float] | None:
    """cgroup v2 cpu.stat ("usage_usec N\nuser_usec N\nsystem_usec N...") -> (user, system)
    seconds; None when the file lacks them."""
    values = dict(line.split(None, 1) for line in text.splitlines() if " " in line)
    try:
        return int(values["user_usec"]) / 1e6, int(values["system_usec"]) / 1e6
    except (KeyError, ValueError):
        return None
