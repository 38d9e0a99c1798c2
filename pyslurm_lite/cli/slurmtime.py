"""Slurm's time specifications (parse_time in Slurm's src/common/parse_time.c), for sacct -S/-E.

Accepted, as Slurm accepts them (case-insensitive keywords, blanks, '-' and 'T' as separators):
  HH:MM[:SS][AM|PM]                 today at that time (with past=False: the next such time)
  MMDD[YY], MM/DD[/YY], MM.DD[.YY]  that date at 00:00, optionally followed by -HH:MM[:SS]
  YYYY-MM-DD[THH:MM[:SS]]
  today, tomorrow, midnight, noon, elevenses (11:00), fika (15:00), teatime (16:00)
  now[{+|-}count[seconds|minutes|hours|days|weeks]]
  uts<seconds since the epoch>
A date without a year is this year, or with past=True (sacct) last year when its month is still
ahead. Worked example, on 2026-12-01 at 14:00 with past=True: "10:30" is 2026-12-01T10:30:00,
"1130" (Nov 30) is 2026-11-30T00:00:00, "now-2hours" is 12:00 today, "midnight" 00:00 today.

Pure: the clock is an argument. Errors raise TimeSpecError with Slurm's message.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

UNITS = (("seconds", 1), ("second", 1), ("minutes", 60), ("minute", 60), ("hours", 3600),
         ("hour", 3600), ("days", 86400), ("day", 86400), ("weeks", 604800), ("week", 604800))
NAMED_TIMES = {"midnight": (0, 0), "noon": (12, 0), "elevenses": (11, 0), "fika": (15, 0),
               "teatime": (16, 0)}


class TimeSpecError(ValueError):
    def __init__(self, pos: int, text: str):
        super().__init__(f"Invalid time specification (pos={pos}): {text}")


class _Parts:
    """What the specification set so far (-1: not given), as parse_time keeps it."""

    def __init__(self):
        self.hour = self.minute = self.month = self.mday = self.year = -1
        self.second = 0

    def set_date(self, d) -> None:
        self.year, self.month, self.mday = d.year, d.month, d.day

    def set_time(self, hour: int, minute: int, second: int = 0) -> None:
        self.hour, self.minute, self.second = hour, minute, second


def parse_time(text: str, now: float, past: bool = True) -> float:
    """A time specification to seconds since the epoch (0 for an empty one, as Slurm)."""
    if text[:3].lower() == "uts":
        if not re.fullmatch(r"\d{7,}", text[3:]):
            raise TimeSpecError(0, text)
        return float(int(text[3:]))
    base = datetime.fromtimestamp(int(now))
    p, pos = _Parts(), 0
    while pos < len(text) and text[pos] != "\n":
        pos = _token(text, pos, base, p)
    return _resolve(p, base, past, text, pos)


def _token(text: str, pos: int, base: datetime, p: _Parts) -> int:
    """Read one element at pos into p; the position after it."""
    ch, rest = text[pos], text[pos:].lower()
    if ch in " \t-T":
        return pos + 1
    if rest.startswith("today"):
        p.set_date(base)
        return pos + 5
    if rest.startswith("tomorrow"):
        p.set_date(base + timedelta(days=1))
        return pos + 8
    for name, (hour, minute) in NAMED_TIMES.items():
        if rest.startswith(name):
            p.set_time(hour, minute)
            return pos + len(name)
    if rest.startswith("now"):
        return _now(text, pos, base, p)
    if not ch.isdigit():
        raise TimeSpecError(pos, text)
    if text[pos + 1:pos + 2] == ":" or text[pos + 2:pos + 3] == ":":
        return _clock(text, pos, p)
    return _date(text, pos, p)


def _now(text: str, pos: int, base: datetime, p: _Parts) -> int:
    m = re.compile(r"now\s*(?:([+-])\s*(\d+)\s*([a-z]*))?\s*$", re.I).match(text, pos)
    if not m:
        raise TimeSpecError(pos, text)
    delta = 0
    if m.group(1):
        unit = m.group(3).lower()
        mult = next((n for name, n in UNITS if unit == name), 1 if not unit else 0)
        if not mult:
            raise TimeSpecError(m.start(3), text)
        delta = int(m.group(2)) * mult * (-1 if m.group(1) == "-" else 1)
    later = base + timedelta(seconds=delta)
    p.set_date(later)
    p.set_time(later.hour, later.minute, later.second)
    return m.end()


def _clock(text: str, pos: int, p: _Parts) -> int:
    m = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]m)?", re.I).match(text, pos)
    if not m:
        raise TimeSpecError(pos, text)
    hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise TimeSpecError(pos, text)
    half = (m.group(4) or "").lower()
    if half == "pm":
        hour = 12 if hour == 12 else hour + 12
    elif half == "am":
        hour = 0 if hour == 12 else hour
    if hour > 23 or (half and int(m.group(1)) > 12):
        raise TimeSpecError(pos, text)
    p.set_time(hour, minute, second)
    return m.end()


def _date(text: str, pos: int, p: _Parts) -> int:
    m = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})").match(text, pos)
    if m:
        year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        m = re.compile(r"(\d{1,2})([./]?)(\d{1,2})(?:\2?(\d{2}))?").match(text, pos)
        if not m:
            raise TimeSpecError(pos, text)
        month, day = int(m.group(1)), int(m.group(3))
        year = 2000 + int(m.group(4)) if m.group(4) else -1
    if not (1 <= month <= 12 and 1 <= day <= 31):
        raise TimeSpecError(pos, text)
    p.year, p.month, p.mday = year, month, day
    return m.end()


def _resolve(p: _Parts, base: datetime, past: bool, text: str, pos: int) -> float:
    if p.hour == -1 and p.month == -1:
        return 0.0
    if p.hour == -1:
        p.set_time(0, 0)
    elif p.month == -1:  # a time without a date: today, or (looking ahead) tomorrow once passed
        ahead = (p.hour, p.minute) > (base.hour, base.minute)
        p.set_date(base if past or ahead else base + timedelta(days=1))
    if p.year == -1:
        if past:
            p.year = base.year - 1 if p.month > base.month else base.year
        else:
            ahead = (p.month, p.mday, p.hour, p.minute) > (base.month, base.day, base.hour, base.minute)
            p.year = base.year if ahead else base.year + 1
    try:
        return datetime(p.year, p.month, p.mday, p.hour, p.minute, p.second).timestamp()
    except (ValueError, OverflowError):
        raise TimeSpecError(pos, text) from None


def midnight(now: float) -> float:
    """00:00:00 of now's day, local time: sacct's default start."""
    return datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
