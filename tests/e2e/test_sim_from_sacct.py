"""`pyslurm-lite simulate --from-sacct`: a real cluster's own sacct history replayed against its
own slurm.conf, then against one with half the CPUs (2 nodes x 2 CPUs -> 2 nodes x 1 CPU).

Six 1-CPU jobs of about 2 s go in at once on 4 CPUs: four run, two wait. On 2 CPUs the replay
must make them wait longer."""

from __future__ import annotations

import csv
import re

import pytest

from conftest import configured_cluster, run_cmd, cli_env, PYSLURM_LITE, wait_final

SHAPE = (2, 2, 2000, 0)
JOBS = 6
FORMAT = ("JobID,User,Account,Partition,QOS,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,"
          "ReqMem,ReqTRES,State")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "fromsacct", SHAPE)


@pytest.fixture(scope="module")
def history(cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("hist")
    ids = [cluster.sbatch("-c", "1", "--mem=100M", "-t", "1", "-o", "/dev/null",
                          "--wrap", "sleep 2") for _ in range(JOBS)]
    for job in ids:
        assert wait_final(cluster, job) == "COMPLETED"
    r = cluster.run(["sacct", "-a", "-X", "--parsable2", "-j", ",".join(map(str, ids)),
                     f"--format={FORMAT}"])
    assert r.returncode == 0, r.stderr
    path = out / "hist.txt"
    path.write_text(r.stdout)
    half = out / "half.conf"
    half.write_text(cluster.conf.read_text().replace("CPUs=2", "CPUs=1"))
    return path, half, ids, out


def simulate(*args):
    return run_cmd([PYSLURM_LITE, "simulate", *args], cli_env())


def mean_wait(table: str) -> float:
    header, row = table.splitlines()[:2]
    cells = dict(zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", row.strip())))
    return float(cells["mean wait s"]), int(cells["jobs"])


def test_replay_on_own_conf_then_half_the_cpus(cluster, history):
    path, half, ids, out = history
    own = simulate("--from-sacct", str(path), "--conf", str(cluster.conf),
                   "--dump", str(out / "own.csv"))
    assert own.returncode == 0, own.stderr
    own_wait, jobs = mean_wait(own.stdout)
    assert jobs == JOBS, own.stdout
    with open(out / "own.csv") as f:
        assert sorted(int(row["id"]) for row in csv.DictReader(f)) == ids  # sacct's JobIDs
    halved = simulate("--from-sacct", str(path), "--conf", str(half))
    assert halved.returncode == 0, halved.stderr
    half_wait, jobs = mean_wait(halved.stdout)
    assert jobs == JOBS and half_wait > own_wait, (own.stdout, halved.stdout)


def test_trace_and_from_sacct_together_or_conf_missing_is_an_error(history):
    path, half, _, _ = history
    for args, message in ((["x.swf", "--from-sacct", str(path), "--conf", str(half)], "not both"),
                          (["--from-sacct", str(path)], "go together"),
                          ([], "give a TRACE")):
        r = simulate(*args)
        assert r.returncode != 0 and message in r.stderr, (args, r.stderr)
