#!/usr/bin/env python3
"""How long a /metrics scrape holds the controller's state lock (the time a scheduling pass or
an RPC may wait behind it), and how long the whole collect takes, over N jobs: a quarter running
with 2 GPUs and a batch and a step sample each, half pending, the rest completed; users and
accounts drawn from --accounts distinct ones. Each scrape is a fresh build (the collector's
cache is bypassed), so the figures are the cost per cache period.

    python bench/bench_metrics.py [--jobs 10000] [--accounts 10] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from factories import model_job  # noqa: E402
from pyslurm_lite.config import Config  # noqa: E402
from pyslurm_lite.controller import metrics  # noqa: E402
from pyslurm_lite.controller.diag import Diag  # noqa: E402
from pyslurm_lite.model import (GpuDevice, JobState, Node, NodeConfig, NodeState, Reason,  # noqa: E402
                                UsageSample)


class TimedLock:
    """The state's RLock, recording how long each outermost hold lasted: wall time, and the
    thread's CPU time (the figure to compare on a loaded machine)."""

    def __init__(self):
        self.lock, self.depth, self.holds, self.cpu = threading.RLock(), 0, [], []

    def __enter__(self):
        self.lock.acquire()
        self.depth += 1
        if self.depth == 1:
            self.began, self.began_cpu = time.perf_counter(), time.thread_time()

    def __exit__(self, *exc):
        self.depth -= 1
        if self.depth == 0:
            self.holds.append(time.perf_counter() - self.began)
            self.cpu.append(time.thread_time() - self.began_cpu)
        self.lock.release()


def state_of(n_jobs: int, n_accounts: int, private: bool):
    jobs = {}
    for i in range(1, n_jobs + 1):
        account, user = f"acct{i % n_accounts}", f"user{i % max(1, n_accounts * 5)}"
        kind = i % 4
        job = model_job(i, nodes=(f"node{i % 100}",), gpus=(0, 1) if kind == 0 else (),
                        user=user, account=account)
        if kind == 0:
            job.usage = [UsageSample(step=s, node=job.allocations[0].node, gpus=2, gpu_util=50.0,
                                     gpu_mem=1 << 30) for s in ("batch", "0")]
        elif kind in (1, 2):
            job.state, job.reason, job.allocations = JobState.PENDING, Reason.PRIORITY, []
        else:
            job.state = JobState.COMPLETED
        jobs[i] = job
    nodes = {f"node{k}": Node(config=NodeConfig(name=f"node{k}", cpus=64), state=NodeState.MIXED,
                              gpus=[GpuDevice(index=g) for g in range(8)]) for k in range(100)}
    usage = {(f"acct{a}", f"user{a}"): {"cpu": 1.0, "gres/gpu": 2.0} for a in range(n_accounts)}
    return SimpleNamespace(lock=TimedLock(), jobs=jobs, nodes=nodes, assoc_usage=usage,
                           diag=Diag(), cfg=Config(private_data=["jobs"] if private else []))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--accounts", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--private", action="store_true", help="PrivateData=jobs")
    a = ap.parse_args()
    state = state_of(a.jobs, a.accounts, a.private)
    collector = metrics.StateCollector(state, private=a.private)
    totals = []
    for _ in range(a.repeat):
        getattr(collector, "forget", lambda: None)()  # a fresh build each time, not the cache
        began = time.perf_counter()
        series = sum(len(f.samples) for f in collector.collect())
        totals.append(time.perf_counter() - began)
    holds, cpu = state.lock.holds, state.lock.cpu
    print(f"jobs={a.jobs} accounts={a.accounts} private={a.private} series={series}: lock held "
          f"median {statistics.median(holds) * 1e3:.2f} ms (CPU {statistics.median(cpu) * 1e3:.2f} "
          f"ms), max {max(holds) * 1e3:.2f} ms; collect median {statistics.median(totals) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
