"""The replay engine for the policies of sched/policy.py: any queue order, EASY++ predictions and
the starvation guard's reservations, on a virtual clock with processor counts.

Rules, at each pass (after the instant's ends and arrivals):
  1. the order: starved jobs (waited longer than the guard's bound) in submit order, then the
     others by the policy's order (service order, or the learned score, lowest first);
  2. jobs start in that order while they fit and no reservation has been made; the first that
     does not fit gets a reservation at its earliest start, and so does every starved job after
     it (conservative among the starved: each is planned around those before it);
  3. every other job (in order) starts now if it fits on the profile from now to its planned end
     without delaying any reservation.
The profile is the free processors as a step function over time: running jobs hold theirs until
their planned end (start + prediction, corrected once outlived, or + estimate without EASY++;
always + estimate while a starved job waits), reservations from their start to their planned
end. With one reservation this is exactly textbook EASY (a test holds it equal to engine.easy
job by job), and tests hold every policy equal to the daemon's own sched.schedule() driven by
sched_engine.replay.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from heapq import heappop, heappush

from ..sched.policy import History, Policy, WaitScale, corrected
from . import guard_refit
from .swf import Trace

MAX_JOB_TEST = 500  # jobs a projection books at most (bf_max_job_test, the daemon's default)
WINDOW = 1440 * 60  # seconds a projection looks ahead (bf_window's default)


class Profile:
    """Free processors from `now` on: times[k] .. times[k+1] has free[k]; the last is open."""

    def __init__(self, now, free: int, ends):
        """ends: (planned end, procs) of running jobs, any order, every end > now."""
        times, avail = [now], [free]
        for end, p in sorted(ends):
            if end == times[-1]:
                avail[-1] += p
            else:
                times.append(end)
                avail.append(avail[-1] + p)
        self.times, self.avail = times, avail

    def _split(self, t) -> int:
        """Index of the step that starts at t (made when missing)."""
        times = self.times
        k = bisect_right(times, t) - 1
        if times[k] != t:
            k += 1
            times.insert(k, t)
            self.avail.insert(k, self.avail[k - 1])
        return k

    def fits(self, k: int, p: int, end) -> bool:
        """p processors free from times[k] until end?"""
        times, avail = self.times, self.avail
        while k < len(times) and times[k] < end:
            if avail[k] < p:
                return False
            k += 1
        return True

    def earliest(self, p: int, length):
        """The first step start from which p processors stay free for `length`."""
        times, avail = self.times, self.avail
        k = 0
        while True:
            while avail[k] < p:
                k += 1  # the last step has the whole machine: always ends
            if self.fits(k, p, times[k] + length):
                return times[k]
            k += 1

    def hold(self, start, end, p: int) -> None:
        a = self._split(start)
        b = self._split(end) if end != math.inf else len(self.times)
        avail = self.avail
        for k in range(a, b):
            avail[k] -= p


class _PolicyReplay:
    def __init__(self, trace: Trace, policy: Policy, project: bool = False):
        self.t, self.policy = trace, policy
        n = len(trace)
        self.start = [None] * n
        # each job's projected start at its submit pass (None: not projected): kept only when
        # asked, it costs one conservative plan of the queue ahead per arrival
        self.projected = [None] * n if project else None
        self.free = trace.machine
        self.history = History()
        self.scale = WaitScale(policy.guard)
        self.pred = [0] * n  # planned run time (prediction or estimate), fixed at submit
        self.key = [0.0] * n  # static part of the order
        self.waiting: list = []  # (key, job) of waiting jobs that are not starved, sorted
        self.starved: list[int] = []  # starved waiting jobs, service order
        self.starved_set: set[int] = set()
        self.cut = 0  # jobs before this index were looked at for starvation
        self.running: dict = {}  # job -> planned end
        self.ends: list = []  # heap (actual end, job)
        # the guard's next re-fit (Refit): a window after the first job, then every period
        self.next_refit = trace.submit[0] + policy.refit.window if policy.refit and n else math.inf

    def replay(self) -> list:
        t = self.t
        submit, n, ends = t.submit, len(t), self.ends
        i = 0
        while i < n or ends:
            now = ends[0][0] if ends and (i == n or ends[0][0] <= submit[i]) else submit[i]
            while ends and ends[0][0] == now:
                j = heappop(ends)[1]
                self.free += t.procs[j]
                del self.running[j]
                self.history.completed(t.user[j], t.run[j])
            first = i
            while i < n and submit[i] == now:
                self.arrive(i)
                i += 1
            if now >= self.next_refit:
                self.refit(now, i)
            self.full_pass(now, i)
            if self.projected is not None and i > first:
                self._project(now, range(first, i))
        return self.start

    def arrive(self, j: int) -> None:
        """A new job: its prediction (EASY++: from its user's history as of now) and its place
        in the order."""
        t, p = self.t, self.policy
        est = t.estimate[j]
        self.pred[j] = self.history.predict(t.user[j], est) if p.predict else est
        self.key[j] = p.score.static(est, t.procs[j], t.submit[j]) if p.score is not None else j
        insort(self.waiting, (self.key[j], j))

    def refit(self, now, arrived: int) -> None:
        """The guard's factor for the next period, from the window's jobs (sim/guard_refit)."""
        window = guard_refit.window_jobs(self.t, self.start, arrived, now, self.policy.refit)
        seed = (self.scale.count, self.scale.total)
        self.scale.refitted(guard_refit.choose_factor(window, self.policy, seed,
                                                      self.scale.guard.factor))
        self.next_refit = guard_refit.next_fit(self.next_refit, now, self.policy.refit)

    def _starve(self, now, arrived: int) -> None:
        """Waiting jobs submitted at least the bound ago become starved, and stay so. The bound
        is the same for every job at one instant, so they starve in service order."""
        bound = self.scale.bound()
        if bound == math.inf:
            return
        submit, cut = self.t.submit, self.cut
        while cut < arrived and submit[cut] <= now - bound:
            if self.start[cut] is None:
                self.waiting.remove((self.key[cut], cut))
                self.starved.append(cut)
                self.starved_set.add(cut)
            cut += 1
        self.cut = cut

    def _order(self) -> list:
        return self.starved + [j for _, j in self.waiting]

    def full_pass(self, now, arrived: int) -> None:
        if not self.waiting and not self.starved:
            return
        self._starve(now, arrived)
        procs = self.t.procs
        order = self._order()
        free, k = self.free, 0
        while k < len(order) and procs[order[k]] <= free:  # rule 2
            free -= procs[order[k]]
            self.launch(order[k], now)
            k += 1
        self.free = free
        self._forget(order[:k])
        rest = order[k:]
        if not rest or min(procs[j] for j in rest) > free:
            return  # nobody could start now: no plan is needed
        # while a starved job waits, plans use estimates: its reservation must hold whatever
        # the predictions say
        length = self.pred if not self.starved else self.t.estimate
        profile = self._profile(now, length)
        self._reserve(rest[0], profile, length)
        started = []
        for j in rest[1:]:
            if procs[j] <= self.free and profile.fits(0, procs[j], now + length[j]):
                profile.hold(now, now + length[j], procs[j])
                self.free -= procs[j]
                self.launch(j, now)
                started.append(j)
            elif j in self.starved_set:
                self._reserve(j, profile, length)
            elif not self.free and not self.starved:
                break
        self._forget(started)

    def _profile(self, now, length) -> Profile:
        """Running jobs hold their processors until their planned end: start + prediction
        (corrected once outlived), or + estimate."""
        procs, start = self.t.procs, self.start
        if length is self.pred:
            ends = ((e, procs[j]) for j, e in self._planned_ends(now))
        else:
            ends = ((start[j] + length[j], procs[j]) for j in self.running)
        return Profile(now, self.free, ends)

    def _project(self, now, arrivals) -> None:
        """Projected starts of this instant's arrivals: every waiting job booked at its earliest
        start in the pass's order, on the pass's planned ends, until the last arrival is;
        as Slurm's backfill, at most MAX_JOB_TEST jobs and no further than WINDOW (a job past
        it is neither projected nor booked), as sched/projection.py does in the daemon."""
        projected, start = self.projected, self.start
        left = set()
        for j in arrivals:
            if start[j] is not None:
                projected[j] = start[j]
            else:
                left.add(j)
        if not left:
            return
        length = self.pred if not self.starved else self.t.estimate
        profile, procs = self._profile(now, length), self.t.procs
        for tested, j in enumerate(self._order()):
            if tested >= MAX_JOB_TEST:
                break
            p = procs[j]
            s = profile.earliest(p, length[j])
            if j in left:
                left.discard(j)
                if s - now <= WINDOW:
                    projected[j] = s
                if not left:
                    break
            if s - now <= WINDOW:  # past the window a job is not booked: later ones may fit
                profile.hold(s, s + length[j], p)

    def _reserve(self, j: int, profile: Profile, length) -> None:
        p = self.t.procs[j]
        s = profile.earliest(p, length[j])
        profile.hold(s, s + length[j], p)

    def _forget(self, jobs) -> None:
        """Started jobs leave the waiting lists."""
        for j in jobs:
            if j in self.starved_set:
                self.starved_set.discard(j)
                self.starved.remove(j)
            else:
                self.waiting.remove((self.key[j], j))

    def _planned_ends(self, now):
        """Running jobs' planned ends, corrected when a job has outlived its prediction."""
        t = self.t
        for j, end in list(self.running.items()):
            if end <= now:
                end = self.start[j] + corrected(now - self.start[j], t.estimate[j])
                self.running[j] = end
            yield j, end

    def launch(self, j: int, now) -> None:
        t = self.t
        self.start[j] = now
        self.running[j] = now + self.pred[j]
        heappush(self.ends, (now + t.run[j], j))
        self.scale.started(now - t.submit[j])


def replay(trace: Trace, policy: Policy) -> list:
    """Start time of every job of `trace`, in service order, under `policy`."""
    return _PolicyReplay(trace, policy).replay()


def replay_projected(trace: Trace, policy: Policy) -> tuple[list, list]:
    """(start times, projected starts at submit) of every job, in service order."""
    r = _PolicyReplay(trace, policy, project=True)
    return r.replay(), r.projected
