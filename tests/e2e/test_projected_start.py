"""Projected starts on a real cluster (1 node x 2 CPUs): a 10-minute job holds the node, four
whole-node 5-minute jobs wait behind it. squeue --start gives each a START_TIME (the first its
backfill reservation, the others their projections, sched/projection.py), one after the other,
none before the running job's end; scontrol show job says the same StartTime; a held job shows
N/A and a --begin job its begin time. Cancelling the running job moves them all earlier."""

from __future__ import annotations

import re
import time

import pytest

from conftest import configured_cluster, wait_state

SHAPE = (1, 2, 2000, 0)
# real Slurm 22.05's `squeue --start` header (shared/slurm-reference/formats.txt)
HEADER = ("             JOBID PARTITION     NAME     USER ST          START_TIME  NODES "
          "SCHEDNODES           NODELIST(REASON)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # projections every second rather than every 30 (Slurm's default bf_interval)
    yield from configured_cluster(tmp_path_factory, "projstart", SHAPE,
                                  extra="SchedulerParameters=bf_interval=1\n")


def starts(cluster) -> dict[int, str]:
    """squeue --start: job id -> START_TIME."""
    r = cluster.run(["squeue", "--start"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == HEADER
    return {int(line.split()[0]): line.split()[5] for line in lines[1:]}


def wait_starts(cluster, jobs, changed_from=None, timeout: float = 20.0) -> dict[int, str]:
    """squeue --start once every job in `jobs` has a START_TIME (different from `changed_from`'s)."""
    deadline, seen = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        seen = starts(cluster)
        if all(seen.get(j, "N/A") != "N/A" and (changed_from is None or seen[j] != changed_from[j])
               for j in jobs):
            return seen
        time.sleep(0.3)
    pytest.fail(f"no start time for all of {jobs}: {seen}\n{cluster.log_tails()}")


def start_time_of(cluster, job: int) -> str:
    r = cluster.run(["scontrol", "show", "job", str(job)])
    assert r.returncode == 0, r.stderr
    return re.search(r"\bStartTime=(\S+)", r.stdout).group(1)


@pytest.fixture(scope="module")
def queue(cluster):
    """(running job, its end, the four waiting jobs, held job, --begin job, squeue --start)."""
    long = cluster.sbatch("-c2", "-t10", "-o", "/dev/null", "--wrap", "sleep 600")
    wait_state(cluster, long, "RUNNING")
    end = re.search(r"\bEndTime=(\S+)", cluster.run(["scontrol", "show", "job", str(long)]).stdout).group(1)
    # long enough that, once the running job is cancelled, the last ones still wait while the
    # tests below look at them (a 1-second job let the queue drain under a loaded host)
    waiting = [cluster.sbatch("-c2", "-t5", "-o", "/dev/null", "--wrap", "sleep 60") for _ in range(4)]
    held = cluster.sbatch("-H", "-c1", "-t5", "-o", "/dev/null", "--wrap", "sleep 1")
    later = cluster.sbatch("--begin=now+7200", "-c1", "-t5", "-o", "/dev/null", "--wrap", "sleep 1")
    seen = wait_starts(cluster, waiting + [later])
    yield long, end, waiting, held, later, seen
    cluster.run(["scancel", *map(str, [long, *waiting, held, later])])


def test_every_waiting_job_has_a_start_in_order(queue):
    _, end, waiting, _, _, seen = queue
    times = [seen[j] for j in waiting]
    assert times == sorted(times), seen  # ISO timestamps: text order is time order
    assert all(t >= end for t in times), (end, seen)
    assert len(set(times)) == 4, seen  # one whole-node job after the other


def test_held_shows_na_and_begin_its_time(cluster, queue):
    _, end, waiting, held, later, seen = queue
    assert seen[held] == "N/A"
    r = cluster.run(["scontrol", "show", "job", str(later)])
    begin = re.search(r"\bEligibleTime=(\S+)", r.stdout).group(1)
    assert seen[later] == begin, r.stdout  # the node is free long before: its --begin time


def test_scontrol_shows_the_same_start(cluster, queue):
    _, _, waiting, held, later, seen = queue
    for job in waiting + [later]:
        assert start_time_of(cluster, job) == seen[job]
    assert start_time_of(cluster, held) == "Unknown"


def test_cancelling_the_running_job_moves_them_earlier(cluster, queue):
    long, _, waiting, _, _, before = queue
    assert cluster.run(["scancel", str(long)]).returncode == 0
    wait_state(cluster, waiting[0], ("RUNNING", "COMPLETED", "COMPLETING"))
    now = wait_starts(cluster, waiting[2:], changed_from=before)
    assert all(now[j] < before[j] for j in waiting[2:]), (before, now)


def test_holding_a_job_takes_its_projection_away(cluster, queue):
    _, _, waiting, _, _, _ = queue
    job = waiting[-1]
    assert wait_starts(cluster, [job])[job] != "N/A"
    assert cluster.run(["scontrol", "hold", str(job)]).returncode == 0
    assert starts(cluster)[job] == "N/A"
    assert start_time_of(cluster, job) == "Unknown"


def test_a_job_past_bf_window_says_so(cluster, queue):
    """A 36-hour job queued behind a 1-hour one starts within the day; a second one behind it
    would start more than bf_window (1440 minutes) from now: N/A, and scontrol says why
    (StartTimeNote, ours)."""
    blocker = cluster.sbatch("-c2", "-t60", "-o", "/dev/null", "--wrap", "sleep 600")
    day_and_half = cluster.sbatch("-c2", "-t", "1-12:00:00", "-o", "/dev/null", "--wrap", "sleep 1")
    # as long: no hole before the first one's end holds it
    behind = cluster.sbatch("-c2", "-t", "1-12:00:00", "-o", "/dev/null", "--wrap", "sleep 1")
    try:
        wait_starts(cluster, [day_and_half])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            shown = cluster.run(["scontrol", "show", "job", str(behind)]).stdout
            if "StartTimeNote=" in shown:
                break
            time.sleep(0.3)
        assert re.search(r"\bStartTime=Unknown\b.*\bStartTimeNote=bf_window\b", shown), shown
        assert starts(cluster)[behind] == "N/A"
        assert "StartTimeNote" not in cluster.run(["scontrol", "show", "job", str(day_and_half)]).stdout
    finally:
        cluster.run(["scancel", str(blocker), str(day_and_half), str(behind)])
