"""Launching and tracking batch jobs on this node (slurmstepd's role, in-process).

Owns: the job's spool directory (script, pid record), starting the script as the submitting user
inside the job's cgroup, reaping it, signalling it, and reporting its end (exit code, signal,
OUT_OF_MEMORY). Process tracking and limits are the Tracker's (cgroup.py); filenames are
iopaths.py's; which cores, cpus.py's.

A job starts as: /bin/sh, already the user (with the submitter's umask), waits on a pipe until the
agent has put it in the job's cgroup, changes to the job's directory as the user (Slurm's /tmp
fallback when it may not), opens stdout/stderr as the user (so a user can never read or write
where they may not), then execs the script. Everything it starts stays in that cgroup, setsid or
not, and dies with the job.

Nothing is started without the controller's launch credential (rpc/credential.py): the identity
the job runs as and what it may use here come from the credential's claims, never from the rest
of the launch message.
"""

from __future__ import annotations

import logging
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..config import Config
from .. import cycletrace, rlimits
from ..model import GpuDevice, Job, NodeAllocation
from ..rpc import credential
from ..rpc.credential import Claims, CredentialError
from . import gpu as gpu_mod
from .acctgather import Target
from . import shellsafe
from . import spool as spool_mod
from . import taskprolog
from .cgroup import Limits, Tracker, step_memory
from .cpus import CoreMap, gpu_cores
from .env import batch_environment, gpu_environment, submitter_umask
from .mps import MpsControl, pipe_dir, share_request
from .iopaths import CHDIR, CHDIR_REPORT, expand_pattern, output_paths

log = logging.getLogger("pyslurm_lite.agent.stepmgr")

__all__ = ["StepManager", "expand_pattern", "output_paths"]


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


_JOB_DIR = re.compile(r"job\d{8,}\.\d+")  # _job_dir's names


def job_key(job_id: int) -> str:
    return f"job_{job_id}"


@dataclass
class Running:
    job: Job
    proc: subprocess.Popen
    pidfd: int = -1
    ending: str = ""  # why we are killing it: cancelled | timeout | requeue | node_fail
    kill_timer: threading.Timer | None = None
    env: dict | None = None  # the script's environment, for the TaskEpilog
    started: float = 0.0  # when the script started here (time.time())


class Admission:
    """Which launch credentials this node honours: its own MAC, not expired, for the launch it
    is presented with, never twice (Replays), never for a run that has ended here
    (Revocations). Shared by batch scripts and steps."""

    def __init__(self, node: str):
        self.node = node
        self.replays = credential.Replays()
        self.revoked = credential.Revocations()

    def admit(self, cred: str, key: bytes, job_id: int, step) -> Claims:
        if not cred:
            raise CredentialError("no launch credential")
        claims = credential.verify(cred, key, self.node)
        if claims.job_id != job_id or claims.step != step:
            raise CredentialError(f"the launch credential is for {claims.job_id}.{claims.step}, "
                                  f"not {job_id}.{step}")
        self.revoked.check(claims)
        self.replays.admit(claims)  # last: a refused launch does not use the credential up
        return claims

    def revoke(self, job_id: int, restart_count: int) -> None:
        self.revoked.revoke(job_id, restart_count)


def apply_claims(job: Job, claims: Claims) -> None:
    """Identity and allocation from the credential, over whatever the launch message said, before
    anything (cgroup limits, cores, GPUs, the environment, the uid) uses them."""
    spec = job.spec
    spec.uid, spec.gid, spec.user = claims.uid, claims.gid, claims.user
    spec.groups = list(claims.groups)
    job.restart_count = claims.restart_count
    shares = {n: NodeAllocation(n, s.cpus, s.mem, list(s.gpus)) for n, s in claims.alloc.items()}
    job.allocations = [shares.pop(a.node, a) for a in job.allocations] + list(shares.values())


