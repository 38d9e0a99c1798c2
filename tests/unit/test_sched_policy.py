"""The scheduling policies of SchedulerParameters=sched_policy in the daemon's pass (sched/cycle.py,
sched/policy.py): a learned score's order, the starvation guard's reservations and EASY++'s
planned ends and lengths, on small snapshots. NOW = 1000 throughout; one partition "main".
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from pyslurm_lite.model import Reason
from pyslurm_lite.sched import SchedConfig, schedule
from pyslurm_lite.sched.cycle import order_key
from pyslurm_lite.sched.policy import LEARNED, POLICIES, Guard, Policy
from pyslurm_lite.sched.profile import planned_end

from factories import job, node, partition, running, snapshot

NOW = 1000.0
LEARNED_ONLY = Policy("learned-no-guard", score=LEARNED)  # the order alone
GUARDED = Policy("guarded", guard=Guard(factor=1.0))  # priority order, with the guard


def started(plan) -> list[int]:
    return [s.job_id for s in plan.starts]


def test_score_small_short_job_jumps_big_long_one():
    """One node, 4 CPUs; A holds 2 until NOW+1800. B (4 CPUs, 120 min, submitted first) and C
    (2 CPUs, 60 min). By priority: B first, reserved at NOW+1800; C (ending NOW+3600) would
    delay it: Priority. Learned score log10(r) * n: C = log10(3600) * 2 = 7.1 before
    B = log10(7200) * 4 = 15.4: C starts on the 2 free CPUs; B waits for C's end too."""
    snap = snapshot([job(2, cpus=4, limit=120), job(3, cpus=2, limit=60)],
                    [node("n1", cpus=4, free_cpus=2)],
                    running=[running(1, "n1", cpus=2, end=NOW + 1800)])
    plain = schedule(snap, NOW)
    assert started(plain) == [] and plain.reasons == {2: Reason.RESOURCES, 3: Reason.PRIORITY}
    assert plain.reservations == {2: NOW + 1800}
    learned = schedule(snap, NOW, SchedConfig(policy=LEARNED_ONLY))
    assert started(learned) == [3]
    assert learned.reasons == {2: Reason.RESOURCES}
    assert learned.reservations == {2: NOW + 3600}


def test_score_reads_partition_max_time_for_unlimited_jobs_and_the_epoch():
    """A job without a time limit is ranked with its partition's MaxTime (here 10 minutes, so
    it beats a 60-minute one of the same size); F1's submit term counts from sched_epoch."""
    parts = [dataclasses.replace(partition("main", ["n1"]), max_time=10)]
    snap = dataclasses.replace(snapshot([job(2, limit=60), job(3, limit=-1)], [node("n1")],
                                        partitions=parts), sched_epoch=1.0)
    queue = sorted(snap.jobs, key=order_key(snap, NOW, LEARNED_ONLY, frozenset()))
    assert [j.job_id for j in queue] == [3, 2]
    no_max = snapshot([job(2, limit=60), job(3, limit=-1)], [node("n1")])  # 365 days
    queue = sorted(no_max.jobs, key=order_key(no_max, NOW, LEARNED_ONLY, frozenset()))
    assert [j.job_id for j in queue] == [2, 3]
    # F1 (a=1, b=870): submitted at 2 and 3, s = 1 and 2 from an epoch of 1: the first wins
    # despite asking more (870 * log10(2) = 262 outweighs log10(60 * 60) * 3 = 10.7)
    f1 = dataclasses.replace(snapshot([job(2, cpus=4, limit=60), job(3, cpus=1, limit=1)],
                                      [node("n1")]), sched_epoch=1.0)
    queue = sorted(f1.jobs, key=order_key(f1, NOW, POLICIES["f1"], frozenset()))
    assert [j.job_id for j in queue] == [2, 3]


