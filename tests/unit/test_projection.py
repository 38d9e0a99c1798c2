"""Projected starts (sched/projection.py): every pending job booked, conservative style, on a copy
of the pass's timeline, within bf_max_job_test and bf_window; the pass's own decisions unchanged.

The worked example of the module, on one 4-CPU node (now = 0): A (4 CPUs) runs until t=600;
pending in priority order B (4 CPUs, 10 min), C (2 CPUs, 5 min), D (2 CPUs, 5 min), E (4 CPUs,
10 min). EASY reserves B at 600; the projection books C at 1200 (after B), D at 1200 beside C,
and E at 1500, after both.
"""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from pyslurm_lite.model import Reason
from pyslurm_lite.sched import SchedConfig, schedule
from pyslurm_lite.sched.projection import copy_timeline

from factories import job, node, running, snapshot as plain_snapshot

NOW = 0.0


def snapshot(*args, **kwargs):
    """factories.snapshot, asking for projected starts (as the controller does every bf_interval)."""
    return dataclasses.replace(plain_snapshot(*args, **kwargs), project_starts=True)


def worked(extra=()):
    return snapshot([job(2, cpus=4, limit=10), job(3, cpus=2, limit=5), job(4, cpus=2, limit=5),
                     job(5, cpus=4, limit=10), *extra],
                    [node("n1", cpus=4, free_cpus=0)], running=[running(1, "n1", cpus=4, end=600)])


CASES = [  # (snapshot, config, projected, unprojected)
    pytest.param(worked(), SchedConfig(), {3: 1200, 4: 1200, 5: 1500}, {}, id="worked-example"),
    pytest.param(  # B, C, D tested (B by the pass): E is past bf_max_job_test
        worked(), SchedConfig(max_job_test=3), {3: 1200, 4: 1200}, {5: "bf_max_job_test"},
        id="past-bf_max_job_test"),
    pytest.param(  # a 20-minute window: E's 1500 s is past it; C and D (1200) are not
        worked(), SchedConfig(window=1200), {3: 1200, 4: 1200}, {5: "bf_window"}, id="past-bf_window"),
    pytest.param(  # jobs ahead count: a small job behind E finds no hole before E's end
        worked([job(6, cpus=1, limit=5)]), SchedConfig(), {3: 1200, 4: 1200, 5: 1500, 6: 2100},
        {}, id="jobs-ahead-count"),
    pytest.param(  # a job behind fills a hole that delays nobody ahead: beside C at 1200
        snapshot([job(2, cpus=4, limit=10), job(3, cpus=2, limit=5), job(5, cpus=4, limit=10),
                  job(6, cpus=1, limit=5)],
                 [node("n1", cpus=4, free_cpus=0)], running=[running(1, "n1", cpus=4, end=600)]),
        SchedConfig(), {3: 1200, 5: 1500, 6: 1200}, {}, id="job-behind-fills-a-hole"),
    pytest.param(  # held, dependent and unlimited-blocked jobs: no projection, no cause
        snapshot([job(2, cpus=4, limit=10), job(3, cpus=1, held=True), job(4, cpus=1, limit=5)],
                 [node("n1", cpus=4, free_cpus=0)], running=[running(1, "n1", cpus=4, end=600)]),
        SchedConfig(), {4: 1200}, {}, id="held-gets-none"),
    pytest.param(  # --begin later than every free slot: projected at its begin time
        snapshot([job(2, cpus=4, limit=10), job(3, cpus=1, limit=5, begin=3000)],
                 [node("n1", cpus=4, free_cpus=0)], running=[running(1, "n1", cpus=4, end=600)]),
        SchedConfig(), {3: 3000}, {}, id="begin-at-its-time"),
    pytest.param(  # --begin while the node is busy: the earliest slot after it
        snapshot([job(2, cpus=4, limit=10), job(3, cpus=4, limit=5, begin=700)],
                 [node("n1", cpus=4, free_cpus=0)], running=[running(1, "n1", cpus=4, end=600)]),
        SchedConfig(), {3: 1200}, {}, id="begin-then-resources"),
    pytest.param(  # a job without a time limit ahead: booked forever, nobody after it fits
        snapshot([job(2, cpus=4, limit=10), job(3, cpus=4), job(4, cpus=1, limit=5)],
                 [node("n1", cpus=4, free_cpus=0)], running=[running(1, "n1", cpus=4, end=600)]),
        SchedConfig(), {3: 1200}, {}, id="unlimited-blocks-the-rest"),
]


