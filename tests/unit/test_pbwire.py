"""pbwire: messages encoded without google.protobuf parse, with the generated classes, into what
wire.to_msg makes; replies decode into dicts; Client.submit over h2 sends the same request as
over grpcio; the sbatch path never imports google.protobuf."""

from __future__ import annotations

import dataclasses
import math
import os
import random
import struct
import subprocess
import sys
import threading
import types
from concurrent import futures

import pytest

from pyslurm_lite import model
from pyslurm_lite.rpc import pbwire, wire
from pyslurm_lite._proto import agent_pb2, controller_pb2 as pb, controller_pb2_grpc, types_pb2
from pyslurm_lite._proto.fields import MESSAGES
from pyslurm_lite.model import GresRequest, JobSpec

UNICODE = ["", "a", "ü", "日本語", "emoji 🎉", "nul\x00byte", "x" * 300, "tab\tnew\nline"]
INT32 = [0, 1, -1, 127, 128, 300, -300, 2**31 - 1, -2**31, 16383, 16384]
INT64 = INT32 + [2**31, 2**32, 2**53 + 1, 2**63 - 1, -2**63, -2**40]
DOUBLE = [0.0, -0.0, 1.5, -1.5, 1e-300, 1e300, 1_700_000_123.25, math.inf, -math.inf]


def spec_msg(spec: JobSpec) -> types_pb2.JobSpec:
    """What pbwire's bytes parse into with the generated class."""
    return types_pb2.JobSpec.FromString(pbwire.encode("JobSpec", spec))


def random_spec(rng: random.Random) -> JobSpec:
    kwargs = {}
    for f in dataclasses.fields(JobSpec):
        if rng.random() < 0.4:
            continue  # keep the default
        hint = f.type
        if hint == "str":
            kwargs[f.name] = rng.choice(UNICODE)
        elif hint == "bool":
            kwargs[f.name] = rng.random() < 0.5
        elif hint == "int":
            kind = next(x[2] for x in MESSAGES["JobSpec"] if x[0] == f.name)
            kwargs[f.name] = rng.choice(INT32 if kind == "int32" else INT64)
        elif hint == "float":
            kwargs[f.name] = rng.choice(DOUBLE + [rng.uniform(-1e9, 1e9)])
        elif hint == "list[str]":
            kwargs[f.name] = [rng.choice(UNICODE) for _ in range(rng.randrange(4))]
        elif hint == "list[int]":
            kwargs[f.name] = [rng.choice(INT32) for _ in range(rng.randrange(5))]
        elif hint == "list[GresRequest]":
            kwargs[f.name] = [GresRequest(rng.choice(["gpu", "", "mps"]), rng.choice(UNICODE),
                                          rng.choice(INT32)) for _ in range(rng.randrange(4))]
        elif hint == "dict[str, str]":
            kwargs[f.name] = {rng.choice(UNICODE) + str(i): rng.choice(UNICODE)
                              for i in range(rng.choice([0, 1, 3, 50]))}
        else:
            raise AssertionError(f"a JobSpec field of a type this test does not know: {hint}")
    return JobSpec(**kwargs)


def edge_specs() -> list[JobSpec]:
    big_env = {f"VAR_{i}": "v" * (i % 17) + "ü" for i in range(2000)}
    return [
        JobSpec(),
        JobSpec(name="", std_in="", open_mode="", export="", requeue=False, batch=False,
                num_nodes=0, num_tasks=0, cpus_per_task=0),  # every field at proto3's default
        JobSpec(nice=-5, time_limit=model.UNLIMITED, uid=-1, gid=-2**31, num_nodes=2**31 - 1,
                mem_per_node=-2**63, mem_per_cpu=2**63 - 1, mem_per_gpu=-1, begin_time=-0.5),
        JobSpec(name="ünïcode 日本", script="#!/bin/bash\necho 🎉\n" * 100,
                argv=["", "--lr", "0.1", "ü"], environment={"": "", "A": "1", "É": "ü"}),
        JobSpec(environment=big_env, script="x" * 200_000, groups=list(range(0, 3000, 7)) + [-1]),
        JobSpec(gres=[GresRequest(), GresRequest("", "", 0), GresRequest("gpu", "a100", -3)],
                groups=[0, 0, -2**31], argv=[""]),
        JobSpec(hold=True, ntasks_set=True, exclusive=True, kill_on_invalid_dep=True,
                requeue=True, batch=True, begin_time=1_700_000_123.25, dependency="afterok:1"),
        JobSpec(begin_time=-0.0),
    ]


