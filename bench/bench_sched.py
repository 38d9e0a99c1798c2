#!/usr/bin/env python3
"""Scheduling pass time: one `schedule(snapshot, now, config)` over N pending jobs on 64 nodes.

The cluster is busy as a real one is: every node runs jobs with time limits, some CPUs free,
so the head of the queue blocks, gets a reservation, and backfill tries the rest. Pending jobs
mix 1-32 CPUs, 0-4 GPUs, 1-4 nodes and limits of 10 min to 1 day (a fixed seed). The daemon's
own pass also builds the snapshot from its state: `--controller` times that too (ClusterState
over a SQLite file holding the same jobs).

    python bench/bench_sched.py [--sizes 1000,10000,100000] [--repeat 3]

It ends with the cost of the projected starts (sched/projection.py) on 500 pending jobs and 20
nodes: the same pass with the projection and without it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyslurm_lite.model import NodeAllocation  # noqa: E402
from pyslurm_lite.sched import (JobView, NodeView, PartitionView, RunningView, SchedConfig,  # noqa: E402
                                Snapshot, schedule)

NODES, CPUS, MEM, GPUS = 64, 32, 256_000, 4
NOW = 1_800_000_000.0


def cluster(rng: random.Random, count: int = NODES):
    nodes, running = [], []
    for i in range(count):
        name = f"node{i + 1:02d}"
        used_cpus, used_gpus = rng.choice((24, 28, 30, 32)), rng.randint(2, 4)
        running.append(RunningView(10_000_000 + i, (NodeAllocation(name, used_cpus, used_cpus * 4000,
                                                                     list(range(used_gpus))),),
                                   NOW + rng.randint(60, 86_400), start=NOW - 600))
        nodes.append(NodeView(name, CPUS, MEM, tuple((g, "a100") for g in range(GPUS)),
                              CPUS - used_cpus, MEM - used_cpus * 4000, tuple(range(used_gpus, GPUS)),
                              True, idle=False))
    return nodes, running


def pending(n: int, rng: random.Random):
    jobs = []
    for j in range(n):
        num_nodes = rng.choice((1, 1, 1, 1, 2, 4))
        cpus = rng.choice((1, 2, 4, 8, 16, 32))
        jobs.append(JobView(job_id=j + 1, priority=rng.randint(1, 10_000), submit_time=NOW - n + j,
                            partition="main", num_nodes=num_nodes, cpus_per_node=(cpus,) * num_nodes,
                            mem_per_node=(cpus * 2000,) * num_nodes,
                            gpus_per_node=rng.choice((0, 0, 0, 1, 2, 4)),
                            time_limit=rng.choice((10, 30, 60, 240, 1440)), user=f"u{j % 50}"))
    return jobs


def snapshot_of(n: int, seed: int = 7, count: int = NODES) -> Snapshot:
    rng = random.Random(seed)
    nodes, running = cluster(rng, count)
    part = PartitionView("main", tuple(n.name for n in nodes))
    return Snapshot(jobs=tuple(pending(n, rng)), nodes=tuple(nodes), partitions={"main": part},
                    running=tuple(running))


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    configs = [("easy, bf_max_job_test=500", SchedConfig(max_job_test=500)),
               ("easy, every job tested", SchedConfig()),
               ("conservative, bf_max_job_test=500", SchedConfig(conservative=True, max_job_test=500)),
               ("builtin (no backfill)", SchedConfig(backfill=False))]
    print(f"scheduling pass on {NODES} nodes x {CPUS} CPUs x {GPUS} GPUs, best of {args.repeat}")
    print(f"{'pending':>8} | {'policy':<34} | {'pass ms':>8} | {'starts':>6} | {'reserved':>8}")
    print(f"{'-' * 8}-+-{'-' * 34}-+-{'-' * 8}-+-{'-' * 6}-+-{'-' * 8}")
    for n in (int(s) for s in args.sizes.split(",")):
        snap = snapshot_of(n)
        for label, config in configs:
            if n >= 100_000 and not config.max_job_test and config.backfill:
                continue  # minutes, not a figure anyone runs with
            best, plan = timed(lambda: schedule(snap, NOW, config), args.repeat)
            print(f"{n:>8} | {label:<34} | {best * 1000:>8.1f} | {len(plan.starts):>6} | "
                  f"{len(plan.reservations):>8}")
    projection_cost(args.repeat)


def projection_cost(repeat: int, pending_jobs: int = 500, count: int = 20) -> None:
    """The pass with and without its projected starts (Snapshot.project_starts, which the
    controller sets once every bf_interval seconds)."""
    import dataclasses
    snap = snapshot_of(pending_jobs, count=count)
    projecting = dataclasses.replace(snap, project_starts=True)
    print(f"\nprojected starts, {pending_jobs} pending on {count} nodes, best of {repeat}")
    print(f"{'policy':<34} | {'without ms':>10} | {'with ms':>8} | {'projected':>9} | {'cut':>4}")
    print(f"{'-' * 34}-+-{'-' * 10}-+-{'-' * 8}-+-{'-' * 9}-+-{'-' * 4}")
    for label, config in (("easy, bf_max_job_test=500", SchedConfig(max_job_test=500)),
                          ("easy, bf_max_job_test=100", SchedConfig(max_job_test=100)),
                          ("conservative, bf_max_job_test=500",
                           SchedConfig(conservative=True, max_job_test=500))):
        without, _ = timed(lambda: schedule(snap, NOW, config), repeat)
        with_it, plan = timed(lambda: schedule(projecting, NOW, config), repeat)
        print(f"{label:<34} | {without * 1000:>10.1f} | {with_it * 1000:>8.1f} | "
              f"{len(plan.projected):>9} | {len(plan.unprojected):>4}")


if __name__ == "__main__":
    main()
