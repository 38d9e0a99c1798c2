"""A step's task layout comes from its launch credential, not from srun (issue #16, PMI-2):
srun runs as the user and can be patched, and its layout sets PMI_SIZE, SLURM_NTASKS and how
big the agent's PMI server (root) may grow. Each test gets a real credential from the real
controller (CreateStep, as srun does), then drives node1's agent's LaunchStep with a layout
changed from it: refused, nothing started; the unchanged layout starts its tasks."""

from __future__ import annotations

import os
import time

import pytest

from pyslurm_lite import config
from pyslurm_lite._proto import agent_pb2, agent_pb2_grpc
from pyslurm_lite._proto import controller_pb2 as cpb
from pyslurm_lite.client import Client
from pyslurm_lite.rpc.grpcutil import client_channel

from conftest import wait_state


@pytest.fixture(scope="module")
def allocation(cluster, tmp_path_factory):
    """A job holding both nodes (2 CPUs each) while the tests make steps of it."""
    job_id = cluster.sbatch("-N2", "-n4", "--wrap", "sleep 300",
                            cwd=tmp_path_factory.mktemp("allocation"))
    wait_state(cluster, job_id, "RUNNING")
    try:
        yield cluster, job_id
    finally:
        cluster.run(["scancel", str(job_id)])


def _step(cluster, job_id: int, ntasks: int, distribution: str = ""):
    """CreateStep as srun sends it: the reply holds the nodes, task ids and credential."""
    client = Client(config.load(str(cluster.conf)))
    return client._call("CreateStep", cpb.CreateStepRequest(
        job_id=job_id, name="layout", num_tasks=ntasks, num_nodes=2, distribution=distribution))


def _launch(cluster, reply, marker: str, counts=None, task_ids=None, nodes=None) -> list:
    """node1's LaunchStep stream, srun's message with the layout overridden: its replies."""
    node = reply.nodes[0]
    launch = agent_pb2.StepLaunch(
        step_id=reply.step_id, argv=["/bin/sh", "-c", f'echo "$SLURM_NTASKS" >> {marker}'],
        env={"PATH": "/usr/bin:/bin", "SLURM_MPI_TYPE": "pmi2"}, cwd="/tmp",
        credential=reply.credential,
        step_nodes=[n.name for n in reply.nodes] if nodes is None else nodes,
        step_tasks_per_node=[len(n.task_ids) for n in reply.nodes] if counts is None else counts,
        task_ids=list(node.task_ids) if task_ids is None else task_ids,
        node_addrs=[f"{n.name}={n.addr}" for n in reply.nodes], cpus_per_task=1)
    launch.job.CopyFrom(reply.job)
    stub = agent_pb2_grpc.AgentStub(client_channel(node.target, config.load(str(cluster.conf))))
    return list(stub.LaunchStep(iter([agent_pb2.StepInput(launch=launch)]), timeout=30))


@pytest.mark.parametrize("change", [
    {"counts": [2, 2**31 - 1]},  # PMI_SIZE and the KVS limit past any bound
    {"counts": [3, 1]},
    {"task_ids": [0, 1, 2]},  # a rank of node2's too
    {"task_ids": [0, 0]},
    {"task_ids": [0]},
    {"nodes": ["node2", "node1"]},
])
def test_a_layout_other_than_the_signed_one_is_refused(allocation, tmp_path, change):
    cluster, job_id = allocation
    reply = _step(cluster, job_id, 4)
    assert [list(n.task_ids) for n in reply.nodes] == [[0, 1], [2, 3]]
    marker = tmp_path / "ran"
    replies = _launch(cluster, reply, str(marker), **change)
    assert len(replies) == 1, replies
    assert "task layout" in replies[0].error and "not the one its launch credential signs" in \
        replies[0].error
    time.sleep(0.2)
    assert not marker.exists()  # no task started


@pytest.mark.parametrize("distribution, ids", [("block", [0, 1]), ("cyclic", [0, 2])])
def test_the_signed_layout_is_launched(allocation, tmp_path, distribution, ids):
    cluster, job_id = allocation
    reply = _step(cluster, job_id, 4, distribution)
    assert list(reply.nodes[0].task_ids) == ids
    marker = tmp_path / "ran"
    replies = _launch(cluster, reply, str(marker))
    assert not any(r.error for r in replies), replies
    assert sorted(r.task_id for r in replies if r.exited) == ids
    assert all(r.exit_code == 0 for r in replies if r.exited)
    assert marker.read_text().split() == ["4", "4"]
    os.unlink(marker)


def test_the_controller_refuses_more_tasks_than_max_tasks_per_node(allocation):
    """srun -O lifts the CPU bound on a step's task count: the controller must not lay out
    2**31 tasks under its lock (nor sign them); Slurm's MaxTasksPerNode (512) bounds them."""
    cluster, job_id = allocation
    client = Client(config.load(str(cluster.conf)))
    t0 = time.monotonic()
    with pytest.raises(Exception, match="Task count specification invalid"):
        client._call("CreateStep", cpb.CreateStepRequest(
            job_id=job_id, name="huge", num_tasks=2**31 - 1, num_nodes=2, overcommit=True))
    assert time.monotonic() - t0 < 5
    assert len(_step(cluster, job_id, 4).nodes) == 2  # the job still makes steps
