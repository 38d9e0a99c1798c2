"""-M/--clusters against a real cluster: squeue, sinfo and sshare name it on a "CLUSTER: name"
line above their report, as Slurm 22.05 does (squeue and sinfo only while headers are on); a
cluster that is not ours is refused before anything is asked of the controller."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("cmd, header", [
    (["squeue", "-M", "all"], "JOBID PARTITION"),
    (["sinfo", "--clusters=local"], "PARTITION AVAIL"),
    (["sshare", "-M", "all"], "Account       User"),
])
def test_clusters_line_above_the_report(cluster, cmd, header):
    r = cluster.run(cmd)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "CLUSTER: local", r.stdout
    assert header in lines[1], r.stdout


def test_no_clusters_line_without_headers(cluster):
    r = cluster.run(["squeue", "-h", "-M", "all"])
    assert r.returncode == 0 and "CLUSTER:" not in r.stdout, r.stdout + r.stderr
    r = cluster.run(["squeue"])
    assert r.returncode == 0 and not r.stdout.startswith("CLUSTER:"), r.stdout


def test_other_cluster_is_refused(cluster):
    r = cluster.run(["squeue", "-M", "elsewhere"])
    assert (r.returncode, r.stdout) == (1, "")
    assert "'elsewhere' can't be reached now, or it is an invalid entry for --cluster." in r.stderr


def test_sshare_parsable_letters_are_slurms(cluster):
    """-p/--parsable ends each line with '|'; -P/--parsable2 does not."""
    assert cluster.run(["sshare", "-p"]).stdout.splitlines()[0].endswith("FairShare|")
    assert cluster.run(["sshare", "-P"]).stdout.splitlines()[0].endswith("|FairShare")
