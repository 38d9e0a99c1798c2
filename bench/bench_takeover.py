#!/usr/bin/env python3
"""How long a controller pair takes to put a controller back in control after `kill -9` of the
one in control, under load, and whether any job is lost or run twice on the way.

A local pair (`cluster up --backup-controller`, SlurmctldTimeout=--timeout) with 2 nodes x 2
CPUs; sbatch runs without pause from --submitters threads, each job appending its id to a log
and sleeping 1 s, so jobs are being submitted, started and ended at every kill. Each round:
wait --gap seconds (every other round, `scontrol takeover` first, so that the backup is the
one killed), find the controller in control (Ping's `active`), kill -9 it, time until
the other one says it is in control ("takeover") and until squeue answers ("squeue"), then
`cluster up` restarts the killed one (a primary back in service takes control back, as Slurm's
does: that handover is timed as "handback"). At the end every submitted job must be COMPLETED,
once in sacct, once in the log; an id in the log that no sbatch returned is a duplicate
submission (a reply lost in the kill, the call retried on the other controller).

    python bench/bench_takeover.py [--kills 10] [--timeout 3] [--gap 3] [--submitters 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from pyslurm_lite import config  # noqa: E402
from pyslurm_lite.client import Client  # noqa: E402
from pyslurm_lite.errors import SlurmError  # noqa: E402

BIN = os.path.dirname(sys.executable)
PID_FILES = ("controller", "controller-backup")


def sh(args, env, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def in_control(cfg) -> int | None:
    client = Client(cfg, timeout=2.0)
    for i in range(len(cfg.controller_hosts)):
        try:
            if client.at(i).ping().active:
                return i
        except SlurmError:
            pass
    return None


def wait_for(check, limit: float) -> float:
    began = time.monotonic()
    while not check():
        if time.monotonic() - began > limit:
            raise SystemExit(f"gave up after {limit} s")
        time.sleep(0.05)
    return time.monotonic() - began


class Load(threading.Thread):
    def __init__(self, env, log):
        super().__init__(daemon=True)
        self.env, self.log, self.ids, self.errors = env, log, [], []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            r = sh([f"{BIN}/sbatch", "--parsable", "-c", "1", "--mem=100", "-o", "/dev/null",
                    "--wrap", f"echo $SLURM_JOB_ID >> {self.log}; sleep 1"], self.env)
            (self.ids.append(int(r.stdout)) if r.returncode == 0 and r.stdout.strip().isdigit()
             else self.errors.append(r.stderr.strip()))


def up(directory, env, timeout) -> None:
    r = sh([f"{BIN}/pyslurm-lite", "cluster", "up", "--backup-controller", "--nodes", "2",
            "--cpus", "2", "--mem", "2000", "--dir", directory], env, timeout=180)
    if r.returncode:
        raise SystemExit(f"cluster up: {r.stderr[-500:]}")


def rounds(args, directory, env, cfg, handovers):
    took = []
    for k in range(args.kills):
        time.sleep(args.gap)
        if k % 2:  # every other round the backup is the one killed: hand control to it first
            handover = time.monotonic()
            sh([f"{BIN}/scontrol", "takeover"], env)
            wait_for(lambda: in_control(cfg) == 1, 30)
            handovers.append(time.monotonic() - handover)
            time.sleep(1.0)
        active = in_control(cfg)
        if active is None:
            wait_for(lambda: in_control(cfg) is not None, 30)
            active = in_control(cfg)
        pid = int(open(os.path.join(directory, f"{PID_FILES[active]}.pid")).read().split()[0])
        os.kill(pid, signal.SIGKILL)
        began = time.monotonic()
        takeover = wait_for(lambda: in_control(cfg) == 1 - active, 60)
        wait_for(lambda: sh([f"{BIN}/squeue", "-h"], env, 30).returncode == 0, 60)
        squeue = time.monotonic() - began
        up(directory, env, args.timeout)
        handback = wait_for(lambda: in_control(cfg) == 0, 60) if active == 0 else None
        took.append((takeover, squeue, handback))
        print(f"kill {k + 1}: {'primary' if active == 0 else 'backup'} killed; other in control "
              f"after {takeover:.1f} s, squeue answered after {squeue:.1f} s"
              + (f"; restarted, took control back in {handback:.1f} s" if handback is not None else ""),
              flush=True)
    return took


def verdict(env, load, log):
    ids = set(load.ids)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        r = sh([f"{BIN}/squeue", "-h", "-o", "%i"], env)
        if r.returncode == 0 and not {int(x) for x in r.stdout.split()} & ids:
            break
        time.sleep(1)
    runs = [int(x) for x in open(log).read().split()] if os.path.exists(log) else []
    r = sh([f"{BIN}/sacct", "-X", "-n", "-P", "-o", "JobID,State", "-j",
            ",".join(map(str, sorted(ids)))], env)
    rows = [line.split("|") for line in r.stdout.split()]
    completed = {int(j) for j, s in rows if s == "COMPLETED"}
    # every run of every job, requeued ones too: a job started by two controllers (or twice by
    # one) has more than one
    r = sh([f"{BIN}/sacct", "-X", "-D", "-n", "-P", "-o", "JobID", "-j",
            ",".join(map(str, sorted(ids)))], env)
    starts = r.stdout.split()
    return {
        "jobs submitted": len(ids),
        "sbatch errors": len(load.errors),
        "jobs lost (not COMPLETED once)": len(ids - completed) + (len(rows) - len({j for j, _ in rows})),
        "jobs run twice (their log)": len(runs) - len(set(runs)),
        "jobs started more than once (sacct -D)": len(starts) - len(set(starts)),
        "runs of unknown ids (duplicate submissions)": len(set(runs) - ids),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--timeout", type=int, default=3, help="SlurmctldTimeout, seconds")
    p.add_argument("--gap", type=float, default=3.0, help="seconds of load between kills")
    p.add_argument("--submitters", type=int, default=2)
    args = p.parse_args()
    directory = tempfile.mkdtemp(prefix="bench-takeover.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYSLURM_LITE_CONF=os.path.join(directory, "slurm.conf"),
               PATH=BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin"))
    up(directory, env, args.timeout)
    conf = env["PYSLURM_LITE_CONF"]
    text = open(conf).read().replace("SlurmctldPort=", f"SlurmctldTimeout={args.timeout}\nSlurmctldPort=", 1)
    open(conf, "w").write(text)
    sh([f"{BIN}/pyslurm-lite", "cluster", "down", "--dir", directory], env)
    up(directory, env, args.timeout)
    cfg = config.load(conf)
    log = os.path.join(directory, "ran.log")
    loads = [Load(env, log) for _ in range(args.submitters)]
    handovers: list[float] = []  # scontrol takeover -> the backup in control
    try:
        for load in loads:
            load.start()
        took = rounds(args, directory, env, cfg, handovers)
    finally:
        for load in loads:
            load.halt.set()
        for load in loads:
            load.join(120)
    merged = Load(env, log)
    for load in loads:
        merged.ids += load.ids
        merged.errors += load.errors
    figures = verdict(env, merged, log)
    sh([f"{BIN}/pyslurm-lite", "cluster", "down", "--dir", directory], env)
    shutil.rmtree(directory, ignore_errors=True)
    print(f"\nSlurmctldTimeout={args.timeout} s, {args.kills} kill -9 of the controller in control "
          f"under load ({args.submitters} sbatch loops, 2 nodes x 2 CPUs)")
    for i, name in enumerate(("takeover (kill -> other in control)", "squeue answers (from the kill)",
                              "handback (restarted primary takes control)")):
        times = [t[i] for t in took if t[i] is not None]
        if times:
            print(f"{name:<46} median {statistics.median(times):5.1f} s   worst {max(times):5.1f} s"
                  f"   (n={len(times)})")
    if handovers:
        print(f"{'scontrol takeover (-> backup in control)':<46} median "
              f"{statistics.median(handovers):5.1f} s   worst {max(handovers):5.1f} s   (n={len(handovers)})")
    for name, value in figures.items():
        print(f"{name:<46} {value}")
    if merged.errors:
        print("sbatch errors:", *sorted(set(merged.errors))[:5], sep="\n  ")


if __name__ == "__main__":
    main()
