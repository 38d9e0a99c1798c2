"""Task prologs and epilogs (slurm.conf TaskProlog/TaskEpilog, srun --task-prolog/--task-epilog),
as Slurm 22.05's slurmstepd runs them (Prolog and Epilog Guide; src/slurmd/slurmstepd/task.c,
mgr.c, src/common/run_command.c).

Prologs run inside the task's own shim (taskmgr.py, stepmgr.py): already the user, in the step's
cgroup, in the task's directory, with its output open, just before the exec. TaskProlog first,
then srun's --task-prolog. Each runs with the task's environment plus
SLURM_SCRIPT_CONTEXT=prolog_task (which the task keeps, as in Slurm); its stdout and stderr are
read, and each line
    export NAME=value   sets NAME for the task
    unset NAME          removes NAME from the task's environment
    print TEXT          writes TEXT to the task's stdout
while any other line is ignored. A prolog that exits non-zero ends the task with its status
before the task's program runs (task.c: `error("TaskProlog failed status=%d"); _exit(status)`),
and slurmstepd's error line reaches the task's stderr, where its log goes.

Epilogs run once a task has exited, before its exit is reported: --task-epilog (killed after
5 seconds), then TaskEpilog (no limit), each as the user, in the step's cgroup and the task's
directory, with the task's environment (not what a prolog changed) plus
SLURM_SCRIPT_CONTEXT=epilog_task. Their failure is only logged (mgr.c _wait_for_any_task).

The agent never runs either as root: the paths come from slurm.conf (root's) or srun (the
user's own, run as that user).
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import select
import threading
from dataclasses import dataclass

from . import shellsafe

log = logging.getLogger("pyslurm_lite.agent.taskprolog")

USER_EPILOG_WAIT = 5.0  # seconds: slurmstepd's max_wait for srun --task-epilog (mgr.c)
_ERR_MAX = 65536  # bytes of an epilog's stderr passed on to srun

# POSIX sh (the batch shim is dash). $1: Slurm's name for the program (run_command's words),
# $2: its path, $3: what its failure is called. run_command refuses a relative path and one
# the user may not read and execute with status 127; stdin is /dev/null, stderr joins stdout.
# The output's lines are applied in this shell, so the task exec'd next inherits them.
_FUNCTION = r'''slurm_task_prolog() {
slurm_tp_why=
case $2 in
/*) if [ ! -e "$2" ]; then slurm_tp_why="No such file or directory"
    elif [ ! -r "$2" ] || [ ! -x "$2" ]; then slurm_tp_why="Permission denied"; fi
    [ -z "$slurm_tp_why" ] || slurm_tp_why="$1 can not be executed ($2) $slurm_tp_why" ;;
*) slurm_tp_why="$1 is not fully qualified pathname ($2)" ;;
esac
if [ -n "$slurm_tp_why" ]; then
echo "slurmstepd: error: run_command: $slurm_tp_why" >&2; slurm_tp_out=; slurm_tp_rc=127
else
slurm_tp_out=$("$2" </dev/null 2>&1; echo " $?")
slurm_tp_rc=${slurm_tp_out##* }; slurm_tp_out=${slurm_tp_out% *}
fi
while IFS= read -r slurm_tp_line || [ -n "$slurm_tp_line" ]; do
case $slurm_tp_line in
"print "*) slurm_tp_v=${slurm_tp_line#print }
  printf '%s\n' "${slurm_tp_v#"${slurm_tp_v%%[![:space:]]*}"}" ;;
"export "*) slurm_tp_v=${slurm_tp_line#export }
  slurm_tp_v=${slurm_tp_v#"${slurm_tp_v%%[![:space:]]*}"}
  case $slurm_tp_v in *=*)
    slurm_tp_n=${slurm_tp_v%%=*}; slurm_tp_n=${slurm_tp_n%"${slurm_tp_n##*[![:space:]]}"}
    case $slurm_tp_n in ''|[0-9]*|*[!A-Za-z0-9_]*) ;;
    *) export "$slurm_tp_n=${slurm_tp_v#*=}" 2>/dev/null ;; esac ;;
  esac ;;
"unset "*) slurm_tp_n=${slurm_tp_line#unset }
  slurm_tp_n=${slurm_tp_n#"${slurm_tp_n%%[![:space:]]*}"}
  slurm_tp_n=${slurm_tp_n%"${slurm_tp_n##*[![:space:]]}"}
  case $slurm_tp_n in ''|[0-9]*|*[!A-Za-z0-9_]*) ;;
  *) unset "$slurm_tp_n" 2>/dev/null ;; esac ;;
esac
done <<SLURM_TP_EOF
$slurm_tp_out
SLURM_TP_EOF
[ "$slurm_tp_rc" = 0 ] || echo "slurmstepd: error: $3 failed status=$slurm_tp_rc" >&2
return "$slurm_tp_rc"
}
'''
_CLEANUP = ("unset -f slurm_task_prolog; unset slurm_tp_why slurm_tp_out slurm_tp_rc "
            "slurm_tp_line slurm_tp_v slurm_tp_n; ")


def prologs(config_prolog: str, srun_prolog: str = "") -> list[tuple[str, str, str]]:
    """(run_command's name, path, failure's name) of each prolog to run, in Slurm's order."""
    out = []
    if config_prolog:
        out.append(("slurm task_prolog", config_prolog, "TaskProlog"))
    if srun_prolog:
        out.append(("user task_prolog", srun_prolog, "--task-prolog"))
    return out


