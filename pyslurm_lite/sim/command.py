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
from . import ENGINES, POLICIES, SCHEDULER_POLICIES, replay, report, swf


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
        dump: str | None = None, plot: str | None = None, echo=print) -> list:
    """The whole command; returns the summaries it printed."""
    names = policies(policy, engine)
    t = time.perf_counter()
    trace = swf.read(path, procs)
    read_s = time.perf_counter() - t
    if not len(trace):
        raise InvalidRequest(f"{path}: no job to replay ({trace.skipped} skipped)")
    summaries = []
    for name in names:
        t = time.perf_counter()
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
