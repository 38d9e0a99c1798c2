"""Slurm's output/error filename patterns: %j %J %x %u %N %n %A %a %s %t %%, and %r (the restart
count, ours: a file per run of a requeued job), with an optional
zero-padding width (%4j). Relative names are relative to the job's working directory.

Also the shell the job's shim runs, already as the user, to enter that directory: the agent
(root) never changes into a user's directory itself, which would let anyone read a directory
they may not enter (a 0755 project under a 0700 home). Slurm's slurmstepd does the same after
dropping privileges, and says so on the job's stderr when it falls back to /tmp.
"""

from __future__ import annotations

import os
from functools import lru_cache

from ..model import Job


# sh, with the work directory as $1. `cd -P` is chdir(2) (no logical path); CDPATH cleared so
# only that directory is tried. Only when it fails, bash (whose cd, unlike dash's, says
# strerror's reason: "...: Permission denied", in the C locale as slurmstepd's %m) words why.
# The output files are not open yet: the message waits in slurm_cd_err for CHDIR_REPORT.
CHDIR = ('slurm_cd_err=; if ! CDPATH= cd -P -- "${1:-/}" 2>/dev/null; then '
         'slurm_cd_err=$(LC_ALL=C CDPATH= /bin/bash -c \'cd -P -- "$1"\' slurmstepd "${1:-/}" 2>&1); '
         'slurm_cd_err="couldn\'t chdir to \\`${1:-/}\': ${slurm_cd_err##*: }: going to /tmp instead"; '
         'cd /tmp || { echo "slurmstepd: error: $slurm_cd_err" >&2; '
         'echo "slurmstepd: error: couldn\'t chdir to /tmp either. dying." >&2; exit 1; }; fi; ')
CHDIR_REPORT = ('[ -z "$slurm_cd_err" ] || echo "slurmstepd: error: $slurm_cd_err" >&2; '
                'unset slurm_cd_err; ')


def expand_pattern(pattern: str, job: Job, node: str, step: str = "batch", task: int = 0,
                   node_index: int = 0) -> str:
    """Slurm's filename patterns: %j %J %x %u %N %n %A %a %s %t %%, with optional zero-padding
    width (%4j)."""
    array_id = job.array_job_id or job.job_id
    task_id = job.array_task_id if job.array_job_id else 4294967294  # Slurm's "no array" index
    values = {"j": str(job.job_id), "J": str(job.job_id), "x": job.spec.name, "u": job.spec.user,
              "N": node, "n": str(node_index), "A": str(array_id), "a": str(task_id), "s": step,
              "t": str(task), "r": str(job.restart_count)}  # %r: which run (requeues append)
    out = []
    for literal, width, key, raw in _tokens(pattern):
        if literal:
            out.append(literal)
        elif key in values:
            v = values[key]
            out.append(v.zfill(width) if width and v.isdigit() else v)
        else:
            out.append(raw)  # not a pattern Slurm knows: kept as written
    return "".join(out)


@lru_cache(maxsize=256)
def _tokens(pattern: str) -> tuple[tuple[str, int, str, str], ...]:
    """A pattern split once into (literal, width, key, as written): a job's launch expands its
    --output and --error, and most jobs share a few patterns."""
    out, i = [], 0
    while i < len(pattern):
        k = pattern.find("%", i)
        if k < 0 or k + 1 >= len(pattern):  # no more patterns (a trailing % is literal)
            out.append((pattern[i:], 0, "", ""))
            break
        if k > i:
            out.append((pattern[i:k], 0, "", ""))
        j = k + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        key = pattern[j] if j < len(pattern) else ""
        if key == "%":
            out.append(("%", 0, "", ""))
        else:
            out.append(("", int(pattern[k + 1:j] or 0), key, pattern[k:j + 1]))
        i = j + 1
    return tuple(out)


def output_paths(job: Job, node: str) -> tuple[str, str]:
    spec = job.spec
    default = "slurm-%A_%a.out" if job.array_job_id else "slurm-%j.out"
    out = expand_pattern(spec.std_out or default, job, node)
    err = expand_pattern(spec.std_err, job, node) if spec.std_err else out
    base = spec.work_dir or "/"
    return os.path.join(base, out), os.path.join(base, err)
