"""srun: run a parallel job step, inside an allocation (sbatch, salloc) or making its own.

Flow: (allocate when outside one) -> CreateStep at the controller (the step is recorded, tasks are
laid out in block distribution, a signed credential comes back) -> one LaunchStep stream to each
node's agent -> output streams back live (with --label, line by line as "N: "), stdin goes to
task 0, Ctrl-C twice within a second or SIGTERM ends the step -> exit code: the highest task exit
code, 128+signal for a task killed by a signal.
With --mpi=pmi2 (or MpiDefault=pmi2) srun is also the root of the step's PMI fences: each agent's
pairs come up its stream, the union goes down every stream (agent/pmi.py); a PMI abort kills the
step and is its exit code.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time

from .. import rlimits
from ..agent import pmi
from .common import SlurmArgParser, run
from .jobopts import JobArgParser, unsupported
from .sbatch import add_job_options, export_environment, with_umask

PROG = "srun"
RETRY = 0.5  # seconds between tries to create a step on busy nodes
_STOP = object()
# srun's own options accepted as Slurm's srun does, without an effect here: each use says so.
UNSUPPORTED = ("--accel-bind", "--mem-bind", "--cpu-freq", "--network")
# srun's input variables (Slurm's names): each stands for its option when that is not given.
INPUT_ENV = {"SLURM_LABELIO": "label", "SLURM_UNBUFFEREDIO": "unbuffered",
             "SLURM_STDOUTMODE": "output", "SLURM_STDERRMODE": "error",
             "SLURM_STDINMODE": "input", "SLURM_OVERLAP": "overlap",
             "SLURM_KILL_BAD_EXIT": "kill_on_bad_exit", "SLURM_DISTRIBUTION": "distribution",
             "SLURM_CPU_BIND": "cpu_bind", "SLURM_EXACT": "exact", "SLURM_MPI_TYPE": "mpi"}
_FLAGS = ("label", "unbuffered", "overlap", "exact")


def build_parser() -> SlurmArgParser:
    # optional values only attached, as getopt: `srun --exclusive hostname` runs hostname
    p = JobArgParser(prog=PROG, add_help=True)
    add_job_options(p)
    a = p.add_argument
    a("-l", "--label", action="store_true", default=None)
    a("-u", "--unbuffered", action="store_true", default=None)
    a("--overlap", action="store_true", default=None)
    a("--exact", action="store_true", default=None)
    a("--pty", action="store_true", default=None)  # task 0 on a terminal (cli/terminal.py)
    a("--jobid", type=int)
    a("--mpi")  # none | pmi2 | list (agent/pmi.py); slurm.conf's MpiDefault without it
    a("-K", "--kill-on-bad-exit", nargs="?", const="1")
    a("-v", "--verbose", action="count")
    # --distribution and --cpu-bind are job options (jobopts.py) that srun implements
    if "-m" not in p._option_string_actions:
        a("-m", dest="distribution")
    for ignored in UNSUPPORTED:  # each use warns (jobopts.Unsupported)
        unsupported(p, ignored, optional=True)
    # how many threads srun sends its launch requests with: ours has one per node, always
    unsupported(p, "-T", "--threads")
    # run by the agent as the user around each task (agent/taskprolog.py), as slurmstepd does
    a("--task-prolog")
    a("--task-epilog")
    a("command", nargs="?")
    a("args", nargs="...")
    return p


class Output:
    """Writes tasks' output; with --label, whole lines prefixed by the task id."""

    def __init__(self, label: bool, width: int):
        self.label, self.width = label, width
        self.partial: dict[tuple[int, int], bytes] = {}
        self.lock = threading.Lock()

    def write(self, task: int, stream: int, data: bytes, final: bool = False) -> None:
        out = sys.stdout.buffer if stream == 1 else sys.stderr.buffer
        with self.lock:
            if not self.label:
                out.write(data)
                out.flush()
                return
            buf = self.partial.pop((task, stream), b"") + data
            lines = buf.split(b"\n")
            rest = lines.pop()
            prefix = f"{task:>{self.width}}: ".encode()
            out.write(b"".join(prefix + line + b"\n" for line in lines))
            if rest and final:
                out.write(prefix + rest + b"\n")
            elif rest:
                self.partial[(task, stream)] = rest
            out.flush()

    def flush_task(self, task: int) -> None:
        for stream in (1, 2):
            if (task, stream) in self.partial:
                self.write(task, stream, b"", final=True)


