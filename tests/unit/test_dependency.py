"""--dependency, table-driven: Slurm's types, ',' (all) and '?' (any), never-satisfiable cases."""

import pytest

from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.sched.dependency import NEVER, OK, WAIT, evaluate, parse

RUN, PD = ("RUNNING", True), ("PENDING", False)
CD, F, CA = ("COMPLETED", True), ("FAILED", True), ("CANCELLED", False)


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
    ("afterok:1:2", {1: CD, 2: RUN}, WAIT),
    ("afterok:1:2", {1: CD, 2: CD}, OK),
    ("afterok:1,afterany:2", {1: CD, 2: PD}, WAIT),
    ("afterok:1,afterany:2", {1: F, 2: PD}, NEVER),
    ("afterok:1?afternotok:1", {1: F}, OK),
    ("afterok:1?afterok:2", {1: F, 2: RUN}, WAIT),
    ("afterok:1?afterok:2", {1: F, 2: F}, NEVER),
    ("afterok:99", {}, NEVER),  # no such job
])
def test_evaluate(text, states, want):
    assert evaluate(text, states) == want


def test_singleton_waits_while_busy():
    assert evaluate("singleton", {}, singleton_busy=True) == WAIT
    assert evaluate("singleton", {}, singleton_busy=False) == OK


@pytest.mark.parametrize("bad", ["afterok", "afterok:x", "before:1", "afterok:1,afterok:2?afterok:3",
                                 "singleton:3"])
def test_malformed_dependencies_are_refused(bad):
    with pytest.raises(InvalidRequest):
        parse(bad)
