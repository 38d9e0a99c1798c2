"""Where a job's cycle goes, stage by stage (issue #19): N trivial jobs released at once on a
local cluster of 2 nodes, each stage's time taken from the daemons' own marks
(pyslurm_lite/cycletrace.py, on while PYSLURM_LITE_CYCLE_TRACE names a file).

    python bench/trace_cycle.py [--jobs 300] [--cpus N (default: this host's CPUs)]

Prints, for the stages of one job in order, the median and 90th percentile of the time from
the stage before (all on one host, so the daemons' clocks are the same clock), then the gap
from a job's end being committed to the next start decided on that node, and the jobs/s and
the cycle per slot (slots x span / jobs) of the whole run.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(__file__))

import psutil  # noqa: E402

from bench_foundation import Lite, local_cluster, pct  # noqa: E402

# one job's stages, in the order they happen (who marks them: c controller, a agent)
STAGES = [
    ("start.decided", "c: the pass starts it (RUNNING in memory)"),
    ("start.committed", "c: RUNNING committed"),
    ("launch.send", "c: LaunchJobs request built and sent"),
    ("launch.received", "a: LaunchJobs handler has the job"),
    ("launch.admitted", "a: credential checked"),
    ("script.written", "a: script in the spool"),
    ("cgroup.made", "a: job cgroup with its limits"),
    ("forked", "a: bash shim forked as the user"),
    ("gate.open", "a: shim in the cgroup, told to go"),
    ("exited", "a: script exited, reaped"),
    ("released", "a: cgroup and cores released"),
    ("end.queued", "a: ending journalled and queued"),
    ("end.send", "a: ReportJobEvents sent"),
    ("end.received", "c: ending in the controller"),
    ("end.committed", "c: ending committed"),
]


def read_trace(path: str) -> tuple[dict, list]:
    """job id -> {stage: first time}, and the passes' (time, kind)."""
    jobs: dict[int, dict[str, float]] = defaultdict(dict)
    passes = []
    with open(path) as f:
        for line in f:
            t, who, stage, job = line.split()
            if stage.startswith("pass."):
                passes.append((float(t), stage))
            else:
                jobs[int(job)].setdefault(stage, float(t))
    return jobs, passes


def node_of(b: Lite, ids: list[int]) -> dict[int, str]:
    jobs, _ = b.client.jobs(job_ids=ids, include_finished=True)
    return {j.job_id: j.batch_host for j in jobs}


def report(jobs: dict, passes: list, nodes: dict, slots: int) -> None:
    print(f"{'stage':<17}{'what':<44}{'median ms':>10}{'p90 ms':>9}")
    complete = [s for s in jobs.values() if all(k in s for k, _ in STAGES)]
    for (prev, _), (stage, what) in zip(STAGES, STAGES[1:]):
        deltas = [1e3 * (s[stage] - s[prev]) for s in complete]
        print(f"{stage:<17}{what:<44}{statistics.median(deltas):>10.2f}{pct(deltas, 90):>9.2f}")
    total = [1e3 * (s["end.committed"] - s["start.decided"]) for s in complete]
    print(f"{'':<17}{'start decided -> end committed':<44}{statistics.median(total):>10.2f}"
          f"{pct(total, 90):>9.2f}")
    # the controller's half: an ending committed -> the next start decided on that node
    ends, starts = defaultdict(list), defaultdict(list)
    for j, s in jobs.items():
        if "end.committed" in s:
            ends[nodes.get(j)].append(s["end.committed"])
        if "start.decided" in s:
            starts[nodes.get(j)].append(s["start.decided"])
    gaps, to_pass = [], []
    pass_times = sorted(t for t, _ in passes)
    for node, times in ends.items():
        later = sorted(starts[node])
        for t in times:
            nxt = next((x for x in later if x >= t), None)
            if nxt is not None:
                gaps.append(1e3 * (nxt - t))
            p = next((x for x in pass_times if x >= t), None)
            if p is not None:
                to_pass.append(1e3 * (p - t))
    if gaps:
        print(f"{'(next pass)':<17}{'c: end committed -> next pass begins':<44}"
              f"{statistics.median(to_pass):>10.2f}{pct(to_pass, 90):>9.2f}")
        print(f"{'(next start)':<17}{'c: end committed -> next start on the node':<44}"
              f"{statistics.median(gaps):>10.2f}{pct(gaps, 90):>9.2f}")
    first = min(s["start.decided"] for s in jobs.values() if "start.decided" in s)
    last = max(s["end.committed"] for s in jobs.values() if "end.committed" in s)
    span = last - first
    print(f"\n{len(jobs)} jobs ({len(complete)} with every stage) on {slots} slots in {span:.2f} s:"
          f" {len(jobs) / span:.1f} jobs/s, a cycle of {1e3 * slots * span / len(jobs):.1f} ms per"
          f" slot; {sum(k == 'pass.event' for _, k in passes)} event and "
          f"{sum(k == 'pass.full' for _, k in passes)} full passes")


def cpu_seconds(directory: str) -> dict[str, tuple[float, float]]:
    """daemon -> (its own CPU seconds, its reaped children's: the jobs and their shims)."""
    out = {}
    for pid_file in glob.glob(os.path.join(directory, "*.pid")):
        name = os.path.basename(pid_file)[:-4]
        t = psutil.Process(int(open(pid_file).read().split()[0])).cpu_times()
        out[name] = (t.user + t.system, t.children_user + t.children_system)
    return out


def cpu_table(before: dict, after: dict, jobs: int, wall: float) -> None:
    print(f"\nCPU per job, ms (the host has {os.cpu_count()} CPUs: "
          f"{1e3 * (os.cpu_count() or 1) * wall / jobs:.1f} ms of CPU time per job were there)")
    total = 0.0
    for name in sorted(after):
        own = after[name][0] - before[name][0]
        kids = after[name][1] - before[name][1]
        total += own + kids
        print(f"  {name:<16} own {1e3 * own / jobs:6.2f}   jobs it ran {1e3 * kids / jobs:6.2f}")
    print(f"  {'all':<16} {1e3 * total / jobs:6.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="CPUs per node")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="trace-cycle-")
    path = os.path.join(work, "cycle.trace")
    os.environ["PYSLURM_LITE_CYCLE_TRACE"] = path  # the daemons the cluster starts inherit it
    with local_cluster(2, args.cpus) as (directory, env):
        b = Lite(env, work, "")
        ids = b.submit_held(args.jobs)
        before = cpu_seconds(directory)
        t0 = time.time()
        b.release(ids)
        final = b.wait_final(ids, timeout=60 + args.jobs)
        after, wall = cpu_seconds(directory), time.time() - t0
        print(f"released {len(ids)} at {t0:.3f}; states {sorted(set(final.values()))}")
        nodes = node_of(b, ids)
    jobs, passes = read_trace(path)
    jobs = {j: s for j, s in jobs.items() if j in set(ids)}
    report(jobs, [p for p in passes if p[0] >= t0], nodes, 2 * args.cpus)
    cpu_table(before, after, len(ids), wall)  # wall includes the CLI's polling for the end
    return 0


if __name__ == "__main__":
    sys.exit(main())
