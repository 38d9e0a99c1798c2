"""The review fixes of issue #18: the starvation guard's clock (a wait counts from when the job
could run), EASY++ never predicting a job without a time limit, projections booked for the
planned length, History with sacct's user names, the guard's floor, and malformed sacct
ReqTRES. Each test here failed on the code before its fix. NOW = 1000 unless said.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.model import JobState, Reason
from pyslurm_lite.sched import SchedConfig, schedule
from pyslurm_lite.sched.cycle import order_key, starved_jobs
from pyslurm_lite.sched.policy import GUARD, POLICIES, Guard, History, Policy, WaitScale

from factories import job, node, running, snapshot

NOW = 1000.0
GUARDED = Policy("guarded", guard=Guard(factor=1.0))


# ---- the guard's clock, pure (sched/cycle.py) ---------------------------------------------------

def test_begin_later_than_submit_starves_from_begin():
    """Submitted at 1 with --begin 900, bound 500: at 1000 it has waited 100 s (from 900), not
    999: not starved; at 1400 it is."""
    snap = dataclasses.replace(snapshot([job(2, submit=1, begin=900, limit=10)], [node("n1")]),
                               starve_bound=500)
    assert starved_jobs(snap, NOW) == frozenset()
    assert starved_jobs(snap, 1400.0) == frozenset({2})


def held_then_released_snapshot():
    """One node, 4 CPUs; A holds 2 until NOW+600. S (4 CPUs, 10 min) submitted at 100 and able
    to run since; H (4 CPUs, 10 min) submitted earlier (at 1) but held until 800
    (waiting_since 800). Bound 100: both are starved, S since long before H."""
    s = dataclasses.replace(job(2, cpus=4, limit=10, submit=100), waiting_since=100.0)
    h = dataclasses.replace(job(3, cpus=4, limit=10, submit=1), waiting_since=800.0)
    return dataclasses.replace(
        snapshot([s, h], [node("n1", cpus=4, free_cpus=2)],
                 running=[running(1, "n1", cpus=2, end=NOW + 600)]),
        starve_bound=100)


def test_job_starved_first_stays_ahead_of_one_held_then_released():
    snap = held_then_released_snapshot()
    starved = starved_jobs(snap, NOW)
    assert starved == frozenset({2, 3})
    queue = sorted(snap.jobs, key=order_key(snap, NOW, GUARDED, starved))
    assert [j.job_id for j in queue] == [2, 3]  # S, though H was submitted first
    plan = schedule(snap, NOW, SchedConfig(policy=GUARDED))
    assert plan.starts == []
    assert plan.reservations == {2: NOW + 600, 3: NOW + 1200}  # S keeps the first slot


# ---- the guard's clock, in the controller (controller/state.py) --------------------------------

CONF = ("ClusterName=c\nStateSaveLocation={dir}\nNodeName=node1 CPUs=6 RealMemory=4000\n"
        "PartitionName=main Nodes=node1 Default=YES\n")


def stored(job_id, submit, start=0.0, end=0.0, limit=60, cpus=1, begin=0.0):
    from factories import model_job
    from pyslurm_lite.model import JobState
    j = model_job(job_id, cpus_per_task=cpus, begin_time=begin)
    j.submit_time, j.start_time, j.end_time, j.time_limit = submit, start, end, limit
    j.state = JobState.COMPLETED if end else JobState.RUNNING if start else JobState.PENDING
    if not start:
        j.allocations = []
    return j


@pytest.fixture
def controller(tmp_path):
    """A real controller on SQLite, its clock `controller.fake_now["now"]` (seconds) set by the test."""
    from pyslurm_lite import config
    from pyslurm_lite.controller.daemon import Controller
    cfg = config.parse(CONF.format(dir=tmp_path), str(tmp_path / "slurm.conf"))
    clock = {"now": NOW}
    ctl = Controller(cfg, clock=lambda: clock["now"])
    ctl.fake_now = clock  # not ctl.clock: the daemon reads that
    try:
        yield ctl
    finally:
        ctl.store.close()


def recovered(ctl, policy, jobs):
    ctl.state.use_policy(policy)
    ctl.store.insert_jobs(jobs, [("#!/bin/sh\n", {})] * len(jobs))
    ctl.state.recover()
    ctl.state.registered.add("node1")  # as if its agent had registered
    ctl.state.nodes["node1"].responding = True
    ctl.state.refresh_node("node1")
    return ctl.state


def test_guard_clock_first_seen_blocked_and_released(controller):
    """First seen able to run: max(submit, begin). Seen blocked (a dependency, --begin ahead)
    and able to run later: from that later pass's now. A job that could run keeps its clock."""
    state = recovered(controller, GUARDED, [stored(i, 100.0 * i) for i in range(2, 6)])
    views = (job(2, submit=200), job(3, submit=300, begin=700), job(4, submit=400),
             job(5, submit=500, begin=1500))
    out = {v.job_id: v.waiting_since for v in state._guard_clock(views, {4: "afterok:9"}, NOW)}
    assert out == {2: 200, 3: 700, 4: 0, 5: 0}  # 4 and 5 blocked: no clock
    later = {v.job_id: v.waiting_since for v in state._guard_clock(views, {}, 1600.0)}
    assert later == {2: 200, 3: 700, 4: 1600, 5: 1600}