@pytest.mark.parametrize("spec", edge_specs(), ids=lambda s: f"spec{id(s) % 1000}")
def test_edge_specs_parse_to_what_wire_makes(spec):
    assert spec_msg(spec) == wire.to_msg(spec, types_pb2.JobSpec)


def test_random_specs_parse_to_what_wire_makes():
    rng = random.Random(20261130)
    for _ in range(400):
        spec = random_spec(rng)
        assert spec_msg(spec) == wire.to_msg(spec, types_pb2.JobSpec), spec


def test_deterministic_bytes_equal_protobufs():
    """Without maps (whose order protobuf may choose), the bytes are protobuf's own."""
    rng = random.Random(7)
    for _ in range(100):
        spec = dataclasses.replace(random_spec(rng), environment={})
        assert pbwire.encode("JobSpec", spec) == \
            wire.to_msg(spec, types_pb2.JobSpec).SerializeToString(deterministic=True)


def test_requests_wrapping_specs():
    specs = [JobSpec(), JobSpec(name="b", environment={"X": "y"}), random_spec(random.Random(3))]
    got = pb.SubmitJobRequest.FromString(pbwire.encode("SubmitJobRequest", {"spec": specs[1]}))
    assert got == pb.SubmitJobRequest(spec=wire.to_msg(specs[1], types_pb2.JobSpec))
    many = pb.SubmitJobsRequest.FromString(pbwire.encode("SubmitJobsRequest", {"specs": specs}))
    want = pb.SubmitJobsRequest()
    for s in specs:
        wire.fill_msg(want.specs.add(), s)
    assert many == want
    # a message given through a dict is sent even when empty, as Msg(spec=Msg()) does
    empty = pbwire.encode("SubmitJobRequest", {"spec": {}})
    assert empty == b"\x0a\x00" and pb.SubmitJobRequest.FromString(empty).HasField("spec")
    assert pbwire.encode("SubmitJobRequest", {}) == b""


def test_other_kinds_and_explicit_presence():
    """Kinds JobSpec lacks: bytes, repeated int64/double, map<string, double>, a oneof."""
    job = {"job_id": -7, "factors": {"age": 0.25, "": -1.0, "zero": 0.0}, "expected_start": 2.5,
           "allocations": [{"node": "n1", "gpus": [0, 3]}, {}], "spec": {"name": "x"}}
    msg = types_pb2.Job.FromString(pbwire.encode("Job", job))
    assert msg.job_id == -7 and dict(msg.factors) == job["factors"]
    assert [a.node for a in msg.allocations] == ["n1", ""]
    assert list(msg.allocations[0].gpus) == [0, 3]
    for value in (0, b"", False):  # a oneof member is sent even at its default
        key = {int: "signal", bytes: "stdin", bool: "stdin_eof"}[type(value)]
        got = agent_pb2.StepInput.FromString(pbwire.encode("StepInput", {key: value}))
        assert got.WhichOneof("body") == key
    got = agent_pb2.StepInput.FromString(pbwire.encode("StepInput", {"stdin": b"\x00\xff"}))
    assert got.stdin == b"\x00\xff"
    assert pbwire.decode("Job", types_pb2.Job(job_id=-7, factors={"a": 1.5}).SerializeToString()) \
        ["factors"] == {"a": 1.5}


def test_bad_values_raise_like_protobuf():
    with pytest.raises(ValueError):
        pbwire.encode("JobSpec", JobSpec(nice=2**31))
    with pytest.raises(ValueError):
        pbwire.encode("JobSpec", JobSpec(mem_per_node=2**63))
    with pytest.raises(TypeError):
        pbwire.encode("JobSpec", JobSpec(name=3))
    with pytest.raises(TypeError):
        pbwire.encode("JobSpec", JobSpec(num_tasks=1.5))
    with pytest.raises(TypeError):
        pbwire.encode("JobSpec", object())


