"""Counters behind `sdiag`: jobs by outcome and the scheduling passes, since the controller
started. Plain integers updated under one lock; nothing here is persisted (as in Slurm, a
restart starts them again). The Prometheus endpoint reads these same counters at scrape time
(controller/metrics.py), and hears of each pass through `pass_observers` for its histogram,
which needs every duration, not only the last and the largest."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from ..model import JobState


@dataclass
class Diag:
    since: float = 0.0
    jobs_submitted: int = 0
    jobs_started: int = 0
    jobs_completed: int = 0
    jobs_canceled: int = 0
    jobs_failed: int = 0
    cycles: int = 0
    event_cycles: int = 0
    last_cycle_us: int = 0
    max_cycle_us: int = 0
    total_cycle_us: int = 0
    last_queue_length: int = 0
    backfilled_jobs: int = 0
    preempted_jobs: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # called with (seconds, event) after each pass, outside the lock
    pass_observers: list[Callable[[float, bool], None]] = field(default_factory=list, repr=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, n in counts.items():
                setattr(self, name, getattr(self, name) + n)

    def ended(self, state: JobState) -> None:
        """Count a job reaching a final state, in sdiag's three buckets."""
        if state == JobState.COMPLETED:
            self.add(jobs_completed=1)
        elif state == JobState.CANCELLED:
            self.add(jobs_canceled=1)
        else:
            self.add(jobs_failed=1)

    def cycle(self, micros: int, queue_length: int, event: bool) -> None:
        with self._lock:
            self.cycles += 1
            self.event_cycles += event
            self.last_cycle_us = micros
            self.max_cycle_us = max(self.max_cycle_us, micros)
            self.total_cycle_us += micros
            self.last_queue_length = queue_length
        for observe in self.pass_observers:
            observe(micros / 1e6, event)
