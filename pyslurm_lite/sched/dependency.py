"""Job dependencies (--dependency), Slurm's syntax and meaning, evaluated purely.

    afterok:12:13,afterany:14    every item must hold (',' joins with AND)
    afterok:12?afternotok:12     any item may hold   ('?' joins with OR)
    singleton                    no other job of the same name and user is running

    after      the job started (or ended)      afterany   it ended, however
    afterok    it ended COMPLETED              afternotok it ended otherwise
An item that can no longer hold (afterok on a FAILED job, a job that does not exist) makes the
dependency *never* satisfied when no alternative remains: Reason=DependencyNeverSatisfied.

Worked example: job 5 has `afterok:3,afterany:4`. While 3 runs, 5 waits (Reason=Dependency); if
3 ends COMPLETED and 4 is still pending, 5 still waits; if 3 ends FAILED, 5 can never run.
"""

from __future__ import annotations

import re

from ..errors import InvalidRequest

OK, WAIT, NEVER = "ok", "wait", "never"
TYPES = ("after", "afterany", "afterok", "afternotok", "singleton")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE"}


def parse(text: str) -> tuple[str, list[tuple[str, list[int]]]]:
    """'afterok:1:2,afterany:3' -> ('all', [('afterok', [1, 2]), ('afterany', [3])])."""
    if not text:
        return "all", []
    if "," in text and "?" in text:
        raise InvalidRequest("Job dependency problem: ',' and '?' cannot be mixed")
    joiner, parts = ("any", text.split("?")) if "?" in text else ("all", text.split(","))
    items = []
    for part in parts:
        kind, *ids = part.split(":")
        if kind not in TYPES or (kind == "singleton") == bool(ids):
            raise InvalidRequest(f"Job dependency problem: invalid dependency '{part}'")
        try:
            items.append((kind, [int(re.sub(r"\+\d+$", "", i).split("_")[0]) for i in ids]))
        except ValueError:
            raise InvalidRequest(f"Job dependency problem: invalid job id in '{part}'") from None
    return joiner, items


def _item(kind: str, state: str | None, started: bool) -> str:
    if state is None:
        return NEVER  # no such job
    if kind == "after":
        return OK if started or state in FINAL else WAIT
    if state not in FINAL:
        return WAIT
    if kind == "afterany":
        return OK
    ok = state == "COMPLETED"
    return (OK if ok else NEVER) if kind == "afterok" else (NEVER if ok else OK)


def evaluate(text: str, states: dict[int, tuple[str, bool]], singleton_busy: bool = False) -> str:
    """OK, WAIT or NEVER. `states`: job id -> (state, has started); a missing id does not exist."""
    joiner, items = parse(text)
    results = []
    for kind, ids in items:
        if kind == "singleton":
            results.append(WAIT if singleton_busy else OK)
            continue
        per_id = [_item(kind, *(states.get(i) or (None, False))) for i in ids]
        results.append(NEVER if NEVER in per_id else WAIT if WAIT in per_id else OK)
    if not results:
        return OK
    if joiner == "all":
        return NEVER if NEVER in results else WAIT if WAIT in results else OK
    return OK if OK in results else WAIT if WAIT in results else NEVER


def referenced(text: str) -> set[int]:
    return {i for _, ids in parse(text)[1] for i in ids}
