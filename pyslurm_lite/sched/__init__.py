"""The scheduler: a pure function from a snapshot of the cluster to a plan.

    controller state ──snapshot()──▶ Snapshot ──schedule(snapshot, now, config)──▶ Plan
                                                                                   │
    controller applies each Start after re-checking it against live state ◀────────┘

Nothing in this package does I/O, reads a clock or draws random numbers, so the controller, the
tests and the trace-replay simulator run the very same code.

Glossary: a *job* asks for nodes, CPUs, memory and GPUs in a *partition*; an *allocation* is what
one job holds on one node; a *reason* says why a job is still pending (squeue's NODELIST(REASON)).
"""

from .cycle import SchedConfig, schedule
from .snapshot import JobView, NodeView, PartitionView, Plan, Preemption, RunningView, Snapshot, Start

__all__ = ["schedule", "SchedConfig", "Snapshot", "JobView", "NodeView", "PartitionView", "Plan",
           "Preemption", "RunningView", "Start"]
