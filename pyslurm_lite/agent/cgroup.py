"""proctrack/cgroup and task/cgroup: one cgroup per job (and per step) that holds every process
the job starts and enforces its CPUs, memory and devices; detected at runtime.

    cgroup v2 (unified, e.g. /sys/fs/cgroup):          <base>/pyslurm_lite/<node>/job_<id>/step_<s>
        memory.max, cpuset.cpus, pids, cgroup.kill, memory.events (oom_kill)
    cgroup v1 (a hierarchy per controller):              <ctl>/<base>/pyslurm_lite/<node>/job_<id>[/step_<n>]
        memory.limit_in_bytes, cpuset.cpus, devices.deny, memory.oom_control (oom_kill); the batch
        script in job_<id> itself, srun steps in step_<n>; freezer only to kill leftovers
    none: process groups (a setsid'd or double-forked process escapes; the agent says so at start)

<base> is the agent's own cgroup, so jobs stay inside whatever contains the agent (a container,
a systemd unit). A step given memory of its own (srun --mem inside an allocation) gets that
limit on its step cgroup, under the job's. A process enters its cgroup before it runs any of the user's code: the launch
shim blocks on a pipe until the agent has written its pid to cgroup.procs.

Must not: decide what a job gets (the controller did) or talk to anyone.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..model import JobState

log = logging.getLogger("pyslurm_lite.agent.cgroup")

CGROUP_ROOT = "/sys/fs/cgroup"
# pids would only count (no limit is set), so it is left out: every controller costs a mkdir,
# a write and an rmdir per job and step. cpuacct is what jobacct_gather/cgroup reads: the CPU
# time of a step's processes, those already gone included.
V1_CONTROLLERS = ("memory", "cpuacct", "cpuset", "devices", "freezer")
USER_HZ = os.sysconf("SC_CLK_TCK")  # cpuacct.stat's unit
KILL_ROUNDS = 50  # SIGKILL sweeps over a cgroup before giving up on emptying it
KILL_PAUSE = 0.02  # seconds between sweeps


@dataclass
class Limits:
    """What one job (or step) may use on this node."""

    mem_mb: int = 0  # 0: no limit
    cpus: list[int] = field(default_factory=list)  # empty: no pinning
    deny_devices: list[tuple[int, int]] = field(default_factory=list)  # (major, minor) char devices


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

    def limit_steps(self, job_key: str, mem_mb: dict[str, int]) -> None:
        if mem_mb:
            self.step_mem.setdefault(job_key, {}).update(mem_mb)

    def _step_limit(self, job_key: str, step: str) -> int:
        return self.step_mem.get(job_key, {}).get(step, 0) if step != "batch" else 0

    def signal(self, job_key: str, signo: int, leader: int) -> None:
        for pid in self.pids(job_key):
            try:
                os.kill(pid, signo)
            except ProcessLookupError:
                pass


class CgroupV1(_CgroupTracker):
    """v1: memory (limit, OOM, the list of processes) for every job; cpuset only when the job is
    pinned and devices only when something is to be hidden; freezer only when a job's processes
    outlive it and must be killed (they are moved there then). Each controller costs a mkdir, a
    write to cgroup.procs and an rmdir per job, on the path that starts and ends every job.
    Limits are set on the job's cgroup. The batch script runs in it directly (v1 lets a cgroup
    hold processes and children); each srun step gets a child, step_<n>."""

    name = "proctrack/cgroup (v1)"
    ALWAYS = ("memory", "cpuacct")

    def __init__(self, node: str, root: str = CGROUP_ROOT):
        self.mounts = {c: os.path.join(root, c) for c in V1_CONTROLLERS
                       if os.path.exists(os.path.join(root, c, "cgroup.procs"))}
        self.base = {c: os.path.join(m, _own_cgroup(c).lstrip("/"), "pyslurm_lite", node)
                     for c, m in self.mounts.items()}
        for ctl, path in self.base.items():
            self._mkdirs(ctl, path)
        self.used: dict[str, tuple[str, ...]] = {}  # job key -> controllers it has a cgroup in
        self.step_mem = {}

    @property
    def fences_devices(self) -> bool:
        return "devices" in self.base

    def _dirs(self, job_key: str) -> dict[str, str]:
        ctls = self.used.get(job_key.split("/")[0]) or tuple(self.base)
        return {c: os.path.join(self.base[c], job_key) for c in ctls if c in self.base}

    def create(self, job_key: str, limits: Limits) -> None:
        ctls = [c for c in self.ALWAYS if c in self.base]
        if limits.cpus and "cpuset" in self.base:
            ctls.append("cpuset")
        if limits.deny_devices and "devices" in self.base:
            ctls.append("devices")
        self.used[job_key] = tuple(ctls)
        d = self._dirs(job_key)
        for ctl, path in d.items():
            self._mkdirs(ctl, path)
        if "memory" in d and limits.mem_mb:
            _v1_memory_limit(d["memory"], limits.mem_mb)
        if "cpuset" in d:
            _write(os.path.join(d["cpuset"], "cpuset.cpus"), ",".join(map(str, limits.cpus)))
        for major, minor in limits.deny_devices if "devices" in d else ():
            _write(os.path.join(d["devices"], "devices.deny"), f"c {major}:{minor} rwm")

    def _mkdirs(self, ctl: str, path: str) -> None:
        """mkdir -p, giving each new cpuset its parent's cpus and mems (v1 starts them empty)."""
        missing = []
        p = path
        while not os.path.isdir(p):
            missing.append(p)
            p = os.path.dirname(p)
        for d in reversed(missing):
            os.mkdir(d)
            if ctl == "cpuset":
                parent = os.path.dirname(d)
                for f in ("cpuset.cpus", "cpuset.mems"):
                    _write(os.path.join(d, f), _read(os.path.join(parent, f)).strip())

    def add(self, job_key: str, pid: int, step: str = "batch") -> None:
        for ctl, path in self._dirs(job_key if step == "batch" else f"{job_key}/step_{step}").items():
            made = not os.path.isdir(path)
            self._mkdirs(ctl, path)
            if made and ctl == "memory" and self._step_limit(job_key, step):
                _v1_memory_limit(path, self._step_limit(job_key, step))
            _write(os.path.join(path, "cgroup.procs"), str(pid))

    def pids(self, job_key: str, leader: int = 0) -> list[int]:
        procs = set()
        for path in self._dirs(job_key).values():
            procs |= {int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()}
            break  # every controller holds the same processes; one is enough
        for path in self._dirs(job_key).values():
            for sub in _subdirs(path):
                procs |= {int(p) for p in _read(os.path.join(sub, "cgroup.procs")).split()}
            break
        return sorted(procs)

    def step_pids(self, job_key: str, step: str, leaders: list[int]) -> list[int]:
        # v1: the batch script lives in the job's cgroup itself, steps in step_<n> below it
        base = self._dirs(job_key).get("memory") or next(iter(self._dirs(job_key).values()), "")
        path = base if step == "batch" else os.path.join(base, f"step_{step}")
        return sorted(int(p) for p in _read(os.path.join(path, "cgroup.procs")).split()) if base else []

    def step_cpu(self, job_key: str, step: str) -> tuple[float, float] | None:
        base = self._dirs(job_key).get("cpuacct")
        if not base:
            return None
        if step == "batch":  # the job's cgroup counts its steps too: take theirs away
            total = parse_cpuacct_stat_v1(_read(os.path.join(base, "cpuacct.stat")), USER_HZ)
            for sub in _subdirs(base) if total else ():
                part = parse_cpuacct_stat_v1(_read(os.path.join(sub, "cpuacct.stat")), USER_HZ)
                if part:
                    total = (total[0] - part[0], total[1] - part[1])
            return (max(total[0], 0.0), max(total[1], 0.0)) if total else None
        return parse_cpuacct_stat_v1(_read(os.path.join(base, f"step_{step}", "cpuacct.stat")),
                                     USER_HZ)

    def kill_all(self, job_key: str, leader: int) -> None:
        """SIGKILL everything in the job's cgroup, frozen first so nothing can fork meanwhile:
        each round moves what is left into the job's freezer cgroup (made now: most jobs leave
        nothing behind) and freezes it before the kill."""
        left = self.pids(job_key)
        if not left:
            return  # the common case: the script's children were gone with it
        log.info("killing %d process(es) left in %s", len(left), job_key)
        freezer = self._freezer(job_key)
        for _ in range(KILL_ROUNDS):
            pids = self.pids(job_key)
            if not pids:
                break
            if freezer:
                for pid in pids:
                    try:
                        _write(os.path.join(freezer, "cgroup.procs"), str(pid))
                    except OSError:
                        pass  # it exited meanwhile
                _write(os.path.join(freezer, "freezer.state"), "FROZEN")
            self.signal(job_key, signal.SIGKILL, leader)
            if freezer:
                _write(os.path.join(freezer, "freezer.state"), "THAWED")  # the kill lands on thaw
            time.sleep(KILL_PAUSE)

    def _freezer(self, job_key: str) -> str | None:
        if "freezer" not in self.base:
            return None
        path = os.path.join(self.base["freezer"], job_key)
        self._mkdirs("freezer", path)
        return path

    def oom_killed(self, job_key: str) -> bool:
        path = self._dirs(job_key).get("memory")
        if not path:
            return False
        # v1 counts a kill in the cgroup the victim was in (a step), not in its ancestors
        for d in [path, *_subdirs(path)]:
            control = _read(os.path.join(d, "memory.oom_control"))
            if "oom_kill " not in control:  # old kernels: hitting the limit is the evidence
                return int(_read(os.path.join(path, "memory.failcnt"), "0").strip() or 0) > 0
            for line in control.splitlines():
                if line.startswith("oom_kill ") and int(line.split()[1]) > 0:
                    return True
        return False

    def remove(self, job_key: str) -> None:
        paths = set(self._dirs(job_key).values())
        if "freezer" in self.base:  # made only if kill_all was needed, but look anyway
            paths.add(os.path.join(self.base["freezer"], job_key))
        for path in paths:
            _rmtree(path)
        self.used.pop(job_key, None)
        self.step_mem.pop(job_key, None)

    def existing(self) -> list[str]:
        for base in self.base.values():
            return sorted(os.path.basename(p) for p in _subdirs(base))
        return []

    def close(self) -> None:
        for base in self.base.values():
            _rmdir_empty(base)


