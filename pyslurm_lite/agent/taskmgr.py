"""Step tasks on this node (srun's remote end): launch, stream output, forward stdin and signals,
report exits.

One srun connection (a bidirectional gRPC stream) per node of a step:
  in:  StepLaunch (its credential, signed by the controller, names the step, the identity its
       tasks run as, the job's allocation here and the step's task layout; nothing else in it
       is trusted for those, and a layout other than the signed one is refused),
       then stdin / signals;
  out: started, output chunks (task, stream, bytes), one exit per task; the stream then ends.
If srun goes away, the step's tasks here are killed. Tasks run as the job's user, in the step's
cgroup (job_<id>/step_<n>), entered before any of the user's code runs, as batch scripts do; then,
as the user, they enter the step's directory (Slurm's /tmp fallback) and open their files.
"""

from __future__ import annotations

import logging
import os
import queue
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

from .. import rlimits
from ..rpc import wire
from .._proto import agent_pb2
from ..model import Job
from ..rpc.credential import Claims, CredentialError, check_layout
from . import binding, gpubind
from . import pmi as pmi_mod
from . import pty as ptys
from . import shellsafe, taskprolog
from .cpus import cpulist
from .iobuf import LineBuffer
from .env import step_environment, submitter_umask, task_environment
from .iopaths import CHDIR, CHDIR_REPORT, expand_pattern
from .acctgather import Target
from .stepmgr import apply_claims, wait_with_rusage

log = logging.getLogger("pyslurm_lite.agent.taskmgr")

CHUNK = 65536  # bytes read from a task's pipe at a time
# bash, not sh: its redirections take the gate's file descriptor number whatever it is
# (the gate: see stepmgr; without the agent's "go" a task never starts). $1 is the step's
# directory, entered as the user (iopaths.CHDIR); then $2 and $3 the output files, if any.
_GATE = ('read -r go <&"$GATE_FD"; exec {GATE_FD}<&-; unset GATE_FD; '
         '[ "$go" = go ] || exit 111; export SLURM_TASK_PID=$$; ' + CHDIR)
SHIM = _GATE + CHDIR_REPORT + 'shift; exec "$@"'
# $2 and $3 may each be empty: that stream stays a pipe to srun (srun --error=FILE alone)
SHIM_FILES = (_GATE + '{ [ -z "$2" ] || exec >>"$2"; } && { [ -z "$3" ] || exec 2>>"$3"; } '
              '|| exit 1; ' + CHDIR_REPORT + 'shift 3; exec "$@"')
SHIM_PTY = _GATE + ptys.SHIM_TAIL  # srun --pty's task 0: $2 is its terminal
VEOF = b"\x04"  # ^D: what srun's end of input is to a terminal's reader


def _reads_stdin(launch, rank: int) -> bool:
    """srun -i: task 0 by default, every task (all, or a file srun reads), one task, or none."""
    mode = launch.stdin_mode
    if launch.pty:  # task 0 reads its terminal; the others nothing, as Slurm's
        return False
    if mode == "all" or launch.stdin_to_all:
        return True
    if mode == "none":
        return False
    return rank == (int(mode) if mode.isdigit() else 0)


@dataclass
class StepRun:
    job_id: int
    step_id: int
    procs: dict[int, subprocess.Popen] = field(default_factory=dict)  # rank -> process
    stdin: dict[int, int] = field(default_factory=dict)  # rank -> stdin pipe (srun -i)
    out: queue.Queue = field(default_factory=queue.Queue)
    pidfds: dict[int, int] = field(default_factory=dict)  # rank -> pidfd, while the task runs
    lock: threading.Lock = field(default_factory=threading.Lock)
    cpus: set[int] = field(default_factory=set)  # the CPUs its tasks are bound to here
    pty: int = -1  # srun --pty: the master of task 0's terminal, while it is open
    epilog: object = None  # (rank) -> None: the task epilogs, once that task has exited
    restart_count: int = 0  # the job's run this step belongs to
    gpus: list[int] = field(default_factory=list)  # the step's GPUs here (usage sampling)
    started: float = field(default_factory=time.time)
    rusage: list = field(default_factory=list)  # wait4()'s figures of each task that exited
    pmi: object = None  # srun --mpi=pmi2: the step's PMI server here (pmi.PmiServer)


