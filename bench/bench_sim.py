"""Simulator benchmark: how long `pyslurm-lite simulate` takes per trace and policy.

Each of the traces in ../shared/traces is read and replayed under fcfs, easy and conservative
with the fast engine; one row per (trace, policy) gives the jobs replayed, the wall time of
reading plus replaying (what `simulate` costs, the figure the targets are about), its median,
the CPU time of the same (process time: what other processes on a shared machine disturb
least), the replay alone (wall), and jobs per second. Times are the best of --repeat runs. Targets, on HPC2N
(202,871 jobs), reading included: easy <= 2 s, conservative <= 5 s.

    python bench/bench_sim.py [--repeat 3] [--traces DIR] [--policy easy,conservative]
                              [--only HPC2N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from pyslurm_lite.sim import POLICIES, swf

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "..", "..", "shared", "traces")
FILES = ["KTH-SP2-1996-2.1-cln.swf.gz", "CTC-SP2-1996-3.1-cln.swf.gz",
         "HPC2N-2002-2.2-cln.swf.gz", "LANL-CM5-1994-4.1-cln.swf.gz", "lublin_256.swf.gz",
         "lublin_256_new2.gz"]
TARGETS = {("HPC2N-2002-2.2-cln", "easy"): 2.0, ("HPC2N-2002-2.2-cln", "conservative"): 5.0}


def measure(path: str, policy: str, repeat: int) -> dict:
    total, replay, cpu = [], [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        trace = swf.read(path)
        t1 = time.perf_counter()
        POLICIES[policy](trace)
        t2, c2 = time.perf_counter(), time.process_time()
        total.append(t2 - t0)
        replay.append(t2 - t1)
        cpu.append(c2 - c0)
    return dict(trace=trace.name, policy=policy, jobs=len(trace), best=min(total),
                median=statistics.median(total), cpu=min(cpu), replay=min(replay),
                rate=len(trace) / min(total))


def table(rows: list[dict]) -> str:
    head = ["trace", "policy", "jobs", "wall s", "median s", "cpu s", "replay s", "jobs/s",
            "target"]
    out = [head]
    for r in rows:
        target = TARGETS.get((r["trace"], r["policy"]))
        verdict = "" if target is None else (f"<= {target:g} s " +
                                             ("met" if r["best"] <= target else "MISSED"))
        out.append([r["trace"], r["policy"], f"{r['jobs']:,}", f"{r['best']:.2f}",
                    f"{r['median']:.2f}", f"{r['cpu']:.2f}", f"{r['replay']:.2f}",
                    f"{r['rate']:,.0f}", verdict])
    widths = [max(len(row[c]) for row in out) for c in range(len(head))]
    return "\n".join("  ".join(cell.ljust(widths[c]) if c in (0, 1, 8) else cell.rjust(widths[c])
                               for c, cell in enumerate(row)).rstrip() for row in out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--traces", default=TRACES)
    ap.add_argument("--policy", default=",".join(POLICIES))
    ap.add_argument("--only", default="", help="only trace files whose name contains this")
    args = ap.parse_args()
    rows = []
    for name in FILES:
        path = os.path.join(args.traces, name)
        if args.only not in name:
            continue
        if not os.path.exists(path):
            print(f"skipped {name}: not in {args.traces}", file=sys.stderr)
            continue
        for policy in args.policy.split(","):
            rows.append(measure(path, policy, args.repeat))
            print(f"  {name} {policy}: {rows[-1]['best']:.2f} s", file=sys.stderr, flush=True)
    print(table(rows))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"(wall and cpu = reading + replaying, best of {args.repeat}; target verdicts on wall; "
          f"{os.cpu_count()} CPUs, 1-minute load {load:.2f} at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