def guard_snapshot(bound: float):
    """One node, 4 CPUs; A holds 2 until NOW+600. S1 (3 CPUs, 10 min) and S2 (4 CPUs, 10 min),
    submitted at 1 and 2, have waited ~1000 s; L (1 CPU, 30 min) and L2 (1 CPU, 20 min) came at
    950 and 960. With a bound of 100 s, S1 and S2 are starved, L and L2 are not."""
    return dataclasses.replace(
        snapshot([job(2, cpus=3, limit=10, submit=1), job(3, cpus=4, limit=10, submit=2),
                  job(4, cpus=1, limit=30, submit=950),
                  job(5, cpus=1, limit=20, submit=960)],
                 [node("n1", cpus=4, free_cpus=2)],
                 running=[running(1, "n1", cpus=2, end=NOW + 600)]),
        starve_bound=bound)


def test_starved_job_gets_reservation_behind_blocked_one():
    """EASY reserves S1 at 600 (3 CPUs until 1200, 1 left); S2 gets none, so L (1 CPU until
    1800) backfills though it will hold a CPU when S2 could run at 1200 (and leaves L2 none).
    With the guard S2 is reserved at NOW+1200 as well: L would delay it and waits (Priority);
    L2 (ends at 1200) delays nobody and backfills."""
    plain = schedule(guard_snapshot(math.inf), NOW, SchedConfig(policy=GUARDED))
    assert started(plain) == [4]
    assert plain.reservations == {2: NOW + 600}
    guarded = schedule(guard_snapshot(100), NOW, SchedConfig(policy=GUARDED))
    assert started(guarded) == [5]
    assert guarded.reservations == {2: NOW + 600, 3: NOW + 1200}
    assert guarded.reasons == {2: Reason.RESOURCES, 3: Reason.PRIORITY, 4: Reason.PRIORITY}


def test_starved_jobs_go_first_in_submit_order():
    """Even before a job of higher priority (L's 5000)."""
    snap = guard_snapshot(100)
    snap = dataclasses.replace(snap, jobs=(*snap.jobs[:2], dataclasses.replace(snap.jobs[2], priority=5000),
                                           snap.jobs[3]))
    queue = sorted(snap.jobs, key=order_key(snap, NOW, GUARDED, frozenset({2, 3})))
    assert [j.job_id for j in queue] == [2, 3, 4, 5]
    learned = sorted(snap.jobs, key=order_key(snap, NOW, LEARNED_ONLY, frozenset({3})))
    assert [j.job_id for j in learned][0] == 3  # starved before any score


def predict_snapshot(planned_end: float = 0, planned_minutes: float = 0, bound=math.inf):
    """One node, 4 CPUs; A holds 2 until its limit NOW+3600, predicted to end at NOW+600. B (4
    CPUs, 10 min) is blocked; C (2 CPUs, limit 90 min) predicted to run 5 minutes."""
    a = dataclasses.replace(running(1, "n1", cpus=2, end=NOW + 3600), planned_end=planned_end)
    c = dataclasses.replace(job(3, cpus=2, limit=90, submit=990), planned_minutes=planned_minutes)
    return dataclasses.replace(snapshot([job(2, cpus=4, limit=10), c],
                                        [node("n1", cpus=4, free_cpus=2)], running=[a]),
                               starve_bound=bound)


def test_predictions_let_a_job_backfill_that_its_limit_would_not():
    """With limits: B reserved at NOW+3600, C's 90 minutes overlap it: Priority. With EASY++
    plans: B at NOW+600 (A's planned end), C booked for 5 minutes ends by then: it starts."""
    easy = schedule(predict_snapshot(), NOW)
    assert started(easy) == [] and easy.reservations == {2: NOW + 3600}
    plus = schedule(predict_snapshot(NOW + 600, 5), NOW, SchedConfig(policy=POLICIES["easy++"]))
    assert started(plus) == [3] and plus.reservations == {2: NOW + 600}
    # its own prediction alone is not enough: A planned to its limit, C's 5 minutes still fit
    # before NOW+3600; but A's planned end alone lets nobody start (C's 90 minutes overlap 600)
    assert started(schedule(predict_snapshot(NOW + 600, 0), NOW)) == []


