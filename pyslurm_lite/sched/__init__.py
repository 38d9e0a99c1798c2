"""The scheduler: a pure function from a snapshot of the cluster to a plan.

    controller state ──snapshot()──▶ Snapshot ──schedule(snapshot, now, config)──▶ Plan
                                                                                   │
    controller applies each Start after re-checking it against live state ◀────────┘

Nothing in this package does I/O, reads a clock or draws random numbers, so the controller, the
tests and the trace-replay simulator run the very same code.

Glossary: a *job* asks for nodes, CPUs, memory and GPUs in a *partition*; an *allocation* is what
one job holds on one node; a *reason* says why a job is still pending (squeue's NODELIST(REASON)).
"""

import importlib

# Loaded on first use (PEP 562): a CLI that validates slurm.conf needs sched.policy's names only,
# not the scheduler's ~25 ms of imports.
_HOME = {"schedule": "cycle", "SchedConfig": "cycle"} | dict.fromkeys(
    ("JobView", "NodeView", "PartitionView", "Plan", "Preemption", "RunningView", "Snapshot",
     "Start"), "snapshot")


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


__all__ = ["schedule", "SchedConfig", "Snapshot", "JobView", "NodeView", "PartitionView", "Plan",
           "Preemption", "RunningView", "Start"]
