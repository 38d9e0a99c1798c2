"""Fuzzing every RPC method of both daemons of a real local cluster (controller + two agents).

Three layers, each sent to EVERY method of the Controller and Agent services (the method list is
read from the generated descriptors, so a new RPC is fuzzed without touching this file):

  1. raw random bytes as the request body (generic gRPC calls, no serializer), with valid auth;
  2. well-typed messages of the method's input type with hostile field values, built by walking
     the descriptors (ints at their limits, negatives, huge strings, control characters, unknown
     enum-like words, empty and duplicated repeated fields, NaN and infinities);
  3. mutations (bit flips, truncation, extension, insertion, splicing, duplication) of the
     serialised bytes of a valid request;

plus, for every method but the open LaunchStep: no token, garbage tokens, the other kind of token
and a replayed token are all UNAUTHENTICATED.

For every call: it ends with a gRPC status within CALL_TIMEOUT (DEADLINE_EXCEEDED = a hang,
UNAVAILABLE = a dead server), never UNKNOWN (an exception escaped a servicer) nor an INTERNAL other
than gRPC's own "cannot parse" answer; no Python traceback was appended to any daemon log; the
daemons' pids are alive. At the end the cluster still answers squeue and runs `sbatch --wrap true`.

What counts as a traceback: any "Traceback (most recent call last)" appended to a daemon log,
including `log.exception` in rpc_method's INTERNAL path, grpc's "Exception calling application" /
"Exception iterating responses" and uncaught thread exceptions. The one exception
(GRPC_PARSE_FAILURE): grpc's own record `grpc._common ERROR Exception deserializing message!`
whose traceback ends in protobuf's DecodeError. grpcio logs it (with a traceback) whenever a
request body does not parse, before any servicer or interceptor runs, and answers INTERNAL
"Exception deserializing request!". That is grpcio's behaviour for unparsable input, not a bug
in our code; it is noted in the report because an unauthenticated peer can make the daemons log
one traceback per garbage message (log noise, not a crash).

Safety: fuzzed messages must never make the cluster harm this machine. Every request body, in
every layer, is parsed here first (the server's parser is the same protobuf runtime, so what
does not parse here does not parse there); when it parses, `sanitize` forces it harmless before
it is sent: submitted specs are held with script "#!/bin/sh\\ntrue\\n", UpdateJobs never
releases or requeues, UpdateNodes only DRAINs/RESUMEs, and RegisterNode never speaks for node1
(a registration resets node1's epoch, so the real agent would refuse every later launch: not
harmful, but it would wreck the liveness check; its refusal path is still fuzzed). Agent launches
carry no valid credential: this module never signs one. Everything submitted is cancelled, every
reservation deleted and both nodes resumed at the end.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor as FD
from hypothesis import HealthCheck, given, settings, strategies as st

from pyslurm_lite import config
from pyslurm_lite._proto import agent_pb2, controller_pb2, types_pb2
from pyslurm_lite.rpc import authsock, keys, tokens
from pyslurm_lite.rpc.common import AUTH_KEY
from pyslurm_lite.rpc.grpcutil import CHANNEL_OPTIONS, daemon_metadata

from conftest import wait_final

pytestmark = pytest.mark.slow

CALL_TIMEOUT = 8.0  # seconds: a call not answered by then is a hang (2 shared cores: generous)
SAFE_SCRIPT = "#!/bin/sh\ntrue\n"
PKG = "pyslurm_lite.v1"
CONTROLLER_DAEMON_METHODS = {"RegisterNode", "NodeHeartbeat", "ReportJobEvents"}  # node's token
AGENT_OPEN_METHODS = {"LaunchStep"}  # checks a credential inside the request

SERVICES = {"Controller": controller_pb2.DESCRIPTOR.services_by_name["Controller"],
            "Agent": agent_pb2.DESCRIPTOR.services_by_name["Agent"]}
METHODS = [(svc, m.name) for svc, desc in SERVICES.items() for m in desc.methods]
METHOD_IDS = [f"{svc}.{name}" for svc, name in METHODS]
AUTHENTICATED = [(svc, name) for svc, name in METHODS
                 if not (svc == "Agent" and name in AGENT_OPEN_METHODS)]


def _method(svc: str, name: str):
    return SERVICES[svc].methods_by_name[name]


def _msg_class(descriptor):
    return message_factory.GetMessageClass(descriptor)


def _streaming(svc: str, name: str) -> bool:
    m = _method(svc, name)
    return m.client_streaming or m.server_streaming


# The same examples every run (CI must not go red on a new draw); PYSLURM_LITE_FUZZ=explore
# draws new ones, ten times as many, to hunt.
EXPLORE = os.environ.get("PYSLURM_LITE_FUZZ") == "explore"


def fuzz_settings(n: int):
    return settings(max_examples=n * (10 if EXPLORE else 1), deadline=None, database=None,
                    derandomize=not EXPLORE,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


# ---- the daemons' logs ---------------------------------------------------------------------------
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (\S+) ([A-Z]+) (.*)$")
TRACEBACK = "Traceback (most recent call last)"


def _records(text: str) -> list[str]:
    """Split appended log text into records: a record starts with a logging line; anything else
    (traceback lines, stray stderr output) belongs to the record before it."""
    out: list[str] = []
    for line in text.splitlines():
        if RECORD.match(line) or not out:
            out.append(line)
        else:
            out[-1] += "\n" + line
    return out


def grpc_parse_failure(record: str) -> bool:
    """grpcio's own record for a request body that does not parse (see the module docstring)."""
    first, _, rest = record.partition("\n")
    m = RECORD.match(first)
    lines = [ln for ln in rest.splitlines() if ln.strip()]
    return bool(m and m.group(1) == "grpc._common" and m.group(3).startswith("Exception deserializing")
                and lines and lines[-1].startswith("google.protobuf.message.DecodeError"))


