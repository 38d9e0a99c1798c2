"""Job arrays (--array): Slurm's index syntax, and how pending tasks are shown.

    0-99      0,1,...,99          1,3,5-7   1,3,5,6,7
    0-15:4    0,4,8,12            0-99%10   at most 10 tasks running at once

Each task is a job of its own (its own id, consecutive from the array's), knowing the array's id
(SLURM_ARRAY_JOB_ID, %A) and its index (SLURM_ARRAY_TASK_ID, %a). squeue folds pending tasks into
one row, `123_[4-99%10]`, as Slurm does.
"""

from __future__ import annotations

import re

from .errors import InvalidRequest

MAX_TASKS = 10001  # Slurm's default MaxArraySize


def parse(spec: str) -> tuple[list[int], int]:
    """'0-15:4%2' -> ([0, 4, 8, 12], 2); throttle 0 means none."""
    body, _, throttle = spec.partition("%")
    if throttle and not throttle.isdigit():
        raise InvalidRequest("Invalid job array specification")
    indices: set[int] = set()
    for part in body.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if not m:
            raise InvalidRequest("Invalid job array specification")
        lo, hi, step = int(m.group(1)), int(m.group(2) or m.group(1)), int(m.group(3) or 1)
        if hi < lo or step < 1:
            raise InvalidRequest("Invalid job array specification")
        indices.update(range(lo, hi + 1, step))
    if len(indices) > MAX_TASKS or max(indices) >= MAX_TASKS:
        raise InvalidRequest("Invalid job array specification: larger than MaxArraySize")
    return sorted(indices), int(throttle or 0)


def fold(indices: list[int]) -> str:
    """[4, 5, 6, 9] -> '4-6,9'."""
    out, i = [], 0
    while i < len(indices):
        j = i
        while j + 1 < len(indices) and indices[j + 1] == indices[j] + 1:
            j += 1
        out.append(str(indices[i]) if i == j else f"{indices[i]}-{indices[j]}")
        i = j + 1
    return ",".join(out)
