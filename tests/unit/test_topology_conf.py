"""topology.conf (pyslurm_lite/topology.py): switches, levels, node paths, Slurm's show lines,
and every malformed file refused with a message naming what is wrong. Table-driven."""

from __future__ import annotations

import pytest

from pyslurm_lite import config, topology
from pyslurm_lite.errors import ConfigError

NODES = [f"node{i}" for i in range(1, 7)]
TREE = """# two leaves under one top switch, then a root over it and a third leaf
SwitchName=s1 Nodes=node[1-2]
SwitchName=s2 Nodes=node[3-4] LinkSpeed=100
SwitchName=top Switches=s[1-2]
SwitchName=s3 Nodes=node[5-6]
SwitchName=root Switches=top,s3
"""


def test_levels_paths_and_show_lines():
    t = topology.parse(TREE, "topology.conf", NODES)
    assert [t.show_line(s) for s in t.switches] == [
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=node[1-2]",
        "SwitchName=s2 Level=0 LinkSpeed=100 Nodes=node[3-4]",
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=s[1-2]",
        "SwitchName=s3 Level=0 LinkSpeed=1 Nodes=node[5-6]",
        "SwitchName=root Level=2 LinkSpeed=1 Nodes=node[1-6] Switches=top,s3",
    ]
    assert t.path("node3") == ("s2", "top", "root")
    assert t.path("node6") == ("s3", "root")
    assert t.address("node3") == ("root.top.s2.node3", "switch.switch.switch.node")
    assert t.address("node6") == ("root..s3.node6", "switch.switch.switch.node")  # no level 1
    assert topology.Topology().environment("node1") == {  # no switches: Slurm's (env_sbatch.txt)
        "SLURM_TOPOLOGY_ADDR": "node1", "SLURM_TOPOLOGY_ADDR_PATTERN": "node"}


