"""The fast replay engines on tiny hand-made traces, against start times worked out by hand.

Every trace is SWF text on a machine of 10 processors; `J(job, submit, procs, estimate, run)`
writes one line (run defaults to the estimate). Each row states the textbook rule it checks;
the comment above it is the hand computation.
"""

from __future__ import annotations

import pytest

from pyslurm_lite.sim import POLICIES, SCHEDULER_POLICIES, sched_engine, swf


def J(job: int, submit: int, procs: int, estimate: int, run: int | None = None) -> str:
    run = estimate if run is None else run
    return f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {estimate} -1 1 1 1 -1 1 -1 -1 -1"


def trace(*lines: str, procs: int = 10):
    return swf.parse("; MaxProcs: %d\n" % procs + "\n".join(lines) + "\n", "hand")


def starts(policy: str, t) -> dict:
    return dict(zip(t.ids, POLICIES[policy](t)))


# The classic case. A (6) runs to 100; B (8) is the head, shadow 100, extra 2. C (9) waits
# behind it. D (2 procs, 250 s) fits EASY's extra: it starts at 3, so when B ends at 200 only
# 8 are free and C (9) waits for D (253): EASY delayed C, a job that was not the head.
# Conservative books B [100,200), C [200,300) on arrival; D has no 250-s window with 2 free
# before 300 (C leaves 1 free in [200, 300)): D starts at 300 and C at 200 as promised.
CLASSIC = (J(1, 0, 6, 100), J(2, 1, 8, 100), J(3, 2, 9, 100), J(4, 3, 2, 250))

# Shadow-time ties: R1 and R2 (4 each) both end at 100. H (6) fits once R1 ends, but R2 ends at
# the same instant, so 10 are free at the shadow time and the extra is 10 - 6 = 4, not 0:
# L (2 procs, 1000 s) starts now on the extra. L2 finds nothing free; at 100 H and L2 start.
TIES = (J(1, 0, 4, 100), J(2, 0, 4, 100), J(3, 1, 6, 50), J(4, 2, 2, 1000), J(5, 3, 2, 1000))

# The <= rule: A (8) to 100; B (10) is reserved at 100 with no extra. C (2) submitted at 2:
# with 98 s it ends at 100 <= 100 and starts; with 99 s it would end at 101 and waits for B
# (100..110).
LE_FITS = (J(1, 0, 8, 100), J(2, 1, 10, 10), J(3, 2, 2, 98))
LE_MISSES = (J(1, 0, 8, 100), J(2, 1, 10, 10), J(3, 2, 2, 99))

# Extra is consumed: A (6) to 100; B (8) shadow 100, extra 2. C and D (1 proc, 1000 s) each
# take one extra processor; E (1 proc, 1000 s) finds none left and waits for B's end (200);
# F (1 proc, 95 s) ends at 100 <= 100: it starts without touching the extra.
EXTRA = (J(1, 0, 6, 100), J(2, 1, 8, 100), J(3, 2, 1, 1000), J(4, 3, 1, 1000),
         J(5, 4, 1, 1000), J(6, 5, 1, 95))

# Jobs started earlier in the same pass count for the shadow: R (4) runs to 300. At 1, A (4,
# 100 s) starts; B (6) is the head: when A ends at 101, 2 + 4 = 6 are free, so the shadow is 101
# and the extra 0. C (2 procs, 200 s) would end at 201 > 101: it waits. B starts at 101, C when
# B ends (151). Forgetting A would put the shadow at R's end (300) and let C delay B to 201.
SAME_PASS = (J(1, 0, 4, 300), J(2, 1, 4, 100), J(3, 1, 6, 50), J(4, 1, 2, 200))

# fcfs: the head blocks everyone; C (2 procs, 10 s) could have run at 2 but waits for B.
HEAD_BLOCKS = (J(1, 0, 6, 100), J(2, 1, 8, 10), J(3, 2, 2, 10))

# Killed at its estimate: A runs 500 s but asked for 100, so it holds the machine until 100.
KILLED = (J(1, 0, 10, 100, run=500), J(2, 0, 10, 60, run=50))

# An early end. A (6, estimate 100) really ends at 40. B (8) is booked at 100; C (4, 60 s) fits
# now; D (2, 200 s) is booked at 60. At 40 A's tail [40, 100) comes back and the waiting jobs are
# compressed in arrival order: B moves 100 -> 60 (8 free from 60, once C ends), then D moves
# 60 -> 40 ([40, 60) has 6 free, [60, 110) 2 beside B). EASY reaches the same starts here.
EARLY_END = (J(1, 0, 6, 100, run=40), J(2, 0, 8, 50), J(3, 0, 4, 60), J(4, 1, 2, 200))

# One instant, in order: ends, then arrivals, then scheduling. At 40 A ends early (its
# processors are free at once, and conservative compresses W from 100 to 40) before N arrives;
# N (8) then finds W running and starts at W's end, 90. At 100 a job arriving when the machine
# empties (B2 after A2) starts at once.
ONE_INSTANT = (J(1, 0, 6, 100, run=40), J(2, 0, 8, 50), J(3, 40, 8, 10))
REUSE_AT_ONCE = (J(1, 0, 10, 100), J(2, 100, 10, 50))

# The worked examples that open sim/engine.py (EASY) and sim/conservative.py.
EASY_DOC = (J(1, 0, 6, 100), J(2, 0, 8, 50), J(3, 0, 2, 100), J(4, 0, 2, 300))
CONSERVATIVE_DOC = (J(1, 0, 6, 100, run=40), J(2, 0, 8, 50), J(3, 0, 4, 60))

