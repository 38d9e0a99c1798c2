"""SchedulerParameters=sched_policy on a real cluster (1 node x 2 CPUs), policy easy++ (EASY++:
backfill plans with each user's recent run times; time limits still kill).

Two 1-second jobs teach the controller this user's run times. Then LONG (1 CPU, -t1, sleeps)
runs, BIG (2 CPUs) waits for it, and three 1-CPU SHORT jobs (-t1, sleep 1) come. Under plain
EASY each short job's minute would outlast LONG's and delay BIG: they wait behind BIG. Under
EASY++ each is planned for ~1 s, and LONG's planned end is its limit (it has outlived its
prediction: the next ladder step is a minute, its limit), so they backfill on the free CPU one
after the other and finish while BIG still waits (Resources). A conf naming an unknown
sched_policy stops the controller with a one-line error naming the valid ones. A job without
a time limit is never planned on a prediction (nothing would kill it when it falls short).
"""

from __future__ import annotations

import re
import time

import pytest

from conftest import PYSLURM_LITE, cli_env, configured_cluster, run_cmd, wait_final, wait_state

SHAPE = (1, 2, 2000, 0)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "schedpolicy", SHAPE,
                                  extra="SchedulerParameters=sched_policy=easy++\n")


def sacct_starts(cluster, jobs) -> dict[int, str]:
    r = cluster.run(["sacct", "-n", "-X", "-P", "-o", "JobID,Start", "-j", ",".join(map(str, jobs))])
    assert r.returncode == 0, r.stderr
    return {int(j): start for j, start in (line.split("|") for line in r.stdout.split())}


def long_running_big_waiting(cluster) -> tuple[int, int]:
    """This user's history (two runs of about a second), then LONG (1 CPU, -t1) running and
    BIG (2 CPUs, -t1) submitted behind it."""
    for _ in range(2):
        assert wait_final(cluster, cluster.sbatch("-c1", "-t1", "-o", "/dev/null", "--wrap", "sleep 1")) == "COMPLETED"
    long = cluster.sbatch("-c1", "-t1", "-o", "/dev/null", "--wrap", "sleep 50")
    wait_state(cluster, long, "RUNNING")
    return long, cluster.sbatch("-c2", "-t1", "-o", "/dev/null", "--wrap", "sleep 1")


def squeue(cluster, job, fmt) -> str:
    r = cluster.run(["squeue", "-h", "-j", str(job), "-o", fmt])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_short_jobs_backfill_on_their_predicted_run_times(cluster):
    long, big = long_running_big_waiting(cluster)
    shorts = [cluster.sbatch("-c1", "-t1", "-o", "/dev/null", "--wrap", "sleep 1") for _ in range(3)]
    try:
        for j in shorts:
            assert wait_final(cluster, j, timeout=30) == "COMPLETED"
        assert cluster.state(long) == "RUNNING"
        assert cluster.state(big) == "PENDING"
        assert squeue(cluster, big, "%r") == "Resources"
        starts = sacct_starts(cluster, [long, big, *shorts])
        assert starts[big] in ("Unknown", "None"), starts
        assert starts[long] <= min(starts[j] for j in shorts), starts  # ISO times: text order
    finally:
        cluster.run(["scancel", str(long), str(big), *map(str, shorts)])


def test_unlimited_job_is_not_backfilled_on_a_prediction(cluster):
    """UNLIMITED (1 CPU, no -t: MaxTime=UNLIMITED) fits the free CPU now; planned for its
    user's ~1 s it would backfill, but nothing would kill it when that falls short, so it is
    planned whole: it would hold the CPU BIG is promised for ever, and waits (Priority)."""
    long, big = long_running_big_waiting(cluster)
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


def test_show_config_lists_it_as_given(cluster):
    r = cluster.run(["scontrol", "show", "config"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"^SchedulerParameters\s+= sched_policy=easy\+\+$", r.stdout, re.M), r.stdout


def test_unknown_sched_policy_stops_the_controller(cluster, tmp_path):
    conf = tmp_path / "slurm.conf"
    text = cluster.conf.read_text().replace(f"StateSaveLocation={cluster.dir}/state",
                                            f"StateSaveLocation={tmp_path}/state")
    conf.write_text(text.replace("sched_policy=easy++", "sched_policy=sjf"))
    r = run_cmd([PYSLURM_LITE, "controller", "--conf", conf], cli_env(conf), timeout=30)
    assert r.returncode != 0
    errors = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, r.stderr
    assert "unknown SchedulerParameters=sched_policy=sjf; valid: easy, easy++, f1, f1-guard, learned" \
        in errors[0], r.stderr
