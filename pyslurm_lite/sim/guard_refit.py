"""The starvation guard's factor, re-fitted online on the cluster's own recent jobs (Refit in
sched/policy.py): the simulator's engines and the controller call the same functions.

At each fit, the jobs of the window are replayed on an empty machine of the cluster's size:
  * the jobs submitted in the last `window` seconds, and the older ones that had not started
    when the window opened (submitted, for the replay, when it opens; their waits still count
    from their real submit, so a backlog weighs as it did);
  * a job that has ended runs its real time; any other its estimate: only what is known now.
Each candidate factor is replayed with the guard's waits seeded from the live ones (the bound is
the live bound's scale), EASY once; the lowest mean bounded slowdown wins among the candidates
whose maximum wait is at most `slack` times EASY's; the first candidate when none is.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import replace

from ..sched.policy import POLICIES, Policy, Refit
from . import report
from .swf import Trace

MIN_JOBS = 50  # fewer jobs in a window say nothing: the factor stays
LOOKBACK = 120 * 86400.0  # how far before the window a job still waiting is looked for


def next_fit(due: float, now: float, refit: Refit) -> float:
    """The fit after one due at `due` and done at `now`: whole periods later."""
    while due <= now:
        due += refit.period
    return due


def window_jobs(trace: Trace, start: list, arrived: int, now: float, refit: Refit) -> Trace:
    """The window's jobs of a replay in progress (jobs before `arrived` have been submitted;
    start[j] is None until j starts), as a Trace to replay, its `waited_from` the real submits."""
    opens = now - refit.window
    submit = trace.submit
    first, older = bisect_left(submit, opens), bisect_left(submit, opens - LOOKBACK)
    jobs = [j for j in range(older, first) if start[j] is None or start[j] >= opens]
    jobs += range(first, arrived)
    ended = [start[j] is not None and start[j] + trace.run[j] <= now for j in jobs]
    return window_trace(trace.machine, opens,
                        [(submit[j], trace.run[j] if e else trace.estimate[j], trace.procs[j],
                          trace.estimate[j], trace.user[j]) for j, e in zip(jobs, ended)])


def window_trace(machine: int, opens: float, jobs: list) -> Trace:
    """jobs: (submit, run time known now, procs, estimate, user), by submit."""
    t = Trace(name="window", machine=machine)
    t.waited_from = [j[0] for j in jobs]
    for submit, run, procs, estimate, user in jobs:
        t.ids.append(len(t.ids) + 1)
        t.submit.append(max(submit, opens))
        t.run.append(run)
        t.procs.append(procs)
        t.estimate.append(estimate)
        t.user.append(user)
    return t


def choose_factor(window: Trace, policy: Policy, seed: tuple[int, float], current: float) -> float:
    """The factor for the next period (module docstring); `current` when the window is too
    small to say. seed: (count, total) of the live guard's waits."""
    from .policy_engine import _PolicyReplay  # the engine calls back here

    refit = policy.refit
    if len(window) < MIN_JOBS:
        return current
    easy = _summary(window, _PolicyReplay(window, POLICIES["easy"]).replay())
    best = None
    for factor in refit.factors:
        # the live policy with this factor: the same score, predictions, window and floor
        cand = replace(policy, refit=None, guard=replace(policy.guard, factor=factor))
        r = _PolicyReplay(window, cand)
        r.scale.seed(*seed)
        s = _summary(window, r.replay())
        if factor != refit.factors[0] and s.max_wait > refit.slack * easy.max_wait:
            continue
        if best is None or s.mean_bsld < best[1]:
            best = (factor, s.mean_bsld)
    return best[0]


def _summary(window: Trace, start: list):
    """Waits from the real submits."""
    real = Trace(name=window.name, machine=window.machine, submit=window.waited_from,
                 run=window.run, procs=window.procs)
    return report.summarize(real, "", start)
