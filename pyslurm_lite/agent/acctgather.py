"""jobacct_gather: what each step running on this node uses, sampled every
JobAcctGatherFrequency seconds (0: only when it ends, as Slurm), delivered to the controller on
heartbeats (the latest sample of each running step) and with the report of its end (its final
sample).

    source                       cgroup v2            cgroup v1             no cgroup
    CPU (user, system seconds)   step's cpu.stat      step's cpuacct.stat   psutil over the step's
                                                                            processes, their reaped
                                                                            children included
    RSS (bytes)                  the resident memory of the step's processes summed (as Slurm's
                                 jobacct_gather sums its tasks'); MaxRSS the peak over samples,
                                 AveRSS their mean
    GPU (percent, bytes)         the GPU backend's sample() of the GPUs the step holds here

A worked example: a batch script that holds 200 MiB, sampled at t=2, 4, 6 (RSS 0, 200, 200 MiB)
gives max_rss 200 MiB and ave_rss 133 MiB; when it ends, the agent's wait4() adds the script's
own figures (CPU of every process it waited for, the largest ru_maxrss), so a job shorter than
one interval still reports its CPU time and peak memory.

A GPU busy with processes that belong to no step here is foreign (ForeignGpu): someone uses it
behind the scheduler's back; the heartbeat says so and the controller keeps it out of scheduling.

Must not: block or crash the agent (every failure is caught and logged once per kind), or decide
anything about jobs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field, replace

import psutil

from ..model import ForeignGpu, UsageSample

log = logging.getLogger("pyslurm_lite.agent.acctgather")

FORGET_AFTER = 600.0  # seconds an ended step's key is remembered (a late sample is dropped)


@dataclass
class Target:
    """A step to sample: who it is, how to find its processes, what it holds here."""

    job_id: int
    restart_count: int
    step: str  # "batch", "0", "1", ...
    leaders: list[int] = field(default_factory=list)  # its tasks' (or script's) pids
    gpus: list[int] = field(default_factory=list)
    tasks: int = 1
    start: float = 0.0

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.job_id, self.restart_count, self.step)


@dataclass
class Reading:
    """One look at a step: its CPU seconds so far, its resident bytes now, its GPUs now."""

    user_cpu: float = 0.0
    system_cpu: float = 0.0
    rss: int = 0
    gpu_util: float = 0.0
    gpu_mem: int = 0
    pids: list[int] = field(default_factory=list)


def fold(prev: UsageSample, r: Reading, now: float) -> UsageSample:
    """The step's sample after one more reading: CPU never goes back (a process that exited
    between readings took its time with it until its parent reaps it), peaks and means grow."""
    n = prev.samples + 1
    return replace(
        prev, time=now, samples=n,
        user_cpu=max(prev.user_cpu, r.user_cpu), system_cpu=max(prev.system_cpu, r.system_cpu),
        rss=r.rss, max_rss=max(prev.max_rss, r.rss),
        ave_rss=prev.ave_rss + (r.rss - prev.ave_rss) / n,
        gpu_util=r.gpu_util, max_gpu_util=max(prev.max_gpu_util, r.gpu_util),
        ave_gpu_util=prev.ave_gpu_util + (r.gpu_util - prev.ave_gpu_util) / n,
        gpu_mem=r.gpu_mem, max_gpu_mem=max(prev.max_gpu_mem, r.gpu_mem))


def with_rusage(sample: UsageSample, ru) -> UsageSample:
    """The final sample with what wait4() said of the step's processes (ru_maxrss in KiB)."""
    if ru is None:
        return sample
    return replace(sample, user_cpu=max(sample.user_cpu, ru.ru_utime),
                   system_cpu=max(sample.system_cpu, ru.ru_stime),
                   max_rss=max(sample.max_rss, ru.ru_maxrss * 1024))


def process_figures(pids: list[int]) -> tuple[float, float, int]:
    """(user, system, rss) summed over live processes; each one's reaped children count too."""
    user = system = 0.0
    rss = 0
    for pid in pids:
        try:
            p = psutil.Process(pid)
            with p.oneshot():
                t = p.cpu_times()
                rss += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        user += t.user + t.children_user
        system += t.system + t.children_system
    return user, system, rss


