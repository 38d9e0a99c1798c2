"""Job dependencies (--dependency), Slurm's syntax and meaning, evaluated purely.

    afterok:12:13,afterany:14    every item must hold (',' joins with AND)
    afterok:12?afternotok:12     any item may hold   ('?' joins with OR)
    singleton                    no other job of the same name and user is running

    after      the job started (or ended)      afterany   it ended, however
    afterok    it ended COMPLETED              afternotok it ended otherwise
    after:12+5 job 12 started at least 5 minutes ago
    aftercorr  an array task waits for the task of the same index of the other array

Ids, as slurmctld's _find_dependent_job_ptr: `12` is job 12, or every task of array 12 when 12
is an array's id; `12_3` is task 3 of array 12 alone. Over a whole array an item holds once
every task has: afterok when all ended COMPLETED, afternotok when all ended and one did not,
afterany when all ended, after when none is pending. Until then it waits (Slurm judges an
array only when all of it is done).

An item that can no longer hold (afterok on a FAILED job) makes the dependency *never*
satisfied when no alternative remains: Reason=DependencyNeverSatisfied. A job that does not
exist (never did, or is gone from memory and the database) lifts its item, as Slurm's "job is
gone, dependency lifted".

Worked example: job 5 has `afterok:3,afterany:4`. While 3 runs, 5 waits (Reason=Dependency); if
3 ends COMPLETED and 4 is still pending, 5 still waits; if 3 ends FAILED, 5 can never run.
With `afterok:7` where 7 is an array of tasks 0-2: task 0 COMPLETED, 1 running -> wait; all
three COMPLETED -> ok; 0 FAILED and the others COMPLETED -> never.
"""

from __future__ import annotations

import re
from typing import Mapping, NamedTuple

from ..errors import InvalidRequest

OK, WAIT, NEVER = "ok", "wait", "never"
TYPES = ("after", "afterany", "afterok", "afternotok", "aftercorr", "singleton")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE"}
# job[_task][+minutes]; numbers capped in length before int() (user input)
_REF = re.compile(r"([0-9]{1,10})(?:_([0-9]{1,10}))?(?:\+([0-9]{1,10}))?")


class Ref(NamedTuple):
    """One job an item names: job_id, or task `task` of array job_id; minutes for after:+N."""

    job_id: int
    task: int | None = None
    minutes: int = 0


class Rec(NamedTuple):
    """What evaluation needs of a job: its state, when it started (0: not yet), its array."""

    state: str
    start: float = 0.0
    array_job_id: int = 0
    array_task_id: int = 0


def parse(text: str) -> tuple[str, list[tuple[str, list[Ref]]]]:
    """'afterok:1:2_3,after:4+5' ->
    ('all', [('afterok', [Ref(1), Ref(2, 3)]), ('after', [Ref(4, None, 5)])])."""
    if not text:
        return "all", []
    if "," in text and "?" in text:
        raise InvalidRequest("Job dependency problem: ',' and '?' cannot be mixed")
    joiner, parts = ("any", text.split("?")) if "?" in text else ("all", text.split(","))
    return joiner, [_item(part) for part in parts]


def _item(part: str) -> tuple[str, list[Ref]]:
    kind, *ids = part.split(":")
    if kind not in TYPES or (kind == "singleton") == bool(ids):
        raise InvalidRequest(f"Job dependency problem: invalid dependency '{part[:64]}'")
    refs = []
    for text in ids:
        m = _REF.fullmatch(text)
        if not m or int(m.group(1)) == 0 or (m.group(3) and (kind != "after" or int(m.group(3)) == 0)):
            raise InvalidRequest(f"Job dependency problem: invalid job id in '{part[:64]}'")
        task = int(m.group(2)) if m.group(2) is not None else None
        refs.append(Ref(int(m.group(1)), task, int(m.group(3) or 0)))
    return kind, refs


def _one(kind: str, rec: Rec, minutes: int, now: float) -> str:
    """One job's verdict for one dependency type."""
    if kind == "after":
        if rec.state in FINAL:
            return OK
        return OK if rec.start and (not minutes or now - rec.start >= minutes * 60) else WAIT
    if rec.state not in FINAL:
        return WAIT
    if kind == "afterany":
        return OK
    ok = rec.state == "COMPLETED"
    return (OK if ok else NEVER) if kind in ("afterok", "aftercorr") else (NEVER if ok else OK)


def _whole(kind: str, tasks: list[Rec], minutes: int, now: float) -> str:
    """A verdict over every task of an array: judged once all of them allow it."""
    if kind == "after":
        if any(t.state not in FINAL and not t.start for t in tasks):
            return WAIT
        first = min((t.start for t in tasks if t.start), default=0.0)
        return OK if not minutes or (first and now - first >= minutes * 60) else WAIT
    if any(t.state not in FINAL for t in tasks):
        return WAIT
    all_ok = all(t.state == "COMPLETED" for t in tasks)
    if kind == "afterany":
        return OK
    if kind in ("afterok", "aftercorr"):
        return OK if all_ok else NEVER
    return NEVER if all_ok else OK  # afternotok


def _ref(kind: str, ref: Ref, jobs: Mapping[int, Rec], arrays: dict[int, dict[int, Rec]],
         now: float, own_task: int | None) -> str:
    if ref.task is not None:
        rec = arrays.get(ref.job_id, {}).get(ref.task)
        return OK if rec is None else _one(kind, rec, ref.minutes, now)
    tasks = arrays.get(ref.job_id)
    if tasks is not None:
        if kind == "aftercorr" and own_task is not None and own_task in tasks:
            return _one(kind, tasks[own_task], 0, now)
        return _whole(kind, list(tasks.values()), ref.minutes, now)
    rec = jobs.get(ref.job_id)
    return OK if rec is None else _one(kind, rec, ref.minutes, now)  # gone: lifted


def _by_array(jobs: Mapping[int, Rec]) -> dict[int, dict[int, Rec]]:
    out: dict[int, dict[int, Rec]] = {}
    for rec in jobs.values():
        if rec.array_job_id:
            out.setdefault(rec.array_job_id, {})[rec.array_task_id] = rec
    return out


def evaluate(text: str, jobs: Mapping[int, tuple], singleton_busy: bool = False,
             now: float = 0.0, own_task: int | None = None) -> str:
    """OK, WAIT or NEVER. `jobs`: job id -> Rec (or a (state, start) pair) for every job the
    text names, arrays' tasks included; `own_task`: the waiting job's array index (aftercorr)."""
    joiner, items = parse(text)
    recs = {i: r if isinstance(r, Rec) else Rec(*r) for i, r in jobs.items()}
    arrays = _by_array(recs)
    results = []
    for kind, refs in items:
        if kind == "singleton":
            results.append(WAIT if singleton_busy else OK)
            continue
        per_ref = [_ref(kind, r, recs, arrays, now, own_task) for r in refs]
        results.append(NEVER if NEVER in per_ref else WAIT if WAIT in per_ref else OK)
    if not results:
        return OK
    if joiner == "all":
        return NEVER if NEVER in results else WAIT if WAIT in results else OK
    return OK if OK in results else WAIT if WAIT in results else NEVER


def referenced(text: str) -> set[int]:
    """The job (or array) ids a dependency names."""
    return {r.job_id for _, refs in parse(text)[1] for r in refs}
