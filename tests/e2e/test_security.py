"""Security is part of correctness: jobs run as their user, a user cannot touch another user's
jobs, daemon-only RPCs need the cluster key, and the state database is private."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess

import grpc
import pytest

from pyslurm_lite import config
from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc
from pyslurm_lite.client import Client
from pyslurm_lite.model import JobSpec
from pyslurm_lite.rpc.grpcutil import UID_KEY, USER_KEY, daemon_metadata, load_or_create_key

from conftest import wait_final

TEST_USER = "pyslurmtest"


@pytest.fixture(scope="module")
def test_user(cluster):
    if os.geteuid() != 0:
        pytest.skip("needs root to create a user and switch to it")
    # The agent's spool (inside the cluster dir) must be traversable for a user's job to exec
    # its script, as /var/spool is; pytest makes its base directory 0700.
    for parent in [cluster.dir, *cluster.dir.parents]:
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    try:
        return pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "-m", TEST_USER], check=True, capture_output=True)
        return pwd.getpwnam(TEST_USER)


def _client(cluster) -> Client:
    return Client(config.load(str(cluster.conf)))


def _stub(cluster):
    cfg = config.load(str(cluster.conf))
    return controller_pb2_grpc.ControllerStub(grpc.insecure_channel(cfg.controller_target)), cfg


def _as_user(uid: int, name: str) -> tuple:
    return ((UID_KEY, str(uid)), (USER_KEY, name))


@pytest.mark.root
def test_job_runs_as_its_user(cluster, test_user):
    """Submitted (by an operator) for the test user, the script runs with that uid, gid and
    groups, writes its output as that user, and cannot write root's files."""
    home = test_user.pw_dir
    spec = JobSpec(script="#!/bin/sh\nid -u; id -g\ntouch /root/pyslurm-forbidden && echo WROTE\n",
                   work_dir=home, uid=test_user.pw_uid, gid=test_user.pw_gid,
                   groups=[test_user.pw_gid], user=TEST_USER,
                   environment={"PATH": "/usr/bin:/bin", "HOME": home})
    job_id = _client(cluster).submit(spec)
    assert wait_final(cluster, job_id) in ("COMPLETED", "FAILED")
    out = os.path.join(home, f"slurm-{job_id}.out")
    lines = open(out).read().split()
    assert lines[:2] == [str(test_user.pw_uid), str(test_user.pw_gid)]
    assert "WROTE" not in lines and not os.path.exists("/root/pyslurm-forbidden")
    assert os.stat(out).st_uid == test_user.pw_uid


@pytest.mark.root
def test_user_cannot_cancel_or_hold_another_users_job(cluster, test_user):
    job_id = cluster.sbatch("--hold", "--wrap", "true")  # root's job
    stub, _ = _stub(cluster)
    md = _as_user(test_user.pw_uid, TEST_USER)
    reply = stub.CancelJobs(pb.CancelJobsRequest(filter=pb.JobFilter(job_ids=[job_id])), metadata=md)
    assert reply.errors and "permission denied" in reply.errors[0].message.lower()
    reply = stub.UpdateJobs(pb.UpdateJobsRequest(job_ids=[job_id], action="release"), metadata=md)
    assert reply.errors and "permission denied" in reply.errors[0].message.lower()
    assert cluster.state(job_id) == "PENDING"
    # and a user cannot submit a job that would run as someone else
    spec = pb.SubmitJobRequest(spec={"script": "#!/bin/sh\ntrue\n", "uid": 0, "user": "root",
                                     "work_dir": "/tmp", "num_nodes": 1, "num_tasks": 1,
                                     "cpus_per_task": 1})
    with pytest.raises(grpc.RpcError) as e:
        stub.SubmitJob(spec, metadata=md)
    assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert cluster.run(["scancel", str(job_id)]).returncode == 0  # its owner (root) may


def test_agent_methods_need_the_cluster_key(cluster):
    stub, cfg = _stub(cluster)
    request = pb.NodeHeartbeatRequest(node="node1", instance="forged")
    with pytest.raises(grpc.RpcError) as e:
        stub.NodeHeartbeat(request)
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    forged_key = b"0" * 64
    with pytest.raises(grpc.RpcError) as e:
        stub.NodeHeartbeat(request, metadata=daemon_metadata(forged_key))
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    key = load_or_create_key(cfg.key_path)
    assert stub.NodeHeartbeat(request, metadata=daemon_metadata(key)).reregister is True


def test_state_database_and_key_are_private(cluster):
    cfg = config.load(str(cluster.conf))
    for path in (os.path.join(cfg.state_save_location, "state.db"), cfg.key_path):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode & 0o077 == 0, f"{path} has mode {oct(mode)}"


def test_cluster_key_creation_is_shared(tmp_path):
    """Two daemons starting together must end up with the same key."""
    path = str(tmp_path / "auth.key")
    a = load_or_create_key(path)
    b = load_or_create_key(path)
    assert a == b and len(a) == 64


def test_agent_refuses_launches_from_another_registration(cluster, tmp_path):
    """A launch decided before the agent (re)registered carries an older epoch: even with the
    cluster key, the agent refuses it (the controller has reconciled without it)."""
    from pyslurm_lite.rpc import wire
    from pyslurm_lite._proto import agent_pb2, agent_pb2_grpc
    from pyslurm_lite.model import Job, JobState, NodeAllocation
    cfg = config.load(str(cluster.conf))
    node = cfg.nodes["node1"]
    key = load_or_create_key(cfg.key_path)
    stub = agent_pb2_grpc.AgentStub(grpc.insecure_channel(f"{node.addr}:{node.port}"))
    marker = tmp_path / "stale-launch-ran"
    job = Job(job_id=434343, spec=JobSpec(uid=0, gid=0, user="root", work_dir=str(tmp_path),
                                           script=f"#!/bin/sh\ntouch {marker}\n", std_out="/dev/null"),
              allocations=[NodeAllocation("node1", 1, 10)], state=JobState.RUNNING)
    req = agent_pb2.LaunchJobsRequest(epoch="an-old-registration", node_addrs=[f"node1={node.addr}"])
    msg = req.jobs.add()
    msg.CopyFrom(wire.to_msg(job, type(msg)))
    with pytest.raises(grpc.RpcError) as e:
        stub.LaunchJobs(req, timeout=10, metadata=daemon_metadata(key))
    assert e.value.code() == grpc.StatusCode.ABORTED and "stale launch" in e.value.details()
    assert not marker.exists()