def test_guard_clock_through_the_snapshot(controller):
    """The snapshot carries it: --begin 1500 seen at 1000, runnable at 2000: waits from 2000."""
    state = recovered(controller, GUARDED, [stored(2, 100.0), stored(3, 200.0, begin=1500.0)])
    assert {j.job_id: j.waiting_since for j in state.snapshot().jobs} == {2: 100, 3: 0}
    controller.fake_now["now"] = 2000.0
    assert {j.job_id: j.waiting_since for j in state.snapshot().jobs} == {2: 100, 3: 2000}


def test_job_started_counts_the_wait_from_waiting_since(controller):
    """Submitted at 100, could run since 900, started at 1000: a wait of 100, not 900."""
    state = recovered(controller, GUARDED, [stored(2, 100.0)])
    state.waiting_since[2] = 900.0
    j = state.jobs[2]
    j.start_time = 1000.0
    before = (state.waits.count, state.waits.total)
    state.job_started(j)
    assert (state.waits.count - before[0], state.waits.total - before[1]) == (1, pytest.approx(100))
    assert 2 not in state.waiting_since


# ---- EASY++ and jobs without a time limit (controller/state.py) --------------------------------

def unlimited_cluster(controller):
    """uid 1000 ran 300 s and 100 s: predicted 200 s. node1 (6 CPUs): R (1 CPU, 60 min) runs
    since 600 (outlived 200 s: planned to end at 1500); A (6 CPUs, 60 min) is blocked; B
    (2 CPUs) has no time limit; U runs without one."""
    return recovered(controller, POLICIES["easy++"],
                     [stored(1, 10, 20, 320), stored(2, 30, 400, 500), stored(3, 500, 600, limit=60),
                      stored(4, 700, limit=60, cpus=6), stored(5, 800, limit=0, cpus=2)])


def test_unlimited_pending_job_is_not_predicted(controller):
    snap = unlimited_cluster(controller).snapshot()
    planned = {j.job_id: j.planned_minutes for j in snap.jobs}
    assert planned[4] == pytest.approx(200 / 60)  # the limited one is (the test says something)
    assert planned[5] == 0
    (r,) = snap.running
    assert r.planned_end == 1500


def test_unlimited_running_job_keeps_no_planned_end(controller):
    state = unlimited_cluster(controller)
    state.jobs[3].time_limit = 0  # R without a limit: planned as before, never ending
    (r,) = state.snapshot().running
    assert (r.end, r.planned_end) == (math.inf, 0)


def test_unlimited_job_does_not_backfill_ahead_of_a_reservation(controller):
    """A is reserved at R's planned end (1500); B, unlimited, would hold 2 CPUs for ever: it
    must wait (Priority), as under EASY, whatever its user ran before."""
    snap = unlimited_cluster(controller).snapshot()
    plan = schedule(snap, NOW, SchedConfig(policy=POLICIES["easy++"]))
    assert plan.starts == []
    assert plan.reservations == {4: 1500}
    assert plan.reasons[5] == Reason.PRIORITY


# ---- projections booked for the planned length (sched/projection.py) ---------------------------

def projecting(jobs, run):
    return dataclasses.replace(snapshot(jobs, [node("n1", cpus=4, free_cpus=0)], running=run),
                               project_starts=True)


def predicted(jid, cpus, limit, minutes):
    return dataclasses.replace(job(jid, cpus=cpus, limit=limit), planned_minutes=minutes)


