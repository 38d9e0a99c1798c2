"""Foundation benchmark: how fast pyslurm-lite submits, schedules, lists and holds jobs.

What it measures, on a local cluster it starts itself (`pyslurm-lite cluster up`, 2 nodes of
--cpus CPUs each, by default this host's CPU count, like for like with the reference Slurm on
the same host; in a temporary directory, always brought down at the end):

  a. sbatch CLI latency: wall time of `sbatch --wrap=true` as a subprocess, p50/p95 of ~30 runs;
     and 4 parallel submitters, each running sbatch in a loop: sbatch calls per second.
  b. API submissions per second from one client: Client.submit_async of N held specs (then
     cancelled), and the sequential Client.submit rate.
  c. end-to-end throughput (median of --e2e-runs, 3 by default; Slurm once): N trivial 1-CPU
     jobs (`true`) submitted held, released by ONE
     `scontrol release id,id,...` (or Client.update_jobs where scontrol is not there yet),
     timed from the release to every job COMPLETED: to the latest end time in the job records
     where they keep it finer than a second (pyslurm-lite; the controller stamps a job's end
     when it learns of it), else to the poll (every POLL_S) that finds them all done (Slurm,
     whose records keep whole seconds; over its ~90 s runs a poll's delay is noise).
  d. idle submit-to-start latency: one job at a time on an idle cluster; start_time - submit_time
     from the job record (controller clock), and — the same way for both systems — the wall time
     from just before the submit call to the first line of the job script (`date +%s.%N`).
  e. squeue wall time with 5,000 pending (held) jobs, p50 of 5 runs.
  f. controller RSS with those 5,000 pending jobs.
  g. sacct wall time once at least 10,000 jobs have finished (those held jobs and more,
     cancelled), p50 of 3 runs of `sacct -a -X`.
  h. the end-to-end throughput of c again on a wide cluster of 2 nodes x --wide-cpus (64) CPUs,
     which hides the job cycle behind many slots (0 skips it).

pyslurm-lite's CLIs run with a bytecode cache of their own (PYTHONPYCACHEPREFIX in the bench's
temporary directory, filled by one warm-up run of each), as an installed package has one. This
sandbox sets PYTHONDONTWRITEBYTECODE=1 on an editable install, so without it (--no-bytecode)
every CLI start compiles its ~15 modules again (~30 ms), which no installed system does.

With --slurm, the CLI workloads (a, c, d, e, f) also run against a real Slurm started by
../shared/slurm-reference/setup.sh (its CLIs in /usr/bin, SLURM_CONF under $SLURM_ANCHOR_ROOT),
and the table shows the ratio pyslurm-lite / Slurm. Slurm is never started from here.

    python bench/bench_foundation.py [--quick] [--jobs 500] [--e2e-runs 3] [--cpus N] [--wide-cpus 64]
                                     [--no-bytecode] [--slurm]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import psutil

from pyslurm_lite.client import Client
from pyslurm_lite.model import JobSpec

BIN = os.path.dirname(sys.executable)  # pyslurm-lite's CLIs sit beside this interpreter
SLURM_BIN = "/usr/bin"
SLURM_ROOT = os.environ.get("SLURM_ANCHOR_ROOT", "/tmp/slurm-anchor")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE"}
TRUE_SCRIPT = "#!/bin/sh\ntrue\n"
POLL_S = 0.1  # seconds between state polls while waiting for jobs
CLI_TIMEOUT_S = 60  # one CLI call
UP_TIMEOUT_S = 120  # cluster up / down
CHUNK = 1000  # specs per submit_async / cancel call


@dataclasses.dataclass
class Sizes:
    sbatch_runs: int = 30
    api_async: int = 2000
    api_sequential: int = 300
    e2e_jobs: int = 500
    e2e_runs: int = 3  # pyslurm-lite's e2e is a few seconds and the host's speed varies: median
    idle_samples: int = 30
    pending: int = 5000
    squeue_runs: int = 5
    sbatch_parallel: int = 100  # sbatch calls over the 4 parallel submitters
    finished: int = 10000
    sacct_runs: int = 3


QUICK = Sizes(sbatch_runs=8, api_async=200, api_sequential=50, e2e_jobs=50, e2e_runs=1, idle_samples=5,
              pending=500, squeue_runs=3, sbatch_parallel=20, finished=1000, sacct_runs=1)
SUBMITTERS = 4  # parallel sbatch loops (a)


# ---- small helpers ------------------------------------------------------------------------------
def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(p / 100 * len(ordered))))
    return ordered[rank - 1]


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t0


def chunks(items: list, size: int = CHUNK):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def wait_until(check, timeout: float, what: str):
    """Call check() every POLL_S until it returns a truthy value; TimeoutError after timeout s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(POLL_S)