class StepSession:
    """One step: a LaunchStep stream per node, their outputs, stdin to task 0, signals."""

    def __init__(self, reply, launch_base, output: Output, cfg=None):
        self.reply, self.base, self.output, self.cfg = reply, launch_base, output, cfg
        self.queues = {n.name: queue.Queue() for n in reply.nodes}
        self.exits: dict[int, tuple[int, int, str]] = {}
        self.errors: list[str] = []
        self.lost: list[str] = []  # nodes whose connection broke before their tasks ended
        self.threads: list[threading.Thread] = []
        self.kill_on_bad_exit = False  # srun -K: a task's bad exit ends the whole step
        self.verbose = False
        self._killing = threading.Event()
        # srun --mpi=pmi2: srun is the root of every fence (agent/pmi.py)
        self.fences = pmi.FenceRoot([n.name for n in reply.nodes],
                                    sum(len(n.task_ids) for n in reply.nodes))
        self._fence_lock = threading.Lock()
        self.aborted: tuple[int, int] | None = None  # (task, its abort's exit code or -1)

    def start(self) -> None:
        import grpc

        from .._proto import agent_pb2, agent_pb2_grpc
        from ..rpc.grpcutil import client_channel
        addrs = [f"{n.name}={n.addr}" for n in self.reply.nodes]
        for index, node in enumerate(self.reply.nodes):
            launch = agent_pb2.StepLaunch()
            launch.CopyFrom(self.base)
            launch.task_ids.extend(node.task_ids)
            launch.node_id = index
            launch.node_addrs.extend(addrs)
            stub = agent_pb2_grpc.AgentStub(client_channel(node.target, self.cfg))
            t = threading.Thread(target=self._node, daemon=True,
                                 args=(stub, node, launch, agent_pb2, grpc))
            t.start()
            self.threads.append(t)

    def _requests(self, node, launch, agent_pb2):
        yield agent_pb2.StepInput(launch=launch)
        q = self.queues[node.name]
        while (item := q.get()) is not _STOP:
            yield item

    def _node(self, stub, node, launch, agent_pb2, grpc) -> None:
        try:
            for msg in stub.LaunchStep(self._requests(node, launch, agent_pb2)):
                if msg.error:
                    self.errors.append(msg.error)
                elif msg.exited:
                    self.output.flush_task(msg.task_id)
                    self.exits[msg.task_id] = (msg.exit_code, msg.exit_signal, node.name)
                    if (msg.exit_code or msg.exit_signal) and self.kill_on_bad_exit:
                        self._kill_step(msg.task_id, node.name)
                elif msg.HasField("pmi_fence"):
                    self._pmi_fence(node.name, msg.pmi_fence, agent_pb2)
                elif msg.HasField("pmi_abort"):
                    self._pmi_abort(node.name, msg.pmi_abort)
                elif msg.started and self.verbose:
                    sys.stderr.write(f"srun: launch/slurm: _task_start: Node {node.name}, "
                                     f"{len(node.task_ids)} tasks started\n")
                elif msg.data:
                    self.output.write(msg.task_id, msg.stream, msg.data)
        except grpc.RpcError as e:
            lost = [t for t in node.task_ids if t not in self.exits]
            if lost:  # the node's agent went away mid-step: its tasks are not known to have ended
                self.lost.append(node.name)
            self.errors.append(f"{node.name}: {e.details() or e.code()}")
        finally:
            self.queues[node.name].put(_STOP)

    def _pmi_fence(self, node: str, fence, agent_pb2) -> None:
        """One node's tasks are all in fence seq: once every node's are, the union goes down."""
        with self._fence_lock:
            try:
                union = self.fences.report(node, fence.seq, dict(fence.kvs))
            except pmi.PmiError as e:  # a node out of step: its tasks could wait for ever
                self.errors.append(f"{node}: PMI fence: {e}")
                self.signal(signal.SIGKILL)
                return
            if union is not None:
                done = agent_pb2.StepInput(pmi_done=agent_pb2.PmiFence(seq=fence.seq, kvs=union))
                for q in self.queues.values():
                    q.put(done)

    def _pmi_abort(self, node: str, abort) -> None:
        """A task called PMI abort, or left PMI without finalize: as Slurm, the step is killed."""
        with self._fence_lock:
            if self.aborted is not None:
                return
            self.aborted = (abort.task_id, abort.exit_code)
        sys.stderr.write(f"srun: error: {node}: task {abort.task_id}: {abort.message}; "
                         f"terminating StepId={self.base.job.job_id}.{self.reply.step_id}\n")
        self.signal(signal.SIGKILL)

    def _kill_step(self, task: int, node: str) -> None:
        if self._killing.is_set():
            return
        self._killing.set()
        sys.stderr.write(f"srun: error: {node}: task {task}: Exited with a bad status; "
                         f"terminating StepId={self.base.job.job_id}.{self.reply.step_id} "
                         f"(--kill-on-bad-exit)\n")
        self.signal(signal.SIGKILL)

    def send_stdin(self, nodes: list[str], source=None) -> None:
        """Forward our stdin (or a file) to the tasks of these nodes that read it, in the
        background; end-of-file is forwarded too."""
        from .._proto import agent_pb2
        fd = source.fileno() if source is not None else sys.stdin.fileno()

        def put(msg):
            for n in nodes:
                self.queues[n].put(msg)

        def pump():
            # the thread holds the file itself: were it left to the caller, whose reference
            # goes when it returns, the file could be closed before it is read (EOF, no data)
            held = source
            try:
                while chunk := os.read(fd, 65536):
                    put(agent_pb2.StepInput(stdin=chunk))
            except (OSError, ValueError):
                pass
            finally:
                if held is not None:
                    held.close()
            put(agent_pb2.StepInput(stdin_eof=True))
        if source is not None or (sys.stdin is not None and not sys.stdin.closed):
            threading.Thread(target=pump, daemon=True).start()

    def resize(self, rows: int, cols: int) -> None:
        """srun --pty: task 0's terminal takes our new size."""
        from .._proto import agent_pb2
        msg = agent_pb2.StepInput(winsize=agent_pb2.Winsize(rows=rows, cols=cols))
        for n in self.reply.nodes:
            if 0 in n.task_ids:
                self.queues[n.name].put(msg)

    def signal(self, signo: int) -> None:
        from .._proto import agent_pb2
        for q in self.queues.values():
            q.put(agent_pb2.StepInput(signal=signo))

    def wait(self) -> None:
        for t in self.threads:
            while t.is_alive():
                t.join(0.2)


