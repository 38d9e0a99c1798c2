"""Slurm job id lists (cli/jobids.py), table-driven: what squeue -j, scancel and scontrol take."""

import pytest

from pyslurm_lite.cli.jobids import JobId, filter_fields, parse
from pyslurm_lite.errors import InvalidRequest


@pytest.mark.parametrize("text, want", [
    ("12", [JobId(12)]),
    ("12_3", [JobId(12, 3)]),
    ("12_[1-3]", [JobId(12, 1), JobId(12, 2), JobId(12, 3)]),
    ("12_[1,3]", [JobId(12, 1), JobId(12, 3)]),
    ("12.batch", [JobId(12, None, "batch")]),
    ("12.0", [JobId(12, None, "0")]),
    ("12_3.extern", [JobId(12, 3, "extern")]),
    ("12,13", [JobId(12), JobId(13)]),
    ("12,12_1,12", [JobId(12), JobId(12, 1)]),  # repeats once
    ("12_[0-4:2],7", [JobId(12, 0), JobId(12, 2), JobId(12, 4), JobId(7)]),
])
def test_parse(text, want):
    assert parse(text) == want


def test_several_values_and_text_forms():
    ids = parse(["12_3", "14.batch 15"])
    assert [str(i) for i in ids] == ["12_3", "14.batch", "15"]


@pytest.mark.parametrize("bad", ["", "x", "12_", "12_x", "_3", "0", "12.bogus", "12_[1-3%2]",
                                 "12_[3-1]", "12+1", "99999999999", "12_[]"])
def test_malformed_ids_are_refused_naming_them(bad):
    with pytest.raises(InvalidRequest, match="Invalid job id"):
        got = parse(bad)
        if not got:  # "" names nothing: squeue -j "" is no filter, not a job
            raise InvalidRequest("Invalid job id: (empty)")


def test_filter_fields_split_whole_jobs_from_tasks():
    assert filter_fields(parse("12,12_3,13_[1-2],14.0")) == ([12, 14], ["12_3", "13_1", "13_2"])
