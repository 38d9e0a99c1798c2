"""seff JOBID: a job's CPU, memory (and here GPU) efficiency, as Slurm 22.05's contribs/seff.

The figures come from the accounting records sacct reads (the run's steps and what agents
sampled of them, cli/acctusage.py):
  CPU Utilized       the steps' user + system CPU time, whole seconds
  CPU Efficiency     that / (Job Wall-clock time x allocated cores)
  Memory Utilized    the largest step's memory: its nodes' peaks summed (Slurm's later seff uses
                     TRESUsageInTot mem, the sum of the tasks' peaks, the same figure); "estimated
                     maximum" when that step ran more than one task, as 22.05's seff says
  Memory Efficiency  that / the memory the job asked for (--mem per node x nodes, or
                     --mem-per-cpu x cores)
Ours, after those lines, for a job that held GPUs:
  GPU Efficiency     the GPUs' mean utilization over the samples, weighted by GPUs
  GPU Memory Utilized  the largest step's GPU memory peak, summed over its nodes
Worked example: 1 core, 20 s, 1 s of CPU, 200 MiB peak of --mem=400M -> "CPU Efficiency: 5.00%
of 00:00:20 core-walltime", "Memory Utilized: 200.00 MB", "Memory Efficiency: 50.00% of 400.00 MB".
"""

from __future__ import annotations

import getopt
import math
import sys
import time

from . import acctfields as af
from . import acctusage
from .common import run

PROG = "seff"
VERSION = "2.1"  # contribs/seff's own version line
USAGE = ("Usage: seff [Options] <Jobid>\n"
         "       Options:\n"
         "       -h    Help menu\n"
         "       -v    Version\n"
         "       -d    Debug mode: display raw Slurm data\n")


# ---- seff's spellings -------------------------------------------------------------------------
def time2str(seconds: float) -> str:
    """[D-]HH:MM:SS, as seff's time2str."""
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{hours:02d}:{minutes:02d}:{secs:02d}"


def kbytes2str(kbytes: float) -> str:
    """'200.00 MB' for 204800 KiB; '0.00 MB' for nothing, as seff's kbytes2str."""
    if kbytes <= 0:
        return "0.00 MB"
    exp = int(math.log(kbytes) / math.log(1024))
    prefix = "KMGTPE"[exp] if exp < 6 else ""
    return f"{kbytes / 1024 ** exp:.2f} {prefix}B"


# ---- the figures ------------------------------------------------------------------------------
class Efficiency:
    """A run's figures, in seff's units: CPU seconds, KiB."""

    def __init__(self, rec: af.Rec):
        job, spec = rec.job, rec.spec
        self.state = rec.state
        self.ncpus = af.alloc_cpus(rec) or 1
        self.nnodes = len(job.allocations) if job.start_time and job.allocations else 1
        self.walltime = int(af.times(rec)[2])
        self.steps = af.run_steps(job, spec, rec.state)
        self.cpu = self._cpu_seconds(job)
        self.mem, self.ntasks = self._memory(job)
        per_cpu = 0 if spec.mem_per_node or spec.mem_per_gpu else \
            spec.mem_per_cpu or rec.cfg.def_mem_per_cpu
        self.pernode = not per_cpu
        self.reqmem = 1024 * (af.req_mem_per_node(rec) * self.nnodes if self.pernode
                              else per_cpu * self.ncpus)
        self.gpus = sum(len(a.gpus) for a in job.allocations) if job.start_time else 0
        # a job holding shards (or mps) of a GPU: its utilisation is the whole GPU's
        self.shares = ",".join(f"{k[5:]}:{v}" for k, v in af.shares_held(job.allocations).items()) \
            if job.start_time else ""
        self.gpu_util, self.gpu_mem = self._gpus(job)

    def _cpu_seconds(self, job) -> int:
        """Whole seconds plus the microseconds rounded, as seff adds tot_cpu_sec/usec."""
        total = sum(s.user_cpu + s.system_cpu for s in acctusage.run_samples(job))
        return int(total + 0.5)

    def _memory(self, job) -> tuple[float, int]:
        best, ntasks = 0.0, 0
        for step in self.steps:
            samples = acctusage.run_samples(job, step.suffix)
            kbytes = sum(s.max_rss for s in samples) / 1024
            if samples and kbytes > best:
                best, ntasks = kbytes, step.tasks
        return best, ntasks

    def _gpus(self, job) -> tuple[float, float]:
        samples = [s for s in acctusage.run_samples(job) if s.gpus]
        held = sum(s.gpus for s in samples)
        util = sum(s.ave_gpu_util * s.gpus for s in samples) / held if held else 0.0
        per_step: dict[str, int] = {}
        for s in samples:
            per_step[s.step] = per_step.get(s.step, 0) + s.max_gpu_mem
        return util, max(per_step.values(), default=0) / 1024