def test_projection_books_the_planned_length():
    """now 0, R holds 4 CPUs until 600; B (4 CPUs, 10 min) reserved 600-1200; Y (4 CPUs, 120
    min, predicted 5) projected at 1200 and booked until 1500; Z (4 CPUs, 10 min) at 1500,
    not at 1200 + 120 min."""
    snap = projecting([job(2, cpus=4, limit=10), predicted(3, 4, 120, 5), job(4, cpus=4, limit=10)],
                      [running(1, "n1", cpus=4, end=600)])
    plan = schedule(snap, 0.0, SchedConfig(policy=POLICIES["easy++"]))
    assert plan.reservations == {2: 600}
    assert plan.projected == {3: 1200, 4: 1500}


def test_predicted_job_not_floored_by_a_longer_one_of_its_shape():
    """now 0, R1 holds 2 CPUs until 600, R2 2 until 900; B (4 CPUs, 10 min) reserved 900-1500.
    X (2 CPUs, 120 min) fits no earlier than 1500; Y (2 CPUs, 120 min, predicted 5) fits the
    5-minute hole 600-900: its shape is not X's, X's start is no floor for it."""
    snap = projecting([job(2, cpus=4, limit=10), job(3, cpus=2, limit=120), predicted(4, 2, 120, 5)],
                      [running(1, "n1", cpus=2, end=600), running(5, "n1", cpus=2, end=900)])
    plan = schedule(snap, 0.0, SchedConfig(policy=POLICIES["easy++"]))
    assert plan.reservations == {2: 900}
    assert plan.projected == {3: 1500, 4: 600}


# ---- History and the guard's floor (sched/policy.py) -------------------------------------------

def test_history_takes_sacct_user_names_and_skips_unknown_users():
    h = History()
    for user in ("", -1, None):
        h.completed(user, 5)
    h.completed("ann", 100)
    h.completed("ann", 300)
    h.completed(1000, 60)  # a uid (the daemon's) still works
    assert h.last == {"ann": (100, 300), 1000: (60, 60)}
    assert h.predict("ann", 3600) == 200
    assert h.predict("", 3600) == 3600


def test_guard_bound_has_a_floor_of_600():
    assert GUARD.floor == 600
    scale = WaitScale(GUARD)
    assert scale.bound() == 600  # no waits yet: not 0
    scale.started(0.0)
    assert scale.bound() == 600
    scale.started(200.0)
    assert scale.bound() == 1000  # 10 * mean 100


# ---- malformed sacct ReqTRES and an EASY++ replay (sim/sacct.py) ---------------------------------

SACCT = "JobID|User|Submit|Start|Elapsed|Timelimit|ReqTRES\n"


@pytest.mark.parametrize("tres, message", [
    ("cpu=nan", "x:2: bad ReqTRES item 'cpu=nan'"),
    ("cpu=inf", "x:2: bad ReqTRES item 'cpu=inf'"),
    ("cpu=-2", "x:2: bad ReqTRES item 'cpu=-2'"),
    ("node=inf", "x:2: bad ReqTRES item 'node=inf'"),
    ("cpu=1,node=1000000000", "x:2: 1000000000 nodes / 1 CPUs is more than any cluster"),
    ("cpu=1000000000,node=1", "x:2: 1 nodes / 1000000000 CPUs is more than any cluster"),
])
def test_bad_reqtres_values_name_the_line(tres, message):
    from pyslurm_lite.sim import sacct
    text = SACCT + f"1|ann|2026-01-05T10:00:00|2026-01-05T10:00:00|00:01:00|00:10:00|{tres}\n"
    with pytest.raises(InvalidRequest, match=message):
        sacct.parse(text, "x")


def sacct_history(tmp_path, extra_conf=""):
    """Two users on one 4-CPU node; ann's jobs run far shorter than their limits."""
    rows = [("1", "ann", "10:00:00", "00:05:00", "00:30:00", 4), ("2", "ann", "10:00:10", "00:05:00", "00:30:00", 2),
            ("3", "bob", "10:00:20", "00:20:00", "00:30:00", 4), ("4", "ann", "10:00:30", "00:02:00", "00:30:00", 2),
            ("5", "bob", "10:00:40", "00:01:00", "00:10:00", 1)]
    hist = tmp_path / "h.txt"
    hist.write_text(SACCT + "".join(f"{j}|{u}|2026-01-05T{t}|2026-01-05T{t}|{run}|{lim}|cpu={c},node=1\n"
                                    for j, u, t, run, lim, c in rows))
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n1 Default=YES\n" + extra_conf)
    return str(hist), str(conf)


@pytest.mark.parametrize("policy, extra", [
    ("easy++", ""), (None, "SchedulerParameters=sched_policy=easy++\n")])