def test_while_a_starved_job_waits_plans_use_time_limits():
    """B starved (bound 100 s; it came at 2): the pass plans with limits, as without EASY++."""
    snap = predict_snapshot(NOW + 600, 5, bound=100)
    plan = schedule(snap, NOW, SchedConfig(policy=Policy("both", predict=True, guard=Guard(factor=1))))
    assert started(plan) == [] and plan.reservations == {2: NOW + 3600}


def test_running_job_past_its_prediction_gets_the_corrected_end():
    """Started at NOW-1000 with a 60-minute limit, predicted 300 s: outlived; the next ladder
    step above 1000 s is 1800 s, so it is planned to end at NOW+800, and B is reserved then."""
    start, limit = NOW - 1000, 3600
    assert planned_end(start, limit, 300, NOW) == start + 1800
    assert planned_end(start, limit, 1500, NOW) == start + 1500  # not yet outlived
    assert planned_end(start, limit, 3600, NOW) == 0  # the prediction is its limit
    assert planned_end(start, 1200, 300, NOW) == 0  # the ladder's step is past the limit
    assert planned_end(start, math.inf, 300, NOW) == start + 1800  # no limit: the ladder alone
    snap = predict_snapshot(planned_end(start, limit, 300, NOW))
    plan = schedule(snap, NOW, SchedConfig(policy=POLICIES["easy++"]))
    assert plan.reservations == {2: NOW + 800}


def random_snapshot(seed: int):
    """A few dozen jobs of mixed shapes on 4 busy nodes, two partitions (tiers)."""
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpus=8, gpus=2, free_cpus=rng.randint(0, 4), free_gpus=(1,)) for i in range(4)]
    run = [running(100 + i, n.name, cpus=8 - n.free_cpus, gpus=(0,), end=NOW + rng.randint(60, 3600))
           for i, n in enumerate(nodes)]
    parts = [partition("main", [n.name for n in nodes]), partition("hi", ["n0", "n1"], tier=2)]
    jobs = [job(j, cpus=rng.choice((1, 2, 4, 8)), gpus=rng.choice((0, 0, 1, 2)), nodes=rng.choice((1, 1, 2)),
                limit=rng.choice((1, 5, 30, 120, -1)), priority=rng.randint(1, 50),
                submit=rng.uniform(0, NOW), partition=rng.choice(("main", "main", "hi")),
                held=rng.random() < 0.1, begin=rng.choice((0, 0, 0, NOW + 500)))
            for j in range(1, 41)]
    return snapshot(jobs, nodes, partitions=parts, running=run)


