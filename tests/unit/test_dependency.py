"""--dependency, table-driven: Slurm's types, ',' (all) and '?' (any), arrays (a whole array by
its id, one task by A_T, aftercorr), after:+minutes, never-satisfiable and vanished jobs."""

import pytest

from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.sched.dependency import NEVER, OK, WAIT, Rec, Ref, evaluate, parse, referenced

RUN, PD = ("RUNNING", 100.0), ("PENDING", 0.0)
CD, F, CA = ("COMPLETED", 100.0), ("FAILED", 100.0), ("CANCELLED", 0.0)


def array(first: int, *states) -> dict:
    """Array `first` whose task i is job first+i in states[i]."""
    return {first + i: Rec(s[0], s[1], first, i) for i, s in enumerate(states)}


@pytest.mark.parametrize("text, states, want", [
    ("afterok:1", {1: RUN}, WAIT),
    ("afterok:1", {1: CD}, OK),
    ("afterok:1", {1: F}, NEVER),
    ("afternotok:1", {1: F}, OK),
    ("afternotok:1", {1: CD}, NEVER),
    ("afterany:1", {1: CA}, OK),
    ("afterany:1", {1: PD}, WAIT),
    ("after:1", {1: RUN}, OK),
    ("after:1", {1: PD}, WAIT),
    ("after:1", {1: CA}, OK),  # ended without starting: not pending any more
    ("afterok:1:2", {1: CD, 2: RUN}, WAIT),
    ("afterok:1:2", {1: CD, 2: CD}, OK),
    ("afterok:1,afterany:2", {1: CD, 2: PD}, WAIT),
    ("afterok:1,afterany:2", {1: F, 2: PD}, NEVER),
    ("afterok:1?afternotok:1", {1: F}, OK),
    ("afterok:1?afterok:2", {1: F, 2: RUN}, WAIT),
    ("afterok:1?afterok:2", {1: F, 2: F}, NEVER),
    ("afterok:99", {}, OK),  # no such job: Slurm lifts the dependency
])
def test_evaluate(text, states, want):
    assert evaluate(text, states) == want


@pytest.mark.parametrize("text, want", [
    # array 10 = jobs 10, 11, 12: task 0 COMPLETED, task 1 RUNNING, task 2 COMPLETED
    ("afterok:10", WAIT),            # the whole array: not all ended
    ("afterany:10", WAIT),
    ("afterok:10_0", OK),            # that task alone
    ("afterok:10_1", WAIT),
    ("afterok:11", WAIT),            # a task by its own job id
    ("afterok:10_7", OK),            # no such task: gone, lifted
    ("after:10", OK),                # none pending
])
def test_array_partly_done(text, want):
    assert evaluate(text, array(10, CD, RUN, CD)) == want


@pytest.mark.parametrize("states, text, want", [
    ((CD, CD, CD), "afterok:10", OK),
    ((CD, F, CD), "afterok:10", NEVER),
    ((CD, F, RUN), "afterok:10", WAIT),   # judged once every task has ended, as Slurm
    ((CD, F, CD), "afternotok:10", OK),
    ((CD, CD, CD), "afternotok:10", NEVER),
    ((CD, F, CA), "afterany:10", OK),
    ((PD, RUN, RUN), "after:10", WAIT),
])
def test_whole_array(states, text, want):
    assert evaluate(text, array(10, *states)) == want


@pytest.mark.parametrize("own_task, want", [(0, OK), (1, NEVER), (2, WAIT), (5, NEVER)])
def test_aftercorr_waits_for_the_task_of_its_own_index(own_task, want):
    # task 5 does not exist in array 10: the whole array decides (one task FAILED: never)
    jobs = array(10, CD, F, RUN)
    if own_task == 5:
        jobs = array(10, CD, F, CD)
    assert evaluate("aftercorr:10", jobs, own_task=own_task) == want


@pytest.mark.parametrize("now, want", [(100.0 + 299, WAIT), (100.0 + 300, OK)])
def test_after_plus_minutes_counts_from_the_start(now, want):
    assert evaluate("after:1+5", {1: ("RUNNING", 100.0)}, now=now) == want


def test_singleton_waits_while_busy():
    assert evaluate("singleton", {}, singleton_busy=True) == WAIT
    assert evaluate("singleton", {}, singleton_busy=False) == OK


def test_parse_names_tasks_and_minutes():
    assert parse("afterok:1:2_3,after:4+5") == ("all", [("afterok", [Ref(1), Ref(2, 3)]),
                                                        ("after", [Ref(4, None, 5)])])
    assert referenced("afterok:1:2_3?aftercorr:7") == {1, 2, 7}


@pytest.mark.parametrize("bad", ["afterok", "afterok:x", "before:1", "afterok:1,afterok:2?afterok:3",
                                 "singleton:3", "afterok:1+5", "after:1+0", "afterok:0",
                                 "afterok:" + "9" * 5000, "afterok:1_x"])
def test_malformed_dependencies_are_refused(bad):
    with pytest.raises(InvalidRequest):
        parse(bad)