@pytest.mark.parametrize("snap, config, projected, unprojected", CASES)
def test_projection(snap, config, projected, unprojected):
    plan = schedule(snap, NOW, config)
    assert plan.reservations == {2: 600}  # the pass's own EASY reservation, as without projection
    assert plan.projected == projected
    assert plan.unprojected == unprojected


def test_dependent_job_gets_none():
    snap = dataclasses.replace(worked(), dependencies={3: "wait"})
    plan = schedule(snap, NOW)
    assert plan.reasons[3] == Reason.DEPENDENCY
    assert 3 not in plan.projected and 3 not in plan.unprojected
    assert plan.projected == {4: 1200, 5: 1500}  # as if job 3 were not there


def test_copy_leaves_the_pass_timeline_alone():
    from pyslurm_lite.sched.profile import Timeline
    from pyslurm_lite.sched.select import FreeNode
    n = node("n1", cpus=4, free_cpus=0)
    original = Timeline({"n1": FreeNode(n)}, (running(1, "n1", cpus=4, end=600),), NOW)
    before = (list(original.nodes["n1"].times), list(original.nodes["n1"].cpus))
    c = copy_timeline(original)
    c.block([running(2, "n1", cpus=4).allocations[0]], 600, 900)
    assert (original.nodes["n1"].times, original.nodes["n1"].cpus) == before
    assert c.nodes["n1"].cpus != before[1]


def random_snapshot(seed: int):
    """A few dozen jobs of mixed shapes on 4 busy nodes: some held, some with --begin."""
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpus=8, gpus=2, free_cpus=rng.randint(0, 4), free_gpus=(1,)) for i in range(4)]
    run = [running(100 + i, n.name, cpus=8 - n.free_cpus, gpus=(0,), end=rng.randint(60, 3600))
           for i, n in enumerate(nodes)]
    jobs = [job(j, cpus=rng.choice((1, 2, 4, 8)), gpus=rng.choice((0, 0, 1, 2)), nodes=rng.choice((1, 1, 2)),
                limit=rng.choice((1, 5, 30, 120, -1) if j > 30 else (1, 5, 30, 120)),
                held=rng.random() < 0.1, begin=rng.choice((0, 0, 0, 500)))
            for j in range(1, 41)]
    return snapshot(jobs, nodes, running=run)