def _exit_status(exits: dict, expected: int) -> tuple[int, int, list[str]]:
    """srun's exit code (highest task exit code; 128+signal for a signalled task) and messages."""
    code, sig, messages = 0, 0, []
    for task in sorted(exits):
        c, s, node = exits[task]
        if s:
            name = signal.Signals(s).name if s in signal.Signals._value2member_map_ else str(s)
            desc = {"SIGKILL": "Killed", "SIGTERM": "Terminated", "SIGSEGV": "Segmentation fault",
                    "SIGINT": "Interrupt", "SIGABRT": "Aborted"}.get(name, name)
            messages.append(f"{node}: task {task}: {desc}")
            code, sig = max(code, 128 + s), sig or s
        elif c:
            messages.append(f"{node}: task {task}: Exited with exit code {c}")
            code = max(code, c)
    if len(exits) < expected:
        code = max(code, 1)
    return code, sig, messages


def _abort_status(aborted: tuple[int, int], exits: dict) -> tuple[int, int]:
    """A PMI abort ends the step with the abort's exit code, whatever killing the other tasks
    made of theirs; a task that left without finalize, with its own exit status."""
    task, code = aborted
    if code >= 0:
        return code, 0
    c, s, _ = exits.get(task, (1, 0, ""))
    return (128 + s, s) if s else (c or 1, 0)


