"""The pure parts of sched/policy.py on numbers small enough to check by hand: EASY++'s History
and correction ladder, the guard's WaitScale, F1's static score, and the policy names."""

from __future__ import annotations

import math

import pytest

from pyslurm_lite.sched.policy import (F1, LADDER, POLICIES, Guard, History, Score, WaitScale,
                                       corrected)


# ---- History: EASY++'s prediction ---------------------------------------------------------------

def test_prediction_is_the_mean_of_the_users_last_two_runs():
    h = History()
    h.completed(7, 100)
    assert h.predict(7, 1000) == 100  # one run so far: it is its own mean
    h.completed(7, 300)
    assert h.predict(7, 1000) == 200
    h.completed(7, 500)  # the first run (100) falls out: the last two are 300 and 500
    assert h.predict(7, 1000) == 400


def test_prediction_never_above_the_estimate():
    h = History()
    h.completed(7, 5000)
    h.completed(7, 7000)
    assert h.predict(7, 3600) == 3600  # the estimate is the kill limit


def test_users_do_not_share_history():
    h = History()
    h.completed(7, 100)
    assert h.predict(8, 1000) == 1000  # user 8 has no history: the estimate


def test_unknown_user_has_no_history():
    h = History()
    h.completed(-1, 100)
    h.completed(None, 100)
    assert h.predict(-1, 1000) == 1000
    assert h.predict(None, 1000) == 1000


def test_prediction_at_least_one_second():
    h = History()
    h.completed(7, 0)
    h.completed(7, 0)
    assert h.predict(7, 1000) == 1


# ---- corrected: the running job that outlived its prediction ------------------------------------

@pytest.mark.parametrize("elapsed, estimate, expected", [
    (0, 10**7, 60),  # the first step above 0
    (59, 10**7, 60),
    (60, 10**7, 300),  # strictly above: at 60 s the plan must not be "now"
    (61, 10**7, 300),
    (1000, 10**7, 1800),
    (7200, 10**7, 18000),
    (1000, 1200, 1200),  # capped at the estimate (the kill limit)
    (720000, 10**7, 1440000),  # beyond the ladder: twice what it has run
    (800000, 10**7, 1600000),
    (800000, 900000, 900000),  # ... still capped
])
def test_corrected_is_the_next_ladder_step_capped_at_the_estimate(elapsed, estimate, expected):
    assert corrected(elapsed, estimate) == expected


def test_ladder_is_increasing():
    assert list(LADDER) == sorted(set(LADDER))
    assert LADDER[0] == 60 and LADDER[-1] == 720000


# ---- WaitScale: the starvation bound ------------------------------------------------------------

def test_no_factor_no_bound():
    scale = WaitScale(Guard(factor=0, floor=100))
    for w in (10, 20):
        scale.started(w)
    assert scale.bound() == math.inf


def test_bound_is_factor_times_the_mean_of_every_wait():
    scale = WaitScale(Guard(factor=10))
    assert scale.bound() == 0  # nothing started yet: mean 0, no floor
    for w in (10, 20, 60):
        scale.started(w)
    assert scale.bound() == pytest.approx(10 * 30)


def test_window_keeps_the_last_n_waits():
    scale = WaitScale(Guard(factor=2, window=2))
    for w in (1000, 10, 30):  # 1000 falls out of the window
        scale.started(w)
    assert scale.bound() == pytest.approx(2 * 20)
    scale.started(50)  # 10 falls out
    assert scale.bound() == pytest.approx(2 * 40)


def test_seeded_waits_count_in_the_mean():
    # the controller seeds the jobs started before it (its database): 4 jobs, 400 s in all
    scale = WaitScale(Guard(factor=2))
    scale.seed(4, 400)
    assert scale.bound() == pytest.approx(2 * 100)
    scale.started(600)
    assert scale.bound() == pytest.approx(2 * 1000 / 5)


def test_floor():
    scale = WaitScale(Guard(factor=3, floor=500))
    assert scale.bound() == 500
    scale.started(100)
    assert scale.bound() == 500  # 3 * 100 < 500
    scale.started(500)
    assert scale.bound() == pytest.approx(900)  # 3 * 300 > 500


# ---- Score ---------------------------------------------------------------------------------------

def test_f1_on_a_worked_number():
    # F1 = log10(r) * n + 870 * log10(s): r = 1000 s, n = 4, s = 100 s -> 3 * 4 + 870 * 2 = 1752
    assert F1.static(1000, 4, 100) == pytest.approx(1752)
    assert F1.static(10, 2, 10**6) == pytest.approx(1 * 2 + 870 * 6)


def test_score_floors_times_at_one_second():
    # log10 of 0 would be -inf: a job submitted at t=0 or asking 0 s scores as at 1 s
    assert Score(a=1, b=1).static(0, 8, 0) == 0


def test_lower_score_for_small_short_job():
    learned = POLICIES["learned"].score
    assert learned.static(60, 1, 0) < learned.static(3600, 64, 0)


def test_policy_names():
    assert list(POLICIES) == ["easy", "easy++", "f1", "f1-guard", "learned"]
    assert all(p.name == name for name, p in POLICIES.items())
    assert POLICIES["easy"].score is None and not POLICIES["easy"].predict
    assert not POLICIES["easy"].guard.factor
    assert POLICIES["easy++"].predict and POLICIES["easy++"].score is None
    assert POLICIES["f1"].score == F1 and not POLICIES["f1"].guard.factor
    assert POLICIES["f1-guard"].score == F1 and POLICIES["f1-guard"].guard.factor
    assert POLICIES["learned"].guard.factor and POLICIES["learned"].score is not None
