"""slurm.conf values: numbers, yes/no, times, limits, preemption modes, TRES weight lists and
the like, each parsed or refused with a ConfigError naming the file and line (`where`)."""

from __future__ import annotations

import re

from .errors import ConfigError
from .model import UNLIMITED
from .units import parse_time_limit

PREEMPT_MODES = ("OFF", "CANCEL", "REQUEUE")


def _int(value: str, key: str, where: str, minimum: int = 0) -> int:
    try:
        n = int(value)
    except ValueError:
        raise ConfigError(f"{where}: {key}={value} is not a number") from None
    if n < minimum:
        raise ConfigError(f"{where}: {key}={value} must be at least {minimum}")
    return n


def _tres_weights(value: str, key: str, where: str, units: bool = True) -> dict[str, float]:
    """TRESBillingWeights / PriorityWeightTRES: "CPU=1.0,Mem=0.25G,GRES/gpu=2.0" -> {name: weight},
    names lower case; a memory weight is per GiB (a G suffix, Slurm's default unit for it)."""
    out: dict[str, float] = {}
    for item in filter(None, (v.strip() for v in value.split(","))):
        name, eq, weight = item.partition("=")
        name = name.strip().lower()
        if not eq or not re.fullmatch(r"(cpu|mem|node|billing|energy|gres/[\w.:-]+|license/[\w.-]+)", name):
            raise ConfigError(f"{where}: {key}: bad item '{item}' (want TRES=weight, e.g. GRES/gpu=10.0)")
        w = weight.strip()
        # units: a billing weight of memory is per amount (Mem=0.25G); a priority weight is plain
        scale = {"k": 1 / 1024 ** 2, "m": 1 / 1024, "g": 1.0, "t": 1024.0}.get(w[-1:].lower()) \
            if w and units else None
        if scale is not None:
            w = w[:-1]
        try:
            # Slurm: a memory weight without a unit is per MB
            out[name] = float(w) * (scale if scale is not None else
                                    1024.0 if name == "mem" and units else 1.0)
        except ValueError:
            raise ConfigError(f"{where}: {key}: '{item}' has no number for a weight") from None
        if out[name] < 0:
            raise ConfigError(f"{where}: {key}: '{item}': a weight cannot be negative")
    return out


def _seconds_or_minutes(value: str, key: str, where: str) -> int:
    """PriorityCalcPeriod: minutes, or a Slurm time ("0:30" is half a minute as M:S)."""
    try:
        if value.strip().isdigit():
            return max(int(value) * 60, 1)
        m = re.fullmatch(r"(\d+):(\d{1,2})", value.strip())
        if m:
            return max(int(m.group(1)) * 60 + int(m.group(2)), 1)
        return max(parse_time_limit(value) * 60, 1)
    except Exception:
        raise ConfigError(f"{where}: bad {key}={value}") from None


def _gather_frequency(value: str, where: str) -> int:
    """JobAcctGatherFrequency=30 or task=30[,energy=..,network=..]: the task sampling interval
    in seconds (0 = only at the end, as in Slurm). Other kinds are not sampled here."""
    for item in filter(None, (v.strip() for v in value.split(","))):
        kind, eq, n = item.rpartition("=")
        if (kind or "task").lower() == "task":
            return _int(n, "JobAcctGatherFrequency", where)
    return 30


def _yes_no(value: str, key: str, where: str) -> bool:
    v = value.strip().lower()
    if v not in ("yes", "no", "1", "0"):
        raise ConfigError(f"{where}: {key}={value}: expected YES or NO")
    return v in ("yes", "1")


def _names(value: str) -> list[str]:
    """AllowAccounts=a,b -> ['a', 'b']; ALL -> [] (no restriction)."""
    names = [v for v in value.split(",") if v]
    return [] if names in ([], ["ALL"]) else names


def _preempt_mode(value: str, where: str) -> str:
    mode = value.split(",")[0].upper()  # GANG and SUSPEND are not offered
    if mode not in PREEMPT_MODES:
        raise ConfigError(f"{where}: unsupported PreemptMode={value}; valid: {', '.join(PREEMPT_MODES)}")
    return mode


def _seconds(value: str, key: str, where: str) -> int:
    """GraceTime=30 (seconds) or PreemptExemptTime=00:05:00 (a Slurm time)."""
    if value.isdigit():
        return int(value)
    try:
        return parse_time_limit(value) * 60 if ":" in value or "-" in value else int(value)
    except Exception:
        raise ConfigError(f"{where}: bad {key}={value}") from None


def _limit(value: str, key: str, where: str) -> int:
    return UNLIMITED if value.upper() in ("UNLIMITED", "-1") else _int(value, key, where)
