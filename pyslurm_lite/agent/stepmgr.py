"""Launching and tracking batch jobs on this node (slurmstepd's role, in-process).

Owns: the job's spool directory (script, pid record), output file naming, starting the script as
the submitting user, reaping it, signalling it, and reporting its end. Process tracking is the
process group today (proctrack/pgid); the cgroup tracker slots in behind `Tracker`.

A job runs as: /bin/sh opens stdout/stderr as the user (so a user can never write where they may
not), then execs the script. The script's session is new, so its process group holds its children.
"""

from __future__ import annotations

import logging
import os
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from ..config import Config
from ..model import Job
from .env import batch_environment, gpu_environment

log = logging.getLogger("pyslurm_lite.agent.stepmgr")


def expand_pattern(pattern: str, job: Job, node: str, step: str = "batch") -> str:
    """Slurm's filename patterns: %j %J %x %u %N %n %A %a %s %t %%, with optional zero-padding
    width (%4j)."""
    out, i = [], 0
    array_id, task_id = job.job_id, 4294967294
    values = {"j": str(job.job_id), "J": str(job.job_id), "x": job.spec.name, "u": job.spec.user,
              "N": node, "n": "0", "A": str(array_id), "a": str(task_id), "s": step, "t": "0"}
    while i < len(pattern):
        c = pattern[i]
        if c != "%" or i + 1 >= len(pattern):
            out.append(c)
            i += 1
            continue
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        width, key = pattern[i + 1:j], pattern[j] if j < len(pattern) else ""
        if key == "%":
            out.append("%")
        elif key in values:
            v = values[key]
            out.append(v.zfill(int(width)) if width and v.isdigit() else v)
        else:
            out.append(pattern[i:j + 1])
        i = j + 1
    return "".join(out)


def output_paths(job: Job, node: str) -> tuple[str, str]:
    spec = job.spec
    out = expand_pattern(spec.std_out or "slurm-%j.out", job, node)
    err = expand_pattern(spec.std_err, job, node) if spec.std_err else out
    base = spec.work_dir or "/"
    return os.path.join(base, out), os.path.join(base, err)


def _traversable(path: str) -> bool:
    """Can any user reach path (every parent directory searchable by others)?"""
    path = os.path.abspath(path)
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


@dataclass
class Running:
    job: Job
    proc: subprocess.Popen
    pidfd: int = -1
    ending: str = ""  # why we are killing it: cancelled | timeout | requeue | node_fail
    kill_timer: threading.Timer | None = None


