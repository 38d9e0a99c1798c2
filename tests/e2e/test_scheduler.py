"""The scheduler on a real cluster: a short job backfills ahead of a waiting big job without
delaying it, and squeue --start shows the big job's reservation."""

from __future__ import annotations

import re
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


def test_afterok_chain_runs_in_order_and_a_failed_link_stops_it(one, tmp_path):
    log = tmp_path / "order.log"
    first = one.sbatch("--wrap", f"sleep 4; echo first >> {log}", cwd=tmp_path)
    second = one.sbatch(f"--dependency=afterok:{first}", "--wrap", f"echo second >> {log}", cwd=tmp_path)
    third = one.sbatch(f"--dependency=afterok:{second}", "--wrap", f"echo third >> {log}", cwd=tmp_path)
    r = one.run(["squeue", "-h", "-j", str(third), "-o", "%T %r"])
    assert r.stdout.split() == ["PENDING", "Dependency"], r.stdout
    assert wait_final(one, third, 60) == "COMPLETED"
    assert log.read_text().split() == ["first", "second", "third"]
    bad = one.sbatch("--wrap", "exit 3", cwd=tmp_path)
    never = one.sbatch(f"--dependency=afterok:{bad}", "--wrap", "true", cwd=tmp_path)
    killed = one.sbatch(f"--dependency=afterok:{bad}", "--kill-on-invalid-dep=yes", "--wrap", "true",
                        cwd=tmp_path)
    assert wait_final(one, bad, 30) == "FAILED"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        r = one.run(["squeue", "-h", "-j", str(never), "-o", "%T %r"])
        if r.stdout.split() == ["PENDING", "DependencyNeverSatisfied"]:
            break
        time.sleep(0.3)
    assert r.stdout.split() == ["PENDING", "DependencyNeverSatisfied"], r.stdout
    assert wait_final(one, killed, 15) == "CANCELLED"
    assert one.run(["scancel", str(never)]).returncode == 0
    r = one.run(["sbatch", "--dependency=afterok:abc", "--wrap", "true"])
    assert r.returncode != 0 and "dependency" in r.stderr.lower()


def test_array_with_throttle_never_runs_more_than_two(one, tmp_path):
    log = tmp_path / "runs.log"
    wrap = (f'echo "start $SLURM_ARRAY_TASK_ID $(date +%s.%N)" >> {log}; sleep 1; '
            f'echo "end $SLURM_ARRAY_TASK_ID $(date +%s.%N)" >> {log}; '
            'echo "T=$SLURM_ARRAY_TASK_ID J=$SLURM_ARRAY_JOB_ID C=$SLURM_ARRAY_TASK_COUNT '
            'MIN=$SLURM_ARRAY_TASK_MIN MAX=$SLURM_ARRAY_TASK_MAX STEP=$SLURM_ARRAY_TASK_STEP"')
    array = one.sbatch("--array=0-10:2%2", "-c", "1", "--wrap", wrap, cwd=tmp_path)
    time.sleep(1)
    r = one.run(["squeue", "-h", "-o", "%i %r", "-t", "PD"])
    assert re.search(rf"^{array}_\[\S+%2\] JobArrayTaskLimit$", r.stdout, re.M), r.stdout
    r = one.run(["scancel", f"{array}_10"])
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and \
            one.run(["squeue", "-h", "-t", "PD,R", "-j", str(array)]).stdout.strip():
        time.sleep(0.5)
    events = [line.split() for line in log.read_text().splitlines()]
    running, peak = 0, 0
    for kind, _, _ in sorted(events, key=lambda e: (float(e[2]), e[0] == "start")):
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 2 and sorted(int(e[1]) for e in events if e[0] == "end") == [0, 2, 4, 6, 8]
    out = (tmp_path / f"slurm-{array}_4.out").read_text()
    assert f"T=4 J={array} C=6 MIN=0 MAX=10 STEP=2" in out
    states = one.run(["squeue", "-h", "-t", "all", "-j", str(array), "-o", "%i %T"]).stdout.split("\n")
    assert f"{array}_10 CANCELLED" in states


