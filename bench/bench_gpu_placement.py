#!/usr/bin/env python3
"""First fit vs best fit on a synthetic GPU workload: mixed 1/2/4/8-GPU jobs on 8 nodes x 8 GPUs,
replayed through the daemon's own scheduler (pyslurm_lite/sim/gpu_placement.py; sched/backfill).

Prints, per policy, the mean over the seeds (and each seed's figures with --each): GPU
utilization, mean wait of 8-GPU jobs and of all jobs, the fraction of the time some job waits
while enough GPUs are free in total, and the part of it where they are free on no single node.
--plot PATH writes a PNG (sim/gpu_placement.draw): GPU utilization over time, first fit then
best fit, and 8-GPU jobs waiting, first fit then best fit (the first seed).

    python bench/bench_gpu_placement.py [--jobs 1500] [--seeds 1,2,3] [--load 0.9] [--plot out.png]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyslurm_lite.sim.gpu_placement import _columns, draw, simulate, workload  # noqa: E402

NODES, GPUS = 8, 8


def row(label: str, rs) -> str:
    n = len(rs)
    mean = lambda f: sum(f(r) for r in rs) / n  # noqa: E731
    return (f"{label:<22} | {mean(lambda r: r.utilization) * 100:>6.1f} % | "
            f"{mean(lambda r: r.wait_8) / 60:>8.1f} | {mean(lambda r: r.wait_all) / 60:>8.1f} | "
            f"{mean(lambda r: r.waiting_free) * 100:>9.1f} % | {mean(lambda r: r.fragmented) * 100:>9.1f} %")


BARS = " ▁▂▃▄▅▆▇█"


def text_plot(first, best, columns: int) -> str:
    """The PNG's four panels as one line of block characters each (the first seed): GPUs busy
    (mean per column, of all GPUs) and 8-GPU jobs waiting (most per column, of the peak)."""
    t0 = min(first.util_series[0][0], best.util_series[0][0])
    t1 = max(first.util_series[-1][0], best.util_series[-1][0]) or 1.0
    util = [_columns(r.util_series, t0, t1, columns, mean=True) for r in (first, best)]
    queue = [_columns(r.queue8_series, t0, t1, columns, mean=False) for r in (first, best)]
    peak = max(max(q) for q in queue) or 1
    bar = lambda v, top: BARS[min(int(round(v / top * (len(BARS) - 1))), len(BARS) - 1)]  # noqa: E731
    lines = [f"time ->  0 .. {(t1 - t0) / 3600:.0f} h; GPUs busy of {NODES * GPUS}, 8-GPU jobs waiting of {peak}"]
    for label, values, top in (("busy, first fit", util[0], NODES * GPUS), ("busy, best fit ", util[1], NODES * GPUS),
                               ("8-GPU q, first  ", queue[0], peak), ("8-GPU q, best   ", queue[1], peak)):
        lines.append(f"{label.strip():<16} |{''.join(bar(v, top) for v in values)}|")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1500)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--load", type=float, default=0.9, help="offered GPU-time / cluster GPU-time")
    ap.add_argument("--plot", default="", help="write a PNG here")
    ap.add_argument("--ascii", type=int, default=0, metavar="COLUMNS",
                    help="also print the plot's four series as text, COLUMNS wide")
    ap.add_argument("--each", action="store_true", help="also print every seed's figures")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    results = {False: [], True: []}
    t0 = time.perf_counter()
    for seed in seeds:
        jobs = workload(args.jobs, NODES, GPUS, args.load, seed)
        for best in (False, True):
            results[best].append(simulate(jobs, NODES, GPUS, best))
    print(f"{args.jobs} jobs x {len(seeds)} seeds on {NODES} nodes x {GPUS} GPUs, load {args.load}, "
          f"sched/backfill ({time.perf_counter() - t0:.0f} s)")
    print(f"{'policy':<22} | {'GPU util':>8} | {'wait 8-GPU':>8} | {'wait all':>8} | "
          f"{'wait, GPUs free':>11} | {'on no one node':>11}")
    print(f"{'':<22} | {'':>8} | {'min':>10} | {'min':>8} | {'(of time)':>15} | {'(of time)':>14}")
    for best in (False, True):
        print(row("best fit" if best else "first fit", results[best]))
        if args.each:
            for seed, r in zip(seeds, results[best]):
                print(row(f"  seed {seed}", [r]))
    if args.plot:
        draw(args.plot, results[False][0], results[True][0])
        print(f"plot: {args.plot}")
    if args.ascii:
        print(text_plot(results[False][0], results[True][0], args.ascii))


if __name__ == "__main__":
    main()