class CgroupV2(_CgroupTracker):
    name = "proctrack/cgroup (v2)"

    def __init__(self, node: str, mount: str):
        self.mount = mount
        self.base = os.path.join(mount, _own_cgroup(None).lstrip("/"), "pyslurm_lite", node)
        self.controllers = set(_read(os.path.join(mount, "cgroup.controllers")).split())
        self.step_mem = {}

    def _dir(self, job_key: str) -> str:
        return os.path.join(self.base, job_key)

    def create(self, job_key: str, limits: Limits) -> None:
        path = self._dir(job_key)
        self._enable_down_to(path)
        os.makedirs(path, exist_ok=True)
        if limits.mem_mb and os.path.exists(os.path.join(path, "memory.max")):
            _write(os.path.join(path, "memory.max"), str(limits.mem_mb * 1024 * 1024))
            if os.path.exists(os.path.join(path, "memory.swap.max")):
                _write(os.path.join(path, "memory.swap.max"), "0")
        if limits.cpus and os.path.exists(os.path.join(path, "cpuset.cpus")):
            _write(os.path.join(path, "cpuset.cpus"), ",".join(map(str, limits.cpus)))

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
        _rmtree(self._dir(job_key))
        self.step_mem.pop(job_key, None)

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


def parse_cpuacct_stat_v1(text: str, hz: int = 100) -> tuple[float, float] | None:
    """cgroup v1 cpuacct.stat ("user TICKS\nsystem TICKS", in USER_HZ) -> (user, system)
    seconds; None when the file lacks them."""
    values = dict(line.split(None, 1) for line in text.splitlines() if " " in line)
    try:
        return int(values["user"]) / hz, int(values["system"]) / hz
    except (KeyError, ValueError):
        return None


