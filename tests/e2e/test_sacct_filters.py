"""sacct's filters on what a job asked for and got, on a real cluster (2 nodes x 2 CPUs): -q QOS,
-g group, -N nodes it ran on, -i node counts, -I CPU counts, -k/-K time limits, and -T cutting
a running job's times to the window. Option errors need no cluster: tests/unit/test_sacct_options.py."""

from __future__ import annotations

import os
import time

import pytest

from conftest import configured_cluster, wait_final, wait_state

SHAPE = (2, 2, 2000, 0)
AN_HOUR_AGO = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "sacctf", SHAPE,
                                  extra="QOSName=normal\nQOSName=high Priority=10\n")


@pytest.fixture(scope="module")
def jobs(cluster):
    """a: 1 node, 1 CPU, 10 min, QOS high, on node1; b: 2 nodes, 2 CPUs, 20 min; c: 1 node,
    2 CPUs, 30 min, on node2. All ended."""
    out = {
        "a": cluster.sbatch("-w", "node1", "-n1", "-t", "10", "--qos=high", "-o", "/dev/null",
                            "--wrap", "true"),
        "b": cluster.sbatch("-N2", "--ntasks-per-node=1", "-t", "20", "-o", "/dev/null",
                            "--wrap", "true"),
        "c": cluster.sbatch("-w", "node2", "-n1", "-c2", "-t", "30", "-o", "/dev/null",
                            "--wrap", "true"),
    }
    for job_id in out.values():
        assert wait_final(cluster, job_id) == "COMPLETED"
    return out


def listed(cluster, jobs, *args: str) -> set[str]:
    """The names (a, b, c) of our jobs that `sacct -X ARGS` lists."""
    ids = ",".join(str(j) for j in jobs.values())
    r = cluster.run(["sacct", "-X", "-n", "-P", "-o", "JobID", "-j", ids, *args])
    assert r.returncode == 0, r.stderr
    by_id = {str(v): k for k, v in jobs.items()}
    return {by_id[line] for line in r.stdout.split()}


@pytest.mark.parametrize("args, expected", [
    ((), {"a", "b", "c"}),
    (("-q", "high"), {"a"}),
    (("--qos=normal",), {"b", "c"}),
    (("-g", str(os.getgid())), {"a", "b", "c"}),
    (("--gid", "4242"), set()),
    (("-N", "node2"), {"b", "c"}),
    (("--nodelist=node[1-2]",), {"a", "b", "c"}),
    (("-i", "2"), {"b"}),
    (("--nnodes=1-2",), {"a", "b", "c"}),
    (("-I", "1"), {"a"}),
    (("--ncpus=2-4",), {"b", "c"}),
    (("-k", "10"), {"a"}),
    (("-k", "15", "-K", "30:00"), {"b", "c"}),
    (("-K", "10"), {"a", "b", "c"}),  # ignored by itself, as in Slurm
])
def test_filter(cluster, jobs, args, expected):
    assert listed(cluster, jobs, *args) == expected


def test_unknown_qos_is_refused_naming_the_valid_ones(cluster):
    r = cluster.run(["sacct", "-q", "bogus"])
    assert r.returncode == 1
    assert r.stderr == ("sacct: error: You gave a bad qos 'bogus'. Valid QOS's are normal,high\n"
                        "sacct: fatal: problem processing qos list\n")


def test_truncate_cuts_a_running_job_to_the_window(cluster, tmp_path):
    job = cluster.sbatch("-o", "/dev/null", "--wrap", "sleep 60", cwd=tmp_path)
    try:
        wait_state(cluster, job, "RUNNING")
        time.sleep(1.5)
        since = time.strftime("%Y-%m-%dT%H:%M:%S")
        base = ["sacct", "-X", "-n", "-P", "-o", "Start,End", "-j", str(job), "-S", since]
        start, end = cluster.run(base).stdout.strip().split("|")
        assert start < since and end == "Unknown"
        start, end = cluster.run(base + ["-T"]).stdout.strip().split("|")
        assert start == since and since <= end <= time.strftime("%Y-%m-%dT%H:%M:%S")
    finally:
        cluster.run(["scancel", str(job)])
