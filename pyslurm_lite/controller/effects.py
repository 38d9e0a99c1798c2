"""What the job lifecycle hands to dispatch once the state lock is released (launches and
signals for agents), and what agents report back (endings). Plain data, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Job


@dataclass
class Launch:
    node: str
    jobs: list[Job]
    epoch: str = ""  # the node's registration the start was decided under


@dataclass
class Signal:
    node: str
    job_ids: list[int]
    signal: int = 0
    terminate: bool = False
    batch_only: bool = False
    reason: str = ""
    steps_only: bool = False
    restart_counts: list[int] = field(default_factory=list)  # a termination's runs, for revocation


@dataclass
class Effects:
    launches: list[Launch] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)

    def extend(self, other: "Effects") -> None:
        self.launches += other.launches
        self.signals += other.signals


@dataclass
class Ending:
    """An agent's report that a job's batch script ended (or could not be launched)."""

    job_id: int
    restart_count: int
    exit_code: int = 0
    exit_signal: int = 0
    oom: bool = False
    message: str = ""  # set when the launch itself failed