def report(rec: af.Rec, cluster: str, debug: bool = False) -> str:
    e, job, spec = Efficiency(rec), rec.job, rec.spec
    out = []
    if debug:
        out += ["Slurm data: JobID ArrayJobID User Group State Clustername Ncpus Nnodes Ntasks "
                "Reqmem PerNode Cput Walltime Mem ExitStatus",
                f"Slurm data: {job.job_id} {array_id(job)} {spec.user} {af.group_name(spec.gid)} "
                f"{e.state} {cluster} {e.ncpus} {e.nnodes} {e.ntasks} {e.reqmem} {int(e.pernode)} "
                f"{e.cpu} {e.walltime} {e.mem:g} {job.exit_code}", ""]
    out.append(f"Job ID: {job.job_id}")
    if job.array_job_id:
        out.append(f"Array Job ID: {array_id(job)}")
    out += [f"Cluster: {cluster}", f"User/Group: {spec.user}/{af.group_name(spec.gid)}"]
    running_or_pending = e.state in ("PENDING", "RUNNING")
    out.append(f"State: {e.state}" if running_or_pending else
               f"State: {e.state} (exit code {job.exit_code})")
    out += [f"Cores: {e.ncpus}"] if e.ncpus == 1 else \
        [f"Nodes: {e.nnodes}", f"Cores per node: {e.ncpus // e.nnodes}"]
    if e.state == "PENDING":
        out.append("Efficiency not available for jobs in the PENDING state.")
        return "\n".join(out) + "\n"
    out += efficiency_lines(e)
    if e.state == "RUNNING":
        out.append(f"WARNING: Efficiency statistics may be misleading for {e.state} jobs.")
    return "\n".join(out) + "\n"


def efficiency_lines(e: Efficiency) -> list[str]:
    core_walltime = e.walltime * e.ncpus
    cpu_eff = e.cpu / core_walltime * 100 if core_walltime else 0.0
    mem_eff = e.mem / e.reqmem * 100 if e.reqmem else 0.0
    estimated = "" if e.ntasks == 1 else " (estimated maximum)"
    if e.ntasks == 1:
        of = kbytes2str(e.reqmem)
    elif e.pernode:
        of = f"{kbytes2str(e.reqmem)} ({kbytes2str(e.reqmem / e.nnodes)}/node)"
    else:
        of = f"{kbytes2str(e.reqmem)} ({kbytes2str(e.reqmem / e.ncpus)}/core)"
    out = [f"CPU Utilized: {time2str(e.cpu)}",
           f"CPU Efficiency: {cpu_eff:.2f}% of {time2str(core_walltime)} core-walltime",
           f"Job Wall-clock time: {time2str(e.walltime)}",
           f"Memory Utilized: {kbytes2str(e.mem)}{estimated}",
           f"Memory Efficiency: {mem_eff:.2f}% of {of}"]
    if e.gpus:
        shared = f" (shared: {e.shares}, the GPU's use by all its jobs)" if e.shares else ""
        out += [f"GPU Efficiency: {e.gpu_util:.2f}% of {e.gpus} GPU(s){shared}",
                f"GPU Memory Utilized: {kbytes2str(e.gpu_mem)}"]
    return out


def array_id(job) -> str:
    return f"{job.array_job_id}_{job.array_task_id}" if job.array_job_id else ""


# ---- command ----------------------------------------------------------------------------------
def find_run(client, text: str):
    """The job's record as seff's jobs_get finds it (a whole array: its first task); None when
    there is none or the id is not one."""
    from ..errors import InvalidRequest
    from .jobids import filter_fields, parse
    try:
        ids, tasks = filter_fields(parse(text))
    except InvalidRequest:
        return None, 0.0
    if len(ids) + len(tasks) != 1:
        return None, 0.0
    runs, now = client.job_history(job_ids=ids, array_tasks=tasks, any_eligibility=True)
    return (runs[0] if runs else None), now


def main_args(argv: list[str]) -> int:
    try:
        opts, args = getopt.getopt(argv, "hvdf:")
    except getopt.GetoptError as e:
        sys.stderr.write(f"{PROG}: {e.msg}\n")
        opts, args = [("-h", "")], []
    flags = {o for o, _ in opts}
    if "-v" in flags:
        sys.stdout.write(f"seff Version {VERSION}\n")
        return 1
    if "-h" in flags or len(args) != 1:
        sys.stdout.write(USAGE)
        return 1
    from ..client import Client
    from ..model import JobSpec
    from ..rpc import wire
    client = Client()
    run_msg, now = find_run(client, args[0])
    if run_msg is None:
        sys.stderr.write("Job not found.\n")
        return 2
    job = run_msg.job
    rec = af.Rec(job, wire.from_msg(job.spec, JobSpec), run_msg.state, None, now or time.time(),
                 client.cfg)
    sys.stdout.write(report(rec, client.cfg.cluster_name, "-d" in flags))
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