class StepManager:
    def __init__(self, cfg: Config, node: str, spool: str, report,
                 gpus: list[GpuDevice] | None = None, tracker: Tracker | None = None, *,
                 node_key: bytes):
        self.cfg, self.node, self.spool = cfg, node, spool
        self.node_key = node_key  # this node's key (keys.py, node:NAME): checks launch credentials
        self.admission = Admission(node)
        self.report = report  # report(event dict) -> None, delivered to the controller
        self.gpus = gpus or []
        self.tracker = tracker or Tracker()
        # the MPS control daemon of each GPU that gres/mps jobs run on (MpsControlProgram=)
        self.mps = MpsControl(cfg.mps_control_program, spool, self.gpus)
        self.cores = CoreMap()
        self.tasks = None  # the TaskManager (srun steps), set by the agent
        self.acct = None  # the usage Gatherer (acctgather.py), set by the agent
        # job id -> the job's GPUs here in the order its tasks see them when the devices cgroup
        # fences them (None: not fenced), for the jobs with a cgroup here
        self.job_cgroups: dict[int, list[int] | None] = {}
        self.lock = threading.Lock()
        self._launch_lock = threading.Lock()
        self.running: dict[int, Running] = {}
        # Endings are handled off the reaper thread: killing leftovers may take KillWait.
        self._finishers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="finish")
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        spool_mod.prepare(spool)
        if not _traversable(spool):
            log.warning("%s is not reachable by other users (a parent lacks o+x): jobs of users "
                        "other than %s will fail to start", spool, os.getuid())
        threading.Thread(target=self._reap_loop, daemon=True, name="reaper").start()

    # ---- launch -------------------------------------------------------------------------------
    def launch(self, job: Job, node_addrs: dict[str, str], cred: str = "") -> None:
        with self.lock:
            known = self.running.get(job.job_id)
            if known is not None and known.job.restart_count >= job.restart_count:
                return  # a repeated launch message: never run a job twice
        cycletrace.mark("launch.received", job.job_id)
        try:
            self._admit(job, cred)
        except CredentialError as e:  # nothing of the job's starts, nothing of another's stops
            log.warning("launch of job %s refused: %s", job.job_id, e)
            self.report({"job_id": job.job_id, "restart_count": job.restart_count,
                         "kind": "launch_failed", "exit_code": 1, "message": str(e)})
            return
        try:
            # One launch at a time: a script written while another thread forks could be held
            # open by that child, and exec'ing it would fail with ETXTBSY.
            with self._launch_lock:
                run = self._start(job, node_addrs)
        except Exception as e:  # the job fails, the agent does not
            log.warning("launch of job %s failed: %s", job.job_id, e)
            self._release(job)
            self.report({"job_id": job.job_id, "restart_count": job.restart_count,
                         "kind": "launch_failed", "exit_code": 1, "message": str(e)})
            return
        with self.lock:
            self.running[job.job_id] = run
            self._sel.register(run.pidfd, selectors.EVENT_READ, run)
        os.write(self._wake_w, b"x")

    def _admit(self, job: Job, cred: str) -> None:
        apply_claims(job, self.admission.admit(cred, self.node_key, job.job_id, credential.BATCH))

    def _job_dir(self, job: Job) -> str:
        return os.path.join(self.spool, f"job{job.job_id:08d}.{job.restart_count}")

    def _write_script(self, job: Job) -> str:
        jdir = spool_mod.fresh_dir(self._job_dir(job))
        return spool_mod.write_script(jdir, job.spec.script, job.spec.uid, job.spec.gid)

    def _limits(self, job: Job, node: str = "", job_gpus: list[int] | None = None
                ) -> tuple[Limits, list[int] | None]:
        """The job's limits here, and the GPUs its devices cgroup lets through, in order (None
        when not fenced). job_gpus: the job's GPUs here, when a step's launch names fewer."""
        here = next((a for a in job.allocations if a.node == node), job.allocations[0])
        wanted = here.gpus if job_gpus is None else job_gpus
        mine = {g.index for g in self.gpus if g.index in wanted}
        numa = {g.numa_node for g in self.gpus if g.index in mine and g.numa_node >= 0}
        deny = [_device_number(g.file) for g in self.gpus if g.index not in mine and g.file]
        # a local cluster's other nodes share this host: their GPUs are fenced off too
        deny += [_device_number(f) for f in gpu_mod.foreign_devices(self.cfg, self.node)]
        deny = list(dict.fromkeys(d for d in deny if d is not None))
        fenced = bool(deny) and self.tracker.fences_devices
        near, strict = gpu_cores(self.gpus, mine, job.spec.gres_flags)  # Cores=, --gres-flags
        if near is not None and not near:
            numa = set()  # disable-binding: no preference at all
        cpus = self.cores.take(job_key(job.job_id), here.cpus, numa, near or None, strict)
        return Limits(mem_mb=here.mem, cpus=cpus, deny_devices=deny), sorted(mine) if fenced else None

    def _start(self, job: Job, node_addrs: dict[str, str]) -> Running:
        spec = job.spec
        as_root = os.getuid() == 0
        if not as_root and spec.uid != os.getuid():
            raise PermissionError(f"agent runs as uid {os.getuid()} and cannot run jobs of uid {spec.uid}")
        cycletrace.mark("launch.admitted", job.job_id)
        script = self._write_script(job)
        cycletrace.mark("script.written", job.job_id)
        fenced = self.ensure_job_cgroup(job, self.node)
        cycletrace.mark("cgroup.made", job.job_id)
        key = job_key(job.job_id)
        here = next((a for a in job.allocations if a.node == self.node), job.allocations[0])
        env = batch_environment(job, self.cfg, self.node, node_addrs,
                                gpu_environment(here.gpus, fenced, **self.gpu_options(job, fenced)))
        out, err = output_paths(job, self.node)
        gate_r, gate_w = os.pipe()
        mode = ">>" if spec.open_mode == "append" else ">"
        redirect = f'exec {mode}"$2" 2>&1' if out == err else f'exec {mode}"$2" 2{mode}"$3"'
        # The gate is the shim's stdin. The agent writes "go" once the shim is in the job's
        # cgroup; if the agent dies first, `read` meets end-of-file and the shim gives up, so no
        # job ever runs outside its cgroup, unseen by the agent that restarts. Only then, as
        # the user: the job's directory, then its files (opened where the user may, with the
        # user's umask), then Slurm's word on a directory it could not enter.
        # The batch script is a task too: slurm.conf's TaskProlog runs before it (taskprolog.py).
        cmd = (f'read go; [ "$go" = go ] || exit 111; export SLURM_TASK_PID=$$; {CHDIR}'
               f'{redirect} <"$4" || exit 1; {CHDIR_REPORT}'
               f'{rlimits.shell(spec.rlimits, log)}'  # sbatch's limits, set by the script's shell
               f'{taskprolog.shell(taskprolog.prologs(self.cfg.task_prolog))}'
               'shift 4; set -- "$0" "$@"; ' + shellsafe.RESTORE + 'exec "$@"')
        try:
            proc = subprocess.Popen(
                [*shellsafe.BASH, "-c", cmd, script, spec.work_dir or "/", out, err,
                 spec.std_in or "/dev/null", *spec.argv],
                cwd="/", env=shellsafe.guard(env), start_new_session=True,
                umask=submitter_umask(spec.environment),
                stdin=gate_r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                **self._identity(spec, as_root))
        finally:
            os.close(gate_r)
        cycletrace.mark("forked", job.job_id)
        try:
            self.tracker.add(key, proc.pid, "batch")  # before any of the user's code runs
        except Exception:
            proc.kill()
            proc.wait()
            os.close(gate_w)
            self.tracker.remove(key)
            raise
        os.write(gate_w, b"go\n")  # the job starts
        os.close(gate_w)
        cycletrace.mark("gate.open", job.job_id)
        if self.tracker.name == "proctrack/pgid":
            # without cgroups, the pid file is the only record of what runs here
            spool_mod.write_pid(self._job_dir(job), proc.pid, job.restart_count)
        return Running(job=job, proc=proc, pidfd=os.pidfd_open(proc.pid), env=env,
                       started=time.time())

    def ensure_job_cgroup(self, job: Job, node: str, job_gpus: list[int] | None = None
                          ) -> list[int] | None:
        """The job's cgroup on this node with its limits, made by whichever of the batch script
        or a step gets here first (a step's launch says the job's GPUs in job_gpus). Returns the
        GPUs it fences the job to, in the order the job's tasks see them; None: not fenced."""
        with self.lock:
            # srun --mem inside an allocation: the step's cgroup gets its own limit
            self.tracker.limit_steps(job_key(job.job_id), step_memory(job, node))
            if job.job_id in self.job_cgroups:
                return self.job_cgroups[job.job_id]
            limits, fenced = self._limits(job, node, job_gpus)
            self.tracker.create(job_key(job.job_id), limits)
            try:
                self.mps.job_started(job, node)
            except Exception:  # MpsBusy: the launch fails, and leaves nothing here
                self.tracker.remove(job_key(job.job_id))
                self.cores.release(job_key(job.job_id))
                raise
            self.job_cgroups[job.job_id] = fenced
            return fenced

    def gpu_options(self, job: Job, fenced: list[int] | None) -> dict:
        """What gpu_environment needs to know of the job beyond its GPUs: this node's devices
        (MIG instances go by UUID), whether it shares its GPU, and the pipe of its GPU's MPS
        daemon when it may talk to it: the daemon runs and the job is fenced to that GPU, so
        "device 0" in both their views is the same GPU."""
        share, _ = share_request(job.spec.gres)
        here = next((a for a in job.allocations if a.node == self.node), None)
        pipe = ""
        if share == "mps" and self.cfg.mps_control_program and here is not None and here.gpus:
            gpu = here.gpus[0]
            if self.mps.ready(gpu) and fenced:
                pipe = pipe_dir(self.spool, gpu)
            else:
                log.warning("job %s runs without MPS on GPU %d: %s", job.job_id, gpu,
                            "the job is not fenced to its GPU (ConstrainDevices, device files)"
                            if self.mps.ready(gpu) else "its MPS control daemon is not running")
        return {"devices": self.gpus, "share": share, "mps_pipe": pipe}

    @staticmethod
    def _identity(spec, as_root: bool) -> dict:
        return StepManager.identity_of(spec.uid, spec.gid, list(spec.groups)) if as_root else {}

    @staticmethod
    def identity_of(uid: int, gid: int, groups: list[int]) -> dict:
        if os.getuid() != 0:
            if uid != os.getuid():
                raise PermissionError(f"agent runs as uid {os.getuid()} and cannot run tasks of uid {uid}")
            return {}
        if uid == 0:
            return {}
        return {"user": uid, "group": gid, "extra_groups": groups or [gid]}

    # ---- reaping ------------------------------------------------------------------------------
    def _reap_loop(self) -> None:
        while True:
            for key, _ in self._sel.select():
                if key.data is None:
                    os.read(self._wake_r, 4096)
                    continue
                with self.lock:
                    self._sel.unregister(key.data.pidfd)
                self._finishers.submit(self._finish, key.data)

    def _finish(self, run: Running) -> None:
        rc, rusage = wait_with_rusage(run.proc)
        cycletrace.mark("exited", run.job.job_id)
        if run.kill_timer:
            run.kill_timer.cancel()
        self._task_epilog(run)
        key = job_key(run.job.job_id)
        oom = self.tracker.oom_killed(key)
        if self.acct is not None:  # before the cgroup goes: its counters are the step's figures
            self.acct.finish(self._target(run), rusage)
        self._release(run.job)  # what the script left behind dies with it
        cycletrace.mark("released", run.job.job_id)
        exit_code, exit_signal = (0, -rc) if rc < 0 else (rc, 0)
        # Report before forgetting: a heartbeat must never see a job neither running nor ended.
        self.report({"job_id": run.job.job_id, "restart_count": run.job.restart_count,
                     "kind": "ended", "exit_code": exit_code, "exit_signal": exit_signal,
                     "oom": oom, "time": time.time()})
        with self.lock:
            os.close(run.pidfd)
            if self.running.get(run.job.job_id) is run:
                del self.running[run.job.job_id]

    def _task_epilog(self, run: Running) -> None:
        """slurm.conf's TaskEpilog after the batch script, as the user in the job's cgroup."""
        spec = run.job.spec
        for ep in taskprolog.epilogs("", self.cfg.task_epilog):
            _, err = taskprolog.run_epilog(
                ep, run.env or {}, spec.work_dir, self._identity(spec, os.getuid() == 0),
                submitter_umask(spec.environment),
                lambda pid: self.tracker.add(job_key(run.job.job_id), pid, "batch"))
            if err:
                log.info("job %s TaskEpilog said: %s", run.job.job_id, err[:500])

    def _release(self, job: Job) -> None:
        # The run is over here: its credentials (the batch script's and its steps') are void.
        self.admission.revoke(job.job_id, job.restart_count)
        self.release_job(job.job_id)
        spool_mod.remove(self._job_dir(job))  # whatever is in it: only root could write there

    # ---- signals ------------------------------------------------------------------------------
    def signal(self, job_ids: list[int], signo: int, batch_only: bool, steps_only: bool = False
               ) -> list[int]:
        """scancel --signal: the batch shell alone (--batch), every process of the job, or
        (--signal without B:) every process but the batch shell."""
        done = []
        with self.lock:
            runs = [self.running[j] for j in job_ids if j in self.running]
        for run in runs:
            leader = run.proc.pid
            if batch_only:
                targets = [leader]
            else:
                targets = [p for p in self.tracker.pids(job_key(run.job.job_id), leader)
                           if not (steps_only and p == leader)]
            for pid in targets:
                try:
                    os.kill(pid, signo)
                except ProcessLookupError:
                    pass
            done.append(run.job.job_id)
        return done

    def terminate(self, job_ids: list[int], reason: str,
                  restart_counts: list[int] | None = None) -> list[int]:
        """SIGCONT+SIGTERM to the whole job now, SIGKILL after KillWait if anything remains
        (at once for a preempted job: its GraceTime was the warning). On a node without the
        job's batch script (its steps only), the job is simply over. restart_counts (aligned
        with job_ids, -1 unknown) name the runs that end: their credentials are revoked."""
        with self.lock:
            runs = [self.running[j] for j in job_ids if j in self.running]
            others = [j for j in job_ids if j not in self.running]
            known = {r.job.job_id: r.job.restart_count for r in runs}
        self._revoke(job_ids, restart_counts or [], known)
        log.info("terminating jobs %s (%s)%s", [r.job.job_id for r in runs], reason,
                 f"; releasing {others}" if others else "")
        for job_id in others:
            self._finishers.submit(self.release_job, job_id)
        for run in runs:
            run.ending = reason or "cancelled"
            key = job_key(run.job.job_id)
            self.tracker.signal(key, signal.SIGCONT, run.proc.pid)
            self.tracker.signal(key, signal.SIGTERM, run.proc.pid)
            if run.kill_timer is None:
                wait = 0.0 if reason == "preempted" else self.cfg.kill_wait
                run.kill_timer = threading.Timer(wait, self.tracker.kill_all,
                                                 (key, run.proc.pid))
                run.kill_timer.daemon = True
                run.kill_timer.start()
        return [r.job.job_id for r in runs]

    def _revoke(self, job_ids: list[int], counts: list[int], known: dict[int, int]) -> None:
        for i, job_id in enumerate(job_ids):
            count = counts[i] if i < len(counts) and counts[i] >= 0 else known.get(job_id, -1)
            if count >= 0:  # unknown and not running here: nothing to name, nothing revoked
                self.admission.revoke(job_id, count)

    def clear_leftovers(self) -> list[int]:
        """At start: whatever a previous agent on this node left running is killed (its exit
        status could not be reported), so the controller, which requeues what this agent does
        not list, never has a job running twice."""
        found = []
        for key in self.tracker.existing():
            if key.startswith("job_") and key[4:].isdigit():
                self.tracker.kill_all(key, 0)
                self.tracker.remove(key)
                found.append(int(key[4:]))
        for entry in os.scandir(self.spool):
            if not _JOB_DIR.fullmatch(entry.name):
                continue  # e.g. the endings journal
            # Only a pid file the agent itself wrote, where no one else could, is believed:
            # root SIGKILLs the process group it names.
            pgid = spool_mod.read_trusted_pid(os.path.join(entry.path, spool_mod.PID_FILE))
            if pgid is not None:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except OSError:
                    pass
            spool_mod.remove(entry.path)
        if found:
            log.warning("killed jobs %s left running by a previous agent on this node", found)
        return found

    def release_job(self, job_id: int) -> None:
        """The job is over on this node: nothing of it may remain."""
        if self.tasks is not None:
            self.tasks.kill_job(job_id)
        self.tracker.kill_all(job_key(job_id), 0)
        self.tracker.remove(job_key(job_id))
        self.cores.release(job_key(job_id))
        self.mps.job_ended(job_id)
        with self.lock:
            self.job_cgroups.pop(job_id, None)

    def usage_targets(self) -> list[Target]:
        """The batch scripts running here, as the usage gatherer samples them."""
        with self.lock:
            runs = list(self.running.values())
        return [self._target(r) for r in runs]

    def _target(self, run: Running) -> Target:
        here = next((a for a in run.job.allocations if a.node == self.node), None)
        return Target(run.job.job_id, run.job.restart_count, "batch", [run.proc.pid],
                      list(here.gpus) if here else [], 1, run.started)

    def running_jobs(self) -> dict[int, int]:
        with self.lock:
            return {j: r.job.restart_count for j, r in self.running.items()}


def wait_with_rusage(proc: subprocess.Popen):
    """Reap proc as Popen.wait() would, also returning wait4()'s rusage of it and every process
    it waited for (None if something else reaped it first)."""
    try:
        _, status, rusage = os.wait4(proc.pid, 0)
    except ChildProcessError:
        return proc.wait(), None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, rusage


def _device_number(path: str) -> tuple[int, int] | None:
    try:
        rdev = os.stat(path).st_rdev
    except OSError:
        return None
    return (os.major(rdev), os.minor(rdev)) if rdev else None
