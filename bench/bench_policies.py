"""Scheduling policies on the Parallel Workloads Archive's traces: the table of issue #18.

    .venv/bin/python bench/bench_policies.py                 # evaluate (about 20 minutes)
    .venv/bin/python bench/bench_policies.py --fit           # refit `learned` first (+2 minutes)
    .venv/bin/python bench/bench_policies.py --projections   # + projection accuracy (+10 minutes)
    .venv/bin/python bench/bench_policies.py --traces KTH    # a subset (name prefixes)

Conventions: the simulator's (sim/swf.py): user estimates, a job is killed at its estimate;
bounded slowdown with tau = 10 s (sim/report.py).

How `learned` is fitted (nothing is fitted on a trace it is reported on):
  * training traces: LANL-CM5 and the two Lublin-model workloads; test traces: KTH-SP2,
    CTC-SP2 and HPC2N, which the fit never replays;
  * candidates: the F1 family score = log10(r) * n + b * log10(s), b in B_GRID, with the
    starvation guard bound = max(f * (mean wait so far), GUARD_FLOOR), f in F_GRID;
  * objective, over the training traces: mean(bsld / EASY's bsld) + mean(max(0, max wait /
    EASY's max wait - 1.1)), i.e. slowdown, plus a penalty for every tenth of EASY's maximum
    wait that a candidate exceeds past the 10 % the issue allows; the lowest wins.
The winner is what sched/policy.py ships as LEARNED and GUARD; --fit prints it and says whether
it still equals what ships. `learned` then re-fits the guard's factor online (sched/policy.py's
REFIT, sim/guard_refit.py): each fit replays only jobs already submitted, so on every trace the
factor is fitted on the trace's past and used on its future (a train/test split by time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pyslurm_lite.sched import policy as pol  # noqa: E402
from pyslurm_lite.sim import policy_engine, replay, replay_projected, report, swf  # noqa: E402

TRACES_DIR = os.environ.get("PYSLURM_TRACES",
                            os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces"))
TRACES = {  # short name -> file, test traces first
    "KTH": "KTH-SP2-1996-2.1-cln.swf.gz",
    "CTC": "CTC-SP2-1996-3.1-cln.swf.gz",
    "HPC2N": "HPC2N-2002-2.2-cln.swf.gz",
    "LANL": "LANL-CM5-1994-4.1-cln.swf.gz",
    "Lublin1": "lublin_256.swf.gz",
    "Lublin2": "lublin_256_new2.gz",
}
TRAIN = ("LANL", "Lublin1", "Lublin2")
TARGET = {"KTH": 92.83, "CTC": 48.83, "HPC2N": 90.10}  # the reference EASY bsld
POLICIES = ("easy", "conservative", "easy++", "f1", "f1-guard", "learned")
PROJECTED = ("easy", "easy++", "f1-guard", "learned")
B_GRID = (0.0, 870.0)
F_GRID = (5.0, 10.0, 20.0)
MAX_WAIT_SLACK = 1.1


def load(name: str) -> swf.Trace:
    return swf.read(os.path.join(TRACES_DIR, TRACES[name]))


def fit(traces: dict) -> pol.Policy:
    """The candidate with the lowest objective on the training traces (module docstring)."""
    easy = {n: report.summarize(t, "easy", replay(t, "easy")) for n, t in traces.items()}
    rows, best = [], None
    for b in B_GRID:
        for f in F_GRID:
            cand = pol.Policy(f"b={b:g} f={f:g}", score=pol.Score(a=1.0, b=b),
                              guard=pol.Guard(factor=f, floor=pol.GUARD_FLOOR))
            ratios = []
            for n, t in traces.items():
                s = report.summarize(t, cand.name, policy_engine.replay(t, cand))
                ratios.append((s.mean_bsld / easy[n].mean_bsld, s.max_wait / easy[n].max_wait))
            objective = (sum(r for r, _ in ratios) / len(ratios)
                         + sum(max(0.0, w - MAX_WAIT_SLACK) for _, w in ratios) / len(ratios))
            rows.append((cand, ratios, objective))
            if best is None or objective < best[2]:
                best = rows[-1]
    print(f"fit on {', '.join(traces)}: bsld / EASY's and max wait / EASY's per training trace")
    for cand, ratios, objective in rows:
        cells = "  ".join(f"{r:5.3f}/{w:5.3f}" for r, w in ratios)
        print(f"  {cand.name:<14} {cells}   objective {objective:.4f}"
              f"{'   <- chosen' if cand is best[0] else ''}")
    return best[0]


def evaluate(names: list[str], projections: bool) -> None:
    head = (f"{'trace':<8}{'set':<6}{'policy':<14}{'mean bsld':>10}{'vs EASY':>9}{'mean wait s':>12}"
            f"{'max wait s':>12}{'max/EASY':>9}{'util %':>8}{'wall s':>8}")
    print(head)
    accuracy = []
    for name in names:
        trace = load(name)
        base = None
        for p in POLICIES:
            t0 = time.perf_counter()
            if projections and p in PROJECTED:
                start, projected = replay_projected(trace, p)
                accuracy.append((name, report.projection_accuracy(trace, p, start, projected)))
            else:
                start = replay(trace, p)
            s = report.summarize(trace, p, start, time.perf_counter() - t0)
            base = base or s
            print(f"{name:<8}{'train' if name in TRAIN else 'test':<6}{p:<14}{s.mean_bsld:>10.2f}"
                  f"{100 * (s.mean_bsld / base.mean_bsld - 1):>+8.1f}%{s.mean_wait:>12.0f}"
                  f"{s.max_wait:>12.0f}{s.max_wait / base.max_wait:>9.3f}"
                  f"{100 * s.utilization:>8.2f}{s.wall:>8.1f}", flush=True)
        if name in TARGET:
            print(f"{'':<8}target: learned's mean bsld <= {0.75 * TARGET[name]:.2f} "
                  f"(EASY {TARGET[name]} - 25 %), max wait <= {MAX_WAIT_SLACK:.2f} x EASY's")
    if accuracy:
        print("\nprojected start at submit vs actual start, jobs that waited "
              "(bf_max_job_test 500, bf_window 1 day)")
        lines = report.accuracy_table([a for _, a in accuracy]).split("\n")
        print(f"{'trace':<8}{lines[0]}")
        for (name, _), line in zip(accuracy, lines[1:]):
            print(f"{name:<8}{line}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit", action="store_true", help="refit learned on the training traces")
    ap.add_argument("--projections", action="store_true", help="measure projected starts too")
    ap.add_argument("--traces", default=",".join(TRACES), help="comma-separated short names")
    args = ap.parse_args()
    names = [n for n in TRACES if any(n.startswith(x) for x in args.traces.split(","))]
    if args.fit:
        chosen = fit({n: load(n) for n in TRAIN})
        shipped = pol.POLICIES["learned"]
        same = chosen.score == shipped.score and chosen.guard == shipped.guard
        print(f"chosen: {chosen.name}; sched/policy.py ships "
              f"score={shipped.score} guard factor={shipped.guard.factor:g}: "
              f"{'the same' if same else 'DIFFERENT: update LEARNED/GUARD'}\n")
    evaluate(names, args.projections)
    return 0


if __name__ == "__main__":
    sys.exit(main())
