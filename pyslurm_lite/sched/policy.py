"""Scheduling policies beyond EASY: the pure parts that the daemon and the simulator share.

A policy is three independent choices (`Policy`); docs/scheduling-policies.md has the formulas,
where each comes from, and what they measure on the archive's traces:

  order      which pending job is first: the priority (multifactor in the daemon, the service
             order in a trace), or a score, lowest first (`Score`):
                 score = a * log10(r) * n + b * log10(s)
             r = requested time (s), n = processors, s = submit time (s, from the cluster's
             first job). F1 (Carastan-Santos and de Camargo, SC'17) is a = 1, b = 870; `LEARNED`
             is the member of this family that bench/bench_policies.py --fit chooses.
  predict    EASY++ (Tsafrir, Etsion and Feitelson, TPDS 2007): backfilling plans with a
             *prediction* of each job's run time, the mean of its user's last two completed
             run times (fixed when the job is first planned), never above the user's estimate,
             which stays the kill limit. A running job that outlives its prediction is planned
             to the next step of `LADDER` above the time it has run (capped at its estimate),
             so the plan is never in the past.
  guard      a job that has waited at least the bound is *starved*, and stays so: starved jobs
             go first, in submit order, and each that cannot start gets a reservation that no
             later job may delay (conservative among the starved); while one waits, plans use
             estimates, not predictions. The bound follows the site's own waits:
                 bound = max(factor * mean wait of the jobs started so far, floor)
             (of the last `window` jobs with a window).
  refit      the guard's factor is not fixed: every `period` the policy replays the last
             `window` of the cluster's own jobs (sim/guard_refit.py) under EASY and under each
             candidate factor, and keeps the factor with the lowest mean bounded slowdown whose
             maximum wait stays within `slack` of EASY's on the same jobs: a train/test split
             by time, done online, so the bound follows the site as its load changes.

Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field

# seconds: the steps a prediction moves up through when a job outlives it (EASY++'s correction)
LADDER = (60, 300, 900, 1800, 3600, 7200, 18000, 36000, 72000, 180000, 360000, 720000)


@dataclass(frozen=True)
class Score:
    """A learned priority function; lower scores run first."""

    a: float = 1.0  # weight of log10(requested time) * processors
    b: float = 0.0  # weight of log10(submit time)

    def static(self, requested: float, procs: int, submit: float) -> float:
        """The score; it does not change while the job waits."""
        return (self.a * math.log10(max(requested, 1)) * procs
                + self.b * math.log10(max(submit, 1)))


F1 = Score(a=1.0, b=870.0)


@dataclass(frozen=True)
class Guard:
    """The starvation bound: `factor` times the mean wait of the last `window` jobs started
    (0: of every job started so far), at least `floor` seconds."""

    factor: float = 0.0  # 0: no guard
    window: int = 0
    floor: float = 0.0


DAY = 86400.0


@dataclass(frozen=True)
class Refit:
    """How the guard's factor is re-fitted on the cluster's own recent jobs (sim/guard_refit)."""

    period: float = 7 * DAY  # seconds between two fits
    window: float = 56 * DAY  # the jobs submitted this long before a fit, and those still waiting
    factors: tuple = (10.0, 20.0, 40.0, 80.0, 160.0, math.inf)  # the first is the fallback
    slack: float = 1.1  # a candidate's max wait may be this many times EASY's


@dataclass(frozen=True)
class Policy:
    name: str
    score: Score | None = None  # None: priority / service order
    predict: bool = False  # EASY++: plan with predicted run times
    guard: Guard = field(default_factory=Guard)
    refit: Refit | None = None  # None: the guard's factor stays guard.factor


class WaitScale:
    """The waits that the starvation bound follows: a count and a sum over every job started so
    far, or the last `window` waits themselves."""

    def __init__(self, guard: Guard):
        self.guard = guard
        self.waits: deque | None = deque(maxlen=guard.window) if guard.window else None
        self.count = 0
        self.total = 0.0

    def started(self, wait: float) -> None:
        if self.waits is not None:
            if len(self.waits) == self.waits.maxlen:
                self.total -= self.waits[0]
                self.count -= 1
            self.waits.append(wait)
        self.count += 1
        self.total += wait

    def seed(self, count: int, total: float) -> None:
        """Every job started before (window 0: the controller's database, in one query)."""
        self.count += count
        self.total += total

    def refitted(self, factor: float) -> None:
        """A new factor (Refit); the waits seen so far stay."""
        self.guard = Guard(factor=factor, window=self.guard.window, floor=self.guard.floor)

    def bound(self) -> float:
        g = self.guard
        if not g.factor or g.factor == math.inf:
            return math.inf
        mean = self.total / self.count if self.count else 0.0
        return max(g.factor * mean, g.floor)


class History:
    """EASY++'s per-user history: the run times of each user's last two completed jobs."""

    def __init__(self):
        self.last: dict = {}

    def completed(self, user, run: float) -> None:
        if user is None or user == -1 or user == "":
            return  # unknown users (SWF's -1) share no history
        prev = self.last.get(user)
        self.last[user] = (prev[1], run) if prev else (run, run)

    def predict(self, user, estimate: float) -> float:
        prev = self.last.get(user)
        if prev is None:
            return estimate
        return min(estimate, max((prev[0] + prev[1]) / 2, 1))


def corrected(elapsed: float, estimate: float) -> float:
    """A running job has outlived its prediction: the next ladder step above what it has run,
    never beyond its estimate (the kill limit)."""
    k = bisect_right(LADDER, elapsed)
    step = LADDER[k] if k < len(LADDER) else elapsed * 2
    return min(step, estimate)


# never starved sooner: on a cluster that has not been busy yet the mean wait is about 0, and
# a bound of 0 would turn every short wait into a reservation (conservative, in submit order)
GUARD_FLOOR = 600.0
# The starvation guard and the learned score: fitted by bench/bench_policies.py --fit on
# LANL-CM5 and the two Lublin workloads (docs/scheduling-policies.md): a job that has waited ten
# times the mean wait of every job started so far gets a reservation; jobs are ordered by
# log10(requested time) * processors (the fit prefers b = 0 to F1's 870). `learned` then
# re-fits the factor weekly on the cluster's own last eight weeks (REFIT).
GUARD = Guard(factor=10.0, floor=GUARD_FLOOR)
LEARNED = Score(a=1.0)
REFIT = Refit()

POLICIES = {
    "easy": Policy("easy"),
    "easy++": Policy("easy++", predict=True),
    "f1": Policy("f1", score=F1),
    "f1-guard": Policy("f1-guard", score=F1, guard=GUARD),
    "learned": Policy("learned", score=LEARNED, guard=GUARD, refit=REFIT),
}
