"""srun: run a parallel job step, inside an allocation (sbatch, salloc) or making its own.

Flow: (allocate when outside one) -> CreateStep at the controller (the step is recorded, tasks are
laid out in block distribution, a signed credential comes back) -> one LaunchStep stream to each
node's agent -> output streams back live (with --label, line by line as "N: "), stdin goes to
task 0, Ctrl-C twice within a second or SIGTERM ends the step -> exit code: the highest task exit
code, 128+signal for a task killed by a signal.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time

from .common import SlurmArgParser, run
from .sbatch import add_job_options, export_environment, with_umask

PROG = "srun"
RETRY = 0.5  # seconds between tries to create a step on busy nodes
_STOP = object()


def build_parser() -> SlurmArgParser:
    p = SlurmArgParser(prog=PROG, add_help=True)
    add_job_options(p)
    a = p.add_argument
    a("-l", "--label", action="store_true", default=None)
    a("-u", "--unbuffered", action="store_true", default=None)
    a("--overlap", action="store_true", default=None)
    a("--exact", action="store_true", default=None)
    a("--jobid", type=int)
    a("-K", "--kill-on-bad-exit", nargs="?", const="1")
    a("-v", "--verbose", action="count")
    for ignored in ("--mpi", "--pty", "--accel-bind", "--mem-bind", "--cpu-freq", "--network"):
        a(ignored, nargs="?", const="")
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
                elif msg.data:
                    self.output.write(msg.task_id, msg.stream, msg.data)
        except grpc.RpcError as e:
            lost = [t for t in node.task_ids if t not in self.exits]
            if lost:  # the node's agent went away mid-step: its tasks are not known to have ended
                self.lost.append(node.name)
            self.errors.append(f"{node.name}: {e.details() or e.code()}")
        finally:
            self.queues[node.name].put(_STOP)

    def send_stdin(self, task0_node: str) -> None:
        """Forward our stdin to task 0 (in the background; EOF is forwarded too)."""
        from .._proto import agent_pb2

        def pump():
            try:
                while chunk := os.read(sys.stdin.fileno(), 65536):
                    self.queues[task0_node].put(agent_pb2.StepInput(stdin=chunk))
            except (OSError, ValueError):
                pass
            self.queues[task0_node].put(agent_pb2.StepInput(stdin_eof=True))
        if sys.stdin is not None and not sys.stdin.closed:
            threading.Thread(target=pump, daemon=True).start()

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


def _launch_base(ns, reply, cfg):
    from .._proto import agent_pb2
    _, env = export_environment(ns.export, with_umask(os.environ))
    if ns.label:
        env["SLURM_LABELIO"] = "1"
    if ns.ntasks_per_node:
        env["SLURM_NTASKS_PER_NODE"] = str(ns.ntasks_per_node)
    if ns.gpus_per_task:
        env["SLURM_GPUS_PER_TASK"] = ns.gpus_per_task.split(":")[-1]
    env.setdefault("PYSLURM_LITE_CONF", cfg.path)
    step = reply.job.steps[-1] if reply.job.steps else None
    base = agent_pb2.StepLaunch(
        step_id=reply.step_id, argv=[ns.command, *ns.args], env=env,
        cwd=os.path.abspath(ns.chdir) if ns.chdir else os.getcwd(), credential=reply.credential,
        step_nodes=[n.name for n in reply.nodes],
        step_tasks_per_node=[len(n.task_ids) for n in reply.nodes],
        std_out=ns.output or "", std_err=ns.error or "",
        cpus_per_task=step.cpus_per_task if step else (ns.cpus_per_task or 1))
    base.job.CopyFrom(reply.job)
    return base


def create_step(client, job_id: int, ns):
    """CreateStep, retrying while the nodes are busy with other exclusive steps."""
    from .._proto import controller_pb2 as pb
    from ..errors import StaleState
    from .sbatch import parse_nodes
    req = pb.CreateStepRequest(
        job_id=job_id, name=os.path.basename(ns.command), num_tasks=ns.ntasks or 0,
        num_nodes=parse_nodes(ns.nodes) if ns.nodes else 0, ntasks_per_node=ns.ntasks_per_node or 0,
        cpus_per_task=ns.cpus_per_task or 0, exclusive=bool(ns.exclusive or ns.exact),
        overlap=bool(ns.overlap), nodelist=ns.nodelist or "")
    said = False
    while True:
        try:
            return client._call("CreateStep", req)
        except StaleState as e:
            if not said:
                sys.stderr.write(f"srun: Job {job_id} step creation temporarily disabled, "
                                 f"retrying ({e.message})\n")
                said = True
            time.sleep(RETRY)


def main_args(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    if not ns.command:
        from ..errors import InvalidRequest
        raise InvalidRequest("No command given to execute.")
    from ..client import Client
    from .allocation import allocate, release
    from .sbatch import spec_from_args
    client = Client()
    job_id = ns.jobid or int(os.environ.get("SLURM_JOB_ID", "0") or 0)
    owned = not job_id
    if owned:
        ns.script, ns.script_args, ns.name = None, [], ns.name or os.path.basename(ns.command)
        spec = spec_from_args(ns, "", os.getcwd())
        job_id = allocate(client, spec, PROG, quiet=bool(ns.quiet)).job_id
    code = 1
    try:
        code = run_step(client, job_id, ns)
        return code
    finally:
        if owned:
            release(client, job_id, exit_code=code if code < 128 else 0,
                    exit_signal=code - 128 if code >= 128 else 0)


def run_step(client, job_id: int, ns) -> int:
    from .._proto import controller_pb2 as pb
    reply = create_step(client, job_id, ns)
    width = len(str(max(sum(len(n.task_ids) for n in reply.nodes) - 1, 0)))
    session = StepSession(reply, _launch_base(ns, reply, client.cfg), Output(bool(ns.label), width),
                          client.cfg)
    _install_signals(session, job_id, reply.step_id)
    session.start()
    session.send_stdin(reply.nodes[0].name)
    session.wait()
    if session.lost:
        _await_node_failure(client, job_id, reply.job.restart_count, session.lost)
    ntasks = sum(len(n.task_ids) for n in reply.nodes)
    code, sig, messages = _exit_status(session.exits, ntasks)
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