def _launch_base(ns, reply, cfg, inside: bool):
    from .._proto import agent_pb2
    from ..agent.env import compress_counts
    _, env = export_environment(ns.export, with_umask(os.environ))
    if ns.label:
        env["SLURM_LABELIO"] = "1"
    if getattr(ns, "gpu_bind", None):  # the agent reads a step's --gpu-bind here (gpubind.py),
        env["SLURM_GPU_BIND"] = ns.gpu_bind  # over an allocation's own
    if ns.ntasks_per_node:
        env["SLURM_NTASKS_PER_NODE"] = str(ns.ntasks_per_node)
    env["SLURM_PRIO_PROCESS"] = str(os.getpriority(os.PRIO_PROCESS, 0))
    _mpi_environment(env, getattr(ns, "mpi", None) or "none", reply)
    if inside:  # a step of an allocation made before: Slurm's heterogeneous-job spelling too
        env["SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0"] = compress_counts(
            [a.cpus for a in reply.job.allocations])
    env.setdefault("PYSLURM_LITE_CONF", cfg.path)
    step = reply.job.steps[-1] if reply.job.steps else None
    base = agent_pb2.StepLaunch(
        step_id=reply.step_id, argv=[ns.command, *ns.args], env=env,
        cwd=os.path.abspath(ns.chdir) if ns.chdir else os.getcwd(), credential=reply.credential,
        step_nodes=[n.name for n in reply.nodes],
        step_tasks_per_node=[len(n.task_ids) for n in reply.nodes],
        std_out=_io_path(ns.output), std_err=_io_path(ns.error),
        cpus_per_task=step.cpus_per_task if step else (ns.cpus_per_task or 1),
        unbuffered=bool(ns.unbuffered or ns.pty), cpu_bind=ns.cpu_bind or "",
        distribution=ns.distribution or "", stdin_mode=_stdin_mode(ns.input),
        gpus_per_task=_gpus_per_task(ns), srun_host=_own_address(cfg),
        rlimits=rlimits.for_command(ns.propagate), pty=bool(ns.pty),
        task_prolog=ns.task_prolog or "", task_epilog=ns.task_epilog or "")
    if ns.pty:
        from .terminal import window_size
        base.winsize.rows, base.winsize.cols = window_size()
    base.job.CopyFrom(reply.job)
    return base


def mpi_list() -> str:
    """srun --mpi=list, as Slurm's plugrack_print_mpi_plugins (no pmix here: no versions line)."""
    return "MPI plugin types are...\n" + "".join(f"\t{t}\n" for t in pmi.TYPES)


def mpi_type_error(name: str) -> str:
    """Slurm's words for an MPI type with no plugin (plugin loader, mpi.c, srun's opt.c)."""
    return (f"srun: error: Couldn't find the specified plugin name for mpi/{name} looking at "
            f"all files\n"
            f"srun: error: cannot find mpi plugin for mpi/{name}\n"
            f"srun: error: MPI: Cannot create context for mpi/{name}\n"
            f"srun: error: Invalid MPI type '{name}', --mpi=list for acceptable types\n")


def _mpi_environment(env: dict[str, str], mpi: str, reply) -> None:
    """SLURM_MPI_TYPE for the tasks (and the agent, which starts the PMI server on it, as
    slurmstepd does); with pmi2, each rank's node as MPICH's process mapping, which the agent
    takes out of the tasks' environment (Slurm's SLURM_PMI2_PROC_MAPPING). With none, a
    SLURM_MPI_TYPE inherited from the caller must not start a server."""
    env.pop("SLURM_PMI2_PROC_MAPPING", None)
    if mpi == "none":
        env.pop("SLURM_MPI_TYPE", None)
        return
    node_of = {t: i for i, n in enumerate(reply.nodes) for t in n.task_ids}
    env["SLURM_MPI_TYPE"] = mpi
    env["SLURM_PMI2_PROC_MAPPING"] = pmi.process_mapping([node_of[t] for t in sorted(node_of)])


def _io_path(pattern: str | None) -> str:
    """srun -o/-e: a file pattern for the tasks; 'none' discards the stream."""
    return "/dev/null" if (pattern or "").lower() == "none" else (pattern or "")


def _stdin_mode(value: str | None) -> str:
    """srun -i: none, all, a task id; a file is read by srun and goes to every task."""
    if value is None or value.lower() in ("none", "all") or value.isdigit():
        return (value or "").lower()
    return "all"


def _gpus_per_task(ns) -> int:
    from .sbatch import parse_gpus
    text = ns.gpus_per_task or os.environ.get("SLURM_GPUS_PER_TASK", "")
    return parse_gpus(text, "--gpus-per-task")[1] if text else 0