def _v1_memory_limit(path: str, mem_mb: int) -> None:
    limit = str(mem_mb * 1024 * 1024)
    _write(os.path.join(path, "memory.limit_in_bytes"), limit)
    memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
    if os.path.exists(memsw):
        _write(memsw, limit)  # no escape into swap


def step_memory(job, node: str) -> dict[str, int]:
    """The memory (MiB) the controller gave each running step of job on node, by step id as
    the tracker names steps; steps that hold none (no srun --mem) are left out."""
    out = {}
    for step in job.steps:
        if step.state == JobState.RUNNING and node in step.nodes and step.allocations:
            mem = step.allocations[step.nodes.index(node)].mem
            if mem:
                out[str(step.step_id)] = mem
    return out


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


def detect(root: str = CGROUP_ROOT) -> str:
    """'v2' on a unified hierarchy with memory, 'v1' where the memory hierarchy is v1, else 'none'."""
    if os.geteuid() != 0:
        return "none"
    if os.path.exists(os.path.join(root, "cgroup.controllers")):
        return "v2"
    if os.path.exists(os.path.join(root, "memory", "cgroup.procs")):
        return "v1"
    unified = os.path.join(root, "unified")
    if "memory" in _read(os.path.join(unified, "cgroup.controllers")).split():
        return "v2"
    return "none"


PLUGINS = ("proctrack/cgroup", "proctrack/pgid", "proctrack/auto")


def scope(cfg, node: str) -> str:
    """The cgroup directory of one agent's jobs, unique among agents sharing a host: several
    clusters (a test machine's, say) may each have a node1, never on the same port."""
    port = cfg.nodes[node].port or cfg.slurmd_port
    return f"{cfg.cluster_name}_{port}_{node}"


def make_tracker(kind: str, node: str, root: str = CGROUP_ROOT) -> Tracker:
    """The tracker configuration names (ProctrackType); 'auto' picks what the host has.
    `node` is the agent's scope (see scope())."""
    if kind not in PLUGINS:
        raise ConfigError(f"unknown ProctrackType={kind}; valid: {', '.join(PLUGINS)}")
    if kind == "proctrack/pgid":
        return Tracker()
    found = detect(root)
    if found == "v1":
        return CgroupV1(node, root)
    if found == "v2":
        mount = root if os.path.exists(os.path.join(root, "cgroup.controllers")) else os.path.join(root, "unified")
        return CgroupV2(node, mount)
    if kind == "proctrack/cgroup":
        raise ConfigError("ProctrackType=proctrack/cgroup but no usable cgroup hierarchy (need root "
                         "and cgroup v1 memory or a cgroup v2 mount)")
    return Tracker()