# Known bugs, each with an xfail(strict=True) reproducer. A call whose input matches one may end
# the way that bug ends (its INTERNAL/UNKNOWN details, its traceback record) without failing the
# fuzzer again; any other traceback still fails it. When a bug is fixed its reproducer XPASSes
# and fails: then remove it here.
@dataclass(frozen=True)
class KnownBug:
    name: str
    matches_input: object  # (svc, name, body bytes or list of bytes) -> bool
    matches_record: object  # (log record text) -> bool


def _parsed(svc: str, name: str, body: bytes):
    try:
        return _msg_class(_method(svc, name).input_type).FromString(body)
    except Exception:
        return None


# None open now. Fixed, with their regressions at the end of this module: SubmitJobs with no
# specs (an empty INSERT), LaunchStep whose Job the agent could not convert (parsed before the
# credential was checked), LaunchJobs with a node_addrs entry without '='.
KNOWN_BUGS: list[KnownBug] = []


def known_bug(svc: str, name: str, body) -> KnownBug | None:
    return next((b for b in KNOWN_BUGS if b.matches_input(svc, name, body)), None)


def bad_records(text: str, bug: KnownBug | None = None) -> list[str]:
    """Records of appended log text that carry a traceback (or a fatal error) we count as a bug
    (a record of `bug`, the known bug the call's input triggers, excepted)."""
    bad = []
    for rec in _records(text):
        if TRACEBACK not in rec and "Fatal Python error" not in rec and "Segmentation fault" not in rec:
            continue
        if grpc_parse_failure(rec):
            continue
        if bug is not None and bug.matches_record(rec):
            continue
        bad.append(rec)
    return bad