def _own_address(cfg) -> str:
    """The address this host reaches the controller from (SLURM_LAUNCH_NODE_IPADDR)."""
    import socket
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((cfg.controller_addr or cfg.controller_host, cfg.controller_port or 6817))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def create_step(client, job_id: int, ns, inside: bool = True):
    """CreateStep, retrying while other steps hold what it needs (srun -I: for a while only)."""
    from .._proto import controller_pb2 as pb
    from ..errors import StaleState, Unsatisfiable
    from .allocation import IMMEDIATE_FLOOR, immediate_seconds
    from .sbatch import parse_nodes
    req = pb.CreateStepRequest(
        job_id=job_id, name=os.path.basename(ns.command), num_tasks=ns.ntasks or 0,
        num_nodes=parse_nodes(ns.nodes) if ns.nodes else 0, ntasks_per_node=ns.ntasks_per_node or 0,
        cpus_per_task=ns.cpus_per_task or 0,
        exclusive=bool(ns.exclusive or ns.exact) and not ns.overlap,
        overlap=bool(ns.overlap), nodelist=ns.nodelist or "",
        distribution=ns.distribution or "", task_nodes=_task_nodes(ns),
        overcommit=bool(ns.overcommit), **(step_resources(ns) if inside else {}))
    give_up = None if ns.immediate is None or not inside else \
        time.monotonic() + max(immediate_seconds(ns.immediate), IMMEDIATE_FLOOR)
    said = False
    while True:
        try:
            reply = client._call("CreateStep", req)
        except Unsatisfiable as e:
            raise Unsatisfiable(f"Unable to create step for job {job_id}: {e.message}") from None
        except StaleState as e:
            if give_up is not None and time.monotonic() >= give_up:
                raise Unsatisfiable(f"Unable to create step for job {job_id}: {e.message}") from None
            if not said:
                sys.stderr.write(f"srun: Job {job_id} step creation temporarily disabled, "
                                 f"retrying ({e.message})\n")
                said = True
            time.sleep(RETRY)
            continue
        if said:
            sys.stderr.write(f"srun: Step created for StepId={job_id}.{reply.step_id}\n")
        return reply


def step_resources(ns) -> dict:
    """What a step inside an allocation asks of it besides CPUs (CreateStepRequest's fields):
    --mem / --mem-per-cpu in MiB, GPUs by --gres=gpu:N, --gpus, --gpus-per-node,
    --gpus-per-task. A GPU type is the job's to choose: a step counts GPUs only."""
    from ..units import parse_memory
    from .sbatch import parse_gpus, parse_gres
    out = {}
    if ns.mem:
        out["mem_per_node"] = parse_memory(ns.mem)  # 0: all of the job's memory, as none
    if ns.mem_per_cpu:
        out["mem_per_cpu"] = parse_memory(ns.mem_per_cpu)
    if ns.gres:
        gpus = None if _gres_none(ns.gres) else \
            sum(g.count for g in parse_gres(ns.gres) if g.name == "gpu")
        out["gpus_none"] = not gpus
        out["gpus_per_node"] = gpus or 0
    for dest in ("gpus", "gpus_per_node", "gpus_per_task"):
        if getattr(ns, dest, None):
            out[dest] = parse_gpus(getattr(ns, dest), "--" + dest.replace("_", "-"))[1]
            out["gpus_none"] = not out[dest]
    return {k: v for k, v in out.items() if v}


def _gres_none(values) -> bool:
    """--gres=none: a step without the job's GPUs (as gpu:0)."""
    return [v.lower() for v in values or []] == ["none"]


def main_args(argv: list[str]) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if (ns.mpi or "").lower() == "list":
        sys.stdout.write(mpi_list())
        return 0
    if not ns.command:
        from ..errors import InvalidRequest
        raise InvalidRequest("No command given to execute.")
    apply_input_env(ns, os.environ)
    from ..client import Client
    from .allocation import allocate, release
    from .sbatch import spec_from_args
    client = Client()
    ns.mpi = ns.mpi or client.cfg.mpi_default or "none"
    if ns.mpi not in pmi.TYPES:  # before anything is allocated or launched
        sys.stderr.write(mpi_type_error(ns.mpi))
        return 1
    job_id = ns.jobid or int(os.environ.get("SLURM_JOB_ID", "0") or 0)
    owned = not job_id
    for line in check_options(ns, inside=not owned):
        sys.stderr.write(line + "\n")
    if owned:
        ns.script, ns.script_args, ns.name = None, [], ns.name or os.path.basename(ns.command)
        spec = spec_from_args(ns, "", os.getcwd())
        job_id = allocate(client, spec, PROG, quiet=bool(ns.quiet), immediate=ns.immediate).job_id
    code = 1
    try:
        code = run_step(client, job_id, ns, inside=not owned)
        return code
    finally:
        if owned:
            release(client, job_id, exit_code=code if code < 128 else 0,
                    exit_signal=code - 128 if code >= 128 else 0)


