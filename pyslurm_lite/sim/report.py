"""What a replay measured: the summary figures, the table the command prints, the CSV dump.

Definitions (per replayed job: wait = start - submit, run = min(run time, estimate)):
  makespan             last end - first submit, seconds;
  utilization          sum(procs * run) / (machine * makespan);
  mean / max wait      seconds;
  bounded slowdown     max((wait + run) / max(run, 10), 1), averaged over jobs (threshold 10 s).
"""

from __future__ import annotations

from dataclasses import dataclass

from .swf import Trace

BSLD_THRESHOLD = 10  # seconds: runs shorter than this count as 10 s in the bounded slowdown
CSV_HEADER = "id,submit,start,end,procs"


@dataclass(frozen=True)
class Summary:
    trace: str
    policy: str
    jobs: int
    skipped: int
    utilization: float  # fraction, 0..1
    mean_wait: float  # seconds
    max_wait: float  # seconds
    mean_bsld: float
    makespan: float  # seconds
    wall: float  # seconds spent replaying (reading the trace not included)


def summarize(trace: Trace, policy: str, start: list, wall: float = 0.0) -> Summary:
    submit, run, procs = trace.submit, trace.run, trace.procs
    n = len(submit)
    if n == 0:
        return Summary(trace.name, policy, 0, trace.skipped, 0.0, 0.0, 0.0, 0.0, 0, wall)
    waits = [s - b for s, b in zip(start, submit)]
    makespan = max(map(sum, zip(start, run))) - min(submit)
    work = sum(p * r for p, r in zip(procs, run))
    bsld = sum(max((w + r) / max(r, BSLD_THRESHOLD), 1.0) for w, r in zip(waits, run))
    return Summary(trace.name, policy, n, trace.skipped,
                   work / (trace.machine * makespan) if makespan > 0 else 0.0,
                   sum(waits) / n, max(waits), bsld / n, makespan, wall)


COLUMNS = [  # (header, format) of the printed table, in order
    ("trace", "{s.trace}"), ("policy", "{s.policy}"), ("jobs", "{s.jobs}"),
    ("skipped", "{s.skipped}"), ("util %", "{util:.2f}"), ("mean wait s", "{s.mean_wait:.0f}"),
    ("max wait s", "{s.max_wait:.0f}"), ("mean bsld", "{s.mean_bsld:.2f}"),
    ("makespan s", "{s.makespan:.0f}"), ("wall s", "{s.wall:.2f}"),
]


def table(summaries: list[Summary]) -> str:
    """The summaries as an aligned text table: text columns left, numbers right."""
    rows = [[h for h, _ in COLUMNS]]
    for s in summaries:
        rows.append([fmt.format(s=s, util=100 * s.utilization) for _, fmt in COLUMNS])
    widths = [max(len(r[c]) for r in rows) for c in range(len(COLUMNS))]
    lines = []
    for r in rows:
        cells = [r[c].ljust(widths[c]) if c < 2 else r[c].rjust(widths[c]) for c in range(len(r))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


@dataclass(frozen=True)
class Accuracy:
    """How far projected starts were from the real ones, over the jobs that had to wait (a job
    that starts at its submit is projected exactly, and would only dilute the figures)."""

    policy: str
    waited: int  # jobs that did not start at their submit
    projected: int  # of them, those given a projection at their submit
    median: float  # seconds, |projected - actual start|
    p90: float
    early: float  # fraction of the projected that started no later than projected


def projection_accuracy(trace: Trace, policy: str, start: list, projected: list) -> Accuracy:
    submit = trace.submit
    waited = [j for j in range(len(submit)) if start[j] > submit[j]]
    errors = sorted(abs(projected[j] - start[j]) for j in waited if projected[j] is not None)
    on_time = sum(1 for j in waited if projected[j] is not None and start[j] <= projected[j])

    def q(x: float) -> float:
        return errors[min(int(x * len(errors)), len(errors) - 1)] if errors else 0.0
    return Accuracy(policy, len(waited), len(errors), q(0.5), q(0.9),
                    on_time / len(errors) if errors else 0.0)


def accuracy_table(rows: list[Accuracy]) -> str:
    lines = [f"{'policy':<14}{'waited':>8}{'projected':>11}{'median |err| s':>16}"
             f"{'p90 |err| s':>13}{'no later %':>12}"]
    lines += [f"{a.policy:<14}{a.waited:>8}{a.projected:>11}{a.median:>16.0f}{a.p90:>13.0f}"
              f"{100 * a.early:>12.1f}" for a in rows]
    return "\n".join(lines)


def write_csv(path: str, trace: Trace, start: list) -> None:
    """One line per replayed job in service order: id,submit,start,end,procs."""
    with open(path, "w") as f:
        f.write(CSV_HEADER + "\n")
        f.writelines(f"{i},{b},{s},{s + r},{p}\n"
                     for i, b, s, r, p in zip(trace.ids, trace.submit, start, trace.run, trace.procs))
