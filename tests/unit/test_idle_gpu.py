"""Idle-GPU detection: the pure decision (table-driven) and the monitor applying the operator's
action on a real state and store."""

from __future__ import annotations

import json

import pytest

from pyslurm_lite.config import Config
from pyslurm_lite.controller import idle_gpu, notify
from pyslurm_lite.controller.idle_gpu import IdleGpuMonitor, MARK, assess, gpu_samples
from pyslurm_lite.controller.job_mgr import JobManager
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.model import Job, JobSpec, JobState, NodeAllocation, UsageSample


def sample(util, t=100.0, gpus=1, node="node1", step="batch", run=0):
    return UsageSample(step=step, node=node, time=t, gpus=gpus, gpu_util=util, restart_count=run)


@pytest.mark.parametrize("samples,since,now,result", [
    ([], None, 100.0, (None, False)),  # nothing measured: no verdict
    ([], 90.0, 100.0, (90.0, False)),  # nor does it end a watch
    ([sample(0.0)], None, 100.0, (100.0, False)),  # first seen idle now
    ([sample(4.9)], 80.0, 100.0, (80.0, True)),  # idle 20 s: flagged
    ([sample(4.9)], 81.0, 100.0, (81.0, False)),  # 19 s: not yet
    ([sample(5.0)], 80.0, 100.0, (None, False)),  # at the threshold: busy, the watch ends
    ([sample(0.0), sample(50.0, node="node2")], 70.0, 100.0, (None, False)),  # one busy GPU
])
def test_assess(samples, since, now, result):
    assert assess(samples, since, now, threshold=5.0, idle_time=20.0) == result


def test_stale_samples_decide_nothing():
    job = running_job(usage=[sample(0.0, t=100.0)])
    assert gpu_samples(job, now=100.0 + 3 * 2 + 10 + 1, period=2.0) == []
    assert gpu_samples(job, now=110.0, period=2.0)


def test_samples_of_an_earlier_run_or_without_gpus_do_not_count():
    job = running_job(usage=[sample(0.0, run=0), sample(0.0, gpus=0, step="0")], run=1)
    assert gpu_samples(job, 100.0, 2.0) == []


def running_job(job_id=7, usage=(), run=0, mail_type="", requeue=True) -> Job:
    spec = JobSpec(name="wrap", user="alice", mail_type=mail_type, requeue=requeue)
    return Job(job_id=job_id, spec=spec, state=JobState.RUNNING, start_time=50.0,
               submit_time=40.0, restart_count=run, partition="main",
               allocations=[NodeAllocation("node1", 1, 100, [0])], usage=list(usage))


@pytest.fixture
def clusterstate(tmp_path):
    def make(action):
        cfg = Config(idle_gpu_threshold=5.0, idle_gpu_time=20, idle_gpu_action=action,
                     acct_gather_frequency=2)
        now = [100.0]
        s = ClusterState(cfg, Store(f"sqlite:///{tmp_path}/{action}.db", clock=lambda: now[0]),
                         clock=lambda: now[0])
        notifier = notify.Notifier(s)
        s.on_save = notifier.on_save
        job = running_job(usage=[sample(0.0)], requeue=action != "cancel")
        job.admin_comment = "checked by ops"
        s.store.insert_jobs([job], [("", {})])
        s.jobs[job.job_id] = job
        s.active.add(job.job_id)
        return s, job, IdleGpuMonitor(s, JobManager(s), notifier), now
    return make


def step(monitor, job, now, t):
    now[0] = t
    job.usage = [sample(0.0, t=t)]
    return monitor.run_once(t)


@pytest.mark.parametrize("action", ["none", "notify", "cancel", "requeue"])
def test_a_job_idle_for_the_time_is_flagged_once_and_the_action_taken(clusterstate, action):
    s, job, monitor, now = clusterstate(action)
    step(monitor, job, now, 100.0)
    step(monitor, job, now, 119.0)
    assert MARK not in job.admin_comment
    effects = step(monitor, job, now, 120.0)
    assert job.admin_comment.startswith("checked by ops; IdleGPU: 1 GPU(s) under 5% for 20 s since ")
    stored = s.store.load_jobs(active_only=False)[0]
    assert stored.admin_comment == job.admin_comment  # committed, sacct reads it
    state_after = {"none": JobState.RUNNING, "notify": JobState.RUNNING,
                   "cancel": JobState.CANCELLED, "requeue": JobState.PENDING}[action]
    assert job.state == state_after
    assert bool(effects.signals) == (action in ("cancel", "requeue"))
    notices = [json.loads(r["payload"])["event"] for r in s.store.due_outbox(1e12)]
    assert ("IDLE_GPU" in notices) == (action == "notify")
    comment = job.admin_comment
    step(monitor, job, now, 200.0)
    assert job.admin_comment == comment  # flagged once


