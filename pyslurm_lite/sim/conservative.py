"""The fast replay engine for conservative backfilling (Mu'alem and Feitelson 2001).

Worked example, a machine of 10 processors:

    job  submit  procs  estimate  run
    A    0       6      100       40     t=0   A starts: profile [0: 4 free, 100: 10 free]
    B    0       8      50        50           B's earliest slot is 100 (8 free only from 100):
                                               reserved [100, 150); profile [0: 4, 100: 2,
                                               150: 10]
    C    0       4      60        60           C needs 4 over [t, t+60): fits at 0 ([0, 60)
                                               has 4 free): starts now, profile [0: 0, 60: 4,
                                               100: 2, 150: 10]
                                        t=40  A ends early: its tail [40, 100) comes back
                                               ([0: 0, 40: 6, 60: 10, 100: 2, 150: 10]) and
                                               the waiting jobs are compressed in arrival order:
                                               B (8 procs, 50 s) fits from 60: moved to 60
                                        t=60  C ends, B starts (reservation 60 <= 100: never
                                               later than promised).

Under EASY a later job may delay every waiting job but the head; here no job is ever delayed
by a later one: every job gets a reservation on arrival, at its earliest slot given the running
jobs (held until their estimated ends) and every reservation made before; a later arrival only
fills holes. When a job ends before its estimate, each waiting job in arrival order is taken
off the profile and put back at its earliest slot given all the others, which is never later.

At one instant: ends (with the compression their early ends call for), then arrivals (each gets
its reservation), then every job whose reservation is now starts.

The profile is the machine's free processors as a step function: two lists, `times` (strictly
increasing, times[0] = now) and `free` (free processors from times[k] until times[k+1]; the last
step lasts forever with the whole machine free), kept canonical (no two neighbouring steps with
the same value), so taking a job off and putting it back in place leaves it identical. The
compression skips a job at once when no step before its reservation has enough processors free
(a running maximum of `free`, recomputed only after a job moves): most waiting jobs are skipped
that way, which is what makes compression on every early end affordable.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from heapq import heappop, heappush
from itertools import accumulate

from .swf import Trace


class Profile:
    """Free processors over time from now on (see the module docstring)."""

    __slots__ = ("times", "free")

    def __init__(self, now, machine: int):
        self.times = [now]
        self.free = [machine]

    def advance(self, now) -> None:
        """Forget the steps that ended before now."""
        times = self.times
        k = bisect_left(times, now)
        if k == len(times) or times[k] != now:
            k -= 1
        if k > 0:
            del times[:k]
            del self.free[:k]
        times[0] = now

    def add(self, start, end, delta: int) -> None:
        """Free changes by `delta` over [start, end) (start >= now): -p takes, +p gives back."""
        times, free = self.times, self.free
        a = bisect_left(times, start)
        if a == len(times) or times[a] != start:
            times.insert(a, start)
            free.insert(a, free[a - 1])
        b = bisect_left(times, end, a)
        if b == len(times) or times[b] != end:
            times.insert(b, end)
            free.insert(b, free[b - 1])
        if b - a == 1:
            free[a] += delta
        else:
            free[a:b] = [f + delta for f in free[a:b]]
        if b < len(free) and free[b] == free[b - 1]:  # stay canonical
            del free[b], times[b]
        if a > 0 and free[a] == free[a - 1]:
            del free[a], times[a]

    def move(self, start, to, duration, procs: int) -> None:
        """A reservation of `procs` for `duration` moves from `start` to `to` < start."""
        if to + duration <= start:
            self.add(start, start + duration, procs)
            self.add(to, to + duration, -procs)
        else:  # overlapping: only the two ends change
            self.add(to, start, -procs)
            self.add(to + duration, start + duration, procs)

    def earliest(self, duration, procs: int):
        """Start of the first window of `duration` with `procs` free throughout."""
        times, free = self.times, self.free
        n, i = len(times), 0
        while True:
            while free[i] < procs:  # the last step has the whole machine: this stops
                i += 1
            end = times[i] + duration
            k = i + 1
            while k < n and times[k] < end and free[k] >= procs:
                k += 1
            if k == n or times[k] >= end:
                return times[i]
            i = k + 1  # the window broke at step k; no start before k+1 can work

    def earlier(self, start, duration, procs: int):
        """For a reservation of `procs` held from `start`: the first window before `start` that
        would hold it, or None. Only [x, min(x + duration, start)) needs checking, since from
        `start` on the reservation's own processors are there."""
        times, free = self.times, self.free
        n, i = len(times), 0
        while True:
            while free[i] < procs:
                i += 1
            x = times[i]
            if x >= start:
                return None
            end = x + duration
            if end > start:
                end = start
            k = i + 1
            while k < n and times[k] < end and free[k] >= procs:
                k += 1
            if k == n or times[k] >= end:
                return x
            i = k + 1