def test_simulate_from_sacct_replays_easy_plus_plus(tmp_path, policy, extra):
    from click.testing import CliRunner
    from pyslurm_lite.cli.admin import main
    hist, conf = sacct_history(tmp_path, extra)
    out = str(tmp_path / "o.csv")
    args = ["simulate", "--from-sacct", hist, "--conf", conf, "--dump", out]
    result = CliRunner().invoke(main, args + (["--policy", policy] if policy else []))
    assert result.exit_code == 0, result.output + repr(result.exception)
    with open(out) as f:
        assert len(f.read().splitlines()) == 1 + 5  # the header and every job


# ---- the guard's online re-fit in the controller (controller/guard_refit.py) -------------------

def test_controller_refits_the_guard_factor_from_its_database(controller, monkeypatch):
    """Due a window after the oldest job; the jobs of the database become the window (the
    backlog included, each with what is known now), and the factor chosen is the guard's."""
    from pyslurm_lite.sched.policy import POLICIES
    from pyslurm_lite.controller import guard_refit as ctl_refit
    learned = POLICIES["learned"]
    day = 86400.0
    seen = {}

    def choose(window, policy, seed, current):
        seen.update(submit=window.submit, waited_from=window.waited_from, run=window.run,
                    procs=window.procs, machine=window.machine, seed=seed, current=current)
        return 40.0

    monkeypatch.setattr(ctl_refit, "choose_factor", choose)
    first = 1000.0
    opens = first + 60 * day - learned.refit.window
    jobs = [stored(2, first, start=first + 10, end=first + 70),               # before: out
            stored(3, opens - 2 * day, start=opens + day, end=opens + day + 600, cpus=2),
            stored(4, opens + 3 * day, start=opens + 4 * day, end=opens + 4 * day + 30),
            stored(5, opens + 50 * day, start=opens + 56 * day - 600, limit=90),  # running now
            stored(6, opens + 55 * day, limit=30),                           # pending now
            stored(7, opens + 54 * day, limit=30)]          # cancelled while pending: out
    jobs[-1].state = JobState.CANCELLED
    state = recovered(controller, learned, jobs)
    refit = controller.guard_refit
    refit.run_once(first + learned.refit.window - 1)
    assert refit.due == first + learned.refit.window and refit.thread is None  # not yet
    now = first + 60 * day
    controller.fake_now["now"] = now
    controller.monitor_once(now)  # the daemon's monitor loop starts the fit
    refit.thread.join(30)
    assert state.waits.guard.factor == 40.0 and seen["current"] == 10.0
    assert seen["waited_from"] == [opens - 2 * day, opens + 3 * day, opens + 50 * day,
                                   opens + 55 * day]
    assert seen["submit"] == [opens, opens + 3 * day, opens + 50 * day, opens + 55 * day]
    assert seen["run"] == [600, 30, 90 * 60, 30 * 60]
    assert seen["procs"] == [2, 1, 1, 1] and seen["machine"] == 6
    assert seen["seed"] == (state.waits.count, state.waits.total) and state.waits.count == 4
    assert refit.due == first + learned.refit.window + learned.refit.period  # whole periods on


def test_simulate_from_sacct_refits_the_guard_on_the_records_cpus(tmp_path, monkeypatch):
    """sched_policy=learned over 70 days of records: fits from day 56, weekly, each on the
    window's jobs as CPU counts on a machine of the conf's CPUs."""
    from datetime import datetime, timedelta
    from click.testing import CliRunner
    from pyslurm_lite.cli.admin import main
    from pyslurm_lite.sim import sched_engine
    fits = []

    def choose(window, policy, seed, current):
        fits.append((window.machine, sorted(set(window.procs)), len(window)))
        return current

    monkeypatch.setattr(sched_engine, "choose_factor", choose)
    t0 = datetime(2026, 1, 5, 10)
    rows = [(k, (t0 + timedelta(hours=12 * k)).isoformat(), 1 + k % 3) for k in range(140)]
    hist = tmp_path / "h.txt"
    hist.write_text(SACCT + "".join(f"{k + 1}|ann|{t}|{t}|00:05:00|00:30:00|cpu={c},node=1\n"
                                    for k, t, c in rows))
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n1 Default=YES\n"
                    "SchedulerParameters=sched_policy=learned\n")
    result = CliRunner().invoke(main, ["simulate", "--from-sacct", str(hist), "--conf", str(conf)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    # 70 days of jobs: fits due at day 56 and 63 (day 70 is after the last job ends)
    assert [(m, p) for m, p, _ in fits] == [(4, [1, 2, 3])] * 2, fits
    assert fits[0][2] == fits[1][2] == 113  # two jobs a day over 56 days, both ends in
