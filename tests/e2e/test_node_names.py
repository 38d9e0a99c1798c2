"""Node names resolve for jobs' processes on a local cluster (`cluster up` writes them into a
block of /etc/hosts of its own as root, `cluster down` takes them out), so the usual DDP recipe
MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) works."""

from __future__ import annotations

import pytest

from conftest import start_cluster, wait_final
from pyslurm_lite.cli import hostsfile

pytestmark = pytest.mark.root  # only root may write /etc/hosts

RESOLVE = ('for n in $(scontrol show hostnames "$SLURM_JOB_NODELIST"); do '
           'a=$(getent hosts "$n") && echo "getent $n ${a%% *}" || echo "getent $n FAILED"; '
           'python3 -c "import socket, sys; n = sys.argv[1]; '
           'print(\'python\', n, socket.gethostbyname(n))" "$n"; '
           'done')


@pytest.fixture(scope="module")
def names_cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("names") / "c", shape=(2, 2, 2000, 0))
    try:
        yield c
    finally:
        c.down()


def test_a_job_resolves_every_node_name(names_cluster, tmp_path):
    c = names_cluster
    # other clusters on this machine name their nodes node1... too: this one's own block must be there
    assert hostsfile.has_block(str(c.dir)), open(hostsfile.HOSTS).read()
    j = c.sbatch("-N2", "-o", str(tmp_path / "out"), "--wrap", RESOLVE)
    assert wait_final(c, j) == "COMPLETED"
    lines = sorted((tmp_path / "out").read_text().splitlines())
    assert lines == ["getent node1 127.0.0.1", "getent node2 127.0.0.1",
                     "python node1 127.0.0.1", "python node2 127.0.0.1"], lines


def test_cluster_up_again_keeps_one_block_and_down_removes_it(names_cluster):
    c = names_cluster
    r = c.up()
    assert r.returncode == 0, r.stderr
    assert "node names node[1-2] resolve for jobs" in r.stderr
    text = open(hostsfile.HOSTS).read()
    assert text.count(f"{c.dir} begin") == 1 and text.count(f"{c.dir} end") == 1
    r = c.down()
    assert r.returncode == 0, r.stderr
    # other clusters' blocks and the other lines are the unit tests' (tests/unit/test_hostsfile.py)
    assert str(c.dir) not in open(hostsfile.HOSTS).read()