def shell(progs: list[tuple[str, str, str]]) -> str:
    """The shim's lines that run the prologs (nothing when there are none). The paths are
    quoted into the script, never passed in the task's environment."""
    if not progs:
        return ""
    calls = "".join(f"slurm_task_prolog {shlex.quote(name)} {shlex.quote(path)} "
                    f"{shlex.quote(what)} || exit $?; " for name, path, what in progs)
    return _FUNCTION + "export SLURM_SCRIPT_CONTEXT=prolog_task; " + calls + _CLEANUP


def before_exec(shim: str, fragment: str, exec_word: str = 'exec "$@"') -> str:
    """The shim with the prologs' lines just before its final exec of the task."""
    if not fragment:
        return shim
    head, sep, tail = shim.rpartition(exec_word)
    if not sep:
        raise ValueError("the shim has no exec of the task")
    return head + fragment + sep + tail


# ---- epilogs --------------------------------------------------------------------------------
# The epilog's own shim: it waits for the agent's "go" (given once it is in the step's cgroup),
# then, as the user, enters the task's directory (slurmstepd only logs a failure: / then) and
# execs the program as slurmstepd does (execve(path, [path], env)).
_EPILOG_SHIM = ('read -r go <&"$GATE_FD"; exec {GATE_FD}<&-; unset GATE_FD; '
                '[ "$go" = go ] || exit 111; CDPATH= cd -P -- "$1" 2>/dev/null || cd /; '
                'set -- "$2"; ' + shellsafe.RESTORE + 'exec "$@"')


@dataclass
class Epilog:
    what: str  # how its failure is named: --task-epilog | TaskEpilog
    path: str
    timeout: float | None  # seconds before it is killed; None: never


def epilogs(srun_epilog: str, config_epilog: str) -> list[Epilog]:
    """In slurmstepd's order: srun's (5 seconds at most), then slurm.conf's (no limit)."""
    out = []
    if srun_epilog:
        out.append(Epilog("--task-epilog", srun_epilog, USER_EPILOG_WAIT))
    if config_epilog:
        out.append(Epilog("TaskEpilog", config_epilog, None))
    return out


def run_epilog(ep: Epilog, env: dict, cwd: str, popen_identity: dict, umask: int,
               enter) -> tuple[int, bytes]:
    """Run one epilog to its end: (its status, its stderr). enter(pid) puts the process in the
    step's cgroup before it may run. Its stdout goes nowhere, as slurmstepd's does."""
    if not os.path.isabs(ep.path):  # run_command's rule, as for the prologs: never via PATH
        name = "user task_epilog" if ep.what == "--task-epilog" else "slurm task_epilog"  # Slurm's names
        text = f"slurmstepd: error: run_command: {name} is not fully qualified pathname ({ep.path})\n"
        log.warning("%s failed status=127 (%s)", ep.what, ep.path)
        return 127, text.encode()
    r, w = os.pipe()
    kept = _Capture(r)
    try:
        rc = _run(ep, env, cwd, popen_identity, umask, enter, w)
    finally:
        os.close(w)
    # a child it leaves holding stderr cannot hold us: what is there now is all we wait for
    text = kept.stop()
    if rc:
        log.warning("%s failed status=%d (%s)", ep.what, rc, ep.path)
    return rc, text


class _Capture:
    """An epilog's stderr, through a pipe: the first _ERR_MAX bytes kept, the rest read and
    dropped, so a user's epilog writing without end fills neither memory nor the agent's disk."""

    def __init__(self, fd: int):
        self.fd, self.data, self.done = fd, bytearray(), threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            while not self.done.is_set():
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if not ready:
                    continue
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    return
                self.data += chunk[:max(_ERR_MAX - len(self.data), 0)]
        finally:
            os.close(self.fd)

    def stop(self, linger: float = 0.5) -> bytes:
        self.thread.join(linger)  # ends at EOF, unless something the epilog left still writes
        self.done.set()
        self.thread.join()
        return bytes(self.data)


def _run(ep: Epilog, env: dict, cwd: str, popen_identity: dict, umask: int, enter, err) -> int:
    gate_r, gate_w = os.pipe()
    env = dict(env, SLURM_SCRIPT_CONTEXT="epilog_task", GATE_FD=str(gate_r))
    try:
        proc = subprocess.Popen(
            [*shellsafe.BASH, "-c", _EPILOG_SHIM, "slurm_task_epilog", cwd or "/", ep.path],
            cwd="/", env=shellsafe.guard(env), pass_fds=(gate_r,), start_new_session=True, umask=umask,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
            **popen_identity)
    finally:
        os.close(gate_r)
    try:
        enter(proc.pid)
        os.write(gate_w, b"go\n")
    except OSError:
        proc.kill()
    finally:
        os.close(gate_w)
    try:
        return proc.wait(timeout=ep.timeout)
    except subprocess.TimeoutExpired:
        # not reaped yet, so its group id is still its own; what it leaves after its end dies
        # with the step's cgroup (a group id, once reaped, may be another's)
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()
