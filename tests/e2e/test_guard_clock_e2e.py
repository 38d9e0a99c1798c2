"""EASY++ on a real cluster (1 node x 2 CPUs, sched_policy=easy++) never predicts a job without
a time limit: nothing would kill it when a prediction falls short.

Two 1-second jobs teach the controller this user's run times (~1 s). LONG (1 CPU, -t1) runs,
BIG (2 CPUs, -t1) waits for it (Resources, reserved at LONG's planned end). UNLIMITED (1 CPU,
no -t: MaxTime=UNLIMITED) fits the free CPU now; planned for its user's ~1 s it would backfill,
but planned whole it would hold the CPU BIG is promised for ever: it waits (Priority).
"""

from __future__ import annotations

import time

import pytest

from conftest import configured_cluster, wait_final, wait_state

SHAPE = (1, 2, 2000, 0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "guardclock", SHAPE,
                                  extra="SchedulerParameters=sched_policy=easy++\n")


def squeue(cluster, job, fmt) -> str:
    r = cluster.run(["squeue", "-h", "-j", str(job), "-o", fmt])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_unlimited_job_is_not_backfilled_on_a_prediction(cluster):
    for _ in range(2):  # this user's history: two runs of about a second
        assert wait_final(cluster, cluster.sbatch("-c1", "-t1", "-o", "/dev/null", "--wrap", "sleep 1")) == "COMPLETED"
    long = cluster.sbatch("-c1", "-t1", "-o", "/dev/null", "--wrap", "sleep 50")
    wait_state(cluster, long, "RUNNING")
    big = cluster.sbatch("-c2", "-t1", "-o", "/dev/null", "--wrap", "sleep 1")
    unlimited = cluster.sbatch("-c1", "-o", "/dev/null", "--wrap", "sleep 1")
    try:
        assert squeue(cluster, unlimited, "%l") == "UNLIMITED"
        deadline = time.monotonic() + 10
        while squeue(cluster, unlimited, "%T %r") != "PENDING Priority" and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # a few more passes: it still waits (a prediction would have started it)
        assert squeue(cluster, unlimited, "%T %r") == "PENDING Priority"
        assert squeue(cluster, big, "%T %r") == "PENDING Resources"
        assert cluster.state(long) == "RUNNING"
    finally:
        cluster.run(["scancel", str(long), str(big), str(unlimited)])
