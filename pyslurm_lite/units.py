"""Slurm's spellings of durations, sizes and instants: parse them strictly, print them as Slurm.

Durations are minutes (time limits) or seconds (elapsed); sizes are MiB. Every parse error is an
InvalidRequest whose message a user can act on.
"""

from __future__ import annotations

import re
import time as _time
from datetime import datetime, timedelta

from .errors import InvalidRequest
from .model import UNLIMITED

_INFINITE = {"unlimited", "infinite", "-1"}

# Numbers in user input are ASCII digits of bounded length: `\d` also matches other scripts'
# digits ("²".isdigit() is true, int("²") raises), and int() of a very long digit string is slow
# or raises ValueError, so a length cap comes before int() ever sees one.
_N = "[0-9]{1,12}"
MAX_TIMESTAMP = 253402300799.0  # 9999-12-31T23:59:59 UTC: the last instant datetime can print


def parse_time_limit(text: str) -> int:
    """A Slurm time limit to whole minutes (seconds round up), UNLIMITED for "UNLIMITED".

    Accepted, as Slurm: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
    >>> parse_time_limit("1-2:30"), parse_time_limit("90"), parse_time_limit("0:30")
    (1590, 90, 1)
    """
    s = text.strip()
    if s.lower() in _INFINITE:
        return UNLIMITED
    seconds = parse_duration_seconds(s)
    return -(-seconds // 60)


def parse_duration_seconds(text: str) -> int:
    m = re.fullmatch(rf"(?:({_N})-)?({_N})(?::({_N}))?(?::({_N}))?", text.strip())
    if not m:
        raise InvalidRequest(f"Invalid time limit specification: {text}")
    days, a, b, c = m.groups()
    a, b, c = int(a), (int(b) if b is not None else None), (int(c) if c is not None else None)
    if days is not None:
        # D-H, D-H:M, D-H:M:S
        h, mi, se = a, b or 0, c or 0
        return ((int(days) * 24 + h) * 60 + mi) * 60 + se
    if b is None:
        return a * 60  # M
    if c is None:
        return a * 60 + b  # M:S
    return (a * 60 + b) * 60 + c  # H:M:S


def format_elapsed(seconds: float) -> str:
    """squeue's %M / %l style: M:SS, H:MM:SS, D-HH:MM:SS."""
    s = max(int(seconds), 0)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    if h:
        return f"{h}:{m:02d}:{s:02d}"
    return f"{m}:{s:02d}"


def format_limit(minutes: int) -> str:
    """A time limit as squeue prints it (%l)."""
    if minutes is None or minutes < 0:
        return "UNLIMITED"
    return format_elapsed(minutes * 60)


def format_hms(seconds: float) -> str:
    """scontrol's RunTime/TimeLimit style: HH:MM:SS or D-HH:MM:SS."""
    s = max(int(seconds), 0)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


def format_limit_hms(minutes: int) -> str:
    return "UNLIMITED" if minutes is None or minutes < 0 else format_hms(minutes * 60)


def format_partition_limit(minutes: int) -> str:
    """sinfo's TIMELIMIT column: 'infinite' or D-HH:MM:SS style."""
    if minutes is None or minutes < 0:
        return "infinite"
    return format_elapsed(minutes * 60)


_MEM_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_memory(text: str) -> int:
    """A Slurm memory size to MiB: 100, 100M, 4G, 4GB, 512K, 1T (no suffix = MiB)."""
    m = re.fullmatch(rf"\s*({_N}(?:\.[0-9]{{1,12}})?)\s*([KMGTkmgt])?[Bb]?\s*", text or "")
    if not m:
        raise InvalidRequest(f"Invalid --mem specification: {text}")
    value = float(m.group(1)) * _MEM_UNITS[(m.group(2) or "M").upper()]
    return max(int(-(-value // 1)), 1 if value > 0 else 0)


def format_memory(mib: int) -> str:
    """Slurm's compact memory spelling: 256M, 2G, 1.50G -> as scontrol prints TRES."""
    if mib and mib % (1024 * 1024) == 0:
        return f"{mib // (1024 * 1024)}T"
    if mib and mib % 1024 == 0:
        return f"{mib // 1024}G"
    return f"{mib}M"


def format_timestamp(epoch: float) -> str:
    """Slurm's ISO-like local timestamp, 'Unknown' for unset."""
    if not epoch:
        return "Unknown"
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%dT%H:%M:%S")


_REL_UNITS = {"": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
              "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600,
              "d": 86400, "day": 86400, "days": 86400, "w": 604800, "week": 604800,
              "weeks": 604800}


def parse_begin_time(text: str, now: float | None = None) -> float:
    """sbatch --begin: now+N[units], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], today, tomorrow,
    midnight, noon."""
    now = _time.time() if now is None else now
    s = text.strip().lower()
    m = re.fullmatch(rf"now(?:\+({_N})([a-z]*))?", s)
    if m:
        if m.group(1) is None:
            return now
        unit = _REL_UNITS.get(m.group(2))
        if unit is None:
            raise InvalidRequest(f"Invalid time specification: {text}")
        return _instant(now + int(m.group(1)) * unit, text)
    base = datetime.fromtimestamp(now)
    named = {"today": base.replace(hour=0, minute=0, second=0, microsecond=0),
             "midnight": base.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1),
             "noon": base.replace(hour=12, minute=0, second=0, microsecond=0),
             "tomorrow": base.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)}
    if s in named:
        return named[s].timestamp()
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return _instant(datetime.strptime(text.strip(), fmt).timestamp(), text)
        except (ValueError, OverflowError, OSError):
            pass
    for fmt in ("%H:%M:%S", "%H:%M"):
        try:
            t = datetime.strptime(s, fmt)
        except ValueError:
            continue
        when = base.replace(hour=t.hour, minute=t.minute, second=t.second, microsecond=0)
        if when.timestamp() < now:
            when += timedelta(days=1)
        return when.timestamp()
    raise InvalidRequest(f"Invalid time specification: {text}")


def _instant(epoch: float, text: str) -> float:
    """An instant the rest of the system can store and print (format_timestamp), or refused.
    One before 1970 is as good as now for --begin: 0, "not deferred"."""
    if not epoch <= MAX_TIMESTAMP:  # also refuses NaN
        raise InvalidRequest(f"Invalid time specification: {text}")
    return max(epoch, 0.0)


def parse_signal_name(name: str) -> int:
    """'USR1', 'SIGUSR1' or '10' -> 10."""
    import signal as _signal
    text = name.strip().upper().removeprefix("SIG")
    if re.fullmatch("[0-9]{1,2}", text) and 0 < int(text) < 65:
        return int(text)
    # Only real signal names: getattr(signal, "SIG" + text) would also find SIG_IGN, SIG_DFL.
    number = _signal.Signals.__members__.get("SIG" + text)
    if number is None:
        raise InvalidRequest(f"Invalid signal specification: {name}")
    return int(number)


def parse_signal_spec(text: str) -> tuple[bool, int, int]:
    """--signal=[{R|B}:]SIG[@SECONDS] -> (batch shell only, signal number, seconds before the end
    of the time limit; Slurm's default is 60)."""
    m = re.fullmatch(r"(?:([RB]+):)?([A-Za-z0-9]+)(?:@([0-9]{1,5}))?", text.strip())
    if not m or int(m.group(3) or 0) > 0xFFFF:  # Slurm keeps the warning time in 16 bits
        raise InvalidRequest(f"Invalid --signal specification: {text}")
    return "B" in (m.group(1) or ""), parse_signal_name(m.group(2)), int(m.group(3) or 60)
