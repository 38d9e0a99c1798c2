"""units.py: Slurm's spellings of time limits, memory sizes, elapsed times and begin times."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.model import UNLIMITED
from pyslurm_lite.units import (format_elapsed, format_limit, parse_begin_time, parse_memory,
                                parse_time_limit)


@pytest.mark.parametrize("text, minutes", [
    ("0", 0),
    ("90", 90),                 # M
    ("5:00", 5),                # M:S
    ("0:30", 1),                # M:S, seconds round up to a whole minute
    ("2:01", 3),                # M:S, rounds up
    ("1:00:00", 60),            # H:M:S
    ("1:30:30", 91),            # H:M:S, rounds up
    ("10:00:00", 600),
    ("2-0", 2880),              # D-H
    ("1-2", 1560),              # D-H
    ("1-2:30", 1590),           # D-H:M
    ("1-2:30:00", 1590),        # D-H:M:S
    ("1-2:30:01", 1591),        # D-H:M:S, rounds up
    ("0-0:0:1", 1),
    (" 15 ", 15),               # surrounding blanks are ignored
    ("UNLIMITED", UNLIMITED),
    ("unlimited", UNLIMITED),
    ("INFINITE", UNLIMITED),
    ("-1", UNLIMITED),
])
def test_parse_time_limit(text, minutes):
    assert parse_time_limit(text) == minutes


@pytest.mark.parametrize("text", [
    "", " ", "abc", "1h", "1.5", "1-2-3", "1:2:3:4", "-5", "1-", "-1-2", ":30", "1::2", "1-2:",
    "5m", "1-2-3:4",
])
def test_parse_time_limit_rejects(text):
    with pytest.raises(InvalidRequest) as e:
        parse_time_limit(text)
    assert "time" in e.value.message.lower()


@pytest.mark.parametrize("text, mib", [
    ("0", 0),
    ("100", 100),        # no suffix = MiB
    ("100M", 100),
    ("100MB", 100),
    ("100m", 100),
    ("4G", 4096),
    ("4GB", 4096),
    ("4g", 4096),
    ("1.5G", 1536),
    ("512K", 1),         # half a MiB rounds up to one
    ("2048K", 2),
    ("2049K", 3),
    ("1T", 1024 * 1024),
    ("1TB", 1024 * 1024),
])
def test_parse_memory(text, mib):
    assert parse_memory(text) == mib


@pytest.mark.parametrize("text", ["", "abc", "G", "4X", "-1", "1e3", "4GiB", "4 GB x", "1,5G"])
def test_parse_memory_rejects(text):
    with pytest.raises(InvalidRequest) as e:
        parse_memory(text)
    assert text.strip() in e.value.message


@pytest.mark.parametrize("seconds, text", [
    (0, "0:00"),
    (-5, "0:00"),            # clock skew never prints a negative time
    (59.9, "0:59"),
    (61, "1:01"),
    (600, "10:00"),
    (3599, "59:59"),
    (3600, "1:00:00"),
    (3661, "1:01:01"),
    (86399, "23:59:59"),
    (86400, "1-00:00:00"),
    (90061, "1-01:01:01"),
    (11 * 86400, "11-00:00:00"),
])
def test_format_elapsed(seconds, text):
    assert format_elapsed(seconds) == text


@pytest.mark.parametrize("minutes, text", [
    (UNLIMITED, "UNLIMITED"),
    (None, "UNLIMITED"),
    (0, "0:00"),
    (1, "1:00"),
    (59, "59:00"),
    (60, "1:00:00"),
    (1590, "1-02:30:00"),
])
def test_format_limit(minutes, text):
    assert format_limit(minutes) == text


@pytest.mark.parametrize("text", ["90", "1:30:30", "1-2:30", "2-0"])
def test_time_limit_round_trips_through_format(text):
    minutes = parse_time_limit(text)
    assert parse_time_limit(format_limit(minutes)) == minutes


# A fixed local instant: Tuesday 2024-03-12 15:30:00 (times are local, as Slurm reads them).
NOW_DT = datetime(2024, 3, 12, 15, 30, 0)
NOW = NOW_DT.timestamp()
MIDNIGHT = datetime(2024, 3, 12)


@pytest.mark.parametrize("text, expected", [
    ("now", NOW),
    ("NOW", NOW),
    ("now+60", NOW + 60),                  # no unit = seconds
    ("now+30s", NOW + 30),
    ("now+5min", NOW + 300),
    ("now+5minutes", NOW + 300),
    ("now+1hour", NOW + 3600),
    ("now+2hours", NOW + 7200),
    ("now+2days", NOW + 2 * 86400),
    ("now+1week", NOW + 7 * 86400),
    ("today", MIDNIGHT.timestamp()),
    ("midnight", (MIDNIGHT + timedelta(days=1)).timestamp()),
    ("tomorrow", (MIDNIGHT + timedelta(days=1)).timestamp()),
    ("16:00", datetime(2024, 3, 12, 16, 0).timestamp()),                # later today
    ("16:00:30", datetime(2024, 3, 12, 16, 0, 30).timestamp()),
    ("15:00", datetime(2024, 3, 13, 15, 0).timestamp()),                # passed: tomorrow
    ("2024-03-20", datetime(2024, 3, 20).timestamp()),
    ("2024-03-20T08:15", datetime(2024, 3, 20, 8, 15).timestamp()),
    ("2024-03-20T08:15:30", datetime(2024, 3, 20, 8, 15, 30).timestamp()),
])
def test_parse_begin_time(text, expected):
    assert parse_begin_time(text, now=NOW) == pytest.approx(expected)


def test_parse_begin_time_noon_before_noon_is_today():
    morning = datetime(2024, 3, 12, 9, 0).timestamp()
    assert parse_begin_time("noon", now=morning) == datetime(2024, 3, 12, 12, 0).timestamp()


@pytest.mark.parametrize("text", ["", "later", "now+5parsecs", "now-5", "25:99", "2024-13-01",
                                  "2024-03-20T25:00", "yesterday"])
def test_parse_begin_time_rejects(text):
    with pytest.raises(InvalidRequest):
        parse_begin_time(text, now=NOW)
