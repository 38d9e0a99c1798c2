"""sim/policy_engine.py (the replay engine for sched/policy.py's policies) against independent
ones, job by job, and on worked examples whose schedules are explained by hand.

* easy through the policy engine must equal engine.easy (textbook EASY) job by job;
* every policy of sched.policy.POLICIES through the policy engine must equal the same policy
  through the daemon's own sched.schedule() (sched_engine.replay, which plays the controller's
  part: waits, starved jobs, history), on traces where users, predictions and the guard matter;
* worked examples: the learned order, the guard's reservations, EASY++'s predictions and their
  correction, projected starts; report.projection_accuracy by hand.
"""

from __future__ import annotations

import math
import random

import pytest

from pyslurm_lite.sched.policy import F1, LEARNED, POLICIES, Guard, Policy, Refit
from pyslurm_lite.sim import engine, guard_refit, policy_engine, report, sched_engine, swf
from test_sim_engines import first_difference


def J(job: int, submit: int, procs: int, estimate: int, run: int | None = None,
      user: int = -1) -> str:
    """One SWF line (run defaults to the estimate; user is field 12)."""
    run = estimate if run is None else run
    return (f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {estimate} -1 1 {user} 1 -1 1 "
            "-1 -1 -1")


def trace(*lines: str, procs: int = 10) -> swf.Trace:
    return swf.parse(f"; MaxProcs: {procs}\n" + "\n".join(lines) + "\n", "hand")


def by_id(t: swf.Trace, start: list) -> dict:
    return dict(zip(t.ids, start))


