"""sched_policy's online re-fit in the daemon (Refit in sched/policy.py): every period, the
jobs of the last window, read from the database, are replayed by the simulator's engine
(sim/guard_refit.py, the same functions the simulator's replays call) on a machine of the
cluster's CPUs, in a thread of its own, and the starvation guard takes the factor chosen.
The factor is not persisted: a restarted controller fits again at once (the first fit is
due a window after the oldest job, long past on a cluster in use)."""

from __future__ import annotations

import logging
import threading

from ..sim.guard_refit import LOOKBACK, choose_factor, next_fit, window_trace

log = logging.getLogger(__name__)


class GuardRefit:
    def __init__(self, state, store):
        self.state, self.store = state, store
        self.due: float | None = None  # when the next fit is; None: not known yet
        self.busy = False  # a fit is running
        self.thread: threading.Thread | None = None

    def run_once(self, now: float) -> None:
        """The monitor loop: start a fit when one is due (and none is running)."""
        policy, waits = self.state.policy, self.state.waits
        if policy is None or policy.refit is None or waits is None or self.busy:
            return
        if self.due is None:  # the first fit: a window after the oldest job
            self.due = (self.store.oldest_submit() or now) + policy.refit.window
        if now < self.due:
            return
        self.busy = True
        self.thread = threading.Thread(target=self._fit, args=(policy, now), name="guard-refit",
                                       daemon=True)
        self.thread.start()

    def _fit(self, policy, now: float) -> None:
        try:
            opens = now - policy.refit.window
            jobs = self.store.refit_window(opens, LOOKBACK)
            state = self.state
            with state.lock:
                machine = sum(n.config.cpus for n in state.nodes.values())
                seed, current = (state.waits.count, state.waits.total), state.waits.guard.factor
            # a job that ended without starting (cancelled while pending) took no machine time
            rows = [_row(job, now, policy.refit.window) for job in jobs
                    if job.start_time > 0 or not job.state.is_final]
            factor = choose_factor(window_trace(machine, opens, rows), policy, seed, current)
            with state.lock:
                if state.waits is not None and state.policy is policy:
                    state.waits.refitted(factor)
            log.info("sched_policy=%s: starvation guard factor %g (was %g), fitted on %d jobs",
                     policy.name, factor, current, len(rows))
        except Exception:
            log.exception("the starvation guard's re-fit failed; its factor stays")
        finally:
            self.due = next_fit(self.due, now, policy.refit)
            self.busy = False


def _row(job, now: float, window: float) -> tuple:
    """(submit, run time known now, CPUs, estimate, uid): a job that has ended runs its real
    time; any other its time limit (a job without one: the window, as long as any wait seen)."""
    spec = job.spec
    ended = 0 < job.start_time <= job.end_time <= now
    run = job.end_time - job.start_time if ended else 0.0
    estimate = job.time_limit * 60 if job.time_limit > 0 else (run if ended else window)
    cpus = sum(spec.cpus_on_node(i) for i in range(spec.num_nodes))
    return job.submit_time, run if ended else estimate, cpus, max(estimate, run), spec.uid