class Gatherer:
    """The node's step samples. `run_once(now)` takes one round; `finish()` the last sample of
    a step that ended; `latest()` and `take_finals()` are what the agent sends."""

    def __init__(self, node: str, tracker, gpu_source, targets, frequency: int,
                 clock=time.time):
        self.node, self.tracker, self.gpu_source = node, tracker, gpu_source
        self.targets = targets  # () -> list[Target]: the steps running here now
        self.frequency, self.clock = frequency, clock
        self.lock = threading.Lock()
        self.live: dict[tuple[int, int, str], UsageSample] = {}
        self.finals: list[UsageSample] = []  # ended steps' last samples, not yet delivered
        self.foreign: list[ForeignGpu] = []
        self._ended: dict[tuple[int, int, str], float] = {}
        self._warned: set[str] = set()

    # ---- one round ------------------------------------------------------------------------------
    def run_once(self, now: float | None = None) -> None:
        now = self.clock() if now is None else now
        gpus = self._gpu_samples()
        targets = self._guard("steps", self.targets) or []
        ours: set[int] = {os.getpid()}
        for t in targets:
            r = self._guard(f"step {t.job_id}.{t.step}", self.read, t, gpus)
            if r is None:
                continue
            ours |= set(r.pids)
            self._record(t, r, now)
        self.foreign = foreign_gpus(gpus, ours)
        with self.lock:
            self._ended = {k: v for k, v in self._ended.items() if now - v < FORGET_AFTER}

    def _record(self, t: Target, r: Reading, now: float) -> None:
        with self.lock:
            if t.key in self._ended:
                return  # it ended while this round read it
            prev = self.live.get(t.key) or self._empty(t)
            self.live[t.key] = fold(prev, r, now)

    def _empty(self, t: Target) -> UsageSample:
        return UsageSample(step=t.step, node=self.node, restart_count=t.restart_count,
                           job_id=t.job_id, start=t.start or self.clock(), gpus=len(t.gpus),
                           tasks=t.tasks)

    def read(self, t: Target, gpus: dict[int, object]) -> Reading:
        key = f"job_{t.job_id}"
        pids = self.tracker.step_pids(key, t.step, t.leaders)
        user, system, rss = process_figures(pids)
        cpu = self.tracker.step_cpu(key, t.step)
        if cpu is not None:  # the cgroup's count includes processes already gone
            user, system = cpu
        mine = [gpus[i] for i in t.gpus if i in gpus]
        util = sum(g.util for g in mine) / len(mine) if mine else 0.0
        return Reading(user, system, rss, util, sum(g.memory_used for g in mine), pids)

    def _gpu_samples(self) -> dict[int, object]:
        if self.gpu_source is None:
            return {}
        got = self._guard("GPU sample", self.gpu_source.sample) or []
        return {g.index: g for g in got}

    # ---- a step ends ----------------------------------------------------------------------------
    def finish(self, t: Target, rusage=None) -> UsageSample:
        """The step's last sample (one more reading, then wait4's figures), queued for the
        report of its end; the step is forgotten here."""
        r = self._guard(f"step {t.job_id}.{t.step}", self.read, t, self._gpu_samples()) or Reading()
        now = self.clock()
        with self.lock:
            prev = self.live.pop(t.key, None) or self._empty(t)
            if r.pids or prev.samples == 0:
                prev = fold(prev, r, now)
            else:  # its processes are gone: no RSS to count, but a cgroup still has their CPU
                prev = replace(prev, user_cpu=max(prev.user_cpu, r.user_cpu),
                               system_cpu=max(prev.system_cpu, r.system_cpu))
            final = with_rusage(replace(prev, time=now), rusage)
            self._ended[t.key] = now
            self.finals.append(final)
        return final

    # ---- what the agent sends -------------------------------------------------------------------
    def latest(self, since: float = 0.0) -> list[UsageSample]:
        """The running steps' latest samples (those taken after `since`)."""
        with self.lock:
            return [replace(s) for s in self.live.values() if s.time > since]

    def take_finals(self) -> list[UsageSample]:
        with self.lock:
            out, self.finals = self.finals, []
        return out

    def give_back(self, finals: list[UsageSample]) -> None:
        """Finals a report could not deliver: they go with the next one."""
        with self.lock:
            self.finals = finals + self.finals

    # ---- running --------------------------------------------------------------------------------
    def run_forever(self, stop: threading.Event) -> None:
        if self.frequency <= 0:
            return  # JobAcctGatherFrequency=0: steps are measured only when they end
        while not stop.wait(self.frequency):
            self._guard("sampling round", self.run_once)

    def _guard(self, what: str, fn, *args):
        """fn(*args), or None when it fails: logged once per kind of failure, never raised."""
        try:
            return fn(*args)
        except Exception as e:  # a sampling failure must never reach the agent
            kind = f"{what.split()[0]}:{type(e).__name__}"
            if kind not in self._warned:
                self._warned.add(kind)
                log.warning("usage sampling: %s failed: %s", what, e)
            return None


def foreign_gpus(gpus: dict[int, object], ours: set[int], exists=psutil.pid_exists
                 ) -> list[ForeignGpu]:
    """GPUs with processes that are no step's here: used behind the scheduler's back. Only
    processes this agent can see count: NVML names host PIDs, and inside a PID namespace (a
    container) the jobs' own would otherwise all look foreign."""
    out = []
    for index in sorted(gpus):
        g = gpus[index]
        pids = sorted(p for p in g.pids if p not in ours and exists(p))
        if pids:
            out.append(ForeignGpu(index=index, pids=pids, memory=g.memory_used))
    return out