CASES = [
    pytest.param(EASY_DOC, "easy", {1: 0, 2: 100, 3: 0, 4: 0}, id="engine-docstring-example"),
    pytest.param(CONSERVATIVE_DOC, "conservative", {1: 0, 2: 60, 3: 0},
                 id="conservative-docstring-example"),
    pytest.param(CLASSIC, "easy", {1: 0, 2: 100, 3: 253, 4: 3}, id="classic-easy-delays-second"),
    pytest.param(CLASSIC, "conservative", {1: 0, 2: 100, 3: 200, 4: 300},
                 id="classic-conservative-does-not"),
    pytest.param(CLASSIC, "fcfs", {1: 0, 2: 100, 3: 200, 4: 300}, id="classic-fcfs"),
    pytest.param(TIES, "easy", {1: 0, 2: 0, 3: 100, 4: 2, 5: 100}, id="shadow-ties-count-all"),
    pytest.param(TIES, "conservative", {1: 0, 2: 0, 3: 100, 4: 2, 5: 100},
                 id="shadow-ties-conservative"),
    pytest.param(SAME_PASS, "easy", {1: 0, 2: 1, 3: 101, 4: 151}, id="same-pass-starts-count"),
    pytest.param(SAME_PASS, "conservative", {1: 0, 2: 1, 3: 101, 4: 151}, id="same-pass-cons"),
    pytest.param(LE_FITS, "easy", {1: 0, 2: 100, 3: 2}, id="ends-at-shadow-fits"),
    pytest.param(LE_MISSES, "easy", {1: 0, 2: 100, 3: 110}, id="ends-after-shadow-waits"),
    pytest.param(LE_FITS, "conservative", {1: 0, 2: 100, 3: 2}, id="ends-at-reservation-fits"),
    pytest.param(LE_MISSES, "conservative", {1: 0, 2: 100, 3: 110},
                 id="ends-after-reservation-waits"),
    pytest.param(EXTRA, "easy", {1: 0, 2: 100, 3: 2, 4: 3, 5: 200, 6: 5}, id="extra-consumed"),
    pytest.param(EXTRA, "conservative", {1: 0, 2: 100, 3: 2, 4: 3, 5: 200, 6: 5},
                 id="extra-conservative"),
    pytest.param(HEAD_BLOCKS, "fcfs", {1: 0, 2: 100, 3: 100}, id="fcfs-head-blocks"),
    pytest.param(HEAD_BLOCKS, "easy", {1: 0, 2: 100, 3: 2}, id="easy-backfills-past-head"),
    pytest.param(KILLED, "fcfs", {1: 0, 2: 100}, id="killed-at-estimate"),
    pytest.param(KILLED, "conservative", {1: 0, 2: 100}, id="killed-at-estimate-conservative"),
    pytest.param(EARLY_END, "conservative", {1: 0, 2: 60, 3: 0, 4: 40},
                 id="compression-after-early-end"),
    pytest.param(EARLY_END, "easy", {1: 0, 2: 60, 3: 0, 4: 40}, id="early-end-easy"),
    pytest.param(ONE_INSTANT, "conservative", {1: 0, 2: 40, 3: 90}, id="ends-then-arrivals-cons"),
    pytest.param(ONE_INSTANT, "easy", {1: 0, 2: 40, 3: 90}, id="ends-then-arrivals-easy"),
    pytest.param(REUSE_AT_ONCE, "fcfs", {1: 0, 2: 100}, id="freed-reusable-at-once"),
    pytest.param(REUSE_AT_ONCE, "conservative", {1: 0, 2: 100}, id="freed-reusable-cons"),
]


@pytest.mark.parametrize("lines, policy, expected", CASES)
def test_hand_computed_starts(lines, policy, expected):
    assert starts(policy, trace(*lines)) == expected


@pytest.mark.parametrize("lines, policy, expected", [
    pytest.param(*case.values, id=case.id) for case in CASES if case.values[1] in SCHEDULER_POLICIES])
def test_scheduler_engine_hand_computed_starts(lines, policy, expected):
    """The same rows through the daemon's sched.schedule() (--engine scheduler)."""
    t = trace(*lines)
    assert dict(zip(t.ids, sched_engine.replay(t, policy))) == expected


def test_skipped_jobs_do_not_take_part():
    t = trace(J(1, 0, 10, 100), "2 0 -1 0 5 -1 -1 5 100 -1 1 1 1 -1 1 -1 -1 -1",  # run 0
              "3 0 -1 -1 5 -1 -1 5 100 -1 1 1 1 -1 1 -1 -1 -1",  # run missing
              "4 0 -1 50 -1 -1 -1 -1 100 -1 1 1 1 -1 1 -1 -1 -1",  # no processors
              J(5, 0, 11, 100), J(6, 1, 10, 100))  # more than the machine
    assert t.skipped == 4
    for policy in POLICIES:
        assert starts(policy, t) == {1: 0, 6: 100}


def test_conservative_never_later_than_promised():
    """Compression may only move reservations earlier: over 3000 jobs of a real trace (most end
    before their estimate) every job starts no later than the slot it was given on arrival."""
    from pyslurm_lite.sim import conservative
    from test_sim_engines import first_jobs

    t = first_jobs("KTH-SP2-1996-2.1-cln.swf.gz", 3000)
    replay = conservative._Conservative(t)
    start = replay.replay()
    promised = replay.first_reservation
    assert [t.ids[j] for j, s in enumerate(start) if s > promised[j]] == []
    assert sum(s < r for s, r in zip(start, promised)) > 100  # compression did act