# ---- the two systems behind one small interface -----------------------------------------------
class Backend:
    """One system under test: its CLIs, how it submits held jobs, reads states, finds its daemon."""

    name = ""
    bindir = ""

    def __init__(self, env: dict[str, str], work_dir: str):
        self.env, self.work_dir = env, work_dir

    def cli(self, cmd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([os.path.join(self.bindir, cmd), *args], env=self.env,
                              cwd=self.work_dir, capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S)
        if check and proc.returncode != 0:
            raise RuntimeError(f"{self.name} {cmd} {' '.join(args)[:80]} failed "
                               f"(rc={proc.returncode}): {proc.stderr.strip()[:300]}")
        return proc

    def sbatch_parsable(self, *args: str) -> int:
        return int(self.cli("sbatch", "--parsable", *args).stdout.strip().split(";")[0])

    def wait_final(self, ids: list[int], timeout: float) -> dict[int, str]:
        final: dict[int, str] = {}

        def all_final():
            rest = [i for i in ids if i not in final]
            final.update({i: s for i, s in self.states(rest).items() if s in FINAL})
            return len(final) == len(ids)
        wait_until(all_final, timeout, f"{len(ids)} {self.name} jobs to finish")
        return final

    # filled in by each system
    def submit_held(self, n: int, hold: bool = True) -> list[int]: ...
    def release(self, ids: list[int]) -> str: ...
    def states(self, ids: list[int]) -> dict[int, str]: ...
    def cancel(self, ids: list[int]) -> None: ...
    def controller_pid(self) -> int: ...
    def record_latency(self, job_id: int) -> float | None: ...

    def last_end(self, ids: list[int]) -> float | None:
        """The latest end time (time.time() scale) in the jobs' records, where it is kept
        finer than a second; None otherwise."""
        return None

    def explain(self, ids: list[int]) -> str:
        return ""


class Lite(Backend):
    name, bindir = "pyslurm-lite", BIN

    def __init__(self, env, work_dir, cluster_dir: str):
        super().__init__(env, work_dir)
        self.cluster_dir = cluster_dir
        self.client = Client(conf_path=env["PYSLURM_LITE_CONF"])

    def spec(self, script: str = TRUE_SCRIPT, hold: bool = False) -> JobSpec:
        return JobSpec(name="bench", script=script, work_dir=self.work_dir, hold=hold,
                       std_out="/dev/null", std_err="/dev/null")

    def submit_held(self, n: int, hold: bool = True) -> list[int]:
        ids: list[int] = []
        for part in chunks(list(range(n))):
            ids += self.client.submit_async([self.spec(hold=hold) for _ in part])
        return ids

    def release(self, ids: list[int]) -> str:
        from importlib.util import find_spec
        if find_spec("pyslurm_lite.cli.scontrol") is not None:
            proc = self.cli("scontrol", "release", ",".join(map(str, ids)), check=False)
            if proc.returncode == 0:
                return "one `scontrol release`"
            # the timer keeps running: a failed scontrol is part of what the user would wait for
            self.client.update_jobs(ids, "release")
            return f"scontrol release failed (rc={proc.returncode}) -> Client.update_jobs"
        self.client.update_jobs(ids, "release")
        return "Client.update_jobs(ids, 'release') (no scontrol in the repo yet)"

    def states(self, ids: list[int]) -> dict[int, str]:
        jobs, _ = self.client.jobs(job_ids=ids, include_finished=True)
        return {j.job_id: j.state for j in jobs}

    def cancel(self, ids: list[int]) -> None:
        for part in chunks(ids):
            self.client.cancel(job_ids=part)

    def controller_pid(self) -> int:
        with open(os.path.join(self.cluster_dir, "controller.pid")) as f:
            return int(f.read().split()[0])

    def record_latency(self, job_id: int) -> float | None:
        jobs, _ = self.client.jobs(job_ids=[job_id], include_finished=True)
        return jobs[0].start_time - jobs[0].submit_time if jobs and jobs[0].start_time else None

    def last_end(self, ids: list[int]) -> float | None:
        jobs, _ = self.client.jobs(job_ids=ids, include_finished=True)
        return max((j.end_time for j in jobs), default=None) if len(jobs) == len(ids) else None

    def explain(self, ids: list[int]) -> str:
        """What the job records say about a few jobs (why they did not complete)."""
        jobs, _ = self.client.jobs(job_ids=ids[:3], include_finished=True)
        return "; ".join(f"job {j.job_id} {j.state} reason={j.reason} exit={j.exit_code}:"
                         f"{j.exit_signal} nodes={','.join(a.node for a in j.allocations)}"
                         for j in jobs)


class Slurm(Backend):
    name, bindir = "slurm", SLURM_BIN
    SUBMITTERS = 4  # parallel sbatch processes filling the queue (as results.txt did)

    def submit_held(self, n: int, hold: bool = True) -> list[int]:
        args = ("-H",) * hold + ("-o", "/dev/null", "--wrap=true")
        with ThreadPoolExecutor(self.SUBMITTERS) as pool:
            return list(pool.map(lambda _: self.sbatch_parsable(*args), range(n)))

    def release(self, ids: list[int]) -> str:
        self.cli("scontrol", "release", ",".join(map(str, ids)))
        return "one `scontrol release`"

    def states(self, ids: list[int]) -> dict[int, str]:
        out = self.cli("squeue", "-h", "-t", "all", "-j", ",".join(map(str, ids)),
                       "-o", "%i %T", check=False).stdout
        pairs = (line.split() for line in out.splitlines())
        return {int(p[0]): p[1] for p in pairs if len(p) == 2 and p[0].isdigit()}

    def cancel(self, ids: list[int]) -> None:
        for part in chunks(ids):
            self.cli("scancel", *map(str, part), check=False)

    def controller_pid(self) -> int:
        with open(os.path.join(SLURM_ROOT, "run", "slurmctld.pid")) as f:
            return int(f.read().split()[0])

    def record_latency(self, job_id: int) -> float | None:
        return None  # Slurm's job record keeps whole seconds: the script stamp is used instead


# ---- workloads (the same code for both systems) -------------------------------------------------
def sbatch_latency(b: Backend, runs: int) -> list[float]:
    """a. wall seconds of each `sbatch --wrap=true`; waits for those jobs so later runs are idle."""
    walls, ids = [], []
    for _ in range(runs):
        proc, wall = timed(b.cli, "sbatch", "-o", "/dev/null", "--wrap=true")
        walls.append(wall)
        ids.append(int(proc.stdout.split()[-1]))
    b.wait_final(ids, timeout=60 + runs)
    return walls


def parallel_sbatch(b: Backend, n: int) -> float:
    """a. sbatch calls/s from SUBMITTERS processes in parallel, n calls in all (held jobs,
    cancelled after)."""
    def loop(count: int) -> list[int]:
        return [b.sbatch_parsable("-H", "-o", "/dev/null", "--wrap=true") for _ in range(count)]
    counts = [n // SUBMITTERS + (i < n % SUBMITTERS) for i in range(SUBMITTERS)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(SUBMITTERS) as pool:
        ids = [i for part in pool.map(loop, counts) for i in part]
    wall = time.perf_counter() - t0
    b.cancel(ids)
    return n / wall


def sacct_finished(b: Backend, finished: int, runs: int) -> tuple[list[float], int]:
    """g. sacct wall seconds once `finished` jobs more have ended, and how many lines it printed
    (jobs, with this run's others). They end cancelled while pending behind a job that holds
    every CPU: eligible, so sacct lists them (a held job never was, and neither system lists
    it without -j)."""
    blocker = b.sbatch_parsable("-N", "2", "--exclusive", "-o", "/dev/null", "--wrap=sleep 3600")
    try:
        wait_until(lambda: b.states([blocker]).get(blocker) == "RUNNING", 60, "the blocker")
        for part in chunks(list(range(finished)), 5000):
            b.cancel(b.submit_held(len(part), hold=False))
    finally:
        b.cancel([blocker])
    walls, lines = [], 0
    for _ in range(runs):
        proc, wall = timed(b.cli, "sacct", "-a", "-X", "-n", "-o", "JobID,State")
        walls.append(wall)
        lines = len(proc.stdout.splitlines())
    return walls, lines


def end_to_end(b: Backend, n: int) -> tuple[float, str]:
    """c. jobs/s from one release of n held jobs to all done; also how, and jobs not COMPLETED."""
    ids = b.submit_held(n)
    t0, w0 = time.perf_counter(), time.time()
    how = b.release(ids)
    final = b.wait_final(ids, timeout=60 + n)
    elapsed = time.perf_counter() - t0
    last = b.last_end(ids)
    if last is not None:
        elapsed, how = last - w0, how + ", to the last end time in the records"
    others = sorted(i for i, s in final.items() if s != "COMPLETED")
    if others:
        how += f"; not COMPLETED: {dict(Counter(final[i] for i in others))} {b.explain(others)}"
    return n / elapsed, how


def idle_latency(b: Backend, samples: int) -> tuple[list[float], list[float]]:
    """d. per job: record start-submit (s, where the record has it) and submit -> script's stamp."""
    record, stamped = [], []
    for i in range(samples):
        stamp = os.path.join(b.work_dir, f"stamp.{b.name}.{i}")
        t0 = time.time()
        job_id = submit_stamped(b, stamp)
        b.wait_final([job_id], timeout=30)
        with open(stamp) as f:
            stamped.append(float(f.read()) - t0)
        latency = b.record_latency(job_id)
        if latency is not None:
            record.append(latency)
    return record, stamped


def submit_stamped(b: Backend, stamp: str) -> int:
    command = f"date +%s.%N > {stamp}"
    if isinstance(b, Lite):
        return b.client.submit(b.spec(script=f"#!/bin/sh\n{command}\n"))
    return b.sbatch_parsable("-o", "/dev/null", f"--wrap={command}")


def pending_load(b: Backend, n: int, runs: int) -> tuple[list[float], float]:
    """e, f. squeue wall seconds and controller RSS (MiB) with n held jobs; cancels them after."""
    ids = b.submit_held(n)
    try:
        walls = [timed(b.cli, "squeue")[1] for _ in range(runs)]
        rss = psutil.Process(b.controller_pid()).memory_info().rss / 2**20
    finally:
        b.cancel(ids)
    return walls, rss


def api_rates(b: Lite, n_async: int, n_seq: int) -> tuple[float, float]:
    """b. submissions/s with submit_async (one call of n held specs) and with sequential submit."""
    specs = [b.spec(hold=True) for _ in range(n_async)]
    ids, wall_async = timed(b.client.submit_async, specs)
    b.cancel(ids)
    seq_ids, wall_seq = timed(lambda: [b.client.submit(b.spec(hold=True)) for _ in range(n_seq)])
    b.cancel(seq_ids)
    return n_async / wall_async, n_seq / wall_seq


# ---- running a whole suite -----------------------------------------------------------------------
def run_suite(b: Backend, sizes: Sizes, notes: list[str]) -> dict[str, float]:
    """Every CLI workload on one system; returns metric key -> value (ms, jobs/s, MiB)."""
    r: dict[str, float] = {}
    log(f"[{b.name}] a. {sizes.sbatch_runs} x sbatch --wrap=true")
    walls = sbatch_latency(b, sizes.sbatch_runs)
    r["sbatch_p50"], r["sbatch_p95"] = pct(walls, 50) * 1e3, pct(walls, 95) * 1e3
    log(f"[{b.name}] a. {SUBMITTERS} parallel sbatch loops, {sizes.sbatch_parallel} calls")
    r["sbatch_par"] = parallel_sbatch(b, sizes.sbatch_parallel)
    log(f"[{b.name}] d. {sizes.idle_samples} idle submit->start samples")
    record, stamped = idle_latency(b, sizes.idle_samples)
    if record:
        r["start_p50"], r["start_p95"] = pct(record, 50) * 1e3, pct(record, 95) * 1e3
    r["stamp_p50"], r["stamp_p95"] = pct(stamped, 50) * 1e3, pct(stamped, 95) * 1e3
    if isinstance(b, Lite):
        log(f"[{b.name}] b. API submit rates")
        r["api_async"], r["api_seq"] = api_rates(b, sizes.api_async, sizes.api_sequential)
    log(f"[{b.name}] c. end-to-end, {sizes.e2e_jobs} held jobs released at once")
    runs = sizes.e2e_runs if isinstance(b, Lite) else 1  # Slurm's takes ~90 s and varies little
    rates = []
    for _ in range(runs):
        rate, how = end_to_end(b, sizes.e2e_jobs)
        rates.append(rate)
    r["e2e"] = statistics.median(rates)
    notes.append(f"{b.name}: e2e of {sizes.e2e_jobs} released by {how}; median of {runs} "
                 f"run(s): {', '.join(f'{x:.0f}' for x in rates)} jobs/s")
    log(f"[{b.name}] e/f. {sizes.pending} pending jobs: squeue and controller RSS")
    walls, r["rss"] = pending_load(b, sizes.pending, sizes.squeue_runs)
    r["squeue_p50"] = pct(walls, 50) * 1e3
    log(f"[{b.name}] g. sacct over {sizes.finished:,} more finished jobs")
    try:
        walls, lines = sacct_finished(b, sizes.finished, sizes.sacct_runs)
        r["sacct_p50"] = pct(walls, 50) * 1e3
        notes.append(f"{b.name}: sacct -a -X printed {lines:,} jobs")
    except RuntimeError as e:  # a Slurm without accounting storage has no sacct
        notes.append(f"{b.name}: sacct not measured: {e}")
    return r


def wide_e2e(cpus: int, sizes: Sizes, bytecode: bool, work_dir: str, notes: list[str]) -> float:
    """h. c's throughput on 2 nodes x `cpus` CPUs (median of e2e_runs)."""
    with local_cluster(2, cpus) as (cluster_dir, env):
        lite = Lite(bytecode_env(env, work_dir) if bytecode else env, work_dir, cluster_dir)
        log(f"[{lite.name}] h. end-to-end on 2 x {cpus} CPUs, {sizes.e2e_jobs} jobs")
        rates = [end_to_end(lite, sizes.e2e_jobs)[0] for _ in range(sizes.e2e_runs)]
    notes.append(f"pyslurm-lite wide (2 x {cpus} CPUs): median of {len(rates)} run(s): "
                 f"{', '.join(f'{x:.0f}' for x in rates)} jobs/s")
    return statistics.median(rates)


@contextlib.contextmanager
def local_cluster(nodes: int, cpus: int):
    """A fresh pyslurm-lite cluster in a temp dir; yields (its dir, env); always brought down."""
    directory = tempfile.mkdtemp(prefix="bench-pyslurm-lite-")
    admin = os.path.join(BIN, "pyslurm-lite")
    try:
        up = subprocess.run([admin, "cluster", "up", "--nodes", str(nodes), "--cpus", str(cpus),
                             "--dir", directory], capture_output=True, text=True,
                            timeout=UP_TIMEOUT_S)
        if up.returncode != 0:
            raise RuntimeError(f"pyslurm-lite cluster up failed:\n{up.stdout}{up.stderr}")
        env = dict(os.environ, PYSLURM_LITE_CONF=os.path.join(directory, "slurm.conf"))
        yield directory, env
    finally:
        subprocess.run([admin, "cluster", "down", "--dir", directory], capture_output=True,
                       timeout=UP_TIMEOUT_S)
        shutil.rmtree(directory, ignore_errors=True)


def bytecode_env(env: dict[str, str], work_dir: str) -> dict[str, str]:
    """env with a private bytecode cache for the CLIs (see the module's docstring)."""
    env = dict(env, PYTHONPYCACHEPREFIX=os.path.join(work_dir, "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def warm_up(b: Lite) -> None:
    """Run each timed CLI once (sbatch, scontrol release, squeue), filling the bytecode cache."""
    job_id = b.sbatch_parsable("-H", "-o", "/dev/null", "--wrap=true")
    b.cli("scontrol", "release", str(job_id), check=False)
    b.cli("squeue")
    b.wait_final([job_id], timeout=60)


def slurm_env() -> dict[str, str] | None:
    """SLURM_CONF environment when a real Slurm answers `scontrol ping`, else None."""
    env = dict(os.environ, SLURM_CONF=os.path.join(SLURM_ROOT, "etc", "slurm.conf"))
    needed = (os.path.join(SLURM_BIN, "sbatch"), env["SLURM_CONF"])
    if not all(os.path.exists(path) for path in needed):
        return None
    try:
        out = subprocess.run([os.path.join(SLURM_BIN, "scontrol"), "ping"], env=env,
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return env if "UP" in out else None


# ---- the table -----------------------------------------------------------------------------------
# key, label (formatted with Sizes), unit, target as (comparison, bound) or None
# targets: issue #19's
METRICS = [
    ("sbatch_p50", "sbatch --wrap=true wall time p50 (n={sbatch_runs})", "ms", ("<=", 100)),
    ("sbatch_p95", "sbatch --wrap=true wall time p95", "ms", None),
    ("sbatch_par", "4 parallel sbatch loops, {sbatch_parallel} calls", "sbatch/s", (">=", 40)),
    ("api_async", "API submissions/s, submit_async of {api_async:,} held", "jobs/s", (">=", 2000)),
    ("api_seq", "API submissions/s, {api_sequential:,} sequential submit", "jobs/s", None),
    ("e2e", "end-to-end, {e2e_jobs:,} jobs: release -> all COMPLETED, like for like", "jobs/s",
     (">=", 300)),
    ("e2e_wide", "end-to-end, {e2e_jobs:,} jobs, wide cluster", "jobs/s", (">=", 500)),
    ("start_p50", "idle submit->start p50, job record (n={idle_samples})", "ms", ("<=", 50)),
    ("start_p95", "idle submit->start p95, job record", "ms", None),
    ("stamp_p50", "idle submit call->script first line p50", "ms", None),
    ("stamp_p95", "idle submit call->script first line p95", "ms", None),
    ("squeue_p50", "squeue wall time, {pending:,} pending (p50 of {squeue_runs})", "ms",
     ("<=", 100)),
    ("rss", "controller RSS, {pending:,} pending", "MiB", ("<=", 60)),
    ("sacct_p50", "sacct -a -X wall time, {finished:,}+ finished (p50 of {sacct_runs})", "ms",
     ("<=", 300)),
]


SYMBOL = {"<=": "≤", ">=": "≥"}


def meets(value: float, target: tuple[str, float]) -> bool:
    return value <= target[1] if target[0] == "<=" else value >= target[1]


def fmt_value(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"


def table(ours: dict, slurm: dict | None, sizes: Sizes) -> str:
    header = ("metric", "pyslurm-lite", "target", "slurm", "ratio", "met")
    rows = [header]
    for key, label, unit, target in METRICS:
        mine, theirs = ours.get(key), (slurm or {}).get(key)
        goal = f"{SYMBOL[target[0]]} {target[1]:,}" if target else ""
        met = "" if not target or mine is None else "yes" if meets(mine, target) else "MISS"
        ratio = f"{mine / theirs:.2f}" if mine is not None and theirs else "-"
        label = label.format(**dataclasses.asdict(sizes))
        rows.append((f"{label} ({unit})", fmt_value(mine), goal, fmt_value(theirs), ratio, met))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                        enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def log(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=None, help="end-to-end job count (default 500)")
    p.add_argument("--e2e-runs", type=int, default=None,
                   help="end-to-end runs on pyslurm-lite, the median is reported (default 3)")
    p.add_argument("--cpus", type=int, default=os.cpu_count() or 2,
                   help="CPUs per node of the local cluster (default: this host's, like for like)")
    p.add_argument("--wide-cpus", type=int, default=64,
                   help="CPUs per node of the wide cluster of h (0: skip it)")
    p.add_argument("--quick", action="store_true", help="small counts for a smoke run")
    p.add_argument("--no-bytecode", dest="bytecode", action="store_false",
                   help="run pyslurm-lite's CLIs without a bytecode cache (compiled at every start)")
    p.add_argument("--slurm", dest="slurm", action="store_true",
                   help="also run the CLI workloads against a running real Slurm")
    p.add_argument("--no-slurm", dest="slurm", action="store_false", help="(default)")
    p.set_defaults(slurm=False)
    return p.parse_args(argv)


def run_slurm(wanted: bool, sizes: Sizes, work_dir: str, notes: list[str]) -> dict | None:
    """The same CLI workloads on a running real Slurm, or None with a note saying why not."""
    if not wanted:
        notes.append("slurm: not measured (pass --slurm with a running slurm-reference cluster)")
        return None
    env = slurm_env()
    if env is None:
        notes.append(f"slurm: skipped, no Slurm answering with SLURM_CONF={SLURM_ROOT}/etc/"
                     "slurm.conf (start it with bash ../shared/slurm-reference/setup.sh)")
        return None
    nodes = subprocess.run([os.path.join(SLURM_BIN, "sinfo"), "-h", "-N", "-o", "%N:%c"], env=env,
                           capture_output=True, text=True, timeout=CLI_TIMEOUT_S).stdout.split()
    notes.append(f"slurm: nodes {' '.join(sorted(set(nodes)))} (name:CPUs); submit->start is the "
                 "script stamp only, its job record keeps whole seconds")
    try:
        return run_suite(Slurm(env, work_dir), sizes, notes)
    except (RuntimeError, TimeoutError, OSError, subprocess.SubprocessError) as e:
        notes.append(f"slurm: run failed, column left empty: {e}")
        return None


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = dataclasses.replace(QUICK if args.quick else Sizes())
    if args.jobs:
        sizes.e2e_jobs = args.jobs
    if args.e2e_runs:
        sizes.e2e_runs = args.e2e_runs
    notes: list[str] = [f"pyslurm-lite: 2 nodes x {args.cpus} CPUs, so {2 * args.cpus} one-CPU "
                        f"jobs run at once; host has {os.cpu_count()} CPUs, 1-min load "
                        f"{os.getloadavg()[0]:.2f} at start",
                        "pyslurm-lite CLIs: transport "
                        f"{os.environ.get('PYSLURM_LITE_TRANSPORT') or 'h2 (their default)'}, "
                        + ("bytecode cached after one warm-up run" if args.bytecode else
                           "no bytecode cache (each start compiles the modules it imports)")]
    work_dir = tempfile.mkdtemp(prefix="bench-work-")
    try:
        with local_cluster(2, args.cpus) as (cluster_dir, env):
            lite = Lite(bytecode_env(env, work_dir) if args.bytecode else env, work_dir, cluster_dir)
            if args.bytecode:
                warm_up(lite)
            ours = run_suite(lite, sizes, notes)
        if args.wide_cpus:
            ours["e2e_wide"] = wide_e2e(args.wide_cpus, sizes, args.bytecode, work_dir, notes)
        slurm = run_slurm(args.slurm, sizes, work_dir, notes)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    notes.append(f"1-min load average at the end: {os.getloadavg()[0]:.2f} (other tenants skew "
                 "every figure)")
    print(table(ours, slurm, sizes))
    print("\nratio = pyslurm-lite / slurm (rates: higher is better; latency and memory: lower)")
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