class TaskManager:
    def __init__(self, steps, node: str, node_key: bytes):
        self.steps = steps  # the StepManager: tracker, cores, cfg, limits, admission
        self.node, self.node_key = node, node_key  # node_key: keys.py's node:NAME
        self.lock = threading.Lock()
        self.runs: dict[tuple[int, int], StepRun] = {}

    # ---- the stream -----------------------------------------------------------------------------
    def serve(self, requests, context):
        first = next(requests, None)
        if first is None or first.WhichOneof("body") != "launch":
            yield agent_pb2.StepOutput(error="the first message must be a launch")
            return
        launch = first.launch
        try:  # the credential first: nothing of an unchecked message is used
            claims = self.steps.admission.admit(launch.credential, self.node_key, launch.job.job_id,
                                                launch.step_id)
            # srun's layout is the user's word: it sets PMI_SIZE and the PMI server's size
            check_layout(claims, self.node, list(launch.step_nodes),
                         list(launch.step_tasks_per_node), list(launch.task_ids))
            job = wire.from_msg(launch.job, Job)
        except (CredentialError, ValueError) as e:
            log.warning("step %s.%s refused: %s", launch.job.job_id, launch.step_id, e)
            yield agent_pb2.StepOutput(error=f"{self.node}: {e}")
            return
        apply_claims(job, claims)
        try:
            run = self._launch(job, launch, claims)
        except Exception as e:  # the step fails on this node; the agent does not
            self._abandon(job.job_id, launch.step_id)
            log.warning("step %s.%s launch failed: %s", job.job_id, launch.step_id, e)
            yield agent_pb2.StepOutput(error=f"{self.node}: launch failed: {e}")
            return
        context.add_callback(lambda: self._kill(run, signal.SIGKILL))
        threading.Thread(target=self._pump_input, args=(requests, run), daemon=True).start()
        yield agent_pb2.StepOutput(started=True)
        yield from self._outputs(run)

    def _abandon(self, job_id: int, step_id: int) -> None:
        """A launch that failed part way: the tasks it started are killed, its terminal closed
        and its record dropped, so nothing runs unwatched and the step id may be launched again."""
        with self.lock:
            run = self.runs.pop((job_id, step_id), None)
        if run is None:
            return
        self._kill(run, signal.SIGKILL)
        self._close_pty(run)
        if run.pmi is not None:
            run.pmi.stop()
        for proc in run.procs.values():
            proc.wait()

    def _outputs(self, run: StepRun):
        remaining = len(run.procs)
        while remaining:
            msg = run.out.get()
            if msg.exited:
                remaining -= 1
            yield msg
        key = (run.job_id, run.step_id)
        if run.pmi is not None:
            run.pmi.stop()
        if self.steps.acct is not None:  # before the kill: what is left still counts
            self.steps.acct.finish(self._target(run), _merged(run.rusage))
        self.steps.tracker.kill_all(f"job_{run.job_id}/step_{run.step_id}", 0)
        with self.lock:
            self.runs.pop(key, None)

    def _pump_input(self, requests, run: StepRun) -> None:
        try:
            for msg in requests:
                kind = msg.WhichOneof("body")
                if kind == "stdin":
                    self._write_stdin(run, msg.stdin)
                elif kind == "stdin_eof":
                    self._close_stdin(run)
                    self._write_pty(run, VEOF)
                elif kind == "winsize":
                    with run.lock:
                        if run.pty >= 0:
                            ptys.set_winsize(run.pty, msg.winsize.rows, msg.winsize.cols)
                elif kind == "signal":
                    self._kill(run, msg.signal)
                elif kind == "pmi_done" and run.pmi is not None:
                    run.pmi.fence_done(msg.pmi_done.seq, dict(msg.pmi_done.kvs))
        except Exception:  # srun went away: the callback kills the tasks
            pass
        finally:
            self._close_stdin(run)

    @staticmethod
    def _write_pty(run: StepRun, data: bytes) -> None:
        with run.lock:  # never to a closed master whose number was reused
            if run.pty >= 0:
                try:
                    os.write(run.pty, data)
                except OSError:  # the terminal hung up: the task is ending
                    pass

    def _write_stdin(self, run: StepRun, data: bytes) -> None:
        self._write_pty(run, data)
        for rank, fd in list(run.stdin.items()):
            try:
                os.write(fd, data)
            except BrokenPipeError:  # this task stopped reading; the others still get theirs
                os.close(run.stdin.pop(rank))

    @staticmethod
    def _close_stdin(run: StepRun) -> None:
        while run.stdin:
            os.close(run.stdin.popitem()[1])

    def _kill(self, run: StepRun, signo: int) -> None:
        """Signal the step's processes: everything in its cgroup, and each task still running
        through its pidfd (never by a bare pid, which a reaped task may have handed on)."""
        key = f"job_{run.job_id}/step_{run.step_id}"
        for pid in self.steps.tracker.pids(key):
            try:
                os.kill(pid, signo)
            except ProcessLookupError:
                pass
        with run.lock:
            for fd in run.pidfds.values():
                try:
                    signal.pidfd_send_signal(fd, signo)
                except ProcessLookupError:
                    pass

    # ---- launching ------------------------------------------------------------------------------
    def _launch(self, job: Job, launch, claims: Claims) -> StepRun:
        run = StepRun(job.job_id, launch.step_id, restart_count=claims.restart_count)
        with self.lock:
            if (job.job_id, launch.step_id) in self.runs:
                raise RuntimeError("step already launched here")
            self.runs[(job.job_id, launch.step_id)] = run
        share = claims.alloc.get(self.node)
        here = next((a for a in job.allocations if a.node == self.node), None)
        run.gpus = list(share.gpus if share and share.gpus else (here.gpus if here else []))
        fenced = self.steps.ensure_job_cgroup(job, self.node, share.fence_gpus if share else None)
        addrs = dict(a.split("=", 1) for a in launch.node_addrs if "=" in a)
        nodes = list(launch.step_nodes)
        node_index = nodes.index(self.node)
        step_env = step_environment(job, self.steps.cfg, self.node, dict(launch.env), launch.step_id,
                                    nodes, list(launch.step_tasks_per_node), addrs,
                                    launch.cpus_per_task, launch.env.get("SLURM_LABELIO") == "1",
                                    launch.distribution, launch.srun_host)
        ranks = list(launch.task_ids)
        bind, masks = self._binding(job, launch, len(ranks), run)
        step_env.update(binding.environment(bind, masks))
        gpus = self._gpu_split(job, len(ranks), launch.gpus_per_task)
        gbind, bound = self._gpu_binding(job, step_env, run, fenced, masks, len(ranks))
        gpus = bound or gpus
        gpu_options = self.steps.gpu_options(job, fenced)  # MIG UUIDs, shard/mps (env.py)
        if launch.gpus_per_task:
            step_env["SLURMD_TRES_BIND"] = f"gpu:per_task:{launch.gpus_per_task}"
            step_env["SLURM_GPUS_PER_TASK"] = str(launch.gpus_per_task)
        envs: dict[int, dict] = {}
        run.epilog = self._epilogs(job, launch, claims, envs, run)
        run.pmi = self._pmi_server(job, launch, step_env, ranks, run)
        for local, rank in enumerate(ranks):
            env = task_environment(step_env, rank, local, node_index, ranks,
                                   gpus[local] if gpus else None, fenced, **gpu_options)
            if (launch.gpus_per_task or bound) and gpus and not gpu_options["share"]:
                # the node's count, though the task has its share
                env["SLURM_GPUS_ON_NODE"] = str(sum(len(a.gpus) for a in job.allocations
                                                    if a.node == self.node))
            cpus = masks[local] if masks else None
            if run.pmi is not None:
                env.update(run.pmi.environment(rank))
            envs[rank] = env
            run.procs[rank] = self._start_task(job, launch, env, rank, local, run, claims, cpus)
            if bind.verbose:
                run.out.put(agent_pb2.StepOutput(task_id=rank, stream=2, data=binding.verbose_line(
                    self.node, rank, local, run.procs[rank].pid, cpus).encode()))
            if gbind.verbose and gpus:
                run.out.put(agent_pb2.StepOutput(task_id=rank, stream=2, data=gpubind.verbose_line(
                    gpus[local], run.gpus, fenced).encode()))
        if run.pmi is not None:
            run.pmi.start()
        return run

    def _pmi_server(self, job: Job, launch, step_env: dict, ranks: list[int], run: StepRun):
        """srun --mpi=pmi2, told by SLURM_MPI_TYPE as slurmstepd is: the step's PMI server
        here (pmi.py). srun's process mapping is used when well formed (it alone knows every
        rank's node); else block layout from the counts."""
        mapping = step_env.pop("SLURM_PMI2_PROC_MAPPING", "")
        if step_env.get("SLURM_MPI_TYPE") != "pmi2":
            return None
        counts = list(launch.step_tasks_per_node)
        if not pmi_mod.valid_mapping(mapping):
            mapping = pmi_mod.process_mapping([i for i, n in enumerate(counts) for _ in range(n)])

        def up(seq: int, pairs: dict) -> None:
            run.out.put(agent_pb2.StepOutput(pmi_fence=agent_pb2.PmiFence(seq=seq, kvs=pairs)))

        def abort(rank: int, code, message: str) -> None:
            run.out.put(agent_pb2.StepOutput(pmi_abort=agent_pb2.PmiAbort(
                task_id=rank, exit_code=-1 if code is None else code, message=message)))
            self._kill(run, signal.SIGKILL)  # srun kills the step's other nodes
        return pmi_mod.PmiServer(job.job_id, launch.step_id, ranks, sum(counts), mapping, up, abort)

    def _binding(self, job: Job, launch, ntasks: int, run: StepRun):
        """--cpu-bind planned over the CPUs the job may use here (its own cores when pinned),
        those no other running step of the job is bound to first: two `srun -n1 &` of one job
        run side by side, as Slurm gives each step CPUs of its own."""
        bind = binding.parse(launch.cpu_bind)
        held = self.steps.cores.held(f"job_{job.job_id}")
        cpus = held or sorted(os.sched_getaffinity(0))
        with self.lock:
            busy = set().union(*(r.cpus for (j, _), r in self.runs.items()
                                 if j == job.job_id and r is not run))
        ordered = [c for c in cpus if c not in busy] + [c for c in cpus if c in busy]
        masks = binding.plan(bind, ordered, ntasks, launch.cpus_per_task, bool(held))
        run.cpus = set().union(*masks) if masks else set()
        outside = sorted(set().union(*masks) - set(cpus)) if masks else []
        if outside:  # before any task starts: a step runs whole or not at all
            raise ValueError(f"--cpu-bind={launch.cpu_bind}: CPU {outside[0]} is not available "
                             f"to job {job.job_id} here (CPUs {cpulist(cpus)})")
        return bind, masks

    def _gpu_binding(self, job: Job, step_env: dict, run: StepRun, fenced, masks, ntasks: int):
        """--gpu-bind (srun's, else the job's, both as SLURM_GPU_BIND): each task's GPUs out of
        the step's here, planned before any task starts (gpubind.py); None when not bound.
        closest reads each task's CPUs: its --cpu-bind mask, else the job's cores here."""
        bind = gpubind.parse(step_env.get("SLURM_GPU_BIND", ""))
        close = gpubind.close_cores(self.steps.gpus) if bind.kind == "closest" else {}
        cpus = masks or [set(self.steps.cores.held(f"job_{job.job_id}"))] * ntasks
        return bind, gpubind.plan(bind, sorted(run.gpus), fenced, ntasks, cpus, close)

    def _gpu_split(self, job: Job, ntasks: int, per_task: int) -> list[list[int]]:
        """--gpus-per-task: task i gets the i-th share of the job's GPUs here (wrapping when
        the step has more tasks than shares); otherwise every task sees them all."""
        here = next((a for a in job.allocations if a.node == self.node), None)
        if here is None or not here.gpus:
            return []
        if per_task > 0 and per_task <= len(here.gpus):
            shares = len(here.gpus) // per_task
            return [here.gpus[(i % shares) * per_task:(i % shares + 1) * per_task]
                    for i in range(ntasks)]
        return [here.gpus] * ntasks

    def _epilogs(self, job: Job, launch, claims: Claims, envs: dict, run: StepRun):
        """What runs once a task has exited, before its exit is reported: --task-epilog, then
        TaskEpilog, as the user in the step's cgroup. Their stderr reaches srun as the task's
        when the task's stderr does (slurmstepd's goes to the task's stderr)."""
        progs = taskprolog.epilogs(launch.task_epilog, self.steps.cfg.task_epilog)
        if not progs:
            return None
        identity = self.steps.identity_of(claims.uid, claims.gid, list(claims.groups))
        umask = submitter_umask(launch.env)
        key, to_srun = f"job_{job.job_id}", not (launch.std_err or launch.std_out or launch.pty)

        def after(rank: int) -> None:
            for ep in progs:
                _, err = taskprolog.run_epilog(
                    ep, envs[rank], launch.cwd, identity, umask,
                    lambda pid: self.steps.tracker.add(key, pid, str(launch.step_id)))
                if err and to_srun:
                    run.out.put(agent_pb2.StepOutput(task_id=rank, stream=2, data=err))
        return after

    def _start_task(self, job: Job, launch, env: dict, rank: int, local: int, run: StepRun,
                    claims: Claims, cpus: set[int] | None = None):
        cmd, stdout, stderr, slave = self._command(job, launch, rank, run, claims.uid)
        gate_r, gate_w = os.pipe()
        env = shellsafe.guard(dict(env, GATE_FD=str(gate_r)))
        wants_stdin = _reads_stdin(launch, rank)
        pmi_fd = run.pmi.task_fds.get(rank, -1) if run.pmi is not None else -1
        try:
            # cwd="/": root enters no directory of the user's; the shim does, as the user
            proc = subprocess.Popen(
                cmd, cwd="/", env=env, pass_fds=(gate_r,) + ((pmi_fd,) if pmi_fd >= 0 else ()),
                start_new_session=True,
                umask=submitter_umask(launch.env),
                stdin=subprocess.PIPE if wants_stdin else (
                    subprocess.DEVNULL if slave is None else slave),
                stdout=stdout, stderr=stderr,
                **self.steps.identity_of(claims.uid, claims.gid, list(claims.groups)))
        except BaseException:
            self._close_pty(run)
            raise
        finally:
            os.close(gate_r)
            if slave is not None:  # the task holds it now; the agent keeps the master only
                os.close(slave)
            if run.pmi is not None:  # likewise its PMI_FD
                run.pmi.started(rank)
        try:
            self.steps.tracker.add(f"job_{job.job_id}", proc.pid, str(launch.step_id))
            if cpus:  # while it waits at the gate: all the task runs inherits the mask
                os.sched_setaffinity(proc.pid, cpus)
            os.write(gate_w, b"go\n")
        except OSError:
            proc.kill()
            proc.wait()
            self._close_pty(run)
            raise
        finally:
            os.close(gate_w)
        if wants_stdin:
            run.stdin[rank] = os.dup(proc.stdin.fileno())
            proc.stdin.close()
        with run.lock:
            run.pidfds[rank] = os.pidfd_open(proc.pid)
        watch = self._watch_pty if launch.pty and rank == 0 else self._watch
        threading.Thread(target=watch, args=(proc, rank, run, launch.unbuffered),
                         daemon=True).start()
        return proc

    def _command(self, job: Job, launch, rank: int, run: StepRun, uid: int):
        """(the task's command line, its stdout, its stderr, the pty slave or None): output
        piped to srun, to files the shim opens as the user, or, for srun --pty's task 0, its
        terminal."""
        argv, cwd = list(launch.argv), launch.cwd or "/"
        # srun's limits (PropagateResourceLimits), set by the task on itself, then the prologs
        prologs = rlimits.shell(launch.rlimits, log) + taskprolog.shell(
            taskprolog.prologs(self.steps.cfg.task_prolog, launch.task_prolog)) + shellsafe.RESTORE
        if launch.pty and rank == 0:
            run.pty, slave, name = ptys.open_pty(uid, launch.winsize.rows, launch.winsize.cols)
            shim = taskprolog.before_exec(SHIM_PTY, prologs)
            return [*shellsafe.BASH, "-c", shim, "shim", cwd, name, *argv], slave, slave, slave
        if launch.pty:  # Slurm's --pty: the other tasks' output goes to /dev/null
            out = err = "/dev/null"
        else:
            out = self._path(launch.std_out, job, launch, rank) if launch.std_out else ""
            err = self._path(launch.std_err, job, launch, rank) if launch.std_err else out
        if out or err:
            return ([*shellsafe.BASH, "-c", taskprolog.before_exec(SHIM_FILES, prologs), "shim", cwd,
                     out, err, *argv],
                    subprocess.DEVNULL if out else subprocess.PIPE,
                    subprocess.DEVNULL if err else subprocess.PIPE, None)
        return ([*shellsafe.BASH, "-c", taskprolog.before_exec(SHIM, prologs), "shim", cwd, *argv],
                subprocess.PIPE, subprocess.PIPE, None)

    @staticmethod
    def _close_pty(run: StepRun) -> None:
        with run.lock:
            if run.pty >= 0:
                os.close(run.pty)
                run.pty = -1

    def _path(self, pattern: str, job: Job, launch, rank: int) -> str:
        name = expand_pattern(pattern, job, self.node, step=str(launch.step_id), task=rank,
                              node_index=list(launch.step_nodes).index(self.node))
        return os.path.join(launch.cwd or "/", name)

    @staticmethod
    def _watch(proc: subprocess.Popen, rank: int, run: StepRun, unbuffered: bool = False) -> None:
        """Forward a task's output in whole lines (as read with srun -u), then its exit (after
        all of its output)."""
        out = run.out
        sel = selectors.DefaultSelector()
        for stream, pipe in ((1, proc.stdout), (2, proc.stderr)):
            if pipe is not None:
                sel.register(pipe, selectors.EVENT_READ, (stream, LineBuffer()))
        while sel.get_map():
            for key, _ in sel.select():
                stream, lines = key.data
                data = os.read(key.fileobj.fileno(), CHUNK)
                if not data:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    data = lines.close()
                elif not unbuffered:
                    data = lines.feed(data)
                if data:
                    out.put(agent_pb2.StepOutput(task_id=rank, stream=stream, data=data))
        TaskManager._report_exit(proc, rank, run)

    @staticmethod
    def _report_exit(proc: subprocess.Popen, rank: int, run: StepRun) -> None:
        rc, rusage = wait_with_rusage(proc)
        if rusage is not None:
            run.rusage.append(rusage)
        with run.lock:
            os.close(run.pidfds.pop(rank))
        if run.epilog is not None:
            run.epilog(rank)
        code, sig = (0, -rc) if rc < 0 else (rc, 0)
        run.out.put(agent_pb2.StepOutput(task_id=rank, exited=True, exit_code=code,
                                         exit_signal=sig))

    def _watch_pty(self, proc: subprocess.Popen, rank: int, run: StepRun, _unbuffered=True) -> None:
        """srun --pty's task 0: its terminal's output as read (a prompt has no newline) until
        the task exits, then what it left in the terminal, then its exit. A background process
        still holding the terminal does not hold the step: it dies with the step's cgroup."""
        pidfd = os.pidfd_open(proc.pid)
        sel = selectors.DefaultSelector()
        sel.register(run.pty, selectors.EVENT_READ, "tty")
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        try:
            done = False
            while not done:
                for key, _ in sel.select():
                    done = done or key.data == "exit" or not self._forward_pty(run, rank)
            sel.close()
            os.set_blocking(run.pty, False)
            while self._forward_pty(run, rank):
                pass
        finally:
            os.close(pidfd)
            self._close_pty(run)
        self._report_exit(proc, rank, run)

    @staticmethod
    def _forward_pty(run: StepRun, rank: int) -> bool:
        """One read of the master to srun; False at its end (EIO: every slave is closed)."""
        try:
            data = os.read(run.pty, CHUNK)
        except (BlockingIOError, OSError):
            return False
        if data:
            run.out.put(agent_pb2.StepOutput(task_id=rank, stream=1, data=data))
        return bool(data)

    # ---- usage ------------------------------------------------------------------------------------
    def usage_targets(self) -> list[Target]:
        """The steps running here, as the usage gatherer samples them."""
        with self.lock:
            runs = list(self.runs.values())
        return [self._target(r) for r in runs]

    @staticmethod
    def _target(run: StepRun) -> Target:
        return Target(run.job_id, run.restart_count, str(run.step_id),
                      [p.pid for p in run.procs.values()], list(run.gpus),
                      max(len(run.procs), 1), run.started)

    # ---- job end --------------------------------------------------------------------------------
    def kill_job(self, job_id: int) -> None:
        with self.lock:
            runs = [r for (j, _), r in self.runs.items() if j == job_id]
        for run in runs:
            self._kill(run, signal.SIGKILL)


def _merged(rusages: list):
    """The step's tasks' wait4() figures together: CPU summed, the largest peak (None: none)."""
    if not rusages:
        return None
    return SimpleNamespace(ru_utime=sum(r.ru_utime for r in rusages),
                           ru_stime=sum(r.ru_stime for r in rusages),
                           ru_maxrss=max(r.ru_maxrss for r in rusages))
