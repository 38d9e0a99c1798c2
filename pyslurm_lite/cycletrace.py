"""Stage marks of a job's cycle, for bench/trace_cycle.py: where the time between one job's end
and the next job's start goes.

Off unless PYSLURM_LITE_CYCLE_TRACE names a file when a daemon starts: then each mark appends
one line "<unix time> <process> <stage> <job id>" to it, in one write (O_APPEND: the daemons of a
local cluster share the file, and lines of a few dozen bytes do not interleave). Off, a mark
costs one test of a global.
"""

from __future__ import annotations

import os
import time

_FD: int | None = None
_WHO = ""


def start(who: str) -> None:
    """A daemon names itself (controller, agent:NODE); marks go out from now when asked for."""
    global _FD, _WHO
    path = os.environ.get("PYSLURM_LITE_CYCLE_TRACE")
    if path:
        _FD = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        _WHO = who


def mark(stage: str, job_id: int = 0) -> None:
    if _FD is not None:
        os.write(_FD, f"{time.time():.6f} {_WHO} {stage} {job_id}\n".encode())


def marks(stage: str, job_ids) -> None:
    """One line per job id (any iterable: callers pass generators, nothing is built when off)."""
    if _FD is not None:
        now = f"{time.time():.6f} {_WHO} {stage} "
        os.write(_FD, "".join(f"{now}{j}\n" for j in job_ids).encode())