def run_step(client, job_id: int, ns, inside: bool = True) -> int:
    from .._proto import controller_pb2 as pb
    reply = create_step(client, job_id, ns, inside)
    width = len(str(max(sum(len(n.task_ids) for n in reply.nodes) - 1, 0)))
    session = StepSession(reply, _launch_base(ns, reply, client.cfg, inside),
                          Output(bool(ns.label), width), client.cfg)
    session.kill_on_bad_exit = (ns.kill_on_bad_exit or "0") != "0"
    session.verbose = bool(ns.verbose)
    if ns.verbose:
        _say_launch(reply, job_id)
    _install_signals(session, job_id, reply.step_id)
    with _terminal(session, ns):
        session.start()
        _start_stdin(session, ns)
        session.wait()
    if session.lost:
        _await_node_failure(client, job_id, reply.job.restart_count, session.lost)
    ntasks = sum(len(n.task_ids) for n in reply.nodes)
    code, sig, messages = _exit_status(session.exits, ntasks)
    if session.aborted is not None:
        code, sig = _abort_status(session.aborted, session.exits)
    for err in session.errors:
        sys.stderr.write(f"srun: error: {err}\n")
    for m in messages:
        sys.stderr.write(f"srun: error: {m}\n")
    try:
        client._call("CompleteStep", pb.CompleteStepRequest(
            job_id=job_id, step_id=reply.step_id, exit_code=code if not sig else 0, exit_signal=sig))
    except Exception as e:  # the job may be gone (cancelled): the step ended with it
        getattr(e, "message", None)
    return code


def _terminal(session: StepSession, ns):
    """srun --pty: our terminal in raw mode while the step runs, its resizes passed on."""
    import contextlib
    if not ns.pty:
        return contextlib.nullcontext()
    from .terminal import RawTerminal, on_resize
    on_resize(session.resize)
    return RawTerminal(sys.stdin.fileno())


def _start_stdin(session: StepSession, ns) -> None:
    """srun -i: to task 0 (the default), a task id, every task, none; a file to every task."""
    mode = (ns.input or "").lower()
    if mode == "none":
        return
    nodes = session.reply.nodes
    if mode == "all":
        session.send_stdin([n.name for n in nodes])
        return
    if ns.input and not mode.isdigit():
        try:
            source = open(ns.input, "rb")
        except OSError as e:
            from ..errors import InvalidRequest
            raise InvalidRequest(f"Unable to open input file {ns.input}: {e.strerror}") from None
        session.send_stdin([n.name for n in nodes], source)
        return
    task = int(mode or 0)
    session.send_stdin([n.name for n in nodes if task in n.task_ids])


def _say_launch(reply, job_id: int) -> None:
    """srun -v: Slurm's lines on the step's layout."""
    from ..agent.env import compress_counts
    from ..config import collect
    names = [n.name for n in reply.nodes]
    cpus = {a.node: a.cpus for a in reply.job.allocations}
    sys.stderr.write(f"srun: jobid {job_id}: nodes({len(names)}):`{collect(names)}', cpu counts: "
                     f"{compress_counts([cpus.get(n, 0) for n in names])}\n")
    for n in reply.nodes:
        sys.stderr.write(f"srun: launching StepId={job_id}.{reply.step_id} on host {n.name}, "
                         f"{len(n.task_ids)} tasks: {_ranges(list(n.task_ids))}\n")


def _ranges(ids: list[int]) -> str:
    """[0, 1, 2, 5] -> '[0-2,5]' (Slurm's task list form)."""
    from ..agent.cpus import cpulist
    return f"[{cpulist(ids)}]"


def apply_input_env(ns, environ) -> None:
    """SLURM_LABELIO, SLURM_DISTRIBUTION ...: each stands for its option when that is unset."""
    for var, dest in INPUT_ENV.items():
        value = environ.get(var)
        if value is None or getattr(ns, dest, None) not in (None, False):
            continue
        setattr(ns, dest, value not in ("", "0") if dest in _FLAGS else value)


