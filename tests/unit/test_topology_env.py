"""SLURM_TOPOLOGY_ADDR and SLURM_TOPOLOGY_ADDR_PATTERN in a job's and a step's environment:
the node's switches (topology/tree) when topology.conf is read, else the node alone."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite import topology
from pyslurm_lite.agent.env import batch_environment, step_environment
from pyslurm_lite.config import parse

CONF = ("ClusterName=c\nControlMachine=localhost\n"
        "NodeName=node[1-3] CPUs=2 RealMemory=1000\nPartitionName=main Nodes=ALL Default=YES\n")
TREE = "SwitchName=s1 Nodes=node[1-2]\nSwitchName=s2 Nodes=node3\nSwitchName=top Switches=s[1-2]\n"


def _envs(cfg, node):
    job = model_job(5, nodes=(node,))
    batch = batch_environment(job, cfg, node, {})
    step = step_environment(job, cfg, node, {}, 0, [node], [1], {}, 1, False)
    return [{k: e[k] for k in ("SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN")}
            for e in (batch, step)]


@pytest.mark.parametrize("node, addr", [("node1", "top.s1.node1"), ("node3", "top.s2.node3")])
def test_tree_gives_the_switch_path(node, addr):
    cfg = parse(CONF, "slurm.conf")
    cfg.topology = topology.parse(TREE, "topology.conf", list(cfg.nodes))
    want = {"SLURM_TOPOLOGY_ADDR": addr, "SLURM_TOPOLOGY_ADDR_PATTERN": "switch.switch.node"}
    assert _envs(cfg, node) == [want, want]


def test_without_topology_the_node_alone():
    want = {"SLURM_TOPOLOGY_ADDR": "node2", "SLURM_TOPOLOGY_ADDR_PATTERN": "node"}
    assert _envs(parse(CONF, "slurm.conf"), "node2") == [want, want]
