"""srun -m/--distribution at the node level: each task's node, table-driven."""

import pytest

from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.layout import distribute, parse_distribution


@pytest.mark.parametrize("ntasks, nnodes, dist, per_node, where", [
    (3, 2, "", 0, [0, 0, 1]),
    (3, 2, "block", 0, [0, 0, 1]),
    (4, 2, "cyclic", 0, [0, 1, 0, 1]),
    (5, 2, "cyclic", 0, [0, 1, 0, 1, 0]),
    (5, 2, "plane=2", 0, [0, 0, 1, 1, 0]),
    (6, 2, "plane=4", 0, [0, 0, 0, 0, 1, 1]),
    (6, 2, "plane=4", 3, [0, 0, 0, 1, 1, 1]),  # --ntasks-per-node=3 caps the plane
    (4, 2, "cyclic:block", 0, [0, 1, 0, 1]),
    (4, 2, "*:cyclic", 0, [0, 0, 1, 1]),
    (4, 2, "block,Pack", 0, [0, 0, 1, 1]),
    (2, 2, "cyclic", 1, [0, 1]),
])
def test_distribute(ntasks, nnodes, dist, per_node, where):
    assert distribute(ntasks, nnodes, dist, per_node) == where


@pytest.mark.parametrize("text", ["diagonal", "plane", "plane=0", "plane=x", "block:sideways",
                                  "cyclic=2", "block:block:block:block", "block,Squash"])
def test_bad_distribution_is_refused(text):
    with pytest.raises(InvalidRequest, match="Invalid --distribution"):
        parse_distribution(text)


def test_lower_levels_are_returned_for_srun_to_report():
    assert parse_distribution("cyclic:fcyclic") == ("cyclic", 0, ["fcyclic"])
