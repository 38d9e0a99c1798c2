"""The small shapes every v0.0.42 object uses."""

from __future__ import annotations

from ...model import UNLIMITED


def number(value, infinite: bool = False, set_: bool = True) -> dict:
    """v0.0.42_uint{16,32,64}_no_val_struct / float64_no_val_struct."""
    return {"set": bool(set_ and not infinite), "infinite": bool(infinite),
            "number": 0 if infinite or not set_ else value}


def unset() -> dict:
    return number(0, set_=False)


def minutes(value: int) -> dict:
    """A time limit in minutes; UNLIMITED (-1) is Slurm's INFINITE."""
    return number(0, infinite=True) if value == UNLIMITED else number(int(value))


def epoch(seconds: float) -> dict:
    """A timestamp in whole seconds; 0 is Slurm's "not set"."""
    return number(int(seconds)) if seconds else number(0)


def csv(items) -> list[str]:
    """v0.0.42_csv_string: a list of strings."""
    return [str(i) for i in items if str(i)]