@pytest.mark.parametrize("conservative", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_easy_policy_plans_as_no_policy(seed, conservative):
    snap = random_snapshot(seed)
    without = schedule(snap, NOW, SchedConfig(conservative=conservative))
    easy = schedule(snap, NOW, SchedConfig(conservative=conservative, policy=POLICIES["easy"]))
    assert (easy.starts, easy.reasons, easy.reservations) == \
        (without.starts, without.reasons, without.reservations)
    assert without.starts and without.reservations  # the comparison says something


@pytest.mark.parametrize("seed", range(8))
def test_every_starved_waiting_job_is_reserved(seed):
    """Jobs with limits (none freezes a partition), bound 300 s: every starved job left waiting
    for resources has a reservation; without the guard some have none."""
    snap = random_snapshot(seed)
    snap = dataclasses.replace(snap, jobs=tuple(j if j.time_limit > 0 else dataclasses.replace(j, time_limit=30)
                                                for j in snap.jobs))
    starved = {j.job_id for j in snap.jobs if NOW - j.submit_time >= 300 and j.begin_time <= NOW}

    def unreserved(plan):
        return {j for j, r in plan.reasons.items() if j in starved
                and r in (Reason.RESOURCES, Reason.PRIORITY) and j not in plan.reservations}
    assert unreserved(schedule(snap, NOW, SchedConfig(policy=GUARDED)))  # bound inf: no guard
    assert unreserved(schedule(dataclasses.replace(snap, starve_bound=300), NOW,
                               SchedConfig(policy=GUARDED))) == set()


# ---- the controller: config, what it learns, what it puts in the snapshot ----------------------

CONF = ("ClusterName=c\nStateSaveLocation={dir}\nNodeName=node1 CPUs=2 RealMemory=4000\n"
        "PartitionName=main Nodes=node1 Default=YES\n")


def test_sched_policy_key_reaches_the_pass_config(tmp_path):
    from pyslurm_lite import config
    from pyslurm_lite.controller.daemon import sched_config
    from pyslurm_lite.errors import ConfigError
    base = CONF.format(dir=tmp_path)
    assert sched_config(config.parse(base)).policy == POLICIES["easy"]  # the default
    cfg = config.parse(base + "SchedulerParameters=sched_policy=learned,bf_window=60\n")
    assert (sched_config(cfg).policy, sched_config(cfg).window) == (POLICIES["learned"], 3600)
    with pytest.raises(ConfigError, match="unknown SchedulerParameters=sched_policy=sjf; "
                                          "valid: easy, easy\\+\\+, f1, f1-guard, learned"):
        config.parse(base + "SchedulerParameters=sched_policy=sjf\n")


def stored(job_id, submit, start=0.0, end=0.0, limit=60, state=None):
    from factories import model_job
    from pyslurm_lite.model import JobState
    j = model_job(job_id)
    j.submit_time, j.start_time, j.end_time, j.time_limit = submit, start, end, limit
    j.state = state or (JobState.COMPLETED if end else JobState.RUNNING if start else JobState.PENDING)
    if not start:
        j.allocations = []
    return j


def test_controller_learns_waits_and_run_times_from_the_store_and_its_starts(tmp_path):
    """Stored (uid 1000): A submit 100 start 110 end 410 (ran 300), B 200/400/500 (ran 100), C
    running since 600 (60 min), D pending since 700 (30 min). Waits 10, 200, 300: mean 170, the
    bound (factor 2) 340. History: (300 + 100) / 2 = 200 s: D is planned for 200/60 minutes;
    C has outlived 200 s at 1000: the ladder's next step above 400 s is 900 s: planned end
    1500. The epoch is A's submit time. An event pass projects no starts. Starting D (waited 300 more) moves the bound to
    2 * (10 + 200 + 300 + 300) / 4 = 405."""
    from pyslurm_lite import config
    from pyslurm_lite.controller.daemon import Controller
    from pyslurm_lite.sched import Plan, Start
    from pyslurm_lite.model import NodeAllocation
    cfg = config.parse(CONF.format(dir=tmp_path) + "SchedulerParameters=sched_policy=learned\n",
                       str(tmp_path / "slurm.conf"))
    ctl = Controller(cfg, clock=lambda: 1000.0)
    try:
        ctl.state.use_policy(Policy("all", score=LEARNED, predict=True, guard=Guard(factor=2)))
        jobs = [stored(1, 100, 110, 410), stored(2, 200, 400, 500), stored(3, 300, 600),
                stored(4, 700, limit=30)]
        ctl.store.insert_jobs(jobs, [("#!/bin/sh\n", {})] * len(jobs))
        ctl.state.recover()
        snap = ctl.state.snapshot()
        assert snap.starve_bound == pytest.approx(340)
        assert snap.sched_epoch == 100
        (d,) = snap.jobs
        assert d.planned_minutes == pytest.approx(200 / 60)
        (c,) = snap.running
        assert (c.end, c.planned_end) == (600 + 3600, 1500)
        # an event pass projects no starts (the periodic full passes do, every bf_interval)
        ctl.schedule_once(1000.0, full=False)
        assert ctl.state.projected_at == -math.inf
        ctl.schedule_once(1000.0, full=True)
        assert ctl.state.projected_at == 1000.0
        ctl.state.registered.add("node1")  # as if its agent had registered
        ctl.state.nodes["node1"].responding = True
        ctl.state.refresh_node("node1")
        ctl.jobs.apply_plan(Plan(starts=[Start(4, (NodeAllocation("node1", 1, 100, []),))]))
        assert ctl.state.jobs[4].state.value == "RUNNING"
        assert ctl.state.snapshot().starve_bound == pytest.approx(405)
    finally:
        ctl.store.close()
