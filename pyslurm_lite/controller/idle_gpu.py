"""Idle-GPU detection (IdleGPUThreshold, IdleGPUTime, IdleGPUAction: ours, as site tools such as
jobstats do it): a running job whose GPUs all stay under the threshold for the time is flagged
once in its AdminComment, and then, as the operator chose, nothing more (none), a notice to its
mail user and webhooks (notify), or it is cancelled (cancel) or requeued (requeue).

Worked example (IdleGPUThreshold=5 IdleGPUTime=20, JobAcctGatherFrequency=2): job 7 holds one
GPU and sleeps. Its agent reports gpu_util 0 every 2 s. At 18:02:03 the controller first sees it
under 5% and notes that time; a sample at 3% keeps the watch, one at 40% would end it (the job is
busy: never flagged for that stretch). At 18:02:23, 20 s on, AdminComment becomes
"IdleGPU: 1 GPU(s) under 5% for 20 s since 2026-12-01T18:02:03 (run 0)". The flag names the run
(Slurm's restart count): a requeued job is a new run and is watched again, so an owner who
requeues a job the action ended is flagged, and acted on, again.

Owns: the decision (`assess`, pure, the time an argument) and its application under the state
lock (`IdleGpuMonitor.run_once`). Must not: measure anything (agents sample; node_mgr stores
their samples in Job.usage).
"""

from __future__ import annotations

import logging
import re
import time

from ..model import Job, JobState, UsageSample
from .auth import Caller
from .job_mgr import Effects, JobFilter

log = logging.getLogger("pyslurm_lite.controller.idle_gpu")

MARK = "IdleGPU:"  # how AdminComment says a job was flagged
# the runs a job's AdminComment says were flagged; a flag without "(run N)" is older: run 0
FLAGGED_RUN = re.compile(re.escape(MARK) + r"[^;]*?(?:\(run (\d+)\))?(?:;|$)")
STALE_PERIODS = 3  # samples older than this many gather periods (+ STALE_GRACE) decide nothing
STALE_GRACE = 10.0  # seconds
OPERATOR = Caller(uid=0, user="root", operator=True)  # the controller acting on its own


def gpu_samples(job: Job, now: float, period: float) -> list[UsageSample]:
    """The samples of this run's steps holding GPUs, from the newest report of each node; none
    when they are stale (an agent that stopped reporting does not make a job idle)."""
    mine = [s for s in job.usage if s.gpus > 0 and s.restart_count == job.restart_count]
    if not mine or now - max(s.time for s in mine) > STALE_PERIODS * period + STALE_GRACE:
        return []
    newest = {}
    for s in mine:
        newest[s.node] = max(newest.get(s.node, 0.0), s.time)
    return [s for s in mine if newest[s.node] - s.time <= period]


def assess(samples: list[UsageSample], since: float | None, now: float, threshold: float,
           idle_time: float) -> tuple[float | None, bool]:
    """(when the GPUs were first seen idle, whether to flag now). No samples: no verdict, the
    watch stays as it was; any GPU at or over the threshold ends the watch."""
    if not samples:
        return since, False
    if max(s.gpu_util for s in samples) >= threshold:
        return None, False
    since = now if since is None else since
    return since, now - since >= idle_time


def flag_text(gpus: int, threshold: float, idle_time: float, since: float, run: int = 0,
              shared: str = "") -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
    held = f" (shared, {shared})" if shared else ""
    return (f"{MARK} {gpus} GPU(s){held} under {threshold:g}% for {idle_time:g} s since {stamp} "
            f"(run {run})")


def flagged_runs(admin_comment: str) -> set[int]:
    return {int(m.group(1) or 0) for m in FLAGGED_RUN.finditer(admin_comment)}


def flagged_this_run(job: Job) -> bool:
    """Each run is flagged once: the flag is tied to the run it was made in, not the job."""
    return MARK in job.admin_comment and job.restart_count in flagged_runs(job.admin_comment)


def job_gpus(job: Job) -> int:
    """The GPUs a job uses, whole or shared: a job holding shards (or mps) of a GPU is watched
    like one holding it whole, by that GPU's utilisation (the device's, which its sharers' work
    counts in: a GPU another job keeps busy is not idle, and a job on an idle one is)."""
    return sum(len(a.gpus) for a in job.allocations)


def shares_text(job: Job) -> str:
    """'shard:3' for a job holding 3 shards; '' for whole GPUs."""
    held: dict[str, int] = {}
    for a in job.allocations:
        if a.share_name:
            held[a.share_name] = held.get(a.share_name, 0) + sum(a.shares)
    return ",".join(f"{name}:{count}" for name, count in sorted(held.items()))


class IdleGpuMonitor:
    """Watches running jobs' GPU samples on each monitor pass; applies the operator's action."""

    def __init__(self, state, jobs, notifier=None):
        self.s, self.jobs, self.notifier = state, jobs, notifier
        self.watch: dict[tuple[int, int], float] = {}  # (job, run) -> first seen idle

    def run_once(self, now: float) -> Effects:
        cfg = self.s.cfg
        effects = Effects()
        if cfg.idle_gpu_time <= 0:
            return effects
        with self.s.lock:
            running = [j for j in self.s.active_jobs() if j.state == JobState.RUNNING
                       and job_gpus(j) and not flagged_this_run(j)]
            flagged = [j for j in running if self._check(j, now)]
            self.watch = {k: v for k, v in self.watch.items()
                          if k in {(j.job_id, j.restart_count) for j in running}}
            for job in flagged:
                effects.extend(self._flag(job, now))
        return effects

    def _check(self, job: Job, now: float) -> bool:
        cfg, key = self.s.cfg, (job.job_id, job.restart_count)
        samples = gpu_samples(job, now, float(cfg.acct_gather_frequency or 30))
        since, flag = assess(samples, self.watch.get(key), now, cfg.idle_gpu_threshold,
                             cfg.idle_gpu_time)
        if since is None:
            self.watch.pop(key, None)
        else:
            self.watch[key] = since
        return flag

    def _flag(self, job: Job, now: float) -> Effects:
        """Say so in AdminComment (kept with whatever was there), then the operator's action.
        Callers hold the state lock."""
        cfg = self.s.cfg
        text = flag_text(job_gpus(job), cfg.idle_gpu_threshold, cfg.idle_gpu_time,
                         self.watch.pop((job.job_id, job.restart_count), now),
                         job.restart_count, shares_text(job))
        job.admin_comment = f"{job.admin_comment}; {text}" if job.admin_comment else text
        action = cfg.idle_gpu_action
        log.warning("job %s: %s (IdleGPUAction=%s)", job.job_id, text, action)
        if action == "notify" and self.notifier is not None:
            from ..mailtypes import IDLE_GPU
            self.notifier.queue(job, IDLE_GPU, text)
        self.s.save([job])
        effects = Effects()
        if action == "requeue" and job.spec.requeue:
            effects.signals += self.jobs.requeue(job, reason="idle GPU")
            self.s.save([job])
            self.s.changed.set()
        elif action in ("cancel", "requeue"):  # a job that may not be requeued is cancelled
            effects.extend(self.jobs.cancel(only(job), OPERATOR)[2])
        return effects


def only(job: Job) -> JobFilter:
    """This job alone: an array's first task has the array's id, which names every task."""
    if job.array_job_id:
        return JobFilter(array_tasks=[f"{job.array_job_id}_{job.array_task_id}"])
    return JobFilter(job_ids=[job.job_id])