@pytest.fixture(scope="module")
def multifactor(tmp_path_factory):
    from conftest import configured_cluster
    yield from configured_cluster(
        tmp_path_factory, "prio", (1, 2, 2000, 0),
        # classic fair share (2^-U/S), whose figures this module's test works out; Fair Tree,
        # the default, ranks a single user first whatever it used
        extra="PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityWeightFairshare=10000\n"
              "PriorityWeightJobSize=100\nPriorityMaxAge=1\nPriorityFlags=NO_FAIR_TREE\n")


def test_multifactor_fair_share_lowers_a_heavy_users_priority(multifactor, tmp_path):
    used = multifactor.sbatch("-c", "2", "--wrap", "sleep 3", cwd=tmp_path)  # root uses the node
    assert wait_final(multifactor, used, 30) == "COMPLETED"
    blocker = multifactor.sbatch("-c", "2", "--wrap", "sleep 8", cwd=tmp_path)
    wait_state(multifactor, blocker, "RUNNING")
    waiting = multifactor.sbatch("-c", "1", "--wrap", "true", cwd=tmp_path)
    deadline = time.monotonic() + 20
    rows = []
    while time.monotonic() < deadline:
        r = multifactor.run(["sprio", "-h", "-j", str(waiting)])
        rows = r.stdout.split()
        if r.returncode == 0 and len(rows) == 9 and int(rows[6]) > 0:  # factors computed
            break
        time.sleep(0.5)
    assert rows and rows[0] == str(waiting), rows
    priority, age, fairshare, jobsize = (int(x) for x in (rows[2], rows[4], rows[5], rows[6]))
    assert 0 <= age <= 1000 and jobsize == 50, rows  # 1 of 2 CPUs
    assert fairshare == 5000  # the only user has used everything: U = S = 1, 10000·2^-1
    assert priority == age + fairshare + jobsize
    r = multifactor.run(["squeue", "-h", "-j", str(waiting), "-o", "%Q"])
    assert int(r.stdout) == priority
    multifactor.run(["scancel", str(blocker), str(waiting)])


def _cycles(c) -> int:
    out = c.run(["sdiag"]).stdout
    return int(re.search(r"Total cycles: (\d+)", out).group(1))


def test_a_burst_of_10000_submissions_is_a_few_passes(one, tmp_path):
    """Each submission wakes the scheduler; passes coalesce them. 2,000 single submissions from
    8 threads and 8,000 in bulk calls of 100 (all --begin in an hour, so they stay queued and
    every pass sees them) must cost far fewer passes than submissions."""
    from concurrent.futures import ThreadPoolExecutor

    from pyslurm_lite.client import Client
    from pyslurm_lite.model import JobSpec

    client = Client(conf_path=str(one.conf))
    begin = time.time() + 3600

    def spec():
        return JobSpec(name="burst", script="#!/bin/sh\ntrue\n", work_dir=str(tmp_path),
                       submit_dir=str(tmp_path), begin_time=begin)
    before = _cycles(one)
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        singles = list(pool.map(lambda _: Client(conf_path=str(one.conf)).submit(spec()), range(2000)))
    bulk = client.submit_many([spec() for _ in range(8000)], batch=100)
    elapsed = time.monotonic() - t0
    time.sleep(1.5)  # the last wake-ups and one periodic pass
    passes = _cycles(one) - before
    print(f"10,000 submissions in {elapsed:.1f} s cost {passes} scheduling passes")
    assert len(set(singles + bulk)) == 10_000
    assert passes < 10_000 / 40, passes  # at least 40 submissions per pass on average
    r = one.run(["squeue", "-h", "-n", "burst", "-t", "PD", "-o", "%r"])
    assert r.stdout.split().count("BeginTime") == 10_000
    assert one.run(["scancel", "-n", "burst"]).returncode == 0
