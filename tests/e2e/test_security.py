"""Security is part of correctness: jobs run as their user, daemon-only RPCs need a node's daemon
token, launches need a credential, and the state database and the key are private. The attacks
of real unprivileged users are in test_authz.py and test_agent_launch.py."""

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
from pyslurm_lite.rpc import credential, keys, tokens
from pyslurm_lite.rpc.grpcutil import daemon_metadata

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


def _node_key(cfg, node: str) -> bytes:
    return keys.load(cfg.key_path).key_for(f"node:{node}")


def test_agent_methods_need_a_nodes_daemon_token(cluster):
    """No token, a forged key, a token for another method, one replayed, or node1's key used
    to speak for node2: each refused before the servicer runs; node1's own token works."""
    stub, cfg = _stub(cluster)
    request = pb.NodeHeartbeatRequest(node="node1", instance="forged")

    def refused(metadata, code=grpc.StatusCode.UNAUTHENTICATED, req=request):
        with pytest.raises(grpc.RpcError) as e:
            stub.NodeHeartbeat(req, metadata=metadata)
        assert e.value.code() == code, e.value.details()
        return e.value.details()

    assert "token" in refused(())
    refused(daemon_metadata(b"0" * 32, "node:node1", "NodeHeartbeat"))
    refused(daemon_metadata(_node_key(cfg, "node1"), "node:node1", "RegisterNode"))
    refused(daemon_metadata(_node_key(cfg, "node1"), "node:node2", "NodeHeartbeat"))
    refused(daemon_metadata(_node_key(cfg, "node1"), "node:node1", "NodeHeartbeat"),
            grpc.StatusCode.PERMISSION_DENIED, pb.NodeHeartbeatRequest(node="node2", instance="x"))
    good = daemon_metadata(_node_key(cfg, "node1"), "node:node1", "NodeHeartbeat")
    assert stub.NodeHeartbeat(request, metadata=good).reregister is True
    assert "replayed" in refused(good)


def test_user_calls_need_a_token(cluster):
    """A call without a token says what to do; a token works once."""
    from pyslurm_lite.rpc.authsock import fetch_token
    from pyslurm_lite.rpc.common import AUTH_KEY
    stub, cfg = _stub(cluster)
    with pytest.raises(grpc.RpcError) as e:
        stub.GetJobs(pb.GetJobsRequest())
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED and "token" in e.value.details()
    md = ((AUTH_KEY, fetch_token(cfg.auth_socket, tokens.CONTROLLER)),)
    stub.GetJobs(pb.GetJobsRequest(), metadata=md)
    with pytest.raises(grpc.RpcError) as e:
        stub.GetJobs(pb.GetJobsRequest(), metadata=md)
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED and "replayed" in e.value.details()


def test_state_database_and_key_are_private(cluster):
    cfg = config.load(str(cluster.conf))
    for path in (os.path.join(cfg.state_save_location, "state.db"), cfg.key_path):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode & 0o077 == 0, f"{path} has mode {oct(mode)}"


def test_cluster_key_creation_is_shared(tmp_path):
    """Two daemons starting together must end up with the same key."""
    path = str(tmp_path / "auth.key")
    a = keys.load_or_create(path)
    b = keys.load_or_create(path)
    assert a.is_cluster and a.key_for("node:n1") == b.key_for("node:n1")


def test_agent_refuses_launches_from_another_registration(cluster, tmp_path):
    """A launch decided before the agent (re)registered carries an older epoch: even with the
    cluster key, the agent refuses it (the controller has reconciled without it)."""
    from pyslurm_lite.rpc import wire
    from pyslurm_lite._proto import agent_pb2, agent_pb2_grpc
    from pyslurm_lite.model import Job, JobState, NodeAllocation
    cfg = config.load(str(cluster.conf))
    node = cfg.nodes["node1"]
    key = _node_key(cfg, "node1")
    stub = agent_pb2_grpc.AgentStub(grpc.insecure_channel(f"{node.addr}:{node.port}"))
    marker = tmp_path / "stale-launch-ran"
    job = Job(job_id=434343, spec=JobSpec(uid=0, gid=0, user="root", work_dir=str(tmp_path),
                                           script=f"#!/bin/sh\ntouch {marker}\n", std_out="/dev/null"),
              allocations=[NodeAllocation("node1", 1, 10)], state=JobState.RUNNING)
    claims = credential.Claims(job_id=job.job_id, step=credential.BATCH, restart_count=0, uid=0,
                               gid=0, groups=[0], user="root", nodes=["node1"],
                               alloc={"node1": credential.NodeShare(1, 10, [])})
    req = agent_pb2.LaunchJobsRequest(epoch="an-old-registration", node_addrs=[f"node1={node.addr}"],
                                      credentials=[credential.sign(lambda n: key, claims, 60)])
    msg = req.jobs.add()
    msg.CopyFrom(wire.to_msg(job, type(msg)))
    with pytest.raises(grpc.RpcError) as e:
        stub.LaunchJobs(req, timeout=10, metadata=daemon_metadata(key, tokens.CONTROLLER, "LaunchJobs"))
    assert e.value.code() == grpc.StatusCode.ABORTED and "stale launch" in e.value.details()
    assert not marker.exists()