def check_options(ns, inside: bool = False) -> list[str]:
    """Refuse what cannot work before allocating; name what is accepted without effect."""
    from ..agent import binding
    from ..layout import parse_distribution
    rlimits.for_command(ns.propagate)  # a bad --propagate is refused before allocating
    if ns.pty and (ns.input or ns.output or ns.error):
        from ..errors import InvalidRequest
        raise InvalidRequest("--error/--input/--output are incompatible with --pty")
    notes = []
    if ns.immediate is not None:
        from .allocation import immediate_seconds
        immediate_seconds(ns.immediate)  # a bad -I value is refused before allocating
    if inside:
        step_resources(ns)  # a bad --mem or --gres for a step: refused before anything runs
    if ns.cpu_bind:
        kind = binding.parse(ns.cpu_bind).kind
        if kind in binding.APPROXIMATED:
            notes.append(f"srun: warning: --cpu-bind={kind}: sockets and NUMA domains are not "
                         f"modelled here; tasks are bound to cores")
    if ns.distribution:
        kind, _, lower = parse_distribution(ns.distribution)
        if any(lv != "*" for lv in lower):
            notes.append(f"srun: warning: --distribution={ns.distribution}: the socket and core "
                         f"levels are not modelled here and are ignored")
        if kind == "arbitrary" and not _task_nodes(ns):
            from ..errors import InvalidRequest
            raise InvalidRequest("--distribution=arbitrary needs SLURM_HOSTFILE or -w naming "
                                 "each task's node")
    return notes


def _task_nodes(ns) -> list[str]:
    """-m arbitrary: each task's node, from SLURM_HOSTFILE (one a line) or -w in order."""
    if not (ns.distribution or "").lower().startswith("arbitrary"):
        return []
    from ..config import expand
    path = os.environ.get("SLURM_HOSTFILE")
    if path:
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            from ..errors import InvalidRequest
            raise InvalidRequest(f"Unable to open SLURM_HOSTFILE {path}: {e.strerror}") from None
        names = [n for line in text.split() for n in expand(line.strip())]
    else:
        names = expand(ns.nodelist) if ns.nodelist else []
    return names[:ns.ntasks] if ns.ntasks else names


NODE_FAILURE_PATIENCE = 600  # seconds srun waits for the controller to decide on a lost node


def _await_node_failure(client, job_id: int, restart_count: int, nodes: list[str]) -> None:
    """As Slurm's srun: a lost node is the controller's to judge (it requeues or fails the job
    when the node is declared down, and this run is killed with it). Until then, wait."""
    sys.stderr.write(f"srun: error: lost contact with {','.join(nodes)}: waiting for the "
                     f"controller to act on the node failure\n")
    deadline = time.monotonic() + NODE_FAILURE_PATIENCE
    while time.monotonic() < deadline:
        try:
            jobs, _ = client.jobs(job_ids=[job_id], include_finished=True)
            if not jobs or jobs[0].state != "RUNNING" or jobs[0].restart_count != restart_count:
                return
        except Exception:  # controller away for a moment: keep waiting
            pass
        time.sleep(1.0)


def _install_signals(session: StepSession, job_id: int, step_id: int) -> None:
    """Ctrl-C once: say so; twice within a second: kill the step. SIGTERM/SIGHUP: pass on."""
    last = [0.0]

    def on_int(signo, frame):
        now = time.monotonic()
        if now - last[0] < 1.0:
            sys.stderr.write(f"srun: sending Ctrl-C to StepId={job_id}.{step_id}\n"
                             f"srun: forcing job termination\n")
            session.signal(signal.SIGKILL)
        else:  # as Slurm: the first Ctrl-C only reports, so a stray one does not kill a run
            sys.stderr.write("srun: interrupt (one more within 1 sec to abort)\n")
            running = sorted(set(range(sum(len(n.task_ids) for n in session.reply.nodes)))
                             - set(session.exits))
            sys.stderr.write(f"srun: StepId={job_id}.{step_id} tasks {running}: running\n")
        last[0] = now

    def on_term(signo, frame):
        session.signal(signo)

    signal.signal(signal.SIGINT, on_int)
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, on_term)


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
