"""The hand-concatenated GetJobs reply is byte-for-byte what protobuf would encode."""

from pyslurm_lite.rpc import wire
from pyslurm_lite._proto import controller_pb2 as pb, types_pb2
from pyslurm_lite.controller.rpc import _varint

from factories import model_job


def test_concatenated_reply_equals_protobufs_encoding():
    jobs = [model_job(i, name="x" * (i * 40)) for i in range(1, 6)]  # lengths past one varint byte
    blobs = [wire.to_msg(j, types_pb2.Job).SerializeToString() for j in jobs]
    import struct
    raw = b"\x11" + struct.pack("<d", 12.5) + b"".join(b"\x0a" + _varint(len(b)) + b for b in blobs)
    reply = pb.GetJobsReply()
    reply.ParseFromString(raw)
    assert reply.now == 12.5 and [j.spec.name for j in reply.jobs] == [j.spec.name for j in jobs]
    expected = pb.GetJobsReply(now=12.5, jobs=[wire.to_msg(j, types_pb2.Job) for j in jobs])
    assert reply == expected
    assert _varint(300) == b"\xac\x02" and _varint(0) == b"\x00"
