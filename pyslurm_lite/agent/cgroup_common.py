"""What both cgroup versions' trackers share: a job's Limits, cgroup.conf's Constrain keys, the
Tracker interface (and proctrack/pgid, its plain form), and the file-system calls cgroups are
made of (read, write, mkdir, rmdir deepest first). See cgroup.py for the whole picture.

Must not: decide what a job gets (the controller did) or talk to anyone.
"""

from __future__ import annotations

import logging
import os
import signal
from dataclasses import dataclass, field

log = logging.getLogger("pyslurm_lite.agent.cgroup")  # one logger for task/cgroup, both versions

CGROUP_ROOT = "/sys/fs/cgroup"
KILL_ROUNDS = 50  # SIGKILL sweeps over a cgroup before giving up on emptying it
KILL_PAUSE = 0.02  # seconds between sweeps


@dataclass
class Limits:
    """What one job (or step) may use on this node."""

    mem_mb: int = 0  # 0: no limit
    cpus: list[int] = field(default_factory=list)  # empty: no pinning
    deny_devices: list[tuple[int, int]] = field(default_factory=list)  # (major, minor) char devices


@dataclass(frozen=True)
class Constrain:
    """cgroup.conf's Constrain* keys: what a job's cgroup enforces (all, unless set to NO)."""

    devices: bool = True
    cores: bool = True
    ram: bool = True

    @classmethod
    def of(cls, cfg) -> "Constrain":
        return cls(cfg.constrain_devices, cfg.constrain_cores, cfg.constrain_ram_space)


class Tracker:
    """proctrack/pgid: the process group only. The base of the cgroup trackers."""

    name = "proctrack/pgid"
    fences_devices = False  # can it hide devices (GPUs) a job was not given?

    def create(self, job_key: str, limits: Limits) -> None:
        pass

    def add(self, job_key: str, pid: int, step: str = "batch") -> None:
        pass

    def limit_steps(self, job_key: str, mem_mb: dict[str, int]) -> None:
        """The memory (MiB) steps of the job may use here, set when each step's cgroup is made
        (process groups limit nothing)."""

    def pids(self, job_key: str, leader: int = 0) -> list[int]:
        """The processes still in the leader's process group (what pgid tracking can see)."""
        if not leader:
            return []
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.getpgid(int(entry)) == leader:
                        found.append(int(entry))
                except OSError:
                    pass
        return sorted(found)

    def step_pids(self, job_key: str, step: str, leaders: list[int]) -> list[int]:
        """The processes of one step (the batch script is step "batch"): here, those in its
        tasks' process groups (each task leads its own)."""
        return sorted({p for leader in leaders for p in Tracker.pids(self, job_key, leader)})

    def step_cpu(self, job_key: str, step: str) -> tuple[float, float] | None:
        """(user, system) CPU seconds the step's cgroup has used, exited processes included;
        None where the tracker keeps no such count (the gatherer asks the processes)."""
        return None

    def signal(self, job_key: str, signo: int, leader: int) -> None:
        if leader <= 0:  # no group known (a job's end on a node without its script): and
            return       # killpg(0) would be the agent's own group
        try:
            os.killpg(leader, signo)
        except (ProcessLookupError, PermissionError):
            pass

    def kill_all(self, job_key: str, leader: int) -> None:
        self.signal(job_key, signal.SIGKILL, leader)

    def oom_killed(self, job_key: str) -> bool:
        return False

    def remove(self, job_key: str) -> None:
        pass

    def existing(self) -> list[str]:
        return []

    def close(self) -> None:
        """The agent stops: remove its (now empty) scope, so stopped agents leave nothing."""


def _write(path: str, value: str) -> None:
    # os-level calls: cgroup files are written several times per job, on the launch path
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(path: str, default: str = "") -> str:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return default
    try:
        return os.read(fd, 1 << 20).decode()
    except OSError:
        return default
    finally:
        os.close(fd)


def _own_cgroup(controller: str | None) -> str:
    """The agent's cgroup path in a v1 controller's hierarchy (or v2 when controller is None)."""
    for line in _read("/proc/self/cgroup").splitlines():
        _, names, path = line.split(":", 2)
        if (controller is None and names == "") or (controller and controller in names.split(",")):
            return path
    return "/"


class _CgroupTracker(Tracker):
    """What both cgroup versions share: a signal reaches every process in the job's cgroups;
    steps' own memory limits wait here (job key -> step -> MiB) until their cgroups are made."""

    step_mem: dict[str, dict[str, int]]
    constrain: Constrain
    pinned: dict[str, list[int]]  # job key -> CPUs its processes get by affinity (no cpuset)

    def limit_steps(self, job_key: str, mem_mb: dict[str, int]) -> None:
        if mem_mb and self.constrain.ram:
            self.step_mem.setdefault(job_key, {}).update(mem_mb)

    def _pin(self, job_key: str, pid: int) -> None:
        """A process of a job whose cores no cpuset confines: its affinity, set while it waits
        at the launch gate, so all it runs inherits it."""
        cpus = self.pinned.get(job_key.split("/")[0])
        if cpus:
            os.sched_setaffinity(pid, cpus)

    def _step_limit(self, job_key: str, step: str) -> int:
        return self.step_mem.get(job_key, {}).get(step, 0) if step != "batch" else 0

    def signal(self, job_key: str, signo: int, leader: int) -> None:
        for pid in self.pids(job_key):
            try:
                os.kill(pid, signo)
            except ProcessLookupError:
                pass


def _subdirs(path: str) -> list[str]:
    try:
        return [e.path for e in os.scandir(path) if e.is_dir()]
    except OSError:
        return []


def _rmdir_empty(path: str) -> None:
    """rmdir an agent's scope if it is empty. The shared pyslurm_lite directory above it stays:
    removing it could race with another agent creating its scope there at that moment."""
    try:
        os.rmdir(path)
    except OSError:
        pass


def _rmtree(path: str) -> None:
    """rmdir a cgroup and its children, deepest first (cgroups are removed with rmdir)."""
    for sub in _subdirs(path):
        _rmtree(sub)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        log.warning("cannot remove cgroup %s: %s", path, e)
