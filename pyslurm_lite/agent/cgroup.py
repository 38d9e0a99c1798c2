"""proctrack/cgroup and task/cgroup: one cgroup per job (and per step) that holds every process
the job starts and enforces its CPUs, memory and devices; detected at runtime.

    cgroup v2 (unified, e.g. /sys/fs/cgroup):          <base>/pyslurm_lite/<node>/job_<id>/step_<s>
        memory.max, cpuset.cpus, pids, cgroup.kill, memory.events (oom_kill); devices through a
        BPF program on job_<id> (bpf_devices.py); a controller the mount lacks (a hybrid host's
        cgroup2 often has none) is done without: CPUs by affinity, memory unlimited, said at start
    cgroup v1 (a hierarchy per controller):              <ctl>/<base>/pyslurm_lite/<node>/job_<id>[/step_<n>]
        memory.limit_in_bytes, cpuset.cpus, devices.deny, memory.oom_control (oom_kill); the batch
        script in job_<id> itself, srun steps in step_<n>; freezer only to kill leftovers
    none: process groups (a setsid'd or double-forked process escapes; the agent says so at start)

cgroup.conf chooses the version (CgroupPlugin=autodetect|cgroup/v1|cgroup/v2) and what is
enforced (ConstrainDevices, ConstrainCores, ConstrainRAMSpace: Constrain). A job whose
cores are not confined by a cpuset (ConstrainCores=no, or no cpuset controller) is still pinned
to them by affinity, as task/affinity would.

Here: v1 and choosing a tracker; cgroup_v2.py: v2; cgroup_common.py: what both share.

<base> is the agent's own cgroup, so jobs stay inside whatever contains the agent (a container,
a systemd unit). A step given memory of its own (srun --mem inside an allocation) gets that
limit on its step cgroup, under the job's. A process enters its cgroup before it runs any of the user's code: the launch
shim blocks on a pipe until the agent has written its pid to cgroup.procs.

Must not: decide what a job gets (the controller did) or talk to anyone.
"""

from __future__ import annotations

import os
import signal
import time

from ..errors import ConfigError
from ..model import JobState
# re-exported: callers import the trackers and their parts from here
from .cgroup_common import (CGROUP_ROOT, KILL_PAUSE, KILL_ROUNDS, Constrain, Limits,  # noqa: F401
                            Tracker, _CgroupTracker, _own_cgroup, _read, _rmdir_empty, _rmtree,
                            _subdirs, _write, log)
from .cgroup_v2 import CgroupV2, parse_cpu_stat_v2  # noqa: F401

# pids would only count (no limit is set), so it is left out: every controller costs a mkdir,
# a write and an rmdir per job and step. cpuacct is what jobacct_gather/cgroup reads: the CPU
# time of a step's processes, those already gone included.
V1_CONTROLLERS = ("memory", "cpuacct", "cpuset", "devices", "freezer")
USER_HZ = os.sysconf("SC_CLK_TCK")  # cpuacct.stat's unit


class CgroupV1(_CgroupTracker):
    """v1: memory (limit, OOM, the list of processes) for every job; cpuset only when the job is
    pinned and devices only when something is to be hidden; freezer only when a job's processes
    outlive it and must be killed (they are moved there then). Each controller costs a mkdir, a
    write to cgroup.procs and an rmdir per job, on the path that starts and ends every job.
    Limits are set on the job's cgroup. The batch script runs in it directly (v1 lets a cgroup
    hold processes and children); each srun step gets a child, step_<n>."""

    name = "proctrack/cgroup (v1)"
    ALWAYS = ("memory", "cpuacct")

    def __init__(self, node: str, root: str = CGROUP_ROOT, constrain: Constrain = Constrain()):
        self.constrain = constrain
        self.pinned = {}
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
        return self.constrain.devices and "devices" in self.base

    def _dirs(self, job_key: str) -> dict[str, str]:
        ctls = self.used.get(job_key.split("/")[0]) or tuple(self.base)
        return {c: os.path.join(self.base[c], job_key) for c in ctls if c in self.base}

    def create(self, job_key: str, limits: Limits) -> None:
        ctls = [c for c in self.ALWAYS if c in self.base]
        if limits.cpus and "cpuset" in self.base and self.constrain.cores:
            ctls.append("cpuset")
        elif limits.cpus:
            self.pinned[job_key] = list(limits.cpus)
        if limits.deny_devices and self.fences_devices:
            ctls.append("devices")
        self.used[job_key] = tuple(ctls)
        d = self._dirs(job_key)
        for ctl, path in d.items():
            self._mkdirs(ctl, path)
        if "memory" in d and limits.mem_mb and self.constrain.ram:
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
        self._pin(job_key, pid)

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
        self.pinned.pop(job_key, None)

    def existing(self) -> list[str]:
        for base in self.base.values():
            return sorted(os.path.basename(p) for p in _subdirs(base))
        return []

    def close(self) -> None:
        for base in self.base.values():
            _rmdir_empty(base)


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
CGROUP_PLUGINS = ("autodetect", "cgroup/v1", "cgroup/v2")  # cgroup.conf's CgroupPlugin