class _Conservative:
    def __init__(self, trace: Trace):
        self.submit, self.run, self.procs, self.estimate = (trace.submit, trace.run, trace.procs,
                                                            trace.estimate)
        self.start = [None] * len(trace)
        self.reservation = [None] * len(trace)  # current reservation of each waiting job
        self.first_reservation = [None] * len(trace)  # what it was promised on arrival
        self.profile = Profile(trace.submit[0] if len(trace) else 0, trace.machine)
        self.waiting: list[int] = []  # sorted: service (= arrival) order
        self.ends: list = []  # heap of (actual end, job)
        self.due: list = []  # heap of (reservation, job); stale entries are skipped

    def replay(self) -> list:
        submit, n, ends, due = self.submit, len(self.submit), self.ends, self.due
        i = 0
        while i < n or ends or due:
            now = min(submit[i] if i < n else float("inf"), ends[0][0] if ends else float("inf"),
                      due[0][0] if due else float("inf"))
            self.profile.advance(now)
            if ends and ends[0][0] == now and self._finish(now) and self.waiting:
                self._compress(now)
            k = i
            while i < n and submit[i] == now:
                i += 1
            if i > k:
                self._arrive(now, k, i)
            while due and due[0][0] == now:
                _, j = heappop(due)
                if self.start[j] is None and self.reservation[j] == now:
                    del self.waiting[bisect_left(self.waiting, j)]
                    self._launch(j, now)
        return self.start

    def _launch(self, j: int, now) -> None:
        self.start[j] = now
        heappush(self.ends, (now + self.run[j], j))  # its reservation now holds it running

    def _finish(self, now) -> bool:
        """Jobs ending now; an early end gives its tail back. True if any ended early."""
        ends, start, estimate, procs, add = self.ends, self.start, self.estimate, self.procs, self.profile.add
        early = False
        while ends and ends[0][0] == now:
            j = heappop(ends)[1]
            until = start[j] + estimate[j]
            if now < until:
                add(now, until, procs[j])
                early = True
        return early

    def _arrive(self, now, first: int, last: int) -> None:
        estimate, procs, profile = self.estimate, self.procs, self.profile
        for j in range(first, last):
            d, p = estimate[j], procs[j]
            s = profile.earliest(d, p)
            profile.add(s, s + d, -p)
            self.first_reservation[j] = s
            if s == now:
                self._launch(j, now)
            else:
                self.reservation[j] = s
                self.waiting.append(j)
                heappush(self.due, (s, j))

    def _compress(self, now) -> None:
        """Each waiting job, in arrival order, to its earliest slot given all the others."""
        profile, reservation, estimate, procs = self.profile, self.reservation, self.estimate, self.procs
        times, free, due = profile.times, profile.free, self.due
        # A job can move only if some step before its reservation has enough free processors.
        # `best` (running maximum of free over a copy of the steps) answers that in one bisect;
        # moves only lower free before their old start, so the copy stays an upper bound for
        # every step before `stale` (the earliest old start since it was taken).
        snap, best, stale = times[:], list(accumulate(free, max)), math.inf
        for j in self.waiting:
            s, p = reservation[j], procs[j]
            if s > stale:
                snap, best, stale = times[:], list(accumulate(free, max)), math.inf
            k = bisect_left(snap, s)
            if k == 0 or best[k - 1] < p:
                continue
            to = profile.earlier(s, estimate[j], p)
            if to is not None:
                profile.move(s, to, estimate[j], p)
                reservation[j] = to
                heappush(due, (to, j))
                if s < stale:
                    stale = s


def conservative(trace: Trace) -> list:
    """Conservative backfilling: start times in service order."""
    return _Conservative(trace).replay()