def test_decode_replies():
    for job_id in (0, 1, 2**40 + 7, -1, 2**63 - 1):
        raw = pb.SubmitJobReply(job_id=job_id).SerializeToString()
        want = {"job_id": job_id, "warnings": []}
        assert pbwire.decode("SubmitJobReply", raw) == want
        assert pbwire.decode("SubmitJobReply", memoryview(bytearray(raw))) == want
    ids = [1, 0, -5, 2**62, 7]
    raw = pb.SubmitJobsReply(job_ids=ids).SerializeToString()
    assert pbwire.decode("SubmitJobsReply", raw) == {"job_ids": ids}
    # unpacked repeated numbers are accepted too, and unknown fields skipped
    unpacked = b"".join(b"\x08" + bytes([i]) for i in (1, 2, 3))
    unknown = (b"\x98\x06\x05" + b"\xa2\x06\x03abc" + b"\xa9\x06" + b"\0" * 8
               + b"\xad\x06" + b"\0" * 4)  # fields 99 (varint), 100 (len), 101 (i64), 101 (i32)
    assert pbwire.decode("SubmitJobsReply", unknown + unpacked) == {"job_ids": [1, 2, 3]}
    reply = pb.PingReply(cluster_name="ü", now=12.5)
    assert pbwire.decode("PingReply", reply.SerializeToString())["cluster_name"] == "ü"
    assert pbwire.decode("PingReply", reply.SerializeToString())["now"] == 12.5


def test_decode_round_trips_specs():
    rng = random.Random(11)
    for _ in range(100):
        spec = random_spec(rng)
        got = pbwire.decode("JobSpec", wire.to_msg(spec, types_pb2.JobSpec).SerializeToString())
        got["gres"] = [GresRequest(**g) for g in got["gres"]]
        want = dataclasses.asdict(spec)
        want["gres"] = spec.gres
        assert got == want


@pytest.mark.parametrize("raw", [b"\x08", b"\x08\xff", b"\x12\x05ab", b"\x09\x00", b"\x0b",
                                 b"\x08" + b"\xff" * 11])
def test_decode_malformed_raises_value_error(raw):
    with pytest.raises(ValueError):
        pbwire.decode("SubmitJobReply", raw)


def test_method_paths_match_the_descriptors():
    service = pb.DESCRIPTOR.services_by_name["Controller"]
    for m in service.methods:
        assert pbwire.method_path("Controller", m.name) == f"/{service.full_name}/{m.name}"
        assert pbwire.request_type("Controller", m.name) == m.input_type.name
        assert pbwire.reply_type("Controller", m.name) == m.output_type.name
    with pytest.raises(KeyError):
        pbwire.method_path("Controller", "NoSuchMethod")


def test_field_table_matches_the_descriptors():
    for module in (types_pb2, pb, agent_pb2):
        for name, desc in module.DESCRIPTOR.message_types_by_name.items():
            fields = sorted(desc.fields, key=lambda f: f.number)
            table = MESSAGES[name]
            assert [(f[0], f[1]) for f in table] == [(f.name, f.number) for f in fields]
            for (fname, _, kind, label, ref), f in zip(table, fields):
                is_map = f.message_type is not None and f.message_type.GetOptions().map_entry
                assert (kind == "map") == bool(is_map), fname
                assert (label == 1) == (f.is_repeated and not is_map), fname
                assert (label == 2) == (f.containing_oneof is not None), fname
                if kind == "message":
                    assert ref == f.message_type.name, fname


# ---- Client.submit over h2 (pbwire) and grpcio send the same request -------------------------
class Recorder(controller_pb2_grpc.ControllerServicer):
    def __init__(self):
        self.specs: list = []
        self.lock = threading.Lock()

    def SubmitJob(self, request, context):
        with self.lock:
            self.specs.append(request.spec)
        return pb.SubmitJobReply(job_id=2**40 + len(self.specs))

    def SubmitJobs(self, request, context):
        with self.lock:
            self.specs.extend(request.specs)
        return pb.SubmitJobsReply(job_ids=[-len(request.specs), 0, 5][:len(request.specs)])