def scope(cfg, node: str) -> str:
    """The cgroup directory of one agent's jobs, unique among agents sharing a host: several
    clusters (a test machine's, say) may each have a node1, never on the same port."""
    port = cfg.nodes[node].port or cfg.slurmd_port
    return f"{cfg.cluster_name}_{port}_{node}"


def tracker_for(cfg, node: str, kind: str = "") -> Tracker:
    """The tracker slurm.conf (ProctrackType, or kind) and cgroup.conf ask for on node."""
    return make_tracker(kind or cfg.proctrack_type, scope(cfg, node), plugin=cfg.cgroup_plugin,
                        constrain=Constrain.of(cfg))


def make_tracker(kind: str, node: str, root: str = CGROUP_ROOT, plugin: str = "autodetect",
                 constrain: Constrain = Constrain()) -> Tracker:
    """The tracker configuration names (ProctrackType); 'auto' picks what the host has, in the
    cgroup version cgroup.conf's CgroupPlugin names (autodetect: what detect() finds).
    `node` is the agent's scope (see scope())."""
    if kind not in PLUGINS:
        raise ConfigError(f"unknown ProctrackType={kind}; valid: {', '.join(PLUGINS)}")
    if plugin not in CGROUP_PLUGINS:
        raise ConfigError(f"cgroup.conf: unknown CgroupPlugin={plugin}; valid: {', '.join(CGROUP_PLUGINS)}")
    if kind == "proctrack/pgid":
        return Tracker()
    found = detect(root) if plugin == "autodetect" else _required(plugin, root)
    if found == "v1":
        return CgroupV1(node, root, constrain)
    if found == "v2":
        return CgroupV2(node, unified_mount(root) or root, constrain)
    if kind == "proctrack/cgroup":
        raise ConfigError("ProctrackType=proctrack/cgroup but no usable cgroup hierarchy (need root "
                         "and cgroup v1 memory or a cgroup v2 mount)")
    return Tracker()


def unified_mount(root: str = CGROUP_ROOT) -> str | None:
    """The cgroup2 mount: root itself (a v2-only host) or root/unified (a hybrid one)."""
    for path in (root, os.path.join(root, "unified")):
        if os.path.exists(os.path.join(path, "cgroup.controllers")):
            return path
    return None


def _required(plugin: str, root: str) -> str:
    """The version CgroupPlugin forces, or ConfigError when this host cannot give it."""
    if os.geteuid() != 0:
        raise ConfigError(f"cgroup.conf: CgroupPlugin={plugin} needs the agent to run as root")
    if plugin == "cgroup/v1":
        if os.path.exists(os.path.join(root, "memory", "cgroup.procs")):
            return "v1"
        raise ConfigError(f"cgroup.conf: CgroupPlugin=cgroup/v1 but this host has no cgroup v1 "
                          f"memory hierarchy ({root}/memory)")
    if unified_mount(root):
        return "v2"
    raise ConfigError(f"cgroup.conf: CgroupPlugin=cgroup/v2 but this host has no cgroup2 mount "
                      f"({root} or {root}/unified)")
