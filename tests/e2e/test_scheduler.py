"""The scheduler on a real cluster: a short job backfills ahead of a waiting big job without
delaying it, and squeue --start shows the big job's reservation."""

from __future__ import annotations

import time

from conftest import start_cluster, wait_final, wait_state

import pytest


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("sched") / "c", shape=(1, 2, 2000, 0))
    try:
        yield c
    finally:
        c.down()


def _times(c, job_id):
    r = c.run(["squeue", "-h", "-j", str(job_id), "-o", "%T %S"])
    return r.stdout.split()


def test_short_job_backfills_without_delaying_the_big_one(one, tmp_path):
    a = one.sbatch("-c", "1", "-t", "2", "--wrap", "sleep 8", cwd=tmp_path)  # holds 1 of 2 CPUs
    wait_state(one, a, "RUNNING")
    big = one.sbatch("-c", "2", "-t", "1", "--wrap", "true", cwd=tmp_path)
    time.sleep(1.5)
    state, expected = _times(one, big)
    assert state == "PENDING" and expected != "N/A", (state, expected)  # reserved at A's limit
    r = one.run(["squeue", "--start", "-h", "-o", "%i %S"])
    assert f"{big} {expected}" in r.stdout, r.stdout
    short = one.sbatch("-c", "1", "-t", "1", "--wrap", "sleep 2", cwd=tmp_path)  # ends before
    long = one.sbatch("-c", "1", "--wrap", "sleep 2", cwd=tmp_path)  # no limit: would delay
    assert wait_state(one, short, "RUNNING") == "RUNNING"
    r = one.run(["squeue", "-h", "-j", str(long), "-o", "%T %r"])
    assert r.stdout.split() == ["PENDING", "Priority"], r.stdout
    assert wait_final(one, big, 60) == "COMPLETED"
    assert wait_final(one, long, 60) == "COMPLETED"
    starts = {j: one.run(["scontrol", "show", "job", str(j)]).stdout.split("StartTime=")[1].split()[0]
              for j in (a, big, short, long)}
    assert starts[short] < starts[big] <= expected  # backfilled ahead, and the big job not delayed
    assert starts[big] <= starts[long]