BAD = [
    ("SwitchName=s1 Nodes=node[1-6] Switches=s2\n", "has both child switches and nodes"),
    ("SwitchName=s1\n", "has neither child switches nor nodes"),
    ("SwitchName=s1 Nodes=node[1-6]\nSwitchName=s1 Nodes=node1\n", "s1 has already been defined"),
    ("SwitchName=s1 Nodes=node[1-7]\n", "unknown nodes node7"),
    ("SwitchName=s1 Nodes=node[1-6]\nSwitchName=t Switches=s9\n", "invalid child (s9)"),
    ("SwitchName=s1 Nodes=node[1-6]\nSwitchName=a Switches=b\nSwitchName=b Switches=a\n",
     "not a tree: loop a -> b -> a"),
    ("SwitchName=s1 Nodes=node[1-6]\nSwitchName=a Switches=s1\nSwitchName=b Switches=s1\n",
     "s1 is a child of both a and b"),
    ("SwitchName=s1 Nodes=node[1-4]\n", "switches lack access to 2 nodes: node[5-6]"),
    ("SwitchName=s1 Nodes=node[1-6]\nSwitchName=s2 Nodes=node6\n", "node6 is on two leaf switches"),
    ("SwitchName=s1 Nodes=node[1-6] LinkSpeed=fast\n", "bad LinkSpeed=fast"),
    ("SwitchName=s1 Nodes=node[1-6] Colour=red\n", "unknown key(s) colour"),
    ("Nodes=node[1-6]\n", "starts with SwitchName="),
    ("SwitchName=s1 Nodes=node[1-\n", "bad hostlist"),
    ("# nothing\n", "no switches configured"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[m for _, m in BAD])
def test_a_malformed_file_is_refused_with_a_clear_message(text, message):
    with pytest.raises(ConfigError) as e:
        topology.parse(text, "/etc/topology.conf", NODES)
    assert message in str(e.value)
    assert "/etc/topology.conf" in str(e.value)


SLURM_CONF = """ClusterName=c
NodeName=node[1-6] CPUs=2
PartitionName=p Nodes=ALL Default=YES
"""


@pytest.mark.parametrize("plugin_line, expect", [
    ("TopologyPlugin=topology/tree\n", "tree"),
    ("TopologyPlugin=topology/none\n", None),
    ("", None),
    ("TopologyPlugin=topology/dragonfly\n", "warned"),
])
def test_slurm_conf_topology_plugin(tmp_path, plugin_line, expect):
    """topology/tree reads topology.conf beside slurm.conf; none (or absent) does not even look
    at it; Slurm's other plugins are named in the start-up warnings (Config.ignored)."""
    (tmp_path / "topology.conf").write_text(TREE)
    (tmp_path / "slurm.conf").write_text(SLURM_CONF + plugin_line)
    cfg = config.load(str(tmp_path / "slurm.conf"))
    if expect == "tree":
        assert cfg.topology.path("node1") == ("s1", "top", "root")
    else:
        assert cfg.topology is None
    assert any("topology/dragonfly" in i for i in cfg.ignored) == (expect == "warned")


def test_tree_without_topology_conf_or_with_a_bad_one_stops_start_up(tmp_path):
    (tmp_path / "slurm.conf").write_text(SLURM_CONF + "TopologyPlugin=topology/tree\n")
    with pytest.raises(ConfigError, match="cannot read .*topology.conf"):
        config.load(str(tmp_path / "slurm.conf"))
    (tmp_path / "topology.conf").write_text("SwitchName=s1 Nodes=node[1-9]\n")
    with pytest.raises(ConfigError, match="unknown nodes node\\[7-9\\]"):
        config.load(str(tmp_path / "slurm.conf"))


@pytest.mark.parametrize("line, message", [
    ("TopologyPlugin=topology/star\n", "unknown TopologyPlugin=topology/star"),
    ("SchedulerParameters=max_switch_wait=soon\n", "bad max_switch_wait=soon"),
])
def test_bad_slurm_conf_values(line, message):
    with pytest.raises(ConfigError, match=message):
        config.parse(SLURM_CONF + line)


def test_max_switch_wait():
    assert config.parse(SLURM_CONF).max_switch_wait == 300  # Slurm's default
    assert config.parse(SLURM_CONF + "SchedulerParameters=bf_max_job_test=5,max_switch_wait=60\n"
                        ).max_switch_wait == 60


@pytest.mark.parametrize("arg, out, err", [
    (None, ["SwitchName=s1 Level=0 LinkSpeed=1 Nodes=node[1-2]"], ""),
    ("s2", ["SwitchName=s2 Level=0 LinkSpeed=100 Nodes=node[3-4]"], ""),
    ("node[5-6]", ["SwitchName=s3 Level=0 LinkSpeed=1 Nodes=node[5-6]",
                   "SwitchName=root Level=2 LinkSpeed=1 Nodes=node[1-6] Switches=top,s3"], ""),
    ("node[4-5]", ["SwitchName=root Level=2 LinkSpeed=1 Nodes=node[1-6] Switches=top,s3"], ""),
    ("node9", [], "scontrol: error: Topology information contains no switch or node named node9\n"),
])
def test_scontrol_show_topology_selects_as_slurm(capsys, arg, out, err):
    from types import SimpleNamespace

    from pyslurm_lite.cli.showtopo import show_topology
    client = SimpleNamespace(cfg=SimpleNamespace(topology=topology.parse(TREE, "t", NODES)))
    assert show_topology(client, None, arg) == 0  # Slurm's scontrol exits 0 here too
    got = capsys.readouterr()
    lines = got.out.splitlines()
    assert (lines[:1] if arg is None else lines) == out and got.err == err


def test_scontrol_show_topology_without_one(capsys):
    from types import SimpleNamespace

    from pyslurm_lite.cli.showtopo import show_topology
    assert show_topology(SimpleNamespace(cfg=SimpleNamespace(topology=None)), None, None) == 0
    assert capsys.readouterr().err == "scontrol: error: No topology information available\n"
