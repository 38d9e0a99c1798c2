"""wire.py: model dataclasses <-> protobuf messages, losslessly."""

from __future__ import annotations

import dataclasses

import pytest

from pyslurm_lite import model
from pyslurm_lite.rpc import wire
from pyslurm_lite._proto import types_pb2
from pyslurm_lite.model import (GpuDevice, GresRequest, Job, JobSpec, JobState, Node,
                                NodeAllocation, NodeConfig, NodeState, Partition, Reason)


def full_job() -> Job:
    """A Job with every kind of field set away from its default."""
    spec = JobSpec(
        name="train", script="#!/bin/bash\necho ünïcode\n", argv=["--lr", "0.1"],
        work_dir="/w", std_out="o-%j", std_err="e-%j", std_in="/dev/zero", open_mode="append",
        partition="gpu", account="lab", qos="high", num_nodes=2, num_tasks=4, ntasks_set=True,
        cpus_per_task=3, ntasks_per_node=2, mem_per_node=3 * 1024 * 1024, mem_per_cpu=0,
        time_limit=model.UNLIMITED, gres=[GresRequest("gpu", "a100", 2), GresRequest("gpu", "", 1)],
        gpus=4, gpus_per_node=2, gpu_type="a100", environment={"A": "1", "EMPTY": "", "U": "ü"},
        export="NONE", begin_time=1_700_000_123.25, hold=True, user="alice", uid=1000, gid=100,
        groups=[100, 27], submit_host="login1", nice=-5, requeue=False, constraint="ib&nvme",
        exclusive=True, comment="c", nodelist="node[1-2]", exclude="node3", signal="USR1@60",
        batch=True, submit_dir="/w", array="")
    return Job(
        job_id=2**40 + 7, spec=spec, state=JobState.OUT_OF_MEMORY, reason=Reason.NON_ZERO_EXIT,
        priority=4294901758, submit_time=1_700_000_000.5, eligible_time=1_700_000_001.0,
        start_time=1_700_000_010.125, end_time=1_700_000_020.0, exit_code=137, exit_signal=9,
        allocations=[NodeAllocation("node1", 6, 4096, [0, 3]), NodeAllocation("node2", 6, 4096, [])],
        restart_count=2, held=True, held_by_admin=True, time_limit=90, partition="gpu",
        master_port=29777, batch_host="node1")


def round_trip(obj, msg_cls):
    blob = wire.to_msg(obj, msg_cls).SerializeToString()
    msg = msg_cls()
    msg.ParseFromString(blob)
    return wire.from_msg(msg, type(obj))


def test_job_round_trip():
    job = full_job()
    back = round_trip(job, types_pb2.Job)
    assert back == job
    assert isinstance(back.state, JobState) and isinstance(back.reason, Reason)
    assert isinstance(back.spec.gres[0], GresRequest)
    assert isinstance(back.allocations[0], NodeAllocation)


def test_compiled_converters_equal_the_plan_walk(monkeypatch):
    """Past COMPILE_AFTER uses a plan runs compiled: the same messages and dataclasses."""
    monkeypatch.setattr(wire, "_uses", {})
    monkeypatch.setattr(wire, "_makers", {})
    monkeypatch.setattr(wire, "_fillers", {})
    job = full_job()
    blobs = [wire.to_msg(job, types_pb2.Job).SerializeToString(deterministic=True)
             for _ in range(wire.COMPILE_AFTER + 2)]
    assert (Job, types_pb2.Job.DESCRIPTOR) in wire._fillers  # the last ones ran compiled
    assert len(set(blobs)) == 1
    backs = [round_trip(job, types_pb2.Job) for _ in range(wire.COMPILE_AFTER + 2)]
    assert (Job, types_pb2.Job.DESCRIPTOR) in wire._makers
    assert all(b == job for b in backs)
    assert isinstance(backs[-1].state, JobState) and isinstance(backs[-1].allocations[0], NodeAllocation)


def test_default_job_round_trip():
    job = Job(job_id=1, spec=JobSpec())
    assert round_trip(job, types_pb2.Job) == job


def test_enums_travel_as_slurm_names():
    msg = wire.to_msg(full_job(), types_pb2.Job)
    assert (msg.state, msg.reason) == ("OUT_OF_MEMORY", "NonZeroExitCode")


def test_node_round_trip():
    node = Node(
        config=NodeConfig(name="node1", addr="10.0.0.1", port=7001, cpus=32, real_memory=256000,
                          gres=[GresRequest("gpu", "a100", 4)], features=["ib"], weight=3,
                          sockets=2, cores_per_socket=16, threads_per_core=1),
        state=NodeState.MIXED, drain=True, reason="maint", reason_time=1.5, responding=True,
        last_heartbeat=2.5, boot_time=3.5,
        gpus=[GpuDevice(index=0, type="a100", uuid="GPU-1", name="A100", memory_mb=81920, minor=0,
                        pci_bus_id="0000:01:00.0", numa_node=1, simulated=False, file="/dev/nvidia0")],
        alloc_cpus=4, alloc_mem=1000, alloc_gpus=[0], real_cpus=32, real_memory=257000,
        free_memory=100000, cpu_load=1.25, agent_version="0.1.0")
    assert round_trip(node, types_pb2.Node) == node


def test_partition_round_trip():
    part = Partition(name="gpu", nodes=["node1", "node2"], default=True, max_time=2880,
                     default_time=60, max_nodes=2, state="DRAIN", priority_tier=3)
    assert round_trip(part, types_pb2.Partition) == part


@pytest.mark.parametrize("cls", [Job, JobSpec, NodeAllocation, GresRequest, Node, NodeConfig,
                                 GpuDevice, Partition])
def test_every_dataclass_field_has_a_proto_field(cls):
    """wire skips fields the message lacks, so a field missing from the .proto would be lost
    silently (across a controller restart, say)."""
    msg_fields = set(getattr(types_pb2, cls.__name__).DESCRIPTOR.fields_by_name)
    assert [f.name for f in dataclasses.fields(cls) if f.name not in msg_fields] == []


@pytest.mark.parametrize("size", [0, 1, 127, 128, 300, 16383, 16384, 2**21 + 5])
def test_length_delimited_fields_parse_as_protobuf_writes_them(size):
    """A reply put together as bytes (controller/rpc.py's GetJobs, GetJobHistory) is what
    protobuf would serialize: lengths on both sides of each varint byte boundary."""
    from pyslurm_lite._proto import controller_pb2 as pb
    job = types_pb2.Job(job_id=7, reason="x" * size)
    run = wire.length_delimited(1)(job.SerializeToString()) + wire.length_delimited(2)(b"COMPLETED")
    reply = pb.GetJobHistoryReply()
    reply.MergeFromString(wire.length_delimited(1)(run) * 2)
    assert reply == pb.GetJobHistoryReply(runs=[pb.JobRun(job=job, state="COMPLETED")] * 2)
    if size:  # proto3 leaves an empty string out
        reason = types_pb2.Job.DESCRIPTOR.fields_by_name["reason"].number
        assert wire.length_delimited(reason)(b"a" * size) == \
            types_pb2.Job(reason="a" * size).SerializeToString()