@pytest.mark.parametrize("conservative", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_pass_decisions_unchanged(monkeypatch, seed, conservative):
    """The projection books on a copy: the pass's starts, reasons and reservations are those of
    the same pass without it."""
    from pyslurm_lite.sched import cycle
    config = SchedConfig(conservative=conservative)
    with_projection = schedule(random_snapshot(seed), NOW, config)
    monkeypatch.setattr(cycle, "project", lambda p, queue: None)
    without = schedule(random_snapshot(seed), NOW, config)
    assert with_projection.starts == without.starts
    assert with_projection.reasons == without.reasons
    assert with_projection.reservations == without.reservations
    assert without.projected == {}
    # every job that waits only for resources got a projection or a cause (limits here: none),
    # unless a job without a time limit ahead holds what it needs for ever
    waiting = [j for j, r in with_projection.reasons.items()
               if r in (Reason.RESOURCES, Reason.PRIORITY) and j not in with_projection.reservations]
    if conservative:  # every blocked job has its reservation already (or none can be promised,
        # behind a job without a time limit): only --begin ones are left
        assert not set(waiting) & set(with_projection.projected)
        assert {with_projection.reasons[j] for j in with_projection.projected} == {Reason.BEGIN_TIME}
    else:
        assert waiting and set(with_projection.projected) & set(waiting)
    assert all(t >= NOW and t < math.inf for t in with_projection.projected.values())


# ---- SchedulerParameters=bf_window= (config.py): minutes, Slurm's range and default ----------------
CONF = "NodeName=n1 CPUs=4 RealMemory=4000\nPartitionName=main Nodes=n1 Default=YES\n"


@pytest.mark.parametrize("line, window, interval", [
    ("", 1440, 30), ("SchedulerParameters=bf_window=60,bf_interval=1\n", 60, 1),
    ("SchedulerParameters=bf_max_job_test=9,bf_window=43200,bf_interval=10800\n", 43200, 10800)])
def test_bf_window_and_interval_parsed(line, window, interval):
    from pyslurm_lite import config
    cfg = config.parse(line + CONF, "/etc/slurm.conf")
    assert (cfg.bf_window, cfg.bf_interval) == (window, interval)


@pytest.mark.parametrize("key, value", [("bf_window", "0"), ("bf_window", "43201"), ("bf_window", "1h"),
                                        ("bf_window", "-5"), ("bf_window", ""), ("bf_interval", "0"),
                                        ("bf_interval", "10801"), ("bf_interval", "-1")])
def test_bad_bf_window_or_interval_refused(key, value):
    from pyslurm_lite import config
    from pyslurm_lite.errors import ConfigError
    with pytest.raises(ConfigError, match=f"bad {key}={value}"):
        config.parse(f"SchedulerParameters={key}={value}\n" + CONF, "/etc/slurm.conf")


# ---- the controller's expected start (job_mgr._expected_start) --------------------------------
def test_not_asked_projects_nothing():
    plan = schedule(dataclasses.replace(worked(), project_starts=False), NOW)
    assert (plan.projected, plan.unprojected, plan.projecting) == ({}, {}, False)
    assert plan.reservations == {2: 600}


@pytest.mark.parametrize("project, config, jid, before, want", [
    (True, SchedConfig(), 2, 0.0, 600),  # the reservation first
    (True, SchedConfig(), 5, 0.0, 1500),  # else the projection
    (True, SchedConfig(), 5, 99.0, 1500),  # a projecting pass replaces the last projection
    (True, SchedConfig(), 7, 99.0, 0.0),  # ... and clears it for a job it did not project
    (True, SchedConfig(window=1200), 5, 99.0, 0.0),  # ... or one past bf_window
    (True, SchedConfig(max_job_test=3), 5, 99.0, 99.0),  # one it did not reach keeps its last
    (False, SchedConfig(), 2, 0.0, 600),  # a pass without projection still gives reservations
    (False, SchedConfig(), 5, 99.0, 99.0),  # ... and leaves the last projection as it was
])
def test_expected_start(project, config, jid, before, want):
    from types import SimpleNamespace
    from pyslurm_lite.controller.job_mgr import _expected_start
    plan = schedule(dataclasses.replace(worked(), project_starts=project), NOW, config)
    reason = plan.reasons.get(jid, Reason.PRIORITY)
    assert _expected_start(plan, jid, SimpleNamespace(expected_start=before), reason) == want


def test_expected_start_cleared_when_no_longer_waiting_for_resources():
    from types import SimpleNamespace
    from pyslurm_lite.controller.job_mgr import _expected_start
    plan = schedule(dataclasses.replace(worked(), project_starts=False), NOW)
    for reason in (Reason.DEPENDENCY, Reason.HELD_USER, Reason.QOS_MAX_JOBS_PER_USER):
        assert _expected_start(plan, 5, SimpleNamespace(expected_start=99.0), reason) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_shape_floor_changes_no_answer(monkeypatch, seed):
    """Jobs of one shape search from the last one's start: the same projections as searching
    every job from now."""
    from pyslurm_lite.sched import projection
    snap = random_snapshot(seed)
    snap = dataclasses.replace(snap, jobs=snap.jobs + tuple(dataclasses.replace(j, job_id=j.job_id + 100)
                                                            for j in snap.jobs))  # every shape twice
    fast = schedule(snap, NOW)
    monkeypatch.setattr(projection, "_shape", lambda p, job: (job.job_id,))
    slow = schedule(snap, NOW)
    assert fast.projected == slow.projected and fast.unprojected == slow.unprojected
    assert len(fast.projected) > 10
