#!/usr/bin/env python3
"""Chaos run: a local cluster (controller + 3 agents) under a steady load of short jobs while a
driver kill -9s random daemons and brings them back; then the invariants are checked.

    python tests/chaos/chaos.py [--seconds 60] [--jobs 300] [--seed N] [--dir DIR]

Invariants (each a line in the report, and the exit code is 1 if any fails):
  - every accepted job reaches a final state;
  - no job ever ran twice at the same time (each run holds an flock on its job's lock file);
  - no (job, restart count) ran to completion twice, and every COMPLETED job completed once with
    its final restart count;
  - afterwards no job process and no job cgroup is left.
Only loopback is used; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

BIN = os.path.dirname(os.path.abspath(sys.executable))
PYSLURM_LITE = os.path.join(BIN, "pyslurm-lite")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}
NODES, SLURMD_TIMEOUT = 3, 8

JOB = """#!/bin/bash
exec 9>>"{work}/lock.$SLURM_JOB_ID"
flock -n 9 || echo "dup $SLURM_JOB_ID $SLURM_RESTART_COUNT" >> "{work}/runs.log"
echo "start $SLURM_JOB_ID $SLURM_RESTART_COUNT" >> "{work}/runs.log"
sleep {sleep}
echo "end $SLURM_JOB_ID $SLURM_RESTART_COUNT" >> "{work}/runs.log"
"""


def up(directory: str, tries: int = 5) -> None:
    """cluster up; a daemon killed a moment ago may still hold its port, so try a few times."""
    for attempt in range(tries):
        r = subprocess.run([PYSLURM_LITE, "cluster", "up", "--nodes", str(NODES), "--cpus", "2",
                            "--mem", "2000", "--dir", directory], capture_output=True, text=True,
                           timeout=120)
        if r.returncode == 0:
            return
        time.sleep(1.0)
    raise RuntimeError(f"cluster up failed {tries} times: {r.stdout}{r.stderr}")


def configure(directory: str) -> None:
    from pyslurm_lite.cli.cluster import write_config
    conf = write_config(directory, NODES, 2, 2000, 0)
    text = open(conf).read().replace("SlurmdTimeout=30", f"SlurmdTimeout={SLURMD_TIMEOUT}")
    open(conf, "w").write(text.replace("KillWait=5", "KillWait=2"))


class Load(threading.Thread):
    """Submits `count` jobs over `seconds`, retrying while the controller is away."""

    def __init__(self, client, work: str, count: int, seconds: float, rng: random.Random):
        super().__init__(daemon=True)
        self.client, self.work, self.count, self.seconds, self.rng = client, work, count, seconds, rng
        self.accepted: list[int] = []

    def run(self) -> None:
        from pyslurm_lite.errors import SlurmError
        from pyslurm_lite.model import JobSpec
        gap = self.seconds / self.count
        for i in range(self.count):
            script = JOB.format(work=self.work, sleep=round(self.rng.uniform(0.1, 1.5), 2))
            spec = JobSpec(name=f"chaos{i}", script=script, work_dir=self.work, std_out="/dev/null",
                           environment={"PATH": os.environ["PATH"]})
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    self.accepted.append(self.client.submit(spec))
                    break
                except SlurmError:  # controller down: not accepted, so try again
                    time.sleep(0.3)
            time.sleep(gap)


def chaos(directory: str, seconds: float, rng: random.Random, log) -> Counter:
    kills: Counter = Counter()
    names = ["controller"] + [f"agent-node{i}" for i in range(1, NODES + 1)]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(rng.uniform(1.5, 4.0))
        victim = rng.choice(names)
        try:
            pid = int(open(os.path.join(directory, f"{victim}.pid")).read().split()[0])
            os.kill(pid, signal.SIGKILL)
            kills[victim] += 1
            log(f"kill -9 {victim} (pid {pid})")
        except (OSError, ValueError):
            pass
        time.sleep(rng.uniform(0.2, 2.0))  # well inside SlurmdTimeout
        up(directory)
    return kills


def wait_final(client, ids: list[int], timeout: float) -> dict[int, str]:
    deadline = time.monotonic() + timeout
    states: dict[int, str] = {}
    while time.monotonic() < deadline:
        try:
            jobs, _ = client.jobs(job_ids=ids, include_finished=True)
        except Exception:
            time.sleep(0.5)
            continue
        states = {j.job_id: j.state for j in jobs}
        if len(states) == len(ids) and all(s in FINAL for s in states.values()):
            break
        time.sleep(0.5)
    return states


def check(work: str, states: dict[int, str], ids: list[int], directory: str) -> list[tuple[str, bool, str]]:
    lines = open(os.path.join(work, "runs.log")).read().split("\n") if os.path.exists(
        os.path.join(work, "runs.log")) else []
    starts, ends, dups = Counter(), Counter(), []
    for line in lines:
        m = re.fullmatch(r"(start|end|dup) (\d+) (\d+)", line.strip())
        if not m:
            continue
        key = (int(m.group(2)), int(m.group(3)))
        {"start": starts, "end": ends}.get(m.group(1), Counter())[key] += 1
        if m.group(1) == "dup":
            dups.append(key)
    not_final = [j for j in ids if states.get(j) not in FINAL]
    twice = [k for k, n in ends.items() if n > 1]
    final_rc = defaultdict(int)
    for (j, rc) in starts:
        final_rc[j] = max(final_rc[j], rc)
    bad_completed = [j for j in ids if states.get(j) == "COMPLETED" and ends[(j, final_rc[j])] != 1]
    leftovers = _leftovers(directory)
    return [
        ("every accepted job is final", not not_final, f"{len(ids) - len(not_final)}/{len(ids)} final"),
        ("no job ran twice at once", not dups, f"{len(dups)} overlapping runs"),
        ("no run completed twice", not twice, f"{len(twice)} (job, restart) pairs completed twice"),
        ("COMPLETED jobs completed once", not bad_completed, f"{len(bad_completed)} bad"),
        ("nothing left behind", not leftovers, leftovers or "no job cgroups or processes"),
    ]


def _leftovers(directory: str) -> str:
    from pyslurm_lite import config
    from pyslurm_lite.agent.cgroup import make_tracker, scope
    cfg = config.load(os.path.join(directory, "slurm.conf"))
    deadline = time.monotonic() + 15
    while True:
        left = [f"{n}:{k}" for n in cfg.nodes
                for k in make_tracker("proctrack/auto", scope(cfg, n)).existing()]
        if not left or time.monotonic() > deadline:
            return ", ".join(left)
        time.sleep(0.5)


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--jobs", type=int, default=300)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--dir")
    ns = p.parse_args(argv)
    directory = ns.dir or tempfile.mkdtemp(prefix="pyslurm-chaos-")
    work = os.path.join(directory, "work")
    os.makedirs(work, exist_ok=True)
    rng = random.Random(ns.seed)
    log = lambda msg: print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)  # noqa: E731
    configure(directory)
    up(directory)
    os.environ["PYSLURM_LITE_CONF"] = os.path.join(directory, "slurm.conf")
    from pyslurm_lite.client import Client
    client = Client(timeout=5.0)
    try:
        load = Load(client, work, ns.jobs, ns.seconds, rng)
        load.start()
        kills = chaos(directory, ns.seconds, rng, log)
        load.join(timeout=120)
        up(directory)
        states = wait_final(client, load.accepted, timeout=180)
        results = check(work, states, load.accepted, directory)
    finally:
        subprocess.run([PYSLURM_LITE, "cluster", "down", "--dir", directory], capture_output=True, timeout=60)
    log(f"seed {ns.seed}: {len(load.accepted)} jobs accepted, kills {dict(kills)}, "
        f"states {dict(Counter(states.values()))}")
    for name, ok, detail in results:
        log(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