def random_trace(seed: int, jobs: int = 200) -> swf.Trace:
    """A small machine (queues form: waits run to hours), a few users (some unknown, -1), coarse
    grids (many ties), estimates mostly above run times (EASY++'s predictions and their
    corrections matter) and jobs killed at their estimate."""
    rng = random.Random(seed)
    machine = (16, 12, 24)[seed % 3]
    lines = [f"; MaxProcs: {machine}"]
    submit = 0
    for job in range(1, jobs + 1):
        submit += rng.choice([0, 0, 5, 10, 30, 60])
        estimate = rng.choice([60, 120, 300, 600, 1200])
        run = rng.choice([estimate, estimate // 2, estimate // 4, 30, 7, estimate * 2])
        procs = min(rng.choice([1, 2, 3, 4, 6, 8, 16]), machine)
        user = rng.choice([1, 2, 3, 4, -1])
        # ids far from 1..n: nothing may take a job's id for its position
        lines.append(f"{7000 + 3 * job} {submit} -1 {run} {procs} -1 -1 {procs} {estimate} "
                     f"-1 1 {user} 1 -1 1 -1 -1 -1")
    return swf.parse("\n".join(lines) + "\n", f"random{seed}")


SEEDS = range(5)


# ---- against independent engines ---------------------------------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_easy_through_the_policy_engine_is_textbook_easy(seed):
    t = random_trace(seed, jobs=400)
    ours, textbook = policy_engine.replay(t, POLICIES["easy"]), engine.easy(t)
    assert ours == textbook, first_difference(ours, textbook, t, ("policy engine", "engine.easy"))


def test_easy_on_the_worked_example_of_engine_py():
    # engine.py's docstring: A starts; B (8) is blocked, shadow 100, extra 2; C ends at the
    # shadow and D uses the extra: both start at 0; B at 100.
    t = trace(J(1, 0, 6, 100), J(2, 0, 8, 50), J(3, 0, 2, 100), J(4, 0, 2, 300))
    expected = {1: 0, 2: 100, 3: 0, 4: 0}
    assert by_id(t, policy_engine.replay(t, POLICIES["easy"])) == expected
    assert by_id(t, engine.easy(t)) == expected


class CountStarved(policy_engine._PolicyReplay):
    """The policy engine, remembering every job that was ever starved."""

    def _starve(self, now, arrived):
        super()._starve(now, arrived)
        self.ever = getattr(self, "ever", set()) | set(self.starved)


def starved_jobs(t: swf.Trace, policy: Policy) -> int:
    r = CountStarved(t, policy)
    r.replay()
    return len(getattr(r, "ever", ()))


def test_the_random_traces_starve_jobs():
    """The cross-check below means something only if the guard acts on its traces."""
    t = random_trace(0)
    assert starved_jobs(t, Policy("tight", score=F1, guard=Guard(factor=2))) > 100
    for name in ("learned", "f1-guard"):
        assert sum(starved_jobs(random_trace(seed), POLICIES[name]) for seed in SEEDS) > 20
    # ... and if predictions and the guard change schedules
    t = random_trace(1)
    easy, easypp = (policy_engine.replay(t, POLICIES[p]) for p in ("easy", "easy++"))
    f1, f1_guard = (policy_engine.replay(t, POLICIES[p]) for p in ("f1", "f1-guard"))
    assert sum(a != b for a, b in zip(easy, easypp)) > 50
    assert sum(a != b for a, b in zip(f1, f1_guard)) > 50


@pytest.mark.parametrize("name", list(POLICIES))
@pytest.mark.parametrize("seed", SEEDS)
def test_policy_engine_matches_the_scheduler(seed, name):
    t = random_trace(seed)
    fast, through_sched = policy_engine.replay(t, POLICIES[name]), sched_engine.replay(t, name)
    assert None not in fast
    assert fast == through_sched, first_difference(fast, through_sched, t,
                                                   ("policy engine", "scheduler"))


@pytest.mark.parametrize("name", ["easy", "easy++", "learned"])
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_projections_match_the_daemons(seed, name):
    """The accuracy figures measure the daemon's projection: sched/projection.py, asked at every
    arrival through sched.schedule(), gives each job the projection the replay engine does."""
    t = random_trace(seed)
    (_, through_sched), (_, fast) = (sched_engine.replay_projected(t, name),
                                     policy_engine.replay_projected(t, POLICIES[name]))
    waited = [j for j in range(len(t)) if fast[j] is not None and fast[j] > t.submit[j]]
    assert len(waited) > 20  # queues form: the projections are not all "now"
    assert fast == through_sched, first_difference(fast, through_sched, t,
                                                   ("policy engine", "scheduler"))


# Combinations no named policy has (the daemon's SchedulerParameters=sched_policy can still ask
# for them): predictions under a guard (plans fall back to estimates while a job is starved), a
# window and a floor; and the guard re-fitted online, on windows that fit a random trace's hour.
FAST_REFIT = Refit(period=600, window=1200, factors=(2.0, 8.0, math.inf), slack=1.1)
COMBINED = [Policy("learned-refit", score=LEARNED, guard=Guard(factor=2, floor=120),
                   refit=FAST_REFIT),
            Policy("easy++-guard", predict=True, guard=Guard(factor=2)),
            Policy("f1-window", score=F1, predict=True, guard=Guard(factor=3, window=20,
                                                                     floor=120))]


@pytest.mark.parametrize("policy", COMBINED, ids=[p.name for p in COMBINED])
@pytest.mark.parametrize("seed", SEEDS[:3])
def test_policy_engine_matches_the_scheduler_on_combinations(seed, policy, monkeypatch):
    t = random_trace(seed)
    assert starved_jobs(t, policy) > 10
    # sched_engine.replay takes a name of sched.policy.POLICIES
    monkeypatch.setitem(sched_engine.POLICIES, policy.name, policy)
    fast, through_sched = policy_engine.replay(t, policy), sched_engine.replay(t, policy.name)
    assert fast == through_sched, first_difference(fast, through_sched, t,
                                                   ("policy engine", "scheduler"))


def test_refits_change_the_factor_on_the_random_traces(monkeypatch):
    """The combination above is a real test of the re-fit: fits happen and move the factor."""
    chosen = []
    real = guard_refit.choose_factor

    def spy(window, policy, seed, current):
        chosen.append(real(window, policy, seed, current))
        return chosen[-1]

    monkeypatch.setattr(guard_refit, "choose_factor", spy)
    for seed in SEEDS[:3]:
        policy_engine.replay(random_trace(seed), COMBINED[0])
    assert len(chosen) >= 6 and len(set(chosen)) >= 2, chosen


# ---- worked examples ----------------------------------------------------------------------------

T = 10**6  # submit times near 1e6: F1's 870*log10(s) then differs by < 0.01 between these jobs


def test_learned_order_runs_the_small_short_job_first():
    # 10 processors, every job runs its estimate.
    #   P1 (10 procs, 50 s) runs T..T+50; P2 (1 proc) waits for it, 49 s: the mean wait is
    #   above 0, so the guard's bound (10 x mean) is over 160 s from then on and starves nobody.
    #   A (10 procs, 100 s) runs T+100..T+200. B (10 procs, 1000 s) is submitted at T+101, C
    #   (2 procs, 200 s) at T+102: neither fits, and C cannot backfill (it would end after B's
    #   reservation at T+200 and B leaves no extra).
    #   At T+200 EASY starts B (service order); C follows at T+1200.
    #   f1 and learned: C's score log10(200)*2 = 4.6 is below B's log10(1000)*10 = 30, so C
    #   starts at T+200, B does not fit beside it and starts when C ends, T+400.
    t = trace(J(1, T, 10, 50), J(2, T + 1, 1, 10), J(3, T + 100, 10, 100),
              J(4, T + 101, 10, 1000), J(5, T + 102, 2, 200))
    common = {1: T, 2: T + 50, 3: T + 100}
    assert by_id(t, policy_engine.replay(t, POLICIES["easy"])) == {**common, 4: T + 200,
                                                                   5: T + 1200}
    for name in ("f1", "learned"):
        assert by_id(t, policy_engine.replay(t, POLICIES[name])) == {**common, 4: T + 400,
                                                                     5: T + 200}, name
        assert sched_engine.replay(t, name) == policy_engine.replay(t, POLICIES[name]), name


def test_guard_serves_a_starved_job_first_and_its_reservation_holds():
    # 10 processors, the learned order (log10(estimate) * procs, lowest first), runs = estimates.
    #   t=0    A (6 procs, 1000 s) starts; 4 free.
    #   t=1    B (8 procs, 100 s, score 16) does not fit.
    #   t=2    E (5 procs, 10 s, score 5) does not fit.
    #   t=600  D (4 procs, 5000 s, score 14.8) arrives; 4 are free.
    # Without the guard, at 600 the order is E, D, B: E is the first blocked job and gets the
    #   one reservation (1000, when A ends); D fits now and at 1000 still leaves E its 5: D
    #   starts at 600. B has no reservation: at 1000 E starts, at 1010 E ends but D holds 4
    #   until 5600, so B (8) waits until 5600.
    # With the guard (bound = 500 s, the floor): at 600 B (waited 599) and E (598) are starved:
    #   they go first, in submit order, and each gets a reservation: B at 1000..1100, E at
    #   1100..1110 (only 2 free beside B). D would hold 4 from 600 until 5600 and leave B 6 at
    #   1000: it would delay B, so it waits. At 1000 B starts; at 1100 E starts, and D (4 of the
    #   5 left) beside it.
    t = trace(J(1, 0, 6, 1000), J(2, 1, 8, 100), J(3, 2, 5, 10), J(4, 600, 4, 5000))
    unguarded = Policy("learned-no-guard", score=LEARNED)
    guarded = Policy("learned-floor", score=LEARNED, guard=Guard(factor=1, floor=500))
    assert by_id(t, policy_engine.replay(t, unguarded)) == {1: 0, 2: 5600, 3: 1000, 4: 600}
    assert by_id(t, policy_engine.replay(t, guarded)) == {1: 0, 2: 1000, 3: 1100, 4: 1100}


def test_no_job_is_starved_before_any_job_has_waited():
    # test_learned_order_runs_the_small_short_job_first without P1 and P2: A starts at 0 with
    # wait 0, so 10 x the mean wait is 0; without a floor B (submitted at 1) would count as
    # starved at its very first pass (waited 0 >= 0), for good: it would go first, in submit
    # order, and learned would be EASY for every job blocked before the first wait (and the
    # daemon's, from a fresh start). The guard's floor (GUARD_FLOOR) keeps the bound above 0:
    # C runs first, as under f1.
    t = trace(J(3, T, 10, 100), J(4, T + 1, 10, 1000), J(5, T + 2, 2, 200))
    assert by_id(t, policy_engine.replay(t, POLICIES["f1"])) == {3: T, 4: T + 300, 5: T + 100}
    assert by_id(t, policy_engine.replay(t, POLICIES["learned"])) == {3: T, 4: T + 300,
                                                                      5: T + 100}


def test_easy_plus_plus_backfills_on_the_users_history():
    # 10 processors. User 1's two jobs (1 proc, ask 1000 s, run 10 s) end at 10: their
    # prediction is now 10 s.
    #   t=20  A (6 procs, 100 s, user 2) starts: 4 free.
    #   t=21  B (8 procs, 100 s, user 3) is blocked: shadow 120 (A's end), extra 2.
    #   t=22  C (4 procs, asks 1000 s, runs 50, user 1).
    # EASY plans C to 1022 > 120 and it needs 4 > the extra: C waits behind B (120..220).
    # EASY++ plans C to 22 + 10 = 32 <= 120: C backfills at 22 (and ends at 72, before B).
    t = trace(J(1, 0, 1, 1000, 10, user=1), J(2, 0, 1, 1000, 10, user=1),
              J(3, 20, 6, 100, user=2), J(4, 21, 8, 100, user=3), J(5, 22, 4, 1000, 50, user=1))
    common = {1: 0, 2: 0, 3: 20, 4: 120}
    assert by_id(t, policy_engine.replay(t, POLICIES["easy"])) == {**common, 5: 220}
    assert by_id(t, policy_engine.replay(t, POLICIES["easy++"])) == {**common, 5: 22}
    assert sched_engine.replay(t, "easy++") == policy_engine.replay(t, POLICIES["easy++"])


def test_easy_plus_plus_corrects_a_job_that_outlives_its_prediction():
    # 10 processors. User 1's history predicts 10 s (as above).
    #   t=20   R (6 procs, asks 10000 s, runs 1000, user 1) starts, predicted to end at 30.
    #   t=100  H (8 procs, 100 s) is blocked. R has run 80 s, past its prediction: it is planned
    #          with the next LADDER step above 80, 300 s: to 320. H's shadow is 320, extra 2.
    #   t=101  X (4 procs, 250 s): would end at 351 > 320 and needs 4 > 2: waits.
    #   t=102  Y (4 procs, 210 s): ends at 312 <= 320: backfills.
    # Had R been planned with its estimate (shadow 10020), X would have backfilled at 101 and Y
    # after it, at 351 (EASY does that); with a later step (900: shadow 920) both would fit.
    # R ends at 1020: H starts, X (4 of the 2 left) waits for H's end, 1120.
    t = trace(J(1, 0, 1, 1000, 10, user=1), J(2, 0, 1, 1000, 10, user=1),
              J(3, 20, 6, 10000, 1000, user=1), J(4, 100, 8, 100, user=2),
              J(5, 101, 4, 250, user=3), J(6, 102, 4, 210, user=4))
    assert by_id(t, policy_engine.replay(t, POLICIES["easy++"])) == {
        1: 0, 2: 0, 3: 20, 4: 1020, 5: 1120, 6: 102}
    assert by_id(t, policy_engine.replay(t, POLICIES["easy"])) == {
        1: 0, 2: 0, 3: 20, 4: 1020, 5: 101, 6: 351}
    assert sched_engine.replay(t, "easy++") == policy_engine.replay(t, POLICIES["easy++"])


# engine.py's example and two later jobs; every job runs its estimate, none jumps ahead:
#   t=0    A, C, D start; B (8) waits: projected 100 (A and C end), starts 100.
#   t=10   E (10 procs, 50 s): the plan books B 100..150, then E when D ends: 300.
#   t=20   F (1 proc, 1000 s): nothing is free until 150 and E holds all 10 at 300..350, so
#          F is booked at 350. EASY: at 150 E is the head (shadow 300, extra 0) and F would
#          run past 300: F starts when E ends, 350.
PROJECTED = trace(J(1, 0, 6, 100), J(2, 0, 8, 50), J(3, 0, 2, 100), J(4, 0, 2, 300),
                  J(5, 10, 10, 50), J(6, 20, 1, 1000))


def test_projection_equals_the_start_when_jobs_run_their_estimates():
    start, projected = policy_engine.replay_projected(PROJECTED, POLICIES["easy"])
    assert by_id(PROJECTED, start) == {1: 0, 2: 100, 3: 0, 4: 0, 5: 300, 6: 350}
    assert projected == start
    assert start == policy_engine.replay(PROJECTED, POLICIES["easy"])


def test_projection_tests_at_most_max_job_test_jobs(monkeypatch):
    # F is the third waiting job at its submit (B, E, F): with 2 tested it gets no projection
    monkeypatch.setattr(policy_engine, "MAX_JOB_TEST", 2)
    start, projected = policy_engine.replay_projected(PROJECTED, POLICIES["easy"])
    assert by_id(PROJECTED, projected) == {1: 0, 2: 100, 3: 0, 4: 0, 5: 300, 6: None}
    assert by_id(PROJECTED, start)[6] == 350  # projections do not change the schedule


def test_projection_accuracy_by_hand():
    t = trace(*(J(j, 0, 1, 100) for j in range(1, 13)))
    # job 1 started at its submit (not counted), job 2 has no projection; jobs 3..12 started at
    # 1000 with |errors| 10, 20, ..., 100, projected late (1010, 1030, ...: started no later
    # than projected) and early (980, 960, ...) in turn
    start = [0, 100] + [1000] * 10
    projected = [0, None, 1010, 980, 1030, 960, 1050, 940, 1070, 920, 1090, 900]
    # sorted errors 10 .. 100: median = errors[int(0.5 * 10)] = 60, p90 = errors[9] = 100;
    # no later than projected: 5 of 10
    a = report.projection_accuracy(t, "easy", start, projected)
    assert (a.policy, a.waited, a.projected, a.median, a.p90) == ("easy", 11, 10, 60, 100)
    assert a.early == pytest.approx(0.5)
    lines = report.accuracy_table([a]).splitlines()
    assert lines[0].split() == ["policy", "waited", "projected", "median", "|err|", "s", "p90",
                                "|err|", "s", "no", "later", "%"]
    assert lines[1].split() == ["easy", "11", "10", "60", "100", "50.0"]


def test_projection_accuracy_with_no_waits():
    t = trace(J(1, 0, 1, 100))
    a = report.projection_accuracy(t, "easy", [0], [0])
    assert (a.waited, a.projected, a.median, a.p90, a.early) == (0, 0, 0, 0, 0)
