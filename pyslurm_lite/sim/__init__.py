"""Trace replay: run a Standard Workload Format log through a scheduling policy on a virtual
clock and measure what users would have waited (`pyslurm-lite simulate`).

    TRACE.swf[.gz] ──swf.read()──▶ Trace ──replay(trace, policy, engine)──▶ start times
                                                                             │
        report.summarize() → table;  report.write_csv() → --dump;  plot.draw() → --plot

Engines: `fast` (engine.py for fcfs and easy, conservative.py) counts processors with plain lists
and replays a 200,000-job log in seconds; `scheduler` (sched_engine.py) drives the daemon's own
`sched.schedule()` one pass per event instant, slowly, to check the fast engine against.

Glossary: *service order* is (submit time, file order); a job's *estimate* is its requested
time and it is killed when that runs out; the *shadow time* is when the first blocked job could
start if running jobs end at their estimates; a *reservation* is the slot a job is promised.
This package uses `sched` and `model` only; nothing here does I/O but swf.read, the dump and
the plot.
"""

from __future__ import annotations

from . import conservative as _conservative
from . import engine as _engine
from .swf import Trace

POLICIES = {  # name -> fast engine; every one returns start times in service order
    "fcfs": _engine.fcfs,
    "easy": _engine.easy,
    "conservative": _conservative.conservative,
}
ENGINES = ("fast", "scheduler")
SCHEDULER_POLICIES = ("fcfs", "easy")  # what `--engine scheduler` can replay


def replay(trace: Trace, policy: str, engine: str = "fast") -> list:
    """Start time of every job of `trace` (in its service order) under `policy`."""
    if engine == "scheduler":
        from . import sched_engine  # imports the daemon's scheduler: only when asked for

        return sched_engine.replay(trace, policy)
    return POLICIES[policy](trace)
