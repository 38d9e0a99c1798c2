"""`pyslurm-lite simulate`: read a trace, replay it under each policy asked for, print the table,
and write the dumps and plots. The click command in cli/admin.py only hands its options here.

With several policies, --dump and --plot write one file each, the policy's name before the
suffix: `--policy easy,conservative --dump out.csv` writes out-easy.csv and
out-conservative.csv.
"""

from __future__ import annotations

import os
import time

from ..errors import InvalidRequest
from . import ENGINES, POLICIES, SCHEDULER_POLICIES, replay, replay_projected, report, swf


def policies(text: str, engine: str) -> list[str]:
    """'easy,conservative' -> ['easy', 'conservative'], or a one-line error."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise InvalidRequest("no policy given (choose from " + ", ".join(POLICIES) + ")")
    for name in names:
        if name not in POLICIES:
            raise InvalidRequest(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})")
        if engine == "scheduler" and name not in SCHEDULER_POLICIES:
            raise InvalidRequest(f"--engine scheduler replays {', '.join(SCHEDULER_POLICIES)} "
                                 f"only, not {name}")
    if engine not in ENGINES:
        raise InvalidRequest(f"unknown engine {engine!r} (choose from {', '.join(ENGINES)})")
    return names


def run(path: str, policy: str, engine: str = "fast", procs: int | None = None,
        dump: str | None = None, plot: str | None = None, echo=print,
        projections: bool = False) -> list:
    """The whole command; returns the summaries it printed."""
    names = policies(policy, engine)
    unplanned = [n for n in names if n in ("fcfs", "conservative")]
    if projections and unplanned:
        # fcfs plans nothing; conservative's own engine compresses its reservations in place,
        # which the policy engine's plan (re-made every pass) does not reproduce
        raise InvalidRequest(f"--projections: not for {', '.join(unplanned)} (the policy "
                             "engine's policies only)")
    t = time.perf_counter()
    trace = swf.read(path, procs)
    read_s = time.perf_counter() - t
    if not len(trace):
        raise InvalidRequest(f"{path}: no job to replay ({trace.skipped} skipped)")
    summaries, accuracy = [], []
    for name in names:
        t = time.perf_counter()
        if projections:
            start, projected = replay_projected(trace, name)
            accuracy.append(report.projection_accuracy(trace, name, start, projected))
        else:
            start = replay(trace, name, engine)
        summaries.append(report.summarize(trace, name, start, time.perf_counter() - t))
        if dump:
            _write(report.write_csv, _per_policy(dump, name, len(names)), trace, start)
        if plot:
            from . import plot as png
            _write(png.draw, _per_policy(plot, name, len(names)), trace, start)
    echo(report.table(summaries))
    echo(f"({trace.name}: {trace.machine} processors, read in {read_s:.2f} s; "
         f"wall = replay only)")
    if accuracy:
        echo(report.accuracy_table(accuracy))
    return summaries


def _write(writer, path: str, trace, start) -> None:
    try:
        writer(path, trace, start)
    except OSError as e:
        raise InvalidRequest(f"cannot write {path}: {e.strerror or e}") from None


def _per_policy(path: str, policy: str, count: int) -> str:
    if count == 1:
        return path
    root, ext = os.path.splitext(path)
    return f"{root}-{policy}{ext}"


def run_sacct(path: str, conf: str, policy: str = "conf", dump: str | None = None,
              plot: str | None = None, echo=print, warn=print) -> list:
    """`simulate --from-sacct FILE --conf slurm.conf`: a lab's own sacct history replayed on the
    conf's cluster through the daemon's scheduler (sched_engine.replay_jobs), one replay per
    policy (conf: the file's own SchedulerType); returns the summaries it printed."""
    from .. import config
    from . import conf_cluster, sacct, sched_engine

    names = [p.strip() for p in policy.split(",") if p.strip()]
    bad = [p for p in names if p not in conf_cluster.POLICIES] or ([] if names else ["(none)"])
    if bad:
        raise InvalidRequest(f"--from-sacct replays policies {', '.join(conf_cluster.POLICIES)}, "
                             f"not {', '.join(bad)}")
    cfg = config.load(conf)
    history = sacct.read(path)
    for line in conf_cluster.unmodelled(cfg) + conf_cluster.history_warnings(history, cfg):
        warn(f"pyslurm-lite: warning: {line}")
    summaries = []
    for name in names:
        cluster = conf_cluster.load(cfg, name)
        jobs, refused = _admit(history, cluster)
        t = time.perf_counter()
        outcome = sched_engine.replay_jobs(jobs, cluster)
        trace, start = _as_trace(history, cluster, jobs, outcome, len(refused))
        summaries.append(report.summarize(trace, name, start, time.perf_counter() - t))
        if dump:
            _write(report.write_csv, _per_policy(dump, name, len(names)), trace, start)
        if plot and len(trace):
            from . import plot as png
            _write(png.draw, _per_policy(plot, name, len(names)), trace, start)
    echo(report.table(summaries))
    echo(f"({trace.name}: {len(cfg.nodes)} nodes, {cluster.cpus} CPUs from {cfg.path}; "
         f"{len(history.records) + history.never_started + history.still_running} jobs read)")
    echo(_skipped_line(history, refused, outcome, jobs))
    return summaries


def _admit(history, cluster) -> tuple[list, dict]:
    """The records this cluster can run, as SimJobs; the others by reason (job ids)."""
    from .conf_cluster import limit_of, partition_of, refusal
    from .sched_engine import SimJob

    jobs, refused = [], {}
    for r in history.records:
        part = partition_of(r, cluster.cfg)
        limit = limit_of(r, cluster.cfg, part) if part else -1
        why = refusal(r, cluster, part, limit)
        if why:
            refused.setdefault(why, []).append(r.job_id)
        else:
            jobs.append(SimJob(r, part, limit))
    return jobs, refused


def _as_trace(history, cluster, jobs, outcome, refused: int):
    """The jobs that started, as the Trace report.py and plot.py read (ids: sacct's JobIDs)."""
    ran = [k for k in range(len(jobs)) if k in outcome.start]
    trace = swf.Trace(name=os.path.basename(history.name), machine=cluster.cpus,
                      ids=[jobs[k].record.job_id for k in ran],
                      submit=[jobs[k].record.submit for k in ran],
                      run=[jobs[k].run for k in ran],
                      procs=[jobs[k].record.cpus for k in ran],
                      estimate=[jobs[k].limit * 60 if jobs[k].limit >= 0 else jobs[k].run
                                for k in ran],
                      skipped=history.never_started + history.still_running + refused
                      + len(outcome.never))
    return trace, [outcome.start[k] for k in ran]


SHOWN_IDS = 5  # job ids named per skip reason


def _skipped_line(history, refused: dict, outcome, jobs) -> str:
    parts = [f"{n} {what}" for n, what in ((history.never_started, "never started"),
                                           (history.still_running, "still running")) if n]
    for why, ids in sorted(refused.items()):
        parts.append(f"{len(ids)} {why} ({_ids(ids)})")
    stuck: dict[str, list] = {}
    for k, why in sorted(outcome.never.items()):
        stuck.setdefault(why, []).append(jobs[k].record.job_id)
    for why, ids in sorted(stuck.items()):
        parts.append(f"{len(ids)} never started in the replay, Reason={why} ({_ids(ids)})")
    return "skipped: " + ("; ".join(parts) or "none")


def _ids(ids: list) -> str:
    more = len(ids) - SHOWN_IDS
    return ",".join(ids[:SHOWN_IDS]) + (f",... {more} more" if more > 0 else "")
