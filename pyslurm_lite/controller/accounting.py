"""Job accounting (sacct's side of slurmdbd): which runs of which jobs a query selects.

Owns: the meaning of sacct's time window and state filter, the runs of a requeued job (-D),
and who may see what. Reads the Store only (every job row is kept there for ever, every change
committed before it takes effect), so a query never waits on the controller's lock except for a
moment to copy the live pending reasons. Must not: write anything.

The window, as Slurm's accounting storage applies it (S = start, E = end, both inclusive here):
  without states  a run is listed when it was eligible before E and had not ended before S;
  -s PENDING      it waited (eligible, not yet started or ended) at some time in [S, E];
  -s RUNNING      it ran at some time in [S, E] (so a job that ended in the window counts too);
  -s <final>      it ended in that state within [S, E] (REQUEUED: an earlier run ended by a
                  requeue).
Worked example: job 7 eligible 10:00, ran 10:05-10:20, COMPLETED. `-S 10:10 -E 10:15` lists it
(eligible before 10:15, not ended before 10:10); with `-s CD` it is not listed (it ended at
10:20, outside the window); with `-s R` it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .._proto import types_pb2
from ..errors import InvalidRequest
from ..model import JobState
from ..rpc import wire
from .auth import Caller, allowed
from .store import Store

REQUEUED = "REQUEUED"  # the state sacct shows for a run a requeue ended (JOB_REQUEUE)
MAX_JOB_ID = 2**32 - 1  # Slurm's job ids are uint32


@dataclass
class HistoryQuery:
    """sacct's selection; empty lists match everything. end 0 means now."""

    job_ids: list[int] = field(default_factory=list)  # jobs, or whole arrays by their id
    array_tasks: list[tuple[int, int]] = field(default_factory=list)  # (array job id, task id)
    users: list[str] = field(default_factory=list)  # names or uids
    accounts: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0
    duplicates: bool = False
    any_eligibility: bool = False  # sacct -j: jobs never eligible (held) are listed too


@dataclass
class JobRun:
    """One run of a job: the job as recorded at the end of that run (the stored types_pb2.Job
    message: the reply carries it as it is), and the state sacct shows."""

    job: object
    state: str


def job_history(store: Store, q: HistoryQuery, now: float, max_array_size: int) -> list[JobRun]:
    """The runs q selects, by job id then oldest run first."""
    check(q)
    end = q.end or now + 1  # Slurm's window includes the current second
    jobs = store.job_history(**_coarse_cut(q, end, max_array_size))
    jobs = [j for j in jobs if _wanted(j, q)]
    archived = store.job_runs([j.job_id for j in jobs]) if q.duplicates else {}
    out = []
    for job in jobs:
        for old, ended in archived.get(job.job_id, ()):
            out.append(JobRun(_ended_at(old, ended), REQUEUED))
        out.append(JobRun(job, job.state))
    return [r for r in out if in_window(r, q.states, q.start, end, q.any_eligibility)]


def check(q: HistoryQuery) -> None:
    """Refuse what no job can match and the database cannot hold (a request is untrusted)."""
    ids = list(q.job_ids) + [i for pair in q.array_tasks for i in pair]
    if any(not 0 <= i <= MAX_JOB_ID for i in ids):
        raise InvalidRequest("Invalid job id specified")
    if not all(math.isfinite(t) and t >= 0 for t in (q.start, q.end)):
        raise InvalidRequest("Invalid time specification")


def _coarse_cut(q: HistoryQuery, end: float, max_array_size: int) -> dict:
    """What the store can narrow by index; an array's tasks hold the ids after its own."""
    spans = [(a, a + max_array_size) for a in q.job_ids] + [(a, a + max_array_size) for a, _ in q.array_tasks]
    by_id = bool(q.job_ids or q.array_tasks)
    return dict(job_ids=list(q.job_ids) if by_id else None, id_spans=spans, users=q.users,
                partitions=q.partitions, names=q.names,
                ended_after=q.start if not q.states else 0.0, submitted_before=end)


def _wanted(job, q: HistoryQuery) -> bool:
    if q.job_ids or q.array_tasks:
        named = job.job_id in q.job_ids or (job.array_job_id and job.array_job_id in q.job_ids)
        task = job.array_job_id and (job.array_job_id, job.array_task_id) in q.array_tasks
        if not (named or task):
            return False
    return not q.accounts or job.spec.account in q.accounts


def _ended_at(job, ended: float):
    job.end_time = job.end_time or ended
    return job


def eligible_time(job) -> float:
    """When the run could first have started; 0 (Slurm's "Unknown") while held and never run."""
    if job.held and not job.start_time:
        return 0.0
    return job.eligible_time or job.submit_time


def in_window(run: JobRun, states: list[str], start: float, end: float,
              any_eligibility: bool = False) -> bool:
    """Whether a run belongs in [start, end] (see the module's docstring)."""
    job, eligible = run.job, eligible_time(run.job)
    if not states:
        if not eligible:
            return any_eligibility
        return eligible < end and (not job.end_time or job.end_time >= start)
    return any(_in_state(run, s, eligible, start, end) for s in states)


def _in_state(run: JobRun, state: str, eligible: float, start: float, end: float) -> bool:
    job = run.job
    if state == JobState.PENDING.value:
        waited_past_start = (job.start_time and start < job.start_time) or \
            (not job.start_time and job.end_time and start < job.end_time) or \
            (not job.start_time and not job.end_time and run.state == state)
        return bool(eligible and waited_past_start and eligible < end)
    if state in (JobState.RUNNING.value, JobState.SUSPENDED.value):
        still = not job.end_time and run.state == state
        return bool(job.start_time and (start < job.end_time or still) and job.start_time < end)
    return run.state == state and bool(job.end_time) and start <= job.end_time <= end


def visible(runs: list[JobRun], caller: Caller, private: bool) -> list[JobRun]:
    """PrivateData=jobs: a user who is not an operator sees their own jobs only (as squeue)."""
    if allowed("view", caller, None, private):
        return runs
    return [r for r in runs if allowed("view", caller, r.job.spec.uid, private)]


def with_live_reasons(runs: list[JobRun], state) -> list[JobRun]:
    """A pending job's reason changes in memory only (it is not worth a commit per pass): the
    current one is copied in, under the lock for no longer than that."""
    pending = [r for r in runs if r.state == JobState.PENDING.value]
    if pending:
        with state.lock:
            for run in pending:
                live = state.jobs.get(run.job.job_id)
                if live is not None:
                    run.job.reason = live.reason
    return runs


def with_live_usage(runs: list[JobRun], state) -> list[JobRun]:
    """A running job's latest samples (agents' heartbeats) and AdminComment (the idle-GPU flag)
    live in memory between the commits of its record: sacct and seff of a running job see the
    current ones, copied under the lock."""
    running = [r for r in runs if r.state == JobState.RUNNING.value]
    if running:
        with state.lock:
            for run in running:
                live = state.jobs.get(run.job.job_id)
                if live is not None and live.restart_count == run.job.restart_count:
                    if live.usage:
                        del run.job.usage[:]
                        run.job.usage.extend(wire.to_msg(u, types_pb2.UsageSample) for u in live.usage)
                    run.job.admin_comment = live.admin_comment or run.job.admin_comment
    return runs
