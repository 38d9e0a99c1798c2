"""cli/hostsfile: a local cluster's block of /etc/hosts (here a copy in tmp_path)."""

from __future__ import annotations

import pytest

from pyslurm_lite.cli import hostsfile

BASE = "127.0.0.1 localhost\n# a comment of the operator\n10.0.0.5 gpu-box  # the lab's box\n"
ADDRS = {"127.0.0.1": ["node1", "node2"]}


@pytest.fixture
def hosts(tmp_path):
    p = tmp_path / "hosts"
    p.write_text(BASE)
    for d in ("c1", "c2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "slurm.conf").write_text("")
    return p


def test_add_is_idempotent_and_remove_restores_every_other_line(hosts, tmp_path):
    c1 = str(tmp_path / "c1")
    hostsfile.edit(c1, ADDRS, str(hosts))
    once = hosts.read_text()
    assert once.startswith(BASE) and "\n127.0.0.1 node1 node2\n" in once
    hostsfile.edit(c1, ADDRS, str(hosts))
    assert hosts.read_text() == once
    assert hostsfile.has_block(c1, str(hosts))
    hostsfile.edit(c1, None, str(hosts))
    assert hosts.read_text() == BASE and not hostsfile.has_block(c1, str(hosts))


def test_two_clusters_keep_their_own_blocks(hosts, tmp_path):
    c1, c2 = str(tmp_path / "c1"), str(tmp_path / "c2")
    hostsfile.edit(c1, ADDRS, str(hosts))
    hostsfile.edit(c2, {"127.0.0.1": ["node1", "node2", "node3"]}, str(hosts))
    hostsfile.edit(c1, None, str(hosts))
    text = hosts.read_text()
    assert text.startswith(BASE) and "127.0.0.1 node1 node2 node3" in text
    assert "127.0.0.1 node1 node2\n" not in text and hostsfile.has_block(c2, str(hosts))


def test_a_removed_cluster_directory_loses_its_block_at_the_next_edit(hosts, tmp_path):
    c1, c2 = str(tmp_path / "c1"), str(tmp_path / "c2")
    hostsfile.edit(c1, ADDRS, str(hosts))
    (tmp_path / "c1" / "slurm.conf").unlink()
    hostsfile.edit(c2, ADDRS, str(hosts))
    assert not hostsfile.has_block(c1, str(hosts)) and hostsfile.has_block(c2, str(hosts))


def test_long_node_lists_are_cut_into_short_lines(hosts, tmp_path):
    names = [f"node{i}" for i in range(1, 20)]
    hostsfile.edit(str(tmp_path / "c1"), {"127.0.0.1": names}, str(hosts))
    lines = [l for l in hosts.read_text().splitlines() if l.startswith("127.0.0.1 node")]
    assert [len(l.split()) - 1 for l in lines] == [8, 8, 3]


def test_a_name_already_given_another_address_is_reported(hosts, tmp_path):
    hosts.write_text(BASE + "10.1.2.3 node2\n")
    clashes = hostsfile.edit(str(tmp_path / "c1"), ADDRS, str(hosts))
    assert clashes == ["node2 is already 10.1.2.3 in /etc/hosts ('10.1.2.3 node2')"]


def test_cluster_up_says_what_to_add_when_it_cannot_write(tmp_path, capsys):
    from pyslurm_lite import config
    from pyslurm_lite.cli.cluster import publish_names
    cfg = config.parse("NodeName=node[1-2] NodeAddr=127.0.0.1 CPUs=1\nPartitionName=p Nodes=ALL\n")
    assert not publish_names(str(tmp_path), cfg, str(tmp_path / "missing" / "hosts"))
    said = capsys.readouterr().err
    assert "node names node[1-2] do not resolve for jobs" in said
    assert "add this to" in said and "127.0.0.1 node1 node2" in said


def test_cluster_up_writes_the_block_and_says_so(hosts, tmp_path, capsys):
    from pyslurm_lite import config
    from pyslurm_lite.cli.cluster import publish_names, unpublish_names
    cfg = config.parse("NodeName=node[1-2] NodeAddr=127.0.0.1 CPUs=1\nPartitionName=p Nodes=ALL\n")
    c1 = str(tmp_path / "c1")
    assert publish_names(c1, cfg, str(hosts))
    assert "node names node[1-2] resolve for jobs" in capsys.readouterr().err
    unpublish_names(c1, str(hosts))
    assert hosts.read_text() == BASE


def test_only_addresses_and_plain_names_are_written():
    """Root copies these from a slurm.conf into a system file: nothing else may get through."""
    from types import SimpleNamespace as NS
    nodes = {n.name: n for n in (
        NS(name="node1", addr="127.0.0.1"), NS(name="node2", addr="evil\n0.0.0.0 victim"),
        NS(name="x y", addr="127.0.0.1"), NS(name="node3", addr="node3"),
        NS(name="node4", addr="::1"))}
    assert hostsfile.entries(NS(nodes=nodes)) == {"127.0.0.1": ["node1"], "::1": ["node4"]}


def test_a_directory_with_a_line_break_is_refused(hosts, tmp_path):
    with pytest.raises(OSError):
        hostsfile.edit(str(tmp_path / "c1\n127.0.0.1 evil"), ADDRS, path=str(hosts))
    assert hosts.read_text() == BASE


def test_only_loopback_addresses_without_a_scope_and_unqualified_names():
    from types import SimpleNamespace as NS
    nodes = {n.name: n for n in (
        NS(name="node1", addr="::1%x pypi.org files.pythonhosted.org"),
        NS(name="github.com", addr="127.0.0.1"), NS(name="node2", addr="6.6.6.6"),
        NS(name="node3", addr="127.0.0.3"))}
    assert hostsfile.entries(NS(nodes=nodes)) == {"127.0.0.3": ["node3"]}


def test_a_cluster_directory_others_may_write_is_refused(hosts, tmp_path):
    import os
    os.chmod(tmp_path / "c1", 0o777)
    with pytest.raises(OSError, match="could be written"):
        hostsfile.edit(str(tmp_path / "c1"), ADDRS, path=str(hosts))
    assert hosts.read_text() == BASE
