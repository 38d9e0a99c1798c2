"""The priority manager's charging against a real store: periodic charges of running jobs, the
rest at the end, decay, state.assoc_usage, and no double charge across a controller restart."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite.config import Config
from pyslurm_lite.controller.assoc_cmds import Request, execute
from pyslurm_lite.controller.priority_mgr import PriorityManager
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.model import JobState

START = 1_700_000_000.0


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def manager(tmp_path, clock, half_life_minutes=0, period=60):
    """Account physics with user p in it (p's default) and user q in bio, in the database."""
    cfg = Config()
    cfg.priority_decay_half_life = half_life_minutes
    cfg.priority_calc_period = period
    state = ClusterState(cfg, Store(f"sqlite:///{tmp_path / 'state.db'}", clock=clock), clock)
    for verb, entity, names, settings in (("add", "account", ["physics", "bio"], {}),
                                          ("add", "user", ["p"], {"Account": "physics"}),
                                          ("add", "user", ["q"], {"Account": "bio"})):
        execute(state.accounts, Request(verb, entity, names, {}, settings), operator=True)
    return state, PriorityManager(state)


def running_gpu_job(state, job_id=5, account="physics", user="p"):
    job = model_job(job_id, gpus=(0,), user=user, account=account)
    job.start_time, job.billing = START, 11.0
    state.jobs[job.job_id] = job
    return job


def test_running_jobs_are_charged_every_period_and_the_rest_at_the_end(tmp_path):
    clock = Clock(START)
    state, pm = manager(tmp_path, clock)
    job = running_gpu_job(state)
    clock.now = START + 30
    pm.charge_running(clock.now)  # less than PriorityCalcPeriod since the manager began
    assert pm.raw_usage(clock.now) == {}
    clock.now = START + 60
    pm.charge_running(clock.now)
    assert pm.raw_usage(clock.now) == {("physics", "p"): pytest.approx(660.0)}
    assert state.assoc_usage[("physics", "p")]["gres/gpu"] == pytest.approx(1.0)  # GPU-minutes
    assert state.assoc_usage[("physics", "")]["billing"] == pytest.approx(11.0)
    assert state.assoc_usage[("root", "")]["billing"] == pytest.approx(11.0)
    job.state, job.end_time = JobState.COMPLETED, START + 90
    clock.now = START + 100
    pm.charge_usage([job])
    pm.charge_usage([job])  # a repeated ending report charges nothing more
    assert pm.raw_usage(clock.now)[("physics", "p")] == pytest.approx(990.0)


def test_a_restarted_controller_does_not_charge_twice(tmp_path):
    clock = Clock(START)
    state, pm = manager(tmp_path, clock)
    job = running_gpu_job(state)
    clock.now = START + 60
    pm.charge_running(clock.now)
    state.store.close()
    # a new controller on the same database, the job still running
    state2, pm2 = manager(tmp_path, clock)
    state2.jobs[job.job_id] = job
    assert pm2.raw_usage(clock.now) == {("physics", "p"): pytest.approx(660.0)}
    pm2.charge_usage([job])  # at the same moment: nothing new
    assert pm2.raw_usage(clock.now)[("physics", "p")] == pytest.approx(660.0)
    clock.now = START + 120
    pm2.charged_at = 0.0
    pm2.charge_running(clock.now)
    assert pm2.raw_usage(clock.now)[("physics", "p")] == pytest.approx(1320.0)


def test_usage_decays_with_the_half_life(tmp_path):
    clock = Clock(START)
    state, pm = manager(tmp_path, clock, half_life_minutes=1)
    job = running_gpu_job(state)
    job.state, job.end_time = JobState.COMPLETED, START + 10
    clock.now = START + 10
    pm.charge_usage([job])
    assert pm.raw_usage(START + 10)[("physics", "p")] == pytest.approx(110.0)
    assert pm.raw_usage(START + 70)[("physics", "p")] == pytest.approx(55.0)  # one half-life on
    state.store.close()
    _, pm2 = manager(tmp_path, Clock(START + 130), half_life_minutes=1)  # decayed in the store too
    assert pm2.raw_usage(START + 130)[("physics", "p")] == pytest.approx(27.5)


def test_forgotten_jobs_drop_their_marks(tmp_path):
    clock = Clock(START)
    state, pm = manager(tmp_path, clock)
    job = running_gpu_job(state)
    clock.now = START + 60
    pm.charge_running(clock.now)
    del state.jobs[job.job_id]  # MinJobAge passed
    clock.now = START + 120
    pm.charge_running(clock.now)
    assert pm.charged == {} and state.store.load_charged() == {}


# ---- without AccountingStorageEnforce=associations: any -A is accepted ---------------------------
def test_an_account_that_is_no_association_charges_the_default_one(tmp_path):
    """Naming a fresh -A neither escapes the usage charged so far nor ranks the user anew."""
    clock = Clock(START)
    state, pm = manager(tmp_path, clock)
    for job_id, account, user in ((5, "physics", "p"), (6, "fresh", "p"), (7, "fresh", "stranger")):
        job = running_gpu_job(state, job_id, account=account, user=user)
        job.state, job.end_time = JobState.COMPLETED, START + 10
    clock.now = START + 10
    pm.charge_usage(list(state.jobs.values()))
    # p's default association takes both of p's jobs; a user without any, root's
    assert pm.raw_usage(clock.now) == {("physics", "p"): pytest.approx(220.0),
                                       ("root", "stranger"): pytest.approx(110.0)}
    tree, root = pm.fair_tree(clock.now, {("fresh", "p"), ("bio", "q")})
    factors = fairshare_factors(root)
    assert ("fresh", "p") not in factors  # no entry with no usage to rank p by
    assert factors[("physics", "p")] < factors[("bio", "q")]


def fairshare_factors(root):
    from pyslurm_lite.controller import fairshare
    return fairshare.factors(root)


def test_a_requeued_run_is_charged_up_to_its_requeue_and_the_next_run_from_its_start(tmp_path):
    from pyslurm_lite.controller.job_mgr import JobManager
    clock = Clock(START)
    state, pm = manager(tmp_path, clock)
    job = running_gpu_job(state)
    job.state = JobState.RUNNING
    clock.now = START + 40
    with state.lock:
        JobManager(state).requeue(job)  # 40 s of the first run, not charged yet
    assert job.start_time == 0.0 and job.state == JobState.PENDING
    job.state, job.start_time = JobState.RUNNING, START + 50  # the second run
    job.allocations = running_gpu_job(state, job_id=99).allocations
    del state.jobs[99]
    clock.now = START + 70
    pm.charge_running(clock.now)
    # 40 s of the first run and 20 s of the second, at 11 billing units a second
    assert pm.raw_usage(clock.now) == {("physics", "p"): pytest.approx(660.0)}
    clock.now = START + 140
    pm.charge_running(clock.now)  # the second run goes on from where it was charged
    assert pm.raw_usage(clock.now)[("physics", "p")] == pytest.approx(660.0 + 770.0)
