"""The fast engines against independent ones, job by job, on real traces.

* fcfs and easy: the fast engine and `--engine scheduler` (the daemon's own sched.schedule(),
  one pass per event instant) must give identical start times. When they differ, the textbook
  rules in sim/engine.py say which one is wrong; the assertion stays either way.
* conservative: the fast engine (profile of breakpoints, skipping jobs that cannot move) against
  `reference_conservative` below, a deliberately plain quadratic implementation of the same
  rules that recomputes free processors from the list of bookings every time.
"""

from __future__ import annotations

import os
from heapq import heappop, heappush

import pytest

from pyslurm_lite.sim import POLICIES, sched_engine, swf

# Slices of the Parallel Workloads Archive traces in ../shared/traces (their headers and the
# records these tests use, as they are there; tests/data/traces/README.md says which), so the
# tests run on a clone without ../shared.
TRACES = os.path.join(os.path.dirname(__file__), "..", "data", "traces")


def first_jobs(name: str, n: int, skip: int = 0) -> swf.Trace:
    t = swf.read(os.path.join(TRACES, name))
    for column in ("ids", "submit", "run", "procs", "estimate"):
        setattr(t, column, getattr(t, column)[skip:skip + n])
    return t


def first_difference(a: list, b: list, t: swf.Trace, names=("fast", "scheduler")) -> str:
    for j, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return (f"{sum(u != v for u, v in zip(a, b))} jobs differ; first: job {t.ids[j]} "
                    f"(submit {t.submit[j]}, {t.procs[j]} procs, estimate {t.estimate[j]}, "
                    f"user {t.user[j]}): {names[0]} {x}, {names[1]} {y}")
    return ""


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
@pytest.mark.parametrize("name, n", [("KTH-SP2-1996-2.1-cln.swf.gz", 3000),
                                     ("lublin_256.swf.gz", 1500)])
def test_fast_engine_matches_the_scheduler(name, n, policy):
    t = first_jobs(name, n)
    fast = POLICIES[policy](t)
    through_sched = sched_engine.replay(t, policy)
    assert fast == through_sched, first_difference(fast, through_sched, t)


@pytest.mark.parametrize("seconds", [7, 31, 62, 123, 15362, 43200])
def test_minutes_never_overshoot(seconds):
    assert 31 / 60 * 60 > 31  # why minutes() exists: a tie with the shadow time would be lost
    back = sched_engine.minutes(seconds) * 60
    assert back <= seconds and seconds - back < 1e-9


def reference_conservative(t: swf.Trace) -> list:
    """Conservative backfilling with nothing clever: bookings are (start, end, procs); free
    processors at an instant are summed over them; a job's earliest slot is the first candidate
    (now, or any booking's end) whose window has enough free at every booking start inside it."""
    n, machine, inf = len(t), t.machine, float("inf")
    start, book, waiting, ends = [None] * n, {}, [], []

    def free_at(x, skip):
        return machine - sum(p for k, (s, e, p) in book.items() if k != skip and s <= x < e)

    def earliest(now, d, p, skip=None):
        for c in sorted({now} | {e for k, (s, e, _) in book.items() if k != skip and e > now}):
            points = [c] + [s for k, (s, _, _) in book.items() if k != skip and c < s < c + d]
            if all(free_at(x, skip) >= p for x in points):
                return c

    i = 0
    while i < n or ends or waiting:
        now = min(t.submit[i] if i < n else inf, ends[0][0] if ends else inf,
                  *(book[j][0] for j in waiting))
        early = False
        while ends and ends[0][0] == now:  # ends ...
            j = heappop(ends)[1]
            early |= now < book.pop(j)[1]
        if early:  # ... with the compression an early end calls for ...
            for j in waiting:
                s = earliest(now, t.estimate[j], t.procs[j], skip=j)
                assert s <= book[j][0]
                book[j] = (s, s + t.estimate[j], t.procs[j])
        while i < n and t.submit[i] == now:  # ... then arrivals ...
            s = earliest(now, t.estimate[i], t.procs[i])
            book[i] = (s, s + t.estimate[i], t.procs[i])
            waiting.append(i)
            i += 1
        for j in [j for j in waiting if book[j][0] == now]:  # ... then what is due starts
            waiting.remove(j)
            start[j] = now
            heappush(ends, (now + t.run[j], j))
    return start


@pytest.mark.parametrize("name, n, skip", [("KTH-SP2-1996-2.1-cln.swf.gz", 1200, 0),
                                           ("CTC-SP2-1996-3.1-cln.swf.gz", 400, 0),
                                           ("lublin_256.swf.gz", 500, 0),
                                           ("HPC2N-2002-2.2-cln.swf.gz", 150, 0)])
def test_conservative_matches_the_reference(name, n, skip):
    t = first_jobs(name, n, skip)
    fast, reference = POLICIES["conservative"](t), reference_conservative(t)
    assert fast == reference, first_difference(fast, reference, t, ("fast", "reference"))


def random_trace(seed: int, jobs: int = 60) -> swf.Trace:
    """Many ties (submits, ends and estimates on a coarse grid); jobs that end early, on time,
    or are killed at their estimate."""
    import random

    rng = random.Random(seed)
    lines = ["; MaxProcs: 16"]
    submit = 0
    for job in range(1, jobs + 1):
        submit += rng.choice([0, 0, 5, 10, 30])
        estimate = rng.choice([10, 20, 30, 60, 100])
        run = rng.choice([estimate, estimate // 2, 5, estimate * 2])
        procs = rng.choice([1, 2, 4, 8, 16, 3])
        lines.append(f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {estimate} "
                     "-1 1 1 1 -1 1 -1 -1 -1")
    return swf.parse("\n".join(lines) + "\n", f"random{seed}")


@pytest.mark.parametrize("seed", range(40))
def test_conservative_matches_the_reference_on_random_traces(seed):
    t = random_trace(seed)
    fast, reference = POLICIES["conservative"](t), reference_conservative(t)
    assert fast == reference, first_difference(fast, reference, t, ("fast", "reference"))


@pytest.mark.parametrize("policy", ["fcfs", "easy"])
@pytest.mark.parametrize("seed", range(40))
def test_fast_engine_matches_the_scheduler_on_random_traces(seed, policy):
    t = random_trace(seed)
    fast, through_sched = POLICIES[policy](t), sched_engine.replay(t, policy)
    assert fast == through_sched, first_difference(fast, through_sched, t)
