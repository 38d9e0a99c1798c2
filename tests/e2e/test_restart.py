"""End to end: the controller is killed with -9 while 4 jobs run and 50 wait; `cluster up` on the
same directory restarts it on the same state; every job then completes, and each ran exactly once.

The 4 running jobs wait for a gate file instead of a fixed sleep, so they are surely still running
at the kill however slowly the 50 submissions go; the gate opens while the controller is down, so
those 4 end (and must be reported) while nobody is listening.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from conftest import FINAL_STATES

pytestmark = pytest.mark.slow

RUNNING, QUEUED = 4, 50  # the cluster has 2 nodes x 2 CPUs: 4 one-CPU jobs fill it
GATE_WAIT = "for i in $(seq 600); do [ -e {gate} ] && break; sleep 0.1; done"  # at most ~60 s


def states(cluster, ids) -> dict[int, str]:
    r = cluster.run(["squeue", "-h", "-j", ",".join(map(str, ids)), "-o", "%i %T"])
    assert r.returncode == 0, r.stderr
    return {int(i): s for i, s in (line.split(" ", 1) for line in r.stdout.splitlines())}


def test_controller_kill_9_loses_and_repeats_nothing(cluster, tmp_path):
    ran, gate = tmp_path / "ran.log", tmp_path / "gate"
    record = f"echo $SLURM_JOB_ID >> {ran}"
    long_ids = [cluster.sbatch("-c", "1", "--mem=100", "--wrap",
                               f"{record}; {GATE_WAIT.format(gate=gate)}", cwd=tmp_path)
                for _ in range(RUNNING)]
    deadline = time.monotonic() + 60
    while set(states(cluster, long_ids).values()) != {"RUNNING"}:
        assert time.monotonic() < deadline, f"not all running: {states(cluster, long_ids)}"
        time.sleep(0.2)
    with ThreadPoolExecutor(4) as pool:  # four sbatch processes at a time, as users would
        queued_ids = list(pool.map(
            lambda _: cluster.sbatch("-c", "1", "--mem=100", "--wrap", record, cwd=tmp_path),
            range(QUEUED)))
    ids = long_ids + queued_ids
    assert len(set(ids)) == RUNNING + QUEUED
    assert Counter(states(cluster, ids).values()) == {"RUNNING": RUNNING, "PENDING": QUEUED}

    controller = cluster.pid_of("controller")
    agents = {n: cluster.pid_of(n) for n in ("agent-node1", "agent-node2")}
    os.kill(controller, signal.SIGKILL)
    try:  # init may have reaped it already
        psutil.wait_procs([psutil.Process(controller)], timeout=10)
    except psutil.NoSuchProcess:
        pass
    assert not _alive(controller)
    gate.touch()  # the running jobs end while the controller is down
    time.sleep(1)

    r = cluster.up()
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{cluster.log_tails()}"
    assert cluster.pid_of("controller") != controller
    assert {n: cluster.pid_of(n) for n in agents} == agents, "the agents were restarted too"

    deadline, last = time.monotonic() + 120, {}
    while time.monotonic() < deadline:
        last = states(cluster, ids)
        if len(last) == len(ids) and all(s.split(" ")[0] in FINAL_STATES for s in last.values()):
            break
        time.sleep(0.5)
    not_completed = {i: s for i, s in last.items() if s != "COMPLETED"}
    assert len(last) == len(ids) and not_completed == {}, \
        f"{len(ids) - len(last)} jobs unknown, not completed: {not_completed}\n{cluster.log_tails()}"

    runs = Counter(int(x) for x in ran.read_text().split())
    assert sorted(runs) == sorted(ids), "some jobs never ran"
    assert {i: n for i, n in runs.items() if n > 1} == {}, "some jobs ran more than once"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
