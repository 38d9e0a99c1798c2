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

from functools import partial

from ..sched.policy import POLICIES as _SCHED_POLICIES
from . import conservative as _conservative
from . import engine as _engine
from . import policy_engine as _policy_engine
from .swf import Trace

POLICIES = {  # name -> fast engine; every one returns start times in service order
    "fcfs": _engine.fcfs,
    "easy": _engine.easy,
    "conservative": _conservative.conservative,
    **{name: partial(_policy_engine.replay, policy=p)
       for name, p in _SCHED_POLICIES.items() if name != "easy"},
}
DESCRIPTIONS = {  # what --list-policies prints after each name
    "fcfs": "first come, first served: the queue's head blocks everyone",
    "easy": "EASY backfilling (Slurm's sched/backfill): the first blocked job gets a reservation",
    "conservative": "conservative backfilling: every waiting job gets a reservation",
    "easy++": "EASY with run times predicted from each user's last two jobs (Tsafrir et al.)",
    "f1": "EASY in the order of F1 = log10(r)*n + 870*log10(s) (Carastan-Santos, de Camargo)",
    "f1-guard": "f1 with the starvation guard",
    "learned": "the fitted score with the starvation guard, its factor re-fitted weekly on the last 8 weeks (docs/scheduling-policies.md)",
}
ENGINES = ("fast", "scheduler")
# what `--engine scheduler` can replay: all but conservative, whose fast engine compresses
# reservations in place where the scheduler re-plans them every pass
SCHEDULER_POLICIES = ("fcfs", "easy", *(p for p in _SCHED_POLICIES if p != "easy"))


def replay_projected(trace: Trace, policy: str) -> tuple[list, list]:
    """(start times, each job's projected start at its submit) under a policy of
    sched.policy.POLICIES (easy included: the policy engine replays it exactly as engine.easy)."""
    return _policy_engine.replay_projected(trace, _SCHED_POLICIES[policy])


def replay(trace: Trace, policy: str, engine: str = "fast") -> list:
    """Start time of every job of `trace` (in its service order) under `policy`."""
    if engine == "scheduler":
        from . import sched_engine  # imports the daemon's scheduler: only when asked for

        return sched_engine.replay(trace, policy)
    return POLICIES[policy](trace)
