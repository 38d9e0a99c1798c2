"""Job arrays (--array): Slurm's index syntax, and how pending tasks are shown.

    0-99      0,1,...,99          1,3,5-7   1,3,5,6,7
    0-15:4    0,4,8,12            0-99%10   at most 10 tasks running at once

Each task is a job of its own (its own id, consecutive from the array's), knowing the array's id
(SLURM_ARRAY_JOB_ID, %A) and its index (SLURM_ARRAY_TASK_ID, %a). squeue folds pending tasks into
one row, `123_[4-99%10]`, as Slurm does.

Limits, as slurmctld's _valid_array_inx: every index lies in [0, MaxArraySize), a step is below
MaxArraySize. Both are checked on the parsed ranges, before any index list is built: a spec is
user input, and `0-99999999999` must cost microseconds, not the controller's memory.
"""

from __future__ import annotations

import re

from .errors import InvalidRequest

MAX_ARRAY_SIZE = 4000001  # the largest MaxArraySize Slurm allows; parse()'s default bound
INVALID = "Invalid job array specification"  # ESLURM_INVALID_ARRAY's text

# ASCII digits only: \d also matches other scripts' digits, and int() of a very long digit string
# is slow or raises ValueError (sys.int_info.str_digits_check_threshold), so numbers are capped
# in length before int() sees them. 10 digits hold any uint32, more than MaxArraySize allows.
_NUM = r"[0-9]{1,10}"
_RANGE = re.compile(rf"({_NUM})(?:-({_NUM})(?::({_NUM}))?)?")
_THROTTLE = re.compile(_NUM)
MAX_THROTTLE = 2**31 - 1  # fits the int32 the job record keeps


def parse(spec: str, max_size: int = MAX_ARRAY_SIZE) -> tuple[list[int], int]:
    """'0-15:4%2' -> ([0, 4, 8, 12], 2); throttle 0 means none.

    InvalidRequest("Invalid job array specification") when malformed, when an index reaches
    `max_size` (MaxArraySize) or when the ranges hold more than `max_size` tasks.
    """
    ranges, throttle = _ranges(spec, max_size)
    indices: set[int] = set()
    for lo, hi, step in ranges:
        indices.update(range(lo, hi + 1, step))
    return sorted(indices), throttle


def check(spec: str, max_size: int = MAX_ARRAY_SIZE) -> int:
    """Validate `spec` as parse() does without building its index list; returns the number of
    tasks counted range by range (an upper bound when ranges overlap)."""
    ranges, _ = _ranges(spec, max_size)
    return _task_count(ranges)


def _ranges(spec: str, max_size: int) -> tuple[list[tuple[int, int, int]], int]:
    """The (first, last, step) ranges and the throttle, every bound checked."""
    body, _, throttle = spec.partition("%")
    if throttle and not _THROTTLE.fullmatch(throttle):
        raise InvalidRequest(INVALID)
    limit = int(throttle or 0)
    if limit > MAX_THROTTLE:
        raise InvalidRequest(INVALID)
    ranges = [_range(part, max_size) for part in body.split(",")]
    # Overlaps are counted twice: conservative, and what bounds the work of building the list
    # to max_size whatever the spec's length (a long spec repeating 0-4000000 is refused).
    if _task_count(ranges) > max_size:
        raise InvalidRequest(INVALID)
    return ranges, limit


def _range(part: str, max_size: int) -> tuple[int, int, int]:
    m = _RANGE.fullmatch(part)
    if not m:
        raise InvalidRequest(INVALID)
    lo = int(m.group(1))
    hi = int(m.group(2) or m.group(1))
    step = int(m.group(3) or 1)
    if hi < lo or step < 1 or step >= max_size or hi >= max_size:
        raise InvalidRequest(INVALID)
    return lo, hi, step


def _task_count(ranges: list[tuple[int, int, int]]) -> int:
    return sum((hi - lo) // step + 1 for lo, hi, step in ranges)


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


def task_name(array_job_id: int, task_id: int) -> str:
    """Slurm's name of an array task: '12_3'."""
    return f"{array_job_id}_{task_id}"


def parse_task_name(text: str) -> tuple[int, int]:
    """'12_3' -> (12, 3). For the controller reading a request's task names: untrusted input,
    so numbers are capped in length as above."""
    job, sep, task = text.partition("_")
    if not sep or not re.fullmatch(_NUM, job) or not re.fullmatch(_NUM, task):
        raise InvalidRequest(f"Invalid job id specified: {text[:64]}")
    return int(job), int(task)
