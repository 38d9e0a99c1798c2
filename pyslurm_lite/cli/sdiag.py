"""sdiag: the controller's counters — jobs by outcome and the scheduling passes — in Slurm's
layout (the parts we keep; RPC and agent-queue statistics are not tracked)."""

from __future__ import annotations

import sys
import time

from .common import SlurmArgParser, run

PROG = "sdiag"
STARS = "*" * 55


def _when(epoch: float) -> str:
    return f"{time.strftime('%a %b %d %H:%M:%S %Y', time.localtime(epoch))} ({int(epoch)})"


def report(d) -> str:
    mean = d.total_cycle_us // d.cycles if d.cycles else 0
    minutes = max((d.now - d.since) / 60.0, 1.0 / 60)
    return "\n".join([
        STARS, f"sdiag output at {_when(d.now)}", f"Data since      {_when(d.since)}", STARS,
        "", f"Jobs submitted: {d.jobs_submitted}", f"Jobs started:   {d.jobs_started}",
        f"Jobs completed: {d.jobs_completed}", f"Jobs canceled:  {d.jobs_canceled}",
        f"Jobs failed:    {d.jobs_failed}", "",
        f"Jobs pending:   {d.jobs_pending}", f"Jobs running:   {d.jobs_running}", "",
        "Main schedule statistics (microseconds):",
        f"\tLast cycle:   {d.last_cycle_us}", f"\tMax cycle:    {d.max_cycle_us}",
        f"\tTotal cycles: {d.cycles}", f"\tMean cycle:   {mean}",
        f"\tCycles per minute: {int(d.cycles / minutes)}",
        f"\tLast queue length: {d.last_queue_length}",
        f"\tEvent-triggered cycles: {d.event_cycles}", "",
        "Backfilling stats",
        f"\tTotal backfilled jobs (since last slurm start): {d.backfilled_jobs}",
        f"\tTotal preempted jobs (since last slurm start): {d.preempted_jobs}", ""])


def main_args(argv: list[str]) -> int:
    p = SlurmArgParser(prog=PROG)
    # -a asks for all statistics: what sdiag prints anyway (Slurm's default mode too).
    p.add_argument("-a", "--all", action="store_true")
    p.parse_args(argv)
    from ..client import Client
    sys.stdout.write(report(Client().diag()) + "\n")
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
