"""What the clock does to jobs, run from the controller's monitor loop: --signal warnings before
a time limit, TIMEOUT at it, --deadline for pending jobs, and the end of preempted jobs' grace
time. Each applies its changes through the JobManager (which commits them) and returns the
Effects for dispatch.
"""

from __future__ import annotations

import logging

from ..errors import InvalidRequest
from ..model import UNLIMITED, Job, JobState, Reason
from ..units import parse_signal_spec
from .effects import Effects, Signal

log = logging.getLogger("pyslurm_lite.controller.jobs")

PREEMPT_REQUEUE_DELAY = 5.0  # seconds a preempted, requeued job waits before it may start again


class JobTimers:
    def __init__(self, jobs):
        self.jobs = jobs  # JobManager: _end, requeue
        self.s = jobs.s

    def signal_warnings(self, now: float) -> Effects:
        """--signal=[B:]SIG@SECONDS: warn a running job that many seconds before its time limit,
        once per run: the batch shell alone with B:, else every process but the batch shell
        (Slurm signals the steps, so a shell without a trap is not killed by the warning)."""
        effects = Effects()
        with self.s.lock:
            for job in self.s.active_jobs():
                if job.state != JobState.RUNNING or not job.spec.signal or job.time_limit <= 0:
                    continue
                key = (job.job_id, job.restart_count)
                try:  # refused at submit since #13; a record from before may still hold one
                    batch, signo, before = parse_signal_spec(job.spec.signal)
                except InvalidRequest:
                    continue
                if key in self.s.warned or now < job.start_time + job.time_limit * 60 - before:
                    continue
                self.s.warned.add(key)
                nodes = job.node_names[:1] if batch else job.node_names
                effects.signals += [Signal(n, [job.job_id], signo, batch_only=batch,
                                           steps_only=not batch) for n in nodes]
        return effects

    def deadlines(self, now: float) -> list[Job]:
        """End pending jobs that can no longer finish by their --deadline: state DEADLINE,
        reason DeadLine, exit code 1, as Slurm's schedulers do for the jobs they consider
        (so not held ones, nor ones waiting on a dependency or a begin time)."""
        ended = []
        with self.s.lock:
            for job in self.s.active_jobs():
                if not job.spec.deadline:  # most jobs: asked first, as this runs every pass
                    continue  # (over the active jobs only: thousands ended may be in memory)
                if job.state != JobState.PENDING or job.held or job.eligible_time > now \
                        or job.reason in (Reason.DEPENDENCY, Reason.DEPENDENCY_NEVER) \
                        or not deadline_passed(job, now):
                    continue
                self.jobs._end(job, JobState.DEADLINE, Reason.DEADLINE, now)
                # Slurm stores a raw wait status of 1 (sacct's ExitCode 0:1), and the
                # start time too, so that accounting shows no wait past its end
                job.exit_code, job.exit_signal, job.start_time = 0, 1, now
                log.info("job %s could not end by its deadline and is cancelled", job.job_id)
                ended.append(job)
            self.s.save(ended)
        if ended:
            self.s.changed.set()
        return ended

    def time_limits(self, now: float) -> Effects:
        """End RUNNING jobs past their time limit with TIMEOUT (SIGTERM, SIGKILL after KillWait)."""
        effects, ended = Effects(), []
        with self.s.lock:
            for job in self.s.active_jobs():
                if job.state == JobState.RUNNING and job.time_limit > 0 \
                        and now >= job.start_time + job.time_limit * 60:
                    effects.signals += self.jobs._end(job, JobState.TIMEOUT, Reason.TIME_LIMIT, now)
                    ended.append(job)
            self.s.save(ended)
        return effects


    def preemptions_due(self, now: float) -> Effects:
        """Preempted jobs whose grace time is over: requeued (restart count up) or ended PREEMPTED."""
        effects, changed = Effects(), []
        with self.s.lock:
            for job in self.s.active_jobs():
                if job.state != JobState.RUNNING or not job.preempt_time or now < job.preempt_time:
                    continue
                mode = job.preempt_mode
                job.preempt_time, job.preempt_mode = 0.0, ""
                if mode == "REQUEUE":  # "preempted": the agent kills at once, the grace is over
                    effects.signals += self.jobs.requeue(job, reason="preempted")
                    # as Slurm, a requeued job waits a while (BeginTime), so the job it made
                    # room for starts first whatever their priorities
                    job.eligible_time = now + PREEMPT_REQUEUE_DELAY
                else:
                    effects.signals += self.jobs._end(job, JobState.PREEMPTED, Reason.NONE, now)
                changed.append(job)
            self.s.save(changed)
        if changed:
            self.s.changed.set()
        return effects


def deadline_passed(job: Job, now: float) -> bool:
    """Slurm's deadline_ok, negated: can this pending job no longer end by its deadline if it
    started now? Its time limit must fit; a job without one needs a minute (Slurm sets its
    --time-min to 1)."""
    if not job.spec.deadline:
        return False
    needed = job.time_limit if job.time_limit > 0 and job.time_limit != UNLIMITED else 1
    return job.spec.deadline < now + needed * 60


def limit_to_deadline(job: Job, now: float) -> int:
    """A starting job's time limit: one without a limit gets the minutes left to its deadline
    (Slurm's deadline_time_limit), so it ends TIMEOUT by then; one with a limit keeps it, as
    deadline_passed has checked it fits."""
    if job.spec.deadline and (job.time_limit <= 0 or job.time_limit == UNLIMITED):
        return max(int((job.spec.deadline - now) // 60), 1)
    return job.time_limit