class StepManager:
    def __init__(self, cfg: Config, node: str, spool: str, report):
        self.cfg, self.node, self.spool = cfg, node, spool
        self.report = report  # report(event dict) -> None, delivered to the controller
        self.lock = threading.Lock()
        self._launch_lock = threading.Lock()
        self.running: dict[int, Running] = {}
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        os.makedirs(spool, mode=0o755, exist_ok=True)
        if not _traversable(spool):
            log.warning("%s is not reachable by other users (a parent lacks o+x): jobs of users "
                        "other than %s will fail to start", spool, os.getuid())
        threading.Thread(target=self._reap_loop, daemon=True, name="reaper").start()

    # ---- launch -------------------------------------------------------------------------------
    def launch(self, job: Job, node_addrs: dict[str, str]) -> None:
        with self.lock:
            known = self.running.get(job.job_id)
            if known is not None and known.job.restart_count >= job.restart_count:
                return  # a repeated launch message: never run a job twice
        try:
            # One launch at a time: a script written while another thread forks could be held
            # open by that child, and exec'ing it would fail with ETXTBSY.
            with self._launch_lock:
                run = self._start(job, node_addrs)
        except Exception as e:  # the job fails, the agent does not
            log.warning("launch of job %s failed: %s", job.job_id, e)
            self.report({"job_id": job.job_id, "restart_count": job.restart_count,
                         "kind": "launch_failed", "exit_code": 1, "message": str(e)})
            return
        with self.lock:
            self.running[job.job_id] = run
            self._sel.register(run.pidfd, selectors.EVENT_READ, run)
        os.write(self._wake_w, b"x")

    def _job_dir(self, job: Job) -> str:
        return os.path.join(self.spool, f"job{job.job_id:08d}.{job.restart_count}")

    def _start(self, job: Job, node_addrs: dict[str, str]) -> Running:
        spec = job.spec
        jdir = self._job_dir(job)
        os.makedirs(jdir, mode=0o700, exist_ok=True)
        script = os.path.join(jdir, "slurm_script")
        with open(script, "w", encoding="utf-8") as f:
            f.write(spec.script)
        os.chmod(script, 0o700)
        as_root = os.getuid() == 0
        if as_root:
            os.chown(jdir, spec.uid, spec.gid)
            os.chown(script, spec.uid, spec.gid)
        elif spec.uid != os.getuid():
            raise PermissionError(f"agent runs as uid {os.getuid()} and cannot run jobs of uid {spec.uid}")
        here = job.allocations[0] if job.allocations else None
        env = batch_environment(job, self.cfg, self.node, node_addrs,
                                gpu_environment(here.gpus if here else []))
        out, err = output_paths(job, self.node)
        mode = ">>" if spec.open_mode == "append" else ">"
        redirect = f'exec {mode}"$1" 2>&1' if out == err else f'exec {mode}"$1" 2{mode}"$2"'
        cmd = f'export SLURM_TASK_PID=$$; {redirect} <"$3" || exit 1; exec "$0"'
        proc = subprocess.Popen(
            ["/bin/sh", "-c", cmd, script, out, err, spec.std_in or "/dev/null"],
            cwd=spec.work_dir or "/", env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=True, **self._identity(spec, as_root))
        with open(os.path.join(jdir, "pid"), "w") as f:
            f.write(f"{proc.pid} {job.restart_count}\n")
        return Running(job=job, proc=proc, pidfd=os.pidfd_open(proc.pid))

    @staticmethod
    def _identity(spec, as_root: bool) -> dict:
        if not as_root or spec.uid == 0:
            return {}
        return {"user": spec.uid, "group": spec.gid, "extra_groups": list(spec.groups) or [spec.gid]}

    # ---- reaping ------------------------------------------------------------------------------
    def _reap_loop(self) -> None:
        while True:
            for key, _ in self._sel.select():
                if key.data is None:
                    os.read(self._wake_r, 4096)
                    continue
                self._finish(key.data)

    def _finish(self, run: Running) -> None:
        rc = run.proc.wait()
        if run.kill_timer:
            run.kill_timer.cancel()
        self._kill_group(run.proc.pid, signal.SIGKILL)  # what the script left behind dies with it
        self._cleanup(run.job)
        exit_code, exit_signal = (0, -rc) if rc < 0 else (rc, 0)
        # Report before forgetting: a heartbeat must never see a job neither running nor ended.
        self.report({"job_id": run.job.job_id, "restart_count": run.job.restart_count,
                     "kind": "ended", "exit_code": exit_code, "exit_signal": exit_signal,
                     "time": time.time()})
        with self.lock:
            self._sel.unregister(run.pidfd)
            os.close(run.pidfd)
            if self.running.get(run.job.job_id) is run:
                del self.running[run.job.job_id]

    def _cleanup(self, job: Job) -> None:
        jdir = self._job_dir(job)
        for name in ("slurm_script", "pid"):
            try:
                os.unlink(os.path.join(jdir, name))
            except FileNotFoundError:
                pass
        try:
            os.rmdir(jdir)
        except OSError:
            pass

    # ---- signals ------------------------------------------------------------------------------
    @staticmethod
    def _kill_group(pgid: int, signo: int) -> bool:
        try:
            os.killpg(pgid, signo)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def signal(self, job_ids: list[int], signo: int, batch_only: bool) -> list[int]:
        done = []
        with self.lock:
            runs = [self.running[j] for j in job_ids if j in self.running]
        for run in runs:
            ok = (os.kill(run.proc.pid, signo) is None) if batch_only else self._kill_group(run.proc.pid, signo)
            if ok:
                done.append(run.job.job_id)
        return done

    def terminate(self, job_ids: list[int], reason: str) -> list[int]:
        """SIGCONT+SIGTERM to the whole job now, SIGKILL after KillWait if anything remains."""
        with self.lock:
            runs = [self.running[j] for j in job_ids if j in self.running]
        for run in runs:
            run.ending = reason or "cancelled"
            self._kill_group(run.proc.pid, signal.SIGCONT)
            self._kill_group(run.proc.pid, signal.SIGTERM)
            if run.kill_timer is None:
                run.kill_timer = threading.Timer(self.cfg.kill_wait, self._kill_group,
                                                 (run.proc.pid, signal.SIGKILL))
                run.kill_timer.daemon = True
                run.kill_timer.start()
        return [r.job.job_id for r in runs]

    def running_jobs(self) -> dict[int, int]:
        with self.lock:
            return {j: r.job.restart_count for j, r in self.running.items()}

