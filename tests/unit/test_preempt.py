"""Preemption (sched/preempt), table-driven: who may be pushed out, the fewest victims, the
youngest first, PreemptExemptTime, modes and grace times, and no double counting."""

from __future__ import annotations

import pytest

from pyslurm_lite.model import Qos, Reason
from pyslurm_lite.sched import Preemption, SchedConfig, schedule

from factories import job, node, partition, running, snapshot

NOW = 1000.0
QOS = [Qos("normal", grace_time=30), Qos("high", priority=100, preempt=["normal"])]  # grace: the victim's
BY_QOS = SchedConfig(preempt_type="preempt/qos", preempt_mode="REQUEUE")
BY_TIER = SchedConfig(preempt_type="preempt/partition_prio", preempt_mode="CANCEL")
FULL = [node("n1", cpus=4, free_cpus=0)]


def two_normal_jobs(**kw):
    """A started at 400 (old), B at 900 (young), 2 CPUs each, filling n1."""
    return [running(10, "n1", cpus=2, start=400, **kw), running(11, "n1", cpus=2, start=900, **kw)]


CASES = [
    pytest.param(snapshot([job(1, cpus=2, qos="high")], FULL, running=two_normal_jobs(), qos=QOS),
                 BY_QOS, [Preemption(11, 1, "REQUEUE", 30)], id="youngest-victim-enough"),
    pytest.param(snapshot([job(1, cpus=4, qos="high")], FULL, running=two_normal_jobs(), qos=QOS),
                 BY_QOS, [Preemption(11, 1, "REQUEUE", 30), Preemption(10, 1, "REQUEUE", 30)],
                 id="both-needed"),
    pytest.param(snapshot([job(1, cpus=2)], FULL, running=two_normal_jobs(), qos=QOS),
                 BY_QOS, [], id="normal-preempts-nobody"),
    pytest.param(snapshot([job(1, cpus=2, qos="high")], FULL, running=two_normal_jobs(), qos=QOS),
                 SchedConfig(preempt_type="preempt/qos", preempt_mode="REQUEUE", preempt_exempt_time=300),
                 [Preemption(10, 1, "REQUEUE", 30)], id="exempt-time-spares-the-young"),
    pytest.param(snapshot([job(1, cpus=2, qos="high")], FULL,
                          running=[running(10, "n1", cpus=2, start=400),
                                   running(11, "n1", cpus=2, start=900, preempting=True)], qos=QOS),
                 BY_QOS, [], id="already-going-counts-first"),
    pytest.param(snapshot([job(1, cpus=2, qos="high")], FULL,
                          running=[running(10, "n1", cpus=2, start=400, requeue=False),
                                   running(11, "n1", cpus=2, start=300, requeue=False)], qos=QOS),
                 BY_QOS, [Preemption(10, 1, "CANCEL", 30)], id="no-requeue-means-cancel"),
    pytest.param(snapshot([job(1, cpus=2, partition="hi")], FULL,
                          partitions=[partition("hi", ["n1"], tier=2),
                                      partition("lo", ["n1"], tier=1, grace=5)],
                          running=two_normal_jobs(partition="lo")),
                 BY_TIER, [Preemption(11, 1, "CANCEL", 5)], id="partition-tier"),
    pytest.param(snapshot([job(1, cpus=2, partition="lo")], FULL,
                          partitions=[partition("hi", ["n1"], tier=2), partition("lo", ["n1"], tier=1)],
                          running=two_normal_jobs(partition="hi")),
                 BY_TIER, [], id="lower-tier-preempts-nobody"),
    pytest.param(snapshot([job(1, cpus=2, qos="high")], FULL, running=two_normal_jobs(), qos=QOS),
                 SchedConfig(), [], id="preempt-none"),
]


@pytest.mark.parametrize("snap, config, want", CASES)
def test_preemption(snap, config, want):
    plan = schedule(snap, NOW, config)
    assert plan.preemptions == want
    assert plan.starts == [] and plan.reasons[1] == Reason.RESOURCES


def test_two_jobs_do_not_pick_the_same_victim():
    snap = snapshot([job(1, cpus=2, qos="high", partition="a"), job(2, cpus=2, qos="high", partition="b")],
                    FULL, partitions=[partition("a", ["n1"]), partition("b", ["n1"])],
                    running=two_normal_jobs(), qos=QOS)
    plan = schedule(snap, NOW, BY_QOS)
    assert sorted(p.job_id for p in plan.preemptions) == [10, 11]
