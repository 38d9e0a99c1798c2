"""Preemption behind the head of the queue (sched/cycle + sched/preempt): under priority/basic a
high-QOS job submitted after a normal one still preempts, as in Slurm, which sorts a job ahead of
the pending jobs it could preempt and tries preemption for each pending job that could."""

from __future__ import annotations

import pytest

from pyslurm_lite.model import Qos, Reason
from pyslurm_lite.sched import Preemption, SchedConfig, schedule
from pyslurm_lite.sched.preempt import preemptors_first

from factories import job, node, running, snapshot

NOW = 1000.0
# high preempts normal; "other" is preempted by nobody
QOS = [Qos("normal"), Qos("high", preempt=["normal"]), Qos("other")]
BY_QOS = SchedConfig(preempt_type="preempt/qos", preempt_mode="REQUEUE")
BUILTIN = SchedConfig(backfill=False, preempt_type="preempt/qos", preempt_mode="REQUEUE")
FULL = [node("n1", cpus=4, free_cpus=0)]
# 10 started at 400 (old), 11 at 900 (young), 2 CPUs each, filling n1
NORMAL = [running(10, "n1", cpus=2, start=400), running(11, "n1", cpus=2, start=900)]


def victims_of(plan, by):
    return [p.job_id for p in plan.preemptions if p.by == by]


CASES = [
    # (pending jobs in priority order, config, job -> its victims, job -> its reason)
    pytest.param([job(1, cpus=4), job(2, cpus=2, qos="high")], BY_QOS,
                 {2: [11]}, {1: Reason.PRIORITY, 2: Reason.RESOURCES}, id="high-behind-normal"),
    pytest.param([job(1, cpus=4), job(2, cpus=2, qos="high")], BUILTIN,
                 {2: [11]}, {2: Reason.RESOURCES}, id="high-behind-normal-builtin"),
    # the job ahead is of a QOS high may not preempt: high stays behind it, and preempts anyway
    pytest.param([job(1, cpus=4, qos="other"), job(2, cpus=2, qos="high")], BY_QOS,
                 {2: [11]}, {1: Reason.RESOURCES, 2: Reason.RESOURCES}, id="high-behind-other"),
    pytest.param([job(1, cpus=4, qos="other"), job(2, cpus=2, qos="high"),
                  job(3, cpus=2, qos="high")], BY_QOS,
                 {2: [11], 3: [10]}, {2: Reason.RESOURCES, 3: Reason.RESOURCES}, id="each-preemptor"),
    pytest.param([job(1, cpus=4, qos="other"), job(2, cpus=2, qos="high"),
                  job(3, cpus=2, qos="high")],
                 SchedConfig(preempt_type="preempt/qos", preempt_mode="REQUEUE", max_job_test=1),
                 {2: [11], 3: []}, {3: Reason.PRIORITY}, id="within-bf-max-job-test"),
    pytest.param([job(1, cpus=4, qos="other"), job(2, cpus=2)], BY_QOS,
                 {2: []}, {2: Reason.PRIORITY}, id="normal-behind-preempts-nobody"),
]


@pytest.mark.parametrize("jobs, config, want_victims, want_reasons", CASES)
def test_preemption_behind_a_blocked_job(jobs, config, want_victims, want_reasons):
    plan = schedule(snapshot(jobs, FULL, running=NORMAL, qos=QOS), NOW, config)
    assert plan.starts == []
    assert {j: victims_of(plan, j) for j in want_victims} == want_victims
    assert {j: plan.reasons[j] for j in want_reasons} == want_reasons


def test_each_victim_goes_to_one_preemptor_only():
    plan = schedule(snapshot([job(1, cpus=4, qos="other"), job(2, cpus=2, qos="high"),
                              job(3, cpus=2, qos="high")], FULL, running=NORMAL, qos=QOS), NOW, BY_QOS)
    assert sorted(p.job_id for p in plan.preemptions) == [10, 11]
    assert all(isinstance(p, Preemption) and p.mode == "REQUEUE" for p in plan.preemptions)


QUEUE_CASES = [
    pytest.param(["normal", "high"], [2, 1], id="high-ahead-of-normal"),
    pytest.param(["other", "high"], [1, 2], id="unrelated-keeps-priority"),
    pytest.param(["normal", "other", "high"], [3, 1, 2], id="ahead-of-first-victim-only"),
    pytest.param(["high", "normal", "high"], [1, 3, 2], id="behind-earlier-high"),
    pytest.param(["normal", "normal", "high", "high"], [3, 4, 1, 2], id="preemptors-keep-their-order"),
]


@pytest.mark.parametrize("qoses, want", QUEUE_CASES)
def test_queue_order_puts_preemptors_first(qoses, want):
    jobs = [job(i, qos=q) for i, q in enumerate(qoses, start=1)]
    assert [j.job_id for j in preemptors_first(jobs, {q.name: q for q in QOS})] == want


def test_mutual_preemption_keeps_priority_order():
    qos = {"a": Qos("a", preempt=["b"]), "b": Qos("b", preempt=["a"])}
    jobs = [job(1, qos="b"), job(2, qos="a")]
    assert [j.job_id for j in preemptors_first(jobs, qos)] == [1, 2]