def test_a_job_busy_again_before_the_time_is_not_flagged(clusterstate):
    s, job, monitor, now = clusterstate("none")
    step(monitor, job, now, 100.0)
    now[0] = 110.0
    job.usage = [sample(80.0, t=110.0)]
    monitor.run_once(110.0)
    step(monitor, job, now, 121.0)  # idle again from 121: the 20 s start over
    assert MARK not in job.admin_comment
    step(monitor, job, now, 141.0)
    assert MARK in job.admin_comment


def test_off_when_idle_gpu_time_is_zero(clusterstate):
    s, job, monitor, now = clusterstate("none")
    s.cfg.idle_gpu_time = 0
    for t in (100.0, 200.0, 300.0):
        step(monitor, job, now, t)
    assert MARK not in job.admin_comment


def test_flag_text_names_gpus_threshold_and_time():
    assert idle_gpu.flag_text(2, 5.0, 20, 0.0).startswith("IdleGPU: 2 GPU(s) under 5% for 20 s since ")


def test_flag_text_names_its_run():
    assert idle_gpu.flag_text(1, 5.0, 20, 0.0, run=3).endswith(" (run 3)")
    assert idle_gpu.flagged_runs("ops; IdleGPU: 1 GPU(s) x (run 0); IdleGPU: 1 GPU(s) y (run 2)") == {0, 2}
    assert idle_gpu.flagged_runs("IdleGPU: 1 GPU(s) under 5% for 20 s") == {0}  # an older flag
    assert idle_gpu.flagged_runs("checked by ops") == set()


@pytest.mark.parametrize("action", ["cancel", "requeue"])
def test_a_new_run_of_a_flagged_job_is_watched_again(clusterstate, action):
    """The owner requeues the job the action ended (or it was requeued): the new run, idle
    again, is flagged and acted on again, not let off by the first run's flag."""
    s, job, monitor, now = clusterstate(action)
    step(monitor, job, now, 100.0)
    step(monitor, job, now, 120.0)
    assert job.state != JobState.RUNNING and job.admin_comment.endswith("(run 0)")
    job.state, job.restart_count, job.start_time = JobState.RUNNING, job.restart_count + 1, 130.0
    s.completing.discard(job.job_id)
    s.active.add(job.job_id)
    s.save([job])
    run = job.restart_count
    for t in (130.0, 150.0):
        now[0] = t
        job.usage = [sample(0.0, t=t, run=run)]
        monitor.run_once(t)
    assert job.admin_comment.count(MARK) == 2 and job.admin_comment.endswith(f"(run {run})")
    assert job.state != JobState.RUNNING


def _array_state(tmp_path):
    cfg = Config(idle_gpu_threshold=5.0, idle_gpu_time=20, idle_gpu_action="cancel",
                 acct_gather_frequency=2)
    now = [100.0]
    s = ClusterState(cfg, Store(f"sqlite:///{tmp_path}/array.db", clock=lambda: now[0]),
                     clock=lambda: now[0])
    tasks = []
    for i in range(3):  # task 0 has the array's id (40), as slurmctld numbers them
        t = running_job(job_id=40 + i, usage=[sample(0.0 if i == 0 else 90.0)], requeue=False)
        t.array_job_id, t.array_task_id = 40, i
        tasks.append(t)
    tasks[2].state, tasks[2].allocations, tasks[2].start_time, tasks[2].usage = \
        JobState.PENDING, [], 0.0, []  # a task still waiting
    s.store.insert_jobs(tasks, [("", {})] * 3)
    for t in tasks:
        s.jobs[t.job_id] = t
        s.active.add(t.job_id)
    return s, tasks, IdleGpuMonitor(s, JobManager(s)), now


def test_an_idle_array_task_ends_alone(tmp_path):
    s, tasks, monitor, now = _array_state(tmp_path)
    for t in (100.0, 120.0):
        now[0] = t
        for i, task in enumerate(tasks[:2]):
            task.usage = [sample(0.0 if i == 0 else 90.0, t=t)]
        monitor.run_once(t)
    assert [t.state for t in tasks] == [JobState.CANCELLED, JobState.RUNNING, JobState.PENDING]
    assert MARK in tasks[0].admin_comment and MARK not in tasks[1].admin_comment
