"""Slurm's job id lists, as squeue -j, scancel, scontrol and sacct -j take them.

    12          job 12; when 12 is an array's id, every task of the array
    12_3        task 3 of array 12
    12_[1-3,7]  tasks 1, 2, 3 and 7 of array 12 (one JobId each)
    12.batch    a step of job 12 (batch, extern, interactive or a number); 12_3.0 likewise
    12,13 14    lists: commas within a value, several values

Pure parsing: what an id names is the controller's business (JobFilter.array_tasks carries the
`12_3` form). Malformed text raises InvalidRequest naming it; each command words the refusal
its own way ("Invalid job id: X" for squeue, "Invalid job id X" for scancel...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InvalidRequest

_STEP_NAMES = ("batch", "extern", "interactive")
# job [_task | _[ranges]] [.step]; numbers capped at 10 digits (uint32), as slurm_xstrtol would
_ID = re.compile(r"([0-9]{1,10})(?:_([0-9]{1,10}|\[[0-9,\-:%]{1,4096}\]))?(?:\.([0-9]{1,10}|[a-z]+))?")
MAX_JOB_ID = 2**32 - 1


@dataclass(frozen=True)
class JobId:
    """One job id as written: job 12, task 12_3, step 12.batch, or 12_3.0."""

    job_id: int
    array_task: int | None = None  # None: the job itself (a whole array when 12 is one)
    step: str | None = None  # "batch", "extern", "interactive" or a step number as text

    def __str__(self) -> str:
        text = str(self.job_id) if self.array_task is None else f"{self.job_id}_{self.array_task}"
        return text if self.step is None else f"{text}.{self.step}"

    @property
    def task_text(self) -> str:
        """'12_3' (JobFilter.array_tasks); only for an id naming an array task."""
        return f"{self.job_id}_{self.array_task}"


def parse_one(text: str) -> list[JobId]:
    """'12_[1-3].batch' -> [JobId(12, 1, 'batch'), JobId(12, 2, 'batch'), JobId(12, 3, 'batch')]."""
    m = _ID.fullmatch(text.strip())
    if not m or int(m.group(1)) == 0 or int(m.group(1)) > MAX_JOB_ID:
        raise InvalidRequest(f"Invalid job id: {text}")
    job, tasks, step = int(m.group(1)), m.group(2), m.group(3)
    if step is not None and not step.isdigit() and step not in _STEP_NAMES:
        raise InvalidRequest(f"Invalid job id: {text}")
    if tasks is None:
        return [JobId(job, None, step)]
    return [JobId(job, t, step) for t in _task_indices(tasks, text)]


def _task_indices(tasks: str, text: str) -> list[int]:
    if not tasks.startswith("["):
        return [int(tasks)]
    from ..arrays import parse as parse_array
    body = tasks[1:-1]
    if "%" in body:  # a throttle names no task
        raise InvalidRequest(f"Invalid job id: {text}")
    try:
        return parse_array(body)[0]
    except InvalidRequest:
        raise InvalidRequest(f"Invalid job id: {text}") from None


def parse(values) -> list[JobId]:
    """Every id of a list of values (each may hold commas), in order, without repeats. A comma
    inside brackets belongs to the task ranges (12_[1,3]), not to the list."""
    out: list[JobId] = []
    for value in values if not isinstance(values, str) else [values]:
        for part in _split(value):
            out += [j for j in parse_one(part) if j not in out]
    return out


def _split(value: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(value):
        depth += ch == "["
        depth -= ch == "]"
        if ch in ", " and depth == 0:
            parts.append(value[start:i])
            start = i + 1
    parts.append(value[start:])
    return [p for p in parts if p]


def filter_fields(ids: list[JobId]) -> tuple[list[int], list[str]]:
    """(job_ids, array_tasks) for a JobFilter: whole jobs (or arrays) and single tasks."""
    jobs = sorted({j.job_id for j in ids if j.array_task is None})
    tasks = list(dict.fromkeys(j.task_text for j in ids if j.array_task is not None))
    return jobs, tasks

