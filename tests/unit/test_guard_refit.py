"""The guard's online re-fit (sim/guard_refit.py): which jobs a fit replays, and what it picks."""

from __future__ import annotations

import math

from pyslurm_lite.sched.policy import LEARNED, POLICIES, Guard, Policy, Refit
from pyslurm_lite.sim import guard_refit, policy_engine, report, swf
from test_policy_engine import random_trace

REFIT = Refit(period=100, window=1000, factors=(2.0, 8.0, math.inf), slack=1.1)
POLICY = Policy("r", score=LEARNED, guard=Guard(factor=2, floor=120), refit=REFIT)


def test_window_takes_the_backlog_and_only_what_is_known_now():
    #            submit  run  procs  estimate
    jobs = [(100, 50, 1, 500),   # started before the window opened (at 1000): out
            (200, 50, 1, 500),   # still waiting when it opened: in, submitted at 1000 for the replay
            (1500, 50, 1, 500),  # in the window, ended by now (2000): its real run
            (1800, 50, 1, 500),  # in the window, running now: its estimate
            (1900, 50, 1, 500)]  # waiting now: its estimate
    t = swf.Trace(name="t", machine=4, ids=[1, 2, 3, 4, 5], submit=[j[0] for j in jobs],
                  run=[j[1] for j in jobs], procs=[j[2] for j in jobs],
                  estimate=[j[3] for j in jobs], user=[1] * 5)
    start = [150, 1200, 1600, 1990, None]
    w = guard_refit.window_jobs(t, start, arrived=5, now=2000, refit=REFIT)
    assert w.submit == [1000, 1500, 1800, 1900]
    assert w.waited_from == [200, 1500, 1800, 1900]
    assert w.run == [50, 50, 500, 500]


def summary(window, factor):
    cand = Policy("c", score=LEARNED, guard=Guard(factor=factor, floor=120))
    r = policy_engine._PolicyReplay(window, cand)
    r.scale.seed(10, 1000.0)
    real = swf.Trace(name="", machine=window.machine, submit=window.waited_from,
                     run=window.run, procs=window.procs)
    return report.summarize(real, "", r.replay())


def as_window(t):
    return guard_refit.window_trace(t.machine, 0, list(zip(t.submit, t.run, t.procs,
                                                           t.estimate, t.user)))


def test_choice_is_the_lowest_slowdown_within_the_slack_of_easys_max_wait():
    picked = set()
    for seed in range(4):
        w = as_window(random_trace(seed))
        easy = report.summarize(swf.Trace(name="", machine=w.machine, submit=w.waited_from,
                                          run=w.run, procs=w.procs),
                                "", policy_engine.replay(w, POLICIES["easy"]))
        sums = {f: summary(w, f) for f in REFIT.factors}
        allowed = [f for f in REFIT.factors
                   if f == REFIT.factors[0] or sums[f].max_wait <= 1.1 * easy.max_wait]
        expected = min(allowed, key=lambda f: sums[f].mean_bsld)
        got = guard_refit.choose_factor(w, POLICY, (10, 1000.0), current=5.0)
        assert got == expected
        picked.add(got)
    assert len(picked) >= 2, picked  # the traces exercise more than one answer


def test_nothing_within_the_slack_keeps_the_first_candidate():
    strict = Policy("r", score=LEARNED, guard=Guard(factor=2, floor=120),
                    refit=Refit(factors=(2.0, 8.0, math.inf), slack=0.0))
    assert guard_refit.choose_factor(as_window(random_trace(0)), strict, (10, 1000.0), 5.0) == 2.0


def test_a_window_too_small_keeps_the_current_factor():
    w = as_window(random_trace(0, jobs=guard_refit.MIN_JOBS - 1))
    assert guard_refit.choose_factor(w, POLICY, (10, 1000.0), current=5.0) == 5.0
