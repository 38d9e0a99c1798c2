"""Network topology end to end (TopologyPlugin=topology/tree): a 4-node local cluster with two
leaf switches, s1 (node1, node2) and s2 (node3, node4), under `top`. Real daemons and CLIs:
multi-node jobs land on one leaf switch even where first fit would split them, --switches=N@T
waits (Reason=Resources) or not, scontrol shows the topology and the job's Switches=, and a bad
topology.conf stops the controller at start.
"""

from __future__ import annotations

import pytest

from conftest import PYSLURM_LITE, cli_env, run_cmd, start_cluster, wait_final, wait_state

TOPOLOGY = """SwitchName=s1 Nodes=node[1-2]
SwitchName=s2 Nodes=node[3-4] LinkSpeed=10
SwitchName=top Switches=s[1-2]
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    from pyslurm_lite.cli.cluster import write_config

    def prepare(directory):
        directory.mkdir(exist_ok=True)
        conf = write_config(str(directory), 4, 2, 1000, 0)
        with open(conf, "a") as f:
            f.write("TopologyPlugin=topology/tree\n")
        (directory / "topology.conf").write_text(TOPOLOGY)

    c = start_cluster(tmp_path_factory.mktemp("topology") / "c", shape=(4, 2, 1000, 0), prepare=prepare)
    try:
        yield c
    finally:
        c.down()


def hold(cluster, node: str) -> int:
    """A job that fills node (both CPUs) until cancelled."""
    job = cluster.sbatch("-w", node, "-c2", "-o", "/dev/null", "--wrap", "sleep 300")
    assert wait_state(cluster, job, "RUNNING") == "RUNNING"
    return job


def nodelist(cluster, job: int) -> str:
    return cluster.run(["squeue", "-h", "-j", str(job), "-o", "%N"]).stdout.strip()


def test_scontrol_show_topology(tree):
    r = tree.run(["scontrol", "show", "topology"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=node[1-2]",
        "SwitchName=s2 Level=0 LinkSpeed=10 Nodes=node[3-4]",
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=s[1-2]",
    ]
    assert tree.run(["scontrol", "show", "topology", "node3"]).stdout.splitlines() == [
        "SwitchName=s2 Level=0 LinkSpeed=10 Nodes=node[3-4]",
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=s[1-2]",
    ]
    r = tree.run(["scontrol", "show", "topology", "nosuch"])
    assert "Topology information contains no switch or node named nosuch" in r.stderr


def test_placement_and_switch_count(tree):
    """node1 full: first fit would give node[2-3], one node per leaf; the job gets node[3-4].
    Then node3 full too: only node2 + node4 are free, a two-leaf placement. --switches=1@0
    takes it at once; --switches=1@1:00 waits with Reason=Resources until node3 frees."""
    blockers = [hold(tree, "node1")]
    try:
        job = tree.sbatch("-N2", "-o", "/dev/null", "--wrap", "sleep 300")
        assert wait_state(tree, job, "RUNNING") == "RUNNING"
        assert nodelist(tree, job) == "node[3-4]"
        tree.run(["scancel", str(job)])
        wait_final(tree, job)
        blockers.append(hold(tree, "node3"))

        at_once = tree.sbatch("-N2", "--switches=1@0", "-o", "/dev/null", "--wrap", "true")
        assert wait_final(tree, at_once) == "COMPLETED"
        shown = tree.run(["sacct", "-n", "-X", "-j", str(at_once), "-o", "NodeList%30"]).stdout
        assert shown.split() == ["node[2,4]"]

        waiting = tree.sbatch("-N2", "--switches=1@1:00", "-o", "/dev/null", "--wrap", "sleep 300")
        blockers.append(waiting)
        for _ in range(3):  # a few passes: still pending, for its switch count
            r = tree.run(["squeue", "-h", "-j", str(waiting), "-o", "%T %r"])
            assert r.stdout.split() == ["PENDING", "Resources"], r.stdout
        record = tree.run(["scontrol", "show", "job", str(waiting)]).stdout
        assert "   Switches=1@00:01:00\n" in record
        tree.run(["scancel", str(blockers[1])])  # node3 frees: s2 holds both
        assert wait_state(tree, waiting, "RUNNING") == "RUNNING"
        assert nodelist(tree, waiting) == "node[3-4]"
    finally:
        tree.run(["scancel", *map(str, blockers)])


def test_a_bad_topology_conf_stops_the_controller(tree, tmp_path):
    """The controller refuses to start on a topology.conf naming a node slurm.conf lacks."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(tree.conf.read_text().replace(f"StateSaveLocation={tree.dir}/state",
                                                  f"StateSaveLocation={tmp_path}/state"))
    (tmp_path / "topology.conf").write_text("SwitchName=s1 Nodes=node[1-5]\n")
    r = run_cmd([PYSLURM_LITE, "controller", "--conf", conf], cli_env(conf), timeout=30)
    assert r.returncode != 0
    assert "switch s1 names unknown nodes node5" in r.stderr, r.stderr
    assert "topology.conf:1" in r.stderr
