"""What agents measured of a job's steps (model.UsageSample), as sacct 22.05 prints it.

An agent reports, per (step, node), cumulative CPU seconds, peak and mean resident memory, and
its GPUs' utilization and memory (JobAcctGatherFrequency). Slurm keeps such figures per task;
here a node's sample stands for the step's tasks on that node: a per-task CPU figure (MinCPU,
AveCPU, TRESUsageIn cpu) is the node's share divided by its tasks, a memory peak is the node's.
With one task per node, as batch steps and most sruns have, the two agree.

Which line carries what follows sacct's print.c: the step lines (ID.batch, ID.0) carry every
TRESUsage/RSS/CPU statistic; the job's line carries only TotalCPU, UserCPU and SystemCPU, summed
over its steps (slurmdbd adds the steps' CPU time to the job's record).

Spelling (src/common): sizes through convert_num_unit with CONVERT_NUM_UNIT_EXACT, bytes divided
by 1024 while the result stays whole or half whole (209715200 -> "200M", 209977344 ->
"205056K"); CPU times through _elapsed_time ("00:12.345" below an hour, with milliseconds,
"01:02:03" above, "1-00:00:00"); TRES usage strings sorted by name, cpu as HH:MM:SS.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..units import format_hms as secs2time_str  # Slurm's secs2time_str: [D-]HH:MM:SS

# convert_num_unit's unit letters: UNIT_NONE (bytes) .. UNIT_PETA, then UNIT_UNKNOWN.
_UNITS = ("", "K", "M", "G", "T", "P", "?")


# ---- Slurm's spellings ------------------------------------------------------------------------
def convert_num_unit(num: float, unit: int = 0) -> str:
    """Slurm's convert_num_unit(CONVERT_NUM_UNIT_EXACT): divide by 1024 until precision would
    be lost (a half value such as 2.5G is still exact), then print whole or with 2 decimals."""
    if int(num) == 0:
        return "0"
    while num >= 1024 and int(num) % 512 == 0:
        num /= 1024
        unit += 1
    letter = _UNITS[min(unit, len(_UNITS) - 1)]
    return f"{int(num)}{letter}" if num == int(num) else f"{num:.2f}{letter}"


def elapsed_time(seconds: float) -> str:
    """sacct's _elapsed_time: D-HH:MM:SS, HH:MM:SS, MM:SS.mmm when under an hour with a
    fraction of a second, else 00:MM:SS (AveCPU and MinCPU pass whole seconds)."""
    secs = int(seconds)
    millis = int(round((seconds - secs) * 1e6)) // 1000
    if millis >= 1000:
        secs, millis = secs + 1, 0
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"
    if millis:
        return f"{minutes:02d}:{secs:02d}.{millis:03d}"
    return f"00:{minutes:02d}:{secs:02d}"


# ---- one step's statistics --------------------------------------------------------------------
def run_samples(job, step: str | None = None) -> list:
    """The samples of this run of the job (a requeued job's earlier runs are not its), of one
    step or of all of them."""
    return [s for s in job.usage if s.restart_count == job.restart_count
            and (step is None or s.step == step)]


@dataclass
class NodeUse:
    """One node's share of a step: the node, the rank of its first task, its sample."""

    node: str
    first_task: int
    sample: object

    @property
    def tasks(self) -> int:
        return max(self.sample.tasks, 1)

    @property
    def cpu(self) -> float:
        return self.sample.user_cpu + self.sample.system_cpu

    @property
    def cpu_per_task(self) -> float:
        return self.cpu / self.tasks


def node_uses(samples: list, nodes: list[str]) -> list[NodeUse]:
    """The samples in the step's node order, each with the rank of its first task."""
    order = {n: i for i, n in enumerate(nodes)}
    ranked = sorted(samples, key=lambda s: (order.get(s.node, len(order)), s.node))
    out, rank = [], 0
    for s in ranked:
        out.append(NodeUse(s.node, rank, s))
        rank += max(s.tasks, 1)
    return out


def tasks_of(uses: list[NodeUse]) -> int:
    return sum(u.tasks for u in uses) or 1


def max_rss(uses):
    return max(uses, key=lambda u: u.sample.max_rss)


def min_cpu(uses):
    return min(uses, key=lambda u: u.cpu_per_task)


def _usage_in(uses: list[NodeUse], kind: str) -> dict[str, float]:
    """TRESUsageIn{Ave,Max,Tot}'s counts (cpu in seconds, sizes in bytes, gpuutil in %)."""
    n = tasks_of(uses)
    tot = {"cpu": sum(u.cpu for u in uses), "mem": sum(u.sample.max_rss for u in uses)}
    ave = {"cpu": tot["cpu"] / n, "mem": sum(u.sample.ave_rss for u in uses) / len(uses)}
    top = {"cpu": max(u.cpu_per_task for u in uses), "mem": max_rss(uses).sample.max_rss}
    gpu = [u.sample for u in uses if u.sample.gpus]
    if gpu:
        tot.update({"gres/gpuutil": sum(s.ave_gpu_util for s in gpu),
                    "gres/gpumem": sum(s.max_gpu_mem for s in gpu)})
        ave.update({"gres/gpuutil": tot["gres/gpuutil"] / len(gpu),
                    "gres/gpumem": tot["gres/gpumem"] / len(gpu)})
        top.update({"gres/gpuutil": max(s.max_gpu_util for s in gpu),
                    "gres/gpumem": max(s.max_gpu_mem for s in gpu)})
    return {"ave": ave, "max": top, "tot": tot}[kind]


def tres_usage_string(counts: dict[str, float]) -> str:
    """Slurm's usage TRES string (TRES_STR_FLAG_BYTES): cpu as time, the rest through
    convert_num_unit, sorted by name."""
    shown = {name: secs2time_str(v) if name == "cpu" else convert_num_unit(int(v))
             for name, v in counts.items()}
    return ",".join(f"{k}={shown[k]}" for k in sorted(shown))


# ---- sacct's fields ---------------------------------------------------------------------------
def _uses(rec) -> list[NodeUse]:
    if rec.step is None:
        return []
    return node_uses(run_samples(rec.job, rec.step.suffix), rec.step.nodes)


def _step_stat(fn):
    """A statistic only a step line with samples has (the job's line prints it empty)."""
    def getter(rec) -> str:
        uses = _uses(rec)
        return fn(uses) if uses else ""
    return getter


def _cpu_seconds(rec, part: str) -> float:
    """The run's (job line) or the step's CPU seconds: user, system or both."""
    samples = run_samples(rec.job, rec.step.suffix if rec.step else None)
    user = sum(s.user_cpu for s in samples)
    system = sum(s.system_cpu for s in samples)
    return {"user": user, "system": system, "total": user + system}[part]


GETTERS = {
    "MaxRSS": _step_stat(lambda u: convert_num_unit(max_rss(u).sample.max_rss)),
    "MaxRSSNode": _step_stat(lambda u: max_rss(u).node),
    "MaxRSSTask": _step_stat(lambda u: str(max_rss(u).first_task)),
    "AveRSS": _step_stat(lambda u: convert_num_unit(int(_usage_in(u, "ave")["mem"]))),
    "AveCPU": _step_stat(lambda u: elapsed_time(int(_usage_in(u, "ave")["cpu"]))),
    "MinCPU": _step_stat(lambda u: elapsed_time(int(min_cpu(u).cpu_per_task))),
    "MinCPUNode": _step_stat(lambda u: min_cpu(u).node),
    "MinCPUTask": _step_stat(lambda u: str(min_cpu(u).first_task)),
    "TRESUsageInAve": _step_stat(lambda u: tres_usage_string(_usage_in(u, "ave"))),
    "TRESUsageInMax": _step_stat(lambda u: tres_usage_string(_usage_in(u, "max"))),
    "TRESUsageInTot": _step_stat(lambda u: tres_usage_string(_usage_in(u, "tot"))),
    "TotalCPU": lambda r: elapsed_time(_cpu_seconds(r, "total")),
    "UserCPU": lambda r: elapsed_time(_cpu_seconds(r, "user")),
    "SystemCPU": lambda r: elapsed_time(_cpu_seconds(r, "system")),
}