class LogWatch:
    """Offsets of every daemon log; `appended()` is what was written since the last mark."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.offsets: dict[Path, int] = {}
        self.mark()

    def mark(self) -> None:
        self.offsets = {p: p.stat().st_size for p in sorted(self.dir.glob("*.log"))}

    def appended(self) -> dict[str, str]:
        out = {}
        for p in sorted(self.dir.glob("*.log")):
            start = self.offsets.get(p, 0)
            with open(p, "rb") as f:
                f.seek(start)
                data = f.read()
            if data:
                out[p.name] = data.decode("utf-8", errors="replace")
        return out

    def check(self, what: str, bug: KnownBug | None = None) -> None:
        """Fail with the offending records when a traceback was appended; then mark."""
        problems = []
        for name, text in self.appended().items():
            problems += [f"--- {name}\n{rec}" for rec in bad_records(text, bug)]
        self.mark()
        assert not problems, f"traceback in a daemon log after {what}:\n" + "\n".join(problems)[:6000]


# ---- calls ---------------------------------------------------------------------------------------
@dataclass
class Outcome:
    code: grpc.StatusCode
    details: str = ""
    reply: object = None  # bytes, or a list of bytes for a stream
    seconds: float = 0.0


@dataclass
class Fuzz:
    cluster: object
    cfg: object
    node1_key: bytes
    ctl: grpc.Channel
    agent: grpc.Channel
    instance: str
    logs: LogWatch
    pids: dict[str, int] = field(default_factory=dict)

    def __repr__(self) -> str:  # hypothesis prints the fixture with a failing example
        return f"Fuzz({self.cluster.dir})"

    def user_md(self) -> tuple:
        return ((AUTH_KEY, authsock.fetch_token(self.cfg.auth_socket, tokens.CONTROLLER)),)

    def valid_md(self, svc: str, name: str) -> tuple:
        """A fresh, valid proof for one call of svc/name (tokens are single-use)."""
        if svc == "Controller":
            if name in CONTROLLER_DAEMON_METHODS:
                return daemon_metadata(self.node1_key, "node:node1", name)
            return self.user_md()
        if name in AGENT_OPEN_METHODS:
            return ()
        return daemon_metadata(self.node1_key, tokens.CONTROLLER, name)

    def call(self, svc: str, name: str, body, metadata=None) -> Outcome:
        """One call with raw bytes (a list of bytes for a streaming method); never raises."""
        md = self.valid_md(svc, name) if metadata is None else metadata
        channel = self.ctl if svc == "Controller" else self.agent
        path = f"/{PKG}.{svc}/{name}"
        t0 = time.monotonic()
        if _streaming(svc, name):
            stub = channel.stream_stream(path, request_serializer=None, response_deserializer=None)
            replies = []
            try:
                call = stub(iter(list(body)), metadata=md, timeout=CALL_TIMEOUT)
                for r in call:
                    replies.append(r)
                code, details = call.code(), call.details() or ""
            except grpc.RpcError as e:
                code, details = e.code(), e.details() or ""
            return Outcome(code, details, replies, time.monotonic() - t0)
        stub = channel.unary_unary(path, request_serializer=None, response_deserializer=None)
        try:
            reply = stub(body, metadata=md, timeout=CALL_TIMEOUT)
            return Outcome(grpc.StatusCode.OK, "", reply, time.monotonic() - t0)
        except grpc.RpcError as e:
            return Outcome(e.code(), e.details() or "", None, time.monotonic() - t0)

    def alive(self) -> None:
        import os
        for daemon, pid in self.pids.items():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                pytest.fail(f"{daemon} (pid {pid}) died\n{self.cluster.log_tails()}")
            assert self.cluster.pid_of(daemon) == pid, f"{daemon} was restarted"

    def check(self, svc: str, name: str, out: Outcome, what: str, bug: KnownBug | None = None) -> None:
        """The per-call invariants: a status in time, no escaped exception, no traceback, alive
        (what `bug`, a known bug the input triggers, answers and logs excepted)."""
        where = f"{svc}/{name} with {what}"
        try:
            self._check(where, out, bug)
        finally:
            self.logs.mark()  # a failing call's traceback is reported once, not by the next test

    def _check(self, where: str, out: Outcome, bug: KnownBug | None) -> None:
        if bug is not None:  # its answer (INTERNAL, UNKNOWN...) is the bug's; still in time, alive
            assert out.code not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE), \
                f"{where}: {out.code} ({out.details})\n{self.cluster.log_tails()}"
            self.logs.check(where, bug)
            self.alive()
            return
        assert isinstance(out.code, grpc.StatusCode), f"{where}: no gRPC status ({out.code!r})"
        assert out.code is not grpc.StatusCode.DEADLINE_EXCEEDED, \
            f"{where}: no answer within {CALL_TIMEOUT}s (a hang)\n{self.cluster.log_tails()}"
        assert out.code is not grpc.StatusCode.UNAVAILABLE, \
            f"{where}: UNAVAILABLE ({out.details}): did the daemon die?\n{self.cluster.log_tails()}"
        assert out.code is not grpc.StatusCode.UNKNOWN, \
            f"{where}: UNKNOWN ({out.details}): an exception escaped the servicer"
        if out.code is grpc.StatusCode.INTERNAL:
            assert out.details == "Exception deserializing request!", \
                f"{where}: INTERNAL ({out.details}): a bug in the servicer"
        self.logs.check(where)
        self.alive()


def _short(body) -> str:
    if isinstance(body, list):
        return "[" + ", ".join(_short(b) for b in body) + "]"
    return repr(body[:300]) + (f"... ({len(body)} bytes)" if len(body) > 300 else "")


# ---- making fuzzed requests harmless -------------------------------------------------------------
SAFE_ACTIONS_BANNED = {"release", "requeue"}
NODE_STATES_BANNED = {"DOWN", "UNDRAIN", "IDLE"}  # nodes.update takes these after .upper()


def _safe_spec(spec) -> None:
    spec.hold = True
    spec.script = SAFE_SCRIPT


def sanitize(svc: str, name: str, msg) -> None:
    """Make a parsed request harmless in place (see the module docstring)."""
    if svc != "Controller":
        return  # agents: launches without a valid credential are refused; signals hit no jobs
    if name == "SubmitJob":
        _safe_spec(msg.spec)
    elif name == "SubmitJobs":
        for spec in msg.specs:
            _safe_spec(spec)
    elif name == "UpdateJobs":
        if msg.action in SAFE_ACTIONS_BANNED:
            msg.action = "hold"
    elif name == "UpdateNodes":
        if msg.state.upper() in NODE_STATES_BANNED:
            msg.state = "RESUME"
    elif name == "RegisterNode":
        if msg.node == "node1":
            msg.node = "node2"  # refused: node1's key cannot speak for node2


def make_safe(svc: str, name: str, body: bytes) -> bytes:
    """body as it may be sent: unchanged when it does not parse (the server cannot parse it
    either) or when it parses to something harmless; else the harmless re-serialisation."""
    m = _method(svc, name)
    cls = _msg_class(m.input_type)
    msg = cls()
    try:
        msg.ParseFromString(body)
    except Exception:
        return body
    before = msg.SerializeToString(deterministic=True)
    sanitize(svc, name, msg)
    after = msg.SerializeToString(deterministic=True)
    return body if after == before else msg.SerializeToString()


def safe_stream(svc: str, name: str, bodies: list[bytes]) -> list[bytes]:
    """A stream of request bodies (LaunchStep's StepInputs), each made safe as a unary body is
    (sanitize has nothing to change on agents: without a signed credential nothing starts)."""
    return [make_safe(svc, name, b) for b in bodies]


# ---- hostile values from the descriptors ---------------------------------------------------------
INT_LIMITS = {
    FD.TYPE_INT32: (-2**31, 2**31 - 1), FD.TYPE_SINT32: (-2**31, 2**31 - 1),
    FD.TYPE_SFIXED32: (-2**31, 2**31 - 1), FD.TYPE_INT64: (-2**63, 2**63 - 1),
    FD.TYPE_SINT64: (-2**63, 2**63 - 1), FD.TYPE_SFIXED64: (-2**63, 2**63 - 1),
    FD.TYPE_UINT32: (0, 2**32 - 1), FD.TYPE_FIXED32: (0, 2**32 - 1),
    FD.TYPE_UINT64: (0, 2**64 - 1), FD.TYPE_FIXED64: (0, 2**64 - 1),
}
WORDS = ["", "node1", "node2", "node[1-2]", "node[1-99999999999]", "main", "root", "nobody",
         "PENDING", "RUNNING", "COMPLETED", "CANCELLED", "running", "PENDING\x00", "IDLE", "MIXED",
         "ended", "launch_failed", "lost", "started", "hold", "uhold", "requeuehold", "DRAIN",
         "RESUME", "drain", "gpu", "gpu:a100:2", "gpu:-1", "0-3", "1-1000000000", "0-3%0", "%",
         "afterok:1", "afterany:999999999999999999999", "singleton", "ALL", "NONE", "NONE,X=1",
         "-1", "0", "nan", "inf", "1e309", "UNLIMITED", "00:00:00", "99999999:00:00", "now+1",
         "/", "/etc/passwd", "../../../../etc/shadow", "%j-%u-%x-%N", "%", "a|b", "u1|x", "d1|x",
         "slurmctld", "node:node1", "cluster", "x" * 300, "\x00", "\n", "\r\n", "\t", "\x1b[2J",
         "\u202e", "\ufeff", "\U0001f600", "é", "ı", "ﬁ", ";rm -rf /;", "$(reboot)", "`id`"]
HUGE = ["A" * 200_000, "\x00" * 50_000, "é" * 70_000]
SPECIAL_FLOATS = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1e308, -1e308, 5e-324,
                  2.0**63, -(2.0**63), 1e18, -1.0, time.time() + 1e9]


def _scalar(fd):
    t = fd.type
    if t in INT_LIMITS:
        lo, hi = INT_LIMITS[t]
        edges = [lo, lo + 1, hi, hi - 1, 0, 1, -1 if lo < 0 else 2, 2, 255, 65535, 2**31 - 1]
        edges = [v for v in edges if lo <= v <= hi]
        return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(-5, 100).filter(
            lambda v: lo <= v <= hi))
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        width = 32 if t == FD.TYPE_FLOAT else 64
        return st.one_of(st.sampled_from(SPECIAL_FLOATS if width == 64 else SPECIAL_FLOATS[:6]),
                         st.floats(allow_nan=True, allow_infinity=True, width=width))
    if t == FD.TYPE_BOOL:
        return st.booleans()
    if t == FD.TYPE_STRING:
        return st.one_of(st.sampled_from(WORDS), st.text(max_size=40),
                         st.text(alphabet=st.characters(max_codepoint=0x7f), max_size=12),
                         st.sampled_from(HUGE))
    if t == FD.TYPE_BYTES:
        return st.one_of(st.binary(max_size=64), st.sampled_from([b"", b"\x00" * 70_000]))
    if t == FD.TYPE_ENUM:
        return st.sampled_from([v.number for v in fd.enum_type.values] + [12345, -1])
    raise AssertionError(f"no strategy for field type {t} ({fd.full_name})")


def _is_map(fd) -> bool:
    return fd.type == FD.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry


def message_values(desc, depth: int = 0):
    """A strategy for {field name: value} of message desc (a nested message is such a dict, a
    map a dict, a repeated field a list): each field set or left unset."""
    fields = {}
    for fd in desc.fields:
        if _is_map(fd):
            k, v = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
            value = st.dictionaries(_scalar(k), _scalar(v), max_size=3)
        else:
            if fd.type == FD.TYPE_MESSAGE:
                if depth >= 3:
                    continue
                one = st.deferred(lambda fd=fd: message_values(fd.message_type, depth + 1))
            else:
                one = _scalar(fd)
            if fd.is_repeated:
                lists = st.lists(one, max_size=3 if fd.type == FD.TYPE_MESSAGE else 5)
                value = st.one_of(lists, lists.map(lambda xs: xs + xs), st.just([]))
            else:
                value = one
        fields[fd.name] = st.one_of(st.none(), value)
    return st.fixed_dictionaries(fields).map(lambda d: {k: v for k, v in d.items() if v is not None})


def fill(msg, values: dict) -> None:
    for name, value in values.items():
        fd = msg.DESCRIPTOR.fields_by_name[name]
        if _is_map(fd):
            getattr(msg, name).update(value)
        elif fd.is_repeated:
            target = getattr(msg, name)
            for item in value:
                if fd.type == FD.TYPE_MESSAGE:
                    fill(target.add(), item)
                else:
                    target.append(item)
        elif fd.type == FD.TYPE_MESSAGE:
            fill(getattr(msg, name), value)
            getattr(msg, name).SetInParent()
        else:
            setattr(msg, name, value)


def build(svc: str, name: str, values: dict):
    msg = _msg_class(_method(svc, name).input_type)()
    fill(msg, values)
    return msg


# ---- valid seed requests for the mutation layer --------------------------------------------------
def seeds(fz: Fuzz) -> dict[tuple[str, str], list]:
    cpb, apb, tpb = controller_pb2, agent_pb2, types_pb2
    spec = tpb.JobSpec(name="fuzz", script=SAFE_SCRIPT, work_dir="/tmp", std_out="/dev/null",
                       std_err="/dev/null", partition="main", num_nodes=1, num_tasks=1,
                       cpus_per_task=1, mem_per_node=10, time_limit=1, hold=True, user="root",
                       uid=0, gid=0, environment={"PATH": "/usr/bin:/bin"}, batch=True,
                       gres=[tpb.GresRequest(name="gpu", count=1)], array="0-2", nice=10,
                       dependency="afterok:1", comment="fuzz seed")
    filt = cpb.JobFilter(job_ids=[1, 2], states=["PENDING"], users=["root"], partitions=["main"],
                         names=["fuzz"], include_finished=True, nodes=["node1"])
    job = tpb.Job(job_id=424242, spec=spec, state="PENDING", reason="None", priority=1,
                  allocations=[tpb.NodeAllocation(node="node1", cpus=1, mem=10, gpus=[0])])
    ev = tpb.JobEvent(job_id=424242, kind="ended", exit_code=1, message="fuzz")
    resv = tpb.Reservation(name="fuzzresv", start_time=time.time() + 86400 * 365,
                           end_time=time.time() + 86400 * 366, nodes=["node2"], users=["root"])
    return {
        ("Controller", "Ping"): [cpb.PingRequest()],
        ("Controller", "Takeover"): [cpb.TakeoverRequest()],
        ("Controller", "IssueToken"): [cpb.IssueTokenRequest(user_name="root", lifespan=60),
                                       cpb.IssueTokenRequest(user_name="nobody")],
        ("Controller", "SubmitJob"): [cpb.SubmitJobRequest(spec=spec)],
        ("Controller", "SubmitJobs"): [cpb.SubmitJobsRequest(specs=[spec, spec])],
        ("Controller", "GetJobs"): [cpb.GetJobsRequest(filter=filt)],
        ("Controller", "GetJobHistory"): [cpb.GetJobHistoryRequest(
            job_ids=[1, 424242], array_tasks=["1_0"], users=["root"], accounts=["a"],
            partitions=["main"], names=["fuzz"], states=["COMPLETED", "PENDING"], start=1.0,
            end=2e9, duplicates=True, any_eligibility=True)],
        ("Controller", "CancelJobs"): [cpb.CancelJobsRequest(filter=cpb.JobFilter(job_ids=[424242]),
                                                             signal=10, batch_only=True)],
        ("Controller", "UpdateJobs"): [cpb.UpdateJobsRequest(job_ids=[424242, 1], action="hold")],
        ("Controller", "GetNodes"): [cpb.GetNodesRequest(names=["node1", "node2"])],
        ("Controller", "UpdateNodes"): [cpb.UpdateNodesRequest(names=["node2"], state="DRAIN",
                                                               reason="fuzz")],
        ("Controller", "GetPartitions"): [cpb.GetPartitionsRequest()],
        ("Controller", "GetShares"): [cpb.GetSharesRequest(users=["root", "nobody"])],
        ("Controller", "Sacctmgr"): [
            cpb.SacctmgrRequest(verb="show", entity="association", where={"account": "root"}),
            cpb.SacctmgrRequest(verb="add", entity="account", names=["fuzzacct"],
                                set={"fairshare": "3", "grptres": "gres/gpu=2"}, dry_run=True),
            cpb.SacctmgrRequest(verb="modify", entity="user", where={"name": "root"},
                                set={"qos": "+normal", "maxjobs": "5"})],
        ("Controller", "GetDiag"): [cpb.GetDiagRequest()],
        ("Controller", "CreateReservation"): [cpb.CreateReservationRequest(reservation=resv),
                                              cpb.CreateReservationRequest(reservation=resv,
                                                                           node_count=1,
                                                                           partition="main")],
        ("Controller", "DeleteReservation"): [cpb.DeleteReservationRequest(name="fuzzresv")],
        ("Controller", "GetReservations"): [cpb.GetReservationsRequest()],
        ("Controller", "CreateStep"): [cpb.CreateStepRequest(job_id=424242, name="s", num_nodes=1,
                                                             num_tasks=2, cpus_per_task=1,
                                                             nodelist="node1")],
        ("Controller", "CompleteStep"): [cpb.CompleteStepRequest(job_id=424242, step_id=0,
                                                                 exit_code=1, exit_signal=9)],
        ("Controller", "CompleteJob"): [cpb.CompleteJobRequest(job_id=424242, exit_code=1)],
        ("Controller", "RegisterNode"): [cpb.RegisterNodeRequest(
            node="node2", cpus=2, memory=2000, version="0.1.0", boot_time=time.time() - 100,
            gpus=[tpb.GpuDevice(index=0)], running=[tpb.RunningJob(job_id=424242)], events=[ev])],
        ("Controller", "NodeHeartbeat"): [cpb.NodeHeartbeatRequest(
            node="node1", instance=fz.instance, free_memory=1000, cpu_load=0.5,
            running=[tpb.RunningJob(job_id=424242, restart_count=0)],
            usage=[tpb.UsageSample(job_id=424242, step="batch", node="node1", user_cpu=1.5,
                                   rss=1 << 20, max_rss=2 << 20, gpus=1, gpu_util=50.0)],
            foreign_gpus=[tpb.ForeignGpu(index=0, pids=[1], memory=1 << 20)])],
        ("Controller", "ReportJobEvents"): [cpb.ReportJobEventsRequest(
            node="node1", instance=fz.instance, events=[ev],
            usage=[tpb.UsageSample(job_id=424242, step="0", node="node1", samples=3)])],
        ("Agent", "Ping"): [apb.AgentPingRequest()],
        ("Agent", "LaunchJobs"): [apb.LaunchJobsRequest(jobs=[job], instance=fz.instance,
                                                        node_addrs=["node1=127.0.0.1"],
                                                        epoch="e", credentials=["c1|x"])],
        ("Agent", "SignalJobs"): [apb.SignalJobsRequest(job_ids=[424242], signal=0, terminate=True,
                                                        reason="cancelled", restart_counts=[0])],
        ("Agent", "LaunchStep"): [apb.StepInput(launch=apb.StepLaunch(
            job=job, step_id=0, argv=["/bin/true"], cwd="/tmp", uid=0, gid=0, task_ids=[0],
            credential="c1|forged", step_nodes=["node1"], step_tasks_per_node=[1],
            node_addrs=["node1=127.0.0.1"], user="root")),
            apb.StepInput(stdin=b"x"), apb.StepInput(signal=15), apb.StepInput(stdin_eof=True)],
    }


def mutate(data: bytes, ops: list) -> bytes:
    """Apply mutation ops (from `mutation_ops`) to data."""
    buf = bytearray(data)
    for op in ops:
        kind, pos, arg = op
        if kind == "flip" and buf:
            buf[pos % len(buf)] ^= 1 << (arg % 8)
        elif kind == "byte" and buf:
            buf[pos % len(buf)] = arg % 256
        elif kind == "truncate":
            del buf[pos % (len(buf) + 1):]
        elif kind == "insert":
            i = pos % (len(buf) + 1)
            buf[i:i] = arg
        elif kind == "extend":
            buf += arg
        elif kind == "delete" and buf:
            i = pos % len(buf)
            del buf[i:i + 1 + (len(arg) if isinstance(arg, bytes) else 3)]
        elif kind == "duplicate":
            buf += bytes(buf)
        elif kind == "splice" and buf:
            i = pos % len(buf)
            buf[i:i] = buf[i:i + 32]
    return bytes(buf)


_BYTES = st.binary(min_size=1, max_size=16) | st.sampled_from(
    [b"\xff" * 10, b"\x80" * 11, b"\x0a\xff\xff\xff\xff\x0f", b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"])
_FLIP = st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(0, 7))
# flips, duplication and splices mostly keep a message parsable (so it reaches the servicer);
# the rest mostly break it (so it tests the parser's edge): both, weighted toward the first
mutation_ops = st.lists(st.one_of(
    _FLIP, _FLIP, _FLIP,
    st.tuples(st.just("byte"), st.integers(0, 10_000), st.integers(0, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.none()),
    st.tuples(st.just("insert"), st.integers(0, 10_000), _BYTES),
    st.tuples(st.just("extend"), st.integers(0, 0), _BYTES),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.just(b"")),
    st.tuples(st.just("duplicate"), st.integers(0, 0), st.none()),
    st.tuples(st.just("splice"), st.integers(0, 10_000), st.none()),
), min_size=1, max_size=3)

# raw bodies: random bytes, and random bytes that start with a plausible field header
raw_bodies = st.one_of(
    st.binary(max_size=600),
    st.tuples(st.integers(1, 60), st.sampled_from([0, 1, 2, 5]), st.binary(max_size=300)).map(
        lambda t: bytes([(t[0] << 3 | t[1]) & 0x7f]) + t[2]),
    st.sampled_from([b"", b"\x00", b"\xff" * 64, b"\x0a" + b"\xff" * 9 + b"\x01",
                     b"\x0a\x80\x80\x80\x80\x10", b"\x12\x05ab", b"\x08" + b"\x80" * 10]),
)


# ---- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fz(cluster):
    cfg = config.load(str(cluster.conf))
    node1 = cfg.nodes["node1"]
    agent_target = f"{node1.addr}:{node1.port or cfg.slurmd_port}"
    ctl = grpc.insecure_channel(cfg.controller_target, options=CHANNEL_OPTIONS)
    agent = grpc.insecure_channel(agent_target, options=CHANNEL_OPTIONS)
    f = Fuzz(cluster=cluster, cfg=cfg, node1_key=keys.load(cfg.key_path).key_for("node:node1"),
             ctl=ctl, agent=agent, instance="", logs=LogWatch(cluster.dir),
             pids={d: cluster.pid_of(d) for d in ("controller", "agent-node1", "agent-node2")})
    ping = f.call("Controller", "Ping", b"")
    assert ping.code is grpc.StatusCode.OK, ping
    f.instance = controller_pb2.PingReply.FromString(ping.reply).instance
    f.seeds = seeds(f)
    yield f
    ctl.close()
    agent.close()


def _send(fz: Fuzz, svc: str, name: str, body, what: str) -> Outcome:
    if isinstance(body, list):
        body = safe_stream(svc, name, body)
    else:
        body = make_safe(svc, name, body)
    out = fz.call(svc, name, body)
    fz.check(svc, name, out, f"{what} {_short(body)}", known_bug(svc, name, body))
    if svc == "Agent" and name == "LaunchStep":  # no valid credential: nothing may start
        for r in out.reply or []:
            msg = agent_pb2.StepOutput.FromString(r)
            assert not msg.started and not msg.exited, f"a fuzzed step started: {msg}"
    if svc == "Agent" and name == "LaunchJobs" and out.code is grpc.StatusCode.OK:
        assert not agent_pb2.LaunchJobsReply.FromString(out.reply).accepted, \
            f"a fuzzed launch was accepted: {_short(body)}"
    return out


# ---- 0. authentication ---------------------------------------------------------------------------
GARBAGE_TOKENS = ["", " ", "x", "u1", "d1", "|" * 10, "u1|" + "|" * 9, "d1|||||",
                  "d1|node:node1|Ping|0|00|00", "u1|cluster|local|slurmctld|0|0|h|0|9e99|n|m",
                  "u1|cluster|local|slurmctld|0|0|h|nan|nan|n|" + "0" * 64, "A" * 4000,
                  "d1|slurmctld|Ping|1e309|n|" + "f" * 64, "d1|node:node1|x|-inf|n|m"]


@pytest.mark.parametrize("svc,name", AUTHENTICATED, ids=[f"{s}.{n}" for s, n in AUTHENTICATED])
def test_bad_tokens_are_unauthenticated(fz, svc, name):
    """No token, garbage tokens, the other kind of token, a token for another method, a replayed
    token: UNAUTHENTICATED, before any servicer runs (so an empty request is enough)."""
    body = make_safe(svc, name, fz.seeds[(svc, name)][0].SerializeToString())
    user_method = svc == "Controller" and name not in CONTROLLER_DAEMON_METHODS
    other = "Ping" if name != "Ping" else "GetDiag"
    wrong = [("no metadata", ()), ("another key", (("x-other", "v"),))]
    wrong += [(f"garbage {t[:40]!r}", ((AUTH_KEY, t),)) for t in GARBAGE_TOKENS]
    if user_method:
        wrong += [("a daemon token", daemon_metadata(fz.node1_key, "node:node1", name)),
                  ("a user token for another audience", ((AUTH_KEY, authsock.fetch_token(
                      fz.cfg.auth_socket, tokens.CONTROLLER).replace("|slurmctld|", "|slurmd|")),))]
    else:
        wrong += [("a user token", fz.user_md()),
                  ("a token for another method", daemon_metadata(
                      fz.node1_key, "node:node1" if svc == "Controller" else tokens.CONTROLLER, other)),
                  ("the other direction's token", daemon_metadata(
                      fz.node1_key, tokens.CONTROLLER if svc == "Controller" else "node:node1", name)),
                  ("a forged key", daemon_metadata(b"k" * 32, "node:node1" if svc == "Controller"
                                                   else tokens.CONTROLLER, name))]
        if svc == "Controller":
            wrong.append(("node2's name with node1's key",
                          daemon_metadata(fz.node1_key, "node:node2", name)))
    for what, md in wrong:
        out = fz.call(svc, name, body, metadata=md)
        fz.check(svc, name, out, what)
        assert out.code is grpc.StatusCode.UNAUTHENTICATED, f"{svc}/{name} with {what}: {out}"
    md = fz.valid_md(svc, name)
    first = fz.call(svc, name, body, metadata=md)
    fz.check(svc, name, first, "a fresh token")
    assert first.code is not grpc.StatusCode.UNAUTHENTICATED, f"{svc}/{name}: valid token refused: {first}"
    again = fz.call(svc, name, body, metadata=md)
    fz.check(svc, name, again, "a replayed token")
    assert again.code is grpc.StatusCode.UNAUTHENTICATED, f"{svc}/{name}: replay accepted: {again}"


@pytest.mark.parametrize("svc,name", AUTHENTICATED, ids=[f"{s}.{n}" for s, n in AUTHENTICATED])
@fuzz_settings(6)
@given(token=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=120)
       | st.lists(st.sampled_from(["u1", "d1", "node:node1", "slurmctld", "cluster", "local", "0",
                                   "nan", "-1", "", "Ping", "1e400"]), max_size=12).map("|".join))
def test_random_tokens_are_unauthenticated(fz, svc, name, token):
    out = fz.call(svc, name, make_safe(svc, name, b""), metadata=((AUTH_KEY, token),))
    fz.check(svc, name, out, f"token {token!r}")
    assert out.code is grpc.StatusCode.UNAUTHENTICATED, f"{svc}/{name} with token {token!r}: {out}"


# ---- 1. raw bytes --------------------------------------------------------------------------------
@pytest.mark.parametrize("svc,name", METHODS, ids=METHOD_IDS)
@fuzz_settings(20)
@given(data=st.data())
def test_raw_bytes(fz, svc, name, data):
    if _streaming(svc, name):
        body = data.draw(st.lists(raw_bodies, max_size=3), label="stream")
    else:
        body = data.draw(raw_bodies, label="body")
    _send(fz, svc, name, body, "raw bytes")


# ---- 2. well-typed hostile messages --------------------------------------------------------------
@pytest.mark.parametrize("svc,name", METHODS, ids=METHOD_IDS)
@fuzz_settings(40)
@given(data=st.data())
def test_typed_messages(fz, svc, name, data):
    m = _method(svc, name)
    values = message_values(m.input_type)
    if _streaming(svc, name):
        msgs = data.draw(st.lists(values, max_size=3), label="stream")
        body = [build(svc, name, v).SerializeToString() for v in msgs]
    else:
        v = data.draw(values, label="fields")
        msg = build(svc, name, v)
        # steer some examples into the paths behind the first checks
        if svc == "Controller" and name in ("NodeHeartbeat", "ReportJobEvents") and data.draw(
                st.booleans(), label="as node1"):
            msg.node, msg.instance = "node1", fz.instance
        body = msg.SerializeToString()
    _send(fz, svc, name, body, "typed message")


# ---- 3. mutated valid requests -------------------------------------------------------------------
@pytest.mark.parametrize("svc,name", METHODS, ids=METHOD_IDS)
@fuzz_settings(30)
@given(data=st.data())
def test_mutated_requests(fz, svc, name, data):
    seed_msgs = fz.seeds[(svc, name)]
    if _streaming(svc, name):
        body = [mutate(m.SerializeToString(), data.draw(mutation_ops, label=f"ops{i}"))
                for i, m in enumerate(seed_msgs)]
    else:
        seed = data.draw(st.sampled_from(seed_msgs), label="seed")
        body = mutate(seed.SerializeToString(), data.draw(mutation_ops, label="ops"))
    _send(fz, svc, name, body, "mutated request")


def test_seeds_cover_every_method(fz):
    assert sorted(fz.seeds) == sorted(METHODS)


# ---- the fuzzer's own checks can fail ------------------------------------------------------------
def test_traceback_detector():
    """The detector fires on a planted servicer traceback and passes grpc's parse failure."""
    planted = ("2026-01-01 00:00:00,000 pyslurm_lite.rpc ERROR SubmitJob failed\n"
               "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
               "ValueError: boom\n"
               "2026-01-01 00:00:00,001 pyslurm_lite.controller INFO fine\n")
    assert len(bad_records(planted)) == 1
    parse = ("2026-01-01 00:00:00,000 grpc._common ERROR Exception deserializing message!\n"
             "Traceback (most recent call last):\n  File \"grpc/_common.py\", line 87\n"
             "google.protobuf.message.DecodeError: Error parsing message\n")
    assert bad_records(parse) == []
    stray = "Exception in thread Thread-3:\nTraceback (most recent call last):\nKeyError: 1\n"
    assert len(bad_records(stray)) == 1


def test_planted_traceback_fails_the_check(fz):
    """A traceback appended to a daemon log after the mark fails LogWatch.check."""
    fz.logs.mark()
    log = fz.cluster.dir / "controller.log"
    with open(log, "a") as f:
        f.write("2026-01-01 00:00:00,000 pyslurm_lite.rpc ERROR planted failed\n"
                "Traceback (most recent call last):\nRuntimeError: planted by test_fuzz_rpc\n")
    with pytest.raises(AssertionError, match="planted by test_fuzz_rpc"):
        fz.logs.check("a planted line")


# ---- bugs the fuzzer found, fixed: the smallest reproducers ------------------------------------
def _answers_cleanly(fz: Fuzz, svc: str, name: str, out: Outcome, allowed: set) -> None:
    assert out.code in allowed, f"{svc}/{name}: {out.code} ({out.details[:300]})"
    fz.logs.check(f"{svc}/{name}")
    fz.alive()


def test_submit_jobs_with_no_specs_answers_cleanly(fz):
    fz.logs.mark()
    out = fz.call("Controller", "SubmitJobs", controller_pb2.SubmitJobsRequest().SerializeToString())
    _answers_cleanly(fz, "Controller", "SubmitJobs", out,
                     {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT})


def test_launch_step_with_an_empty_job_is_refused_cleanly(fz):
    fz.logs.mark()
    launch = agent_pb2.StepInput(launch=agent_pb2.StepLaunch()).SerializeToString()
    out = fz.call("Agent", "LaunchStep", [launch])
    _answers_cleanly(fz, "Agent", "LaunchStep", out, {grpc.StatusCode.OK})
    assert any(agent_pb2.StepOutput.FromString(r).error for r in out.reply), out


def test_launch_jobs_with_a_node_addr_without_equals_answers_cleanly(fz):
    fz.logs.mark()
    req = agent_pb2.LaunchJobsRequest(node_addrs=["node1"]).SerializeToString()
    out = fz.call("Agent", "LaunchJobs", req)
    _answers_cleanly(fz, "Agent", "LaunchJobs", out,
                     {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.ABORTED})


# ---- afterwards the cluster still works ----------------------------------------------------------
def test_cluster_still_serves_after_fuzzing(fz, cluster):
    fz.alive()
    fz.logs.mark()
    # cancel everything the fuzzer submitted (any user: specs named random uids), delete every
    # reservation, resume both nodes
    cancel = controller_pb2.CancelJobsRequest(filter=controller_pb2.JobFilter())
    out = fz.call("Controller", "CancelJobs", cancel.SerializeToString())
    assert out.code is grpc.StatusCode.OK, out
    out = fz.call("Controller", "GetReservations", b"")
    assert out.code is grpc.StatusCode.OK, out
    for resv in controller_pb2.GetReservationsReply.FromString(out.reply).reservations:
        d = fz.call("Controller", "DeleteReservation",
                    controller_pb2.DeleteReservationRequest(name=resv.name).SerializeToString())
        assert d.code is grpc.StatusCode.OK, (resv.name, d)
    out = fz.call("Controller", "UpdateNodes", controller_pb2.UpdateNodesRequest(
        names=["node1", "node2"], state="RESUME").SerializeToString())
    assert out.code is grpc.StatusCode.OK, out
    deadline = time.monotonic() + 30
    while True:
        r = cluster.run(["squeue", "-h", "-o", "%i %T"])
        assert r.returncode == 0, f"squeue failed: {r.stdout}{r.stderr}"
        left = [ln for ln in r.stdout.splitlines() if ln.strip()]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert not left, f"fuzzed jobs still queued after cancelling them all: {left[:10]}"
    r = cluster.run(["sinfo", "-h", "-o", "%N %t"])
    assert r.returncode == 0, r.stderr
    job = cluster.sbatch("--wrap", "true", cwd=cluster.dir)  # its slurm-N.out lands there
    assert wait_final(cluster, job) == "COMPLETED", cluster.log_tails()
    fz.alive()
    fz.logs.check("the final checks")
