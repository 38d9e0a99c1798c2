"""sacct's time specifications (cli/slurmtime.py, Slurm's parse_time) and its window defaults."""

from __future__ import annotations

from argparse import Namespace
from datetime import datetime

import pytest

from pyslurm_lite.cli import sacct
from pyslurm_lite.cli.slurmtime import TimeSpecError, midnight, parse_time

NOW = datetime(2026, 12, 1, 14, 0, 30).timestamp()  # a Tuesday, 14:00:30 local time


def at(*args) -> float:
    return datetime(*args).timestamp()


@pytest.mark.parametrize("text, want", [
    ("2026-11-30", at(2026, 11, 30)),
    ("2026-11-30T10:15", at(2026, 11, 30, 10, 15)),
    ("2026-11-30T10:15:42", at(2026, 11, 30, 10, 15, 42)),
    ("10:30", at(2026, 12, 1, 10, 30)),
    ("16:30", at(2026, 12, 1, 16, 30)),  # looking back: still today
    ("10:30:05", at(2026, 12, 1, 10, 30, 5)),
    ("4:30pm", at(2026, 12, 1, 16, 30)),
    ("12:00AM", at(2026, 12, 1, 0, 0)),
    ("1130", at(2026, 11, 30)),
    ("113025", at(2025, 11, 30)),
    ("11/30", at(2026, 11, 30)),
    ("11/30/25", at(2025, 11, 30)),
    ("11.30.25", at(2025, 11, 30)),
    ("11/30-08:00", at(2026, 11, 30, 8, 0)),
    ("1215", at(2026, 12, 15)),  # Slurm looks back by month only: this month is this year
    ("today", at(2026, 12, 1)),
    ("midnight", at(2026, 12, 1)),
    ("noon", at(2026, 12, 1, 12)),
    ("elevenses", at(2026, 12, 1, 11)),
    ("fika", at(2026, 12, 1, 15)),
    ("teatime", at(2026, 12, 1, 16)),
    ("now", NOW),
    ("now-2hours", NOW - 7200),
    ("now-90", NOW - 90),
    ("now-3days", NOW - 3 * 86400),
    ("now-1week", NOW - 604800),
    ("now+10minutes", NOW + 600),
    ("NOW-1HOUR", NOW - 3600),
    ("uts1700000000", 1_700_000_000.0),
    ("", 0.0),
])
def test_time_specifications(text, want):
    assert parse_time(text, NOW) == want


@pytest.mark.parametrize("text", [
    "yesterdayish", "25:00", "10:61", "2026-13-01", "1340", "now-2h", "now*3", "13:00pm",
    "uts12", "2026-02-30",
])
def test_bad_time_specifications(text):
    with pytest.raises(TimeSpecError, match=r"Invalid time specification \(pos=\d+\): "):
        parse_time(text, NOW)


def test_a_month_still_ahead_is_last_years():
    in_march = datetime(2026, 3, 10, 9, 0).timestamp()
    assert parse_time("1130", in_march) == at(2025, 11, 30)
    assert parse_time("0228", in_march) == at(2026, 2, 28)


def test_looking_ahead_a_past_time_of_day_is_tomorrow():
    assert parse_time("10:30", NOW, past=False) == at(2026, 12, 2, 10, 30)
    assert parse_time("1130", NOW, past=False) == at(2027, 11, 30)


def ns(start=None, end=None):
    return Namespace(starttime=start, endtime=end)


@pytest.mark.parametrize("start, end, by_job, by_state, want", [
    (None, None, False, False, (midnight(NOW), 0.0)),  # since 00:00 today, until now
    (None, None, True, False, (0.0, 0.0)),  # -j: all time
    (None, None, False, True, (NOW, NOW + 1)),  # -s: this second
    (None, None, True, True, (0.0, 0.0)),  # -j -s: all time
    ("10:00", None, False, True, (at(2026, 12, 1, 10), at(2026, 12, 1, 10) + 1)),  # -s: E = S
    ("10:00", None, False, False, (at(2026, 12, 1, 10), 0.0)),
    ("10:00", "11:00", True, True, (at(2026, 12, 1, 10), at(2026, 12, 1, 11))),
])
def test_default_window(start, end, by_job, by_state, want):
    assert sacct.time_window(ns(start, end), NOW, by_job, by_state) == want


def test_a_bad_window_exits_1(capsys):
    with pytest.raises(SystemExit) as e:
        sacct.time_window(ns("tomorrowish"), NOW, False, False)
    assert e.value.code == 1
    assert "Invalid time specification (pos=" in capsys.readouterr().err


@pytest.mark.parametrize("text, want", [
    ("12", ([12], [], {"12": set()})),
    ("12_3", ([], ["12_3"], {"12_3": set()})),
    ("12.batch,12.0", ([12], [], {"12": {"batch", "0"}})),
    ("12.0,12", ([12], [], {"12": set()})),  # the whole job wins
    ("12_[1-2]", ([], ["12_1", "12_2"], {"12_1": set(), "12_2": set()})),
    ("12_3.1", ([], ["12_3"], {"12_3": {"1"}})),
])
def test_job_ids(text, want):
    assert sacct.parse_job_ids([text]) == want


def test_every_field_has_a_value_or_a_reason_to_be_empty():
    from pyslurm_lite.cli import acctfields as af
    for name in af.WIDTHS:
        assert name in af.GETTERS or name in af.USAGE | af.NOT_RECORDED | af.NEVER_SET, name
    assert "Restarts" not in af.WIDTHS  # Slurm 22.05's sacct has no such field


def test_a_cancelled_job_says_who_cancelled_it():
    from types import SimpleNamespace

    from pyslurm_lite.cli import acctfields as af
    from pyslurm_lite.model import JobSpec
    job = SimpleNamespace(cancelled_by="1000")
    rec = af.Rec(job, JobSpec(), "CANCELLED", None, 0.0, None)
    assert af.value("State", rec) == "CANCELLED by 1000"
    job.cancelled_by = ""
    assert af.value("State", rec) == "CANCELLED"
