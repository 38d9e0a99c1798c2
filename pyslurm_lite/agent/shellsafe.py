"""The shell that root starts, as the user, in front of every task, batch script and task epilog
(the "shim"): it must run none of the user's code before the agent's "go" on the gate, which
comes once the shim is in the job's cgroup. A plain `bash -c` would not keep that promise: it
runs the file named by BASH_ENV, and imports functions from BASH_FUNC_<name>%% variables (one
named `read` replaces the gate's own read), before its first line; SHELLOPTS=xtrace with a PS4
holding `$(...)` runs code at the first traced command. A child forked then stays outside the
job's cgroup: outside its memory, CPU and device limits, and alive after the job.

So the shim is `bash -p` (privileged mode: no BASH_ENV, no imported functions, SHELLOPTS,
BASHOPTS, CDPATH and GLOBIGNORE ignored), and the task still gets its whole environment: bash
passes BASH_ENV and BASH_FUNC_* on untouched (a task's own bash imports `module` from Lmod as
usual), while SHELLOPTS, BASHOPTS and PS4, which privileged bash would overwrite or drop, travel
under other names and are put back by /usr/bin/env in the final exec.
"""

from __future__ import annotations

BASH = ("/bin/bash", "-p")
KEPT = ("SHELLOPTS", "BASHOPTS", "PS4")
_PREFIX = "SLURM_SHIM_KEPT_"


def guard(env: dict[str, str]) -> dict[str, str]:
    """The shim's environment: env with KEPT moved aside."""
    out = dict(env)
    for name in KEPT:
        if name in out:
            out[_PREFIX + name] = out.pop(name)
    return out


# Shell code run just before the shim's `exec "$@"`: when anything was moved aside, the task is
# exec'd through env, which puts it back (and drops the carriers).
RESTORE = ('[ -z "${!%s*}" ] || set -- /usr/bin/env %s %s "$@"; ' % (
    _PREFIX,
    " ".join(f"-u {_PREFIX}{n}" for n in KEPT),
    " ".join(f'${{{_PREFIX}{n}+"{n}=${_PREFIX}{n}"}}' for n in KEPT)))