@pytest.fixture(scope="module")
def auth_socket(tmp_path_factory):
    """An auth socket whose tokens are just counted strings (the fake servers check none)."""
    from pyslurm_lite.rpc.authsock import AuthSocketServer
    sock = AuthSocketServer(str(tmp_path_factory.mktemp("run") / "sack.socket"),
                            lambda uid, gid, aud: f"{aud}:{uid}", frozenset({"slurmctld"}))
    sock.start()
    yield sock.path
    sock.close()


@pytest.fixture(scope="module")
def recorder(auth_socket):
    import grpc
    rec = Recorder()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    controller_pb2_grpc.add_ControllerServicer_to_server(rec, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield rec, types.SimpleNamespace(controller_target=f"127.0.0.1:{port}", auth_socket=auth_socket)
    server.stop(None)


def test_client_submit_sends_the_same_over_both_transports(recorder):
    from pyslurm_lite.client import Client
    rec, cfg = recorder
    sent = {}
    for transport in ("grpcio", "h2"):
        rec.specs.clear()
        client = Client(cfg=cfg, transport=transport)
        specs = edge_specs()[:4]
        ids = [client.submit(dataclasses.replace(s)) for s in specs]
        assert ids == [2**40 + i for i in range(1, 5)]
        assert client.submit_many([JobSpec(name="a"), JobSpec(name="b", nice=-3)]) == [-2, 0]
        sent[transport] = list(rec.specs)
    assert sent["h2"] == sent["grpcio"] and sent["h2"][0].user and sent["h2"][0].uid == os.getuid()


def test_client_submit_over_h2_maps_errors(auth_socket):
    from pyslurm_lite import errors
    from pyslurm_lite.client import Client
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    cfg = types.SimpleNamespace(controller_target=f"127.0.0.1:{port}", auth_socket=auth_socket)
    client = Client(cfg=cfg, transport="h2")
    with pytest.raises(errors.ControllerUnreachable):
        client.submit(JobSpec(user="u"))


def test_sbatch_path_does_not_import_protobuf():
    """Client.submit over h2 loads neither google.protobuf nor the generated *_pb2 modules."""
    code = (
        "import sys, types\n"
        "import pyslurm_lite.cli.sbatch\n"
        "from pyslurm_lite.client import Client\n"
        "from pyslurm_lite.model import JobSpec\n"
        "import pyslurm_lite.client as c\n"
        "import pyslurm_lite.rpc.common as rc\n"
        "rc.user_metadata = lambda path: ()\n"
        "cfg = types.SimpleNamespace(controller_target='127.0.0.1:1', auth_socket='/nonexistent')\n"
        "link = c._H2Link(cfg)\n"
        "def unary(path, body, metadata, timeout):\n"
        "    print(path)\n"
        "    return b'\\x08\\x2a'\n"
        "link.channel.unary = unary\n"
        "cl = Client(cfg=cfg, transport='h2')\n"
        "cl._link = link\n"
        "print(cl.submit(JobSpec(user='u')))\n"
        "bad = sorted(m for m in sys.modules if m.startswith('google') or m.endswith('_pb2'))\n"
        "print(bad)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["/pyslurm_lite.v1.Controller/SubmitJob", "42", "[]"]


def test_packed_doubles_and_varints_bytes():
    """Byte-level spot checks against the protobuf encoding spec."""
    assert pbwire.encode("JobSpec", {"nice": -1}) == b"\x88\x02" + b"\xff" * 9 + b"\x01"
    assert pbwire.encode("JobSpec", {"begin_time": 1.0}) == b"\xd1\x01" + struct.pack("<d", 1.0)
    assert pbwire.encode("JobSpec", {"groups": [1, 300]}) == b"\xfa\x01\x03\x01\xac\x02"
    assert pbwire.encode("JobSpec", {"hold": True, "requeue": False}) == b"\xd8\x01\x01"
