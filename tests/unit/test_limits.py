"""Partition tiers, QOS limits and advance reservations in a scheduling pass, table-driven."""

from __future__ import annotations

from pyslurm_lite.model import Qos, Reason, Reservation
from pyslurm_lite.sched import schedule

from factories import job, node, partition, running, snapshot

NOW = 1000.0


def started(plan):
    return sorted(s.job_id for s in plan.starts)


def test_priority_tier_sorts_before_priority():
    nodes = [node("n1", cpus=1)]
    parts = [partition("lo", ["n1"], tier=1), partition("hi", ["n1"], tier=5)]
    plan = schedule(snapshot([job(1, partition="lo", priority=900), job(2, partition="hi", priority=1)],
                             nodes, partitions=parts), NOW)
    assert started(plan) == [2] and plan.reasons[1] == Reason.RESOURCES


def test_qos_max_jobs_per_user():
    q = Qos("normal", max_jobs_per_user=2)
    nodes = [node("n1", cpus=8)]
    jobs = [job(1), job(2), job(3), job(4, user="bob")]
    plan = schedule(snapshot(jobs, nodes, running=[running(9, "n1")], qos=[q]), NOW)
    assert started(plan) == [1, 4]  # alice has one running already: one more, then the limit
    assert plan.reasons[2] == plan.reasons[3] == Reason.QOS_MAX_JOBS_PER_USER


def test_qos_max_gpus_per_user():
    q = Qos("normal", max_gpus_per_user=2)
    nodes = [node("g1", cpus=8, gpus=4)]
    plan = schedule(snapshot([job(1, gpus=1), job(2, gpus=2), job(3, gpus=1), job(4)], nodes, qos=[q]), NOW)
    assert started(plan) == [1, 3, 4]
    assert plan.reasons[2] == Reason.QOS_MAX_GRES_PER_USER


def test_qos_max_wall():
    q = Qos("normal", max_wall=60)
    plan = schedule(snapshot([job(1, limit=61), job(2, limit=60), job(3)], [node("n1")], qos=[q]), NOW)
    assert started(plan) == [2]
    assert plan.reasons[1] == plan.reasons[3] == Reason.QOS_MAX_WALL


MAINT = Reservation("maint", start_time=NOW + 600, end_time=NOW + 1200, nodes=["n1"],
                    users=["root"], flags=["MAINT"])


def test_jobs_that_would_run_into_a_reservation_use_other_nodes():
    nodes = [node("n1"), node("n2")]
    jobs = [job(1, limit=5), job(2, limit=20), job(3, limit=20)]  # 5 min ends before, 20 does not
    plan = schedule(snapshot(jobs, nodes, reservations=[MAINT]), NOW)
    got = {s.job_id: s.allocations[0].node for s in plan.starts}
    assert got == {1: "n1", 2: "n2", 3: "n2"}


def test_active_reservation_keeps_others_off_and_lets_members_in():
    resv = Reservation("r1", start_time=NOW - 10, end_time=NOW + 3600, nodes=["n1"], users=["bob"])
    nodes = [node("n1", cpus=1)]
    plan = schedule(snapshot([job(1, limit=5), job(2, user="bob", reservation="r1", limit=5)],
                             nodes, reservations=[resv]), NOW)
    assert started(plan) == [2]
    assert plan.reasons[1] == Reason.REQ_NODE_NOT_AVAIL


def test_maintenance_reason_and_waiting_for_the_reservation():
    active = Reservation("maint", NOW - 10, NOW + 600, ["n1"], ["root"], [], ["MAINT"])
    later = Reservation("later", NOW + 600, NOW + 1200, ["n1"], ["bob"])
    plan = schedule(snapshot([job(1, limit=5)], [node("n1")], reservations=[active]), NOW)
    assert plan.reasons[1] == Reason.RESERVED_MAINT
    plan = schedule(snapshot([job(2, user="bob", reservation="later", limit=5)], [node("n1")],
                             reservations=[later]), NOW)
    assert plan.starts == [] and plan.reasons[2] == Reason.RESERVATION


def test_backfill_reservation_respects_advance_reservation():
    """n1 is reserved over [NOW+600, NOW+1200): a blocked 20-minute job cannot be booked to
    start before the advance reservation ends."""
    nodes = [node("n1", cpus=2, free_cpus=0)]
    plan = schedule(snapshot([job(1, cpus=2, limit=20)], nodes,
                             running=[running(9, "n1", cpus=2, end=NOW + 60)], reservations=[MAINT]), NOW)
    assert plan.reservations == {1: NOW + 1200}
