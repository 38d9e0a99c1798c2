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
increasing, times[0] = now) and `free` (free processors from times[k] until times[k+1]), kept
canonical (no two neighbouring steps with the same value, so taking a job off and putting it
back leaves them identical). The last finite step has the whole machine free; a breakpoint at
infinity with free -1 ends the lists so that no scan needs a bounds check.

Compression is where the time goes (HPC2N: 73,000 early ends with jobs waiting, 8.3 million
looks at a waiting job, 1.7 million moves), so
  * a job is moved without being taken off the profile first, and is dismissed after one
    bisect when the step just before its reservation is short of processors: 99% of moves
    are slides back into a run of steps with enough, which that step tells at once;
  * a job reserved in the same step as the last one that stayed, and no bigger or shorter,
    is dismissed without even the bisect (users queue runs of identical jobs): 5.1 million
    of the 8.3 million looks;
  * a search for a window before that step resumes where the last search for the same
    shape (processors, estimate) gave up, since only a rise in free processors can open a
    window, and only one that starts after the rise minus the estimate; arrivals use the
    same searches (_Conservative._searches).
Each of these is a few Python operations; what is left is one bisect and a few list edits per
move, and one pass over the waiting list per early end and per instant at which reservations
are reached.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from operator import itemgetter

from .swf import Trace

_JOB = itemgetter(3)  # of a waiting record
_NO_STEP = (2**30 - 1, -1)  # see _Conservative._compress


class Profile:
    """Free processors over time from now on (see the module docstring). A last breakpoint at
    infinity with free -1 (never enough, never equal to a neighbour) spares every scan and
    split a bounds check."""

    __slots__ = ("times", "free")

    def __init__(self, now, machine: int):
        self.times = [now, math.inf]
        self.free = [machine, -1]

    def add(self, start, end, delta: int) -> None:
        """Free changes by `delta` over [start, end) (now <= start < end < infinity)."""
        times, free = self.times, self.free
        a = bisect_left(times, start)
        if times[a] != start:
            times.insert(a, start)
            free.insert(a, free[a - 1])
        b = bisect_left(times, end, a)
        if times[b] != end:
            times.insert(b, end)
            free.insert(b, free[b - 1])
        for i in range(a, b):  # a plain loop beats a comprehension at these lengths
            free[i] += delta
        if free[b] == free[b - 1]:  # stay canonical
            del free[b], times[b]
        if a and free[a] == free[a - 1]:
            del free[a], times[a]


class _Conservative:
    def __init__(self, trace: Trace):
        self.submit, self.run, self.procs, self.estimate = (trace.submit, trace.run, trace.procs,
                                                            trace.estimate)
        self.start = [None] * len(trace)
        self.first_reservation = [None] * len(trace)  # what each job was promised on arrival
        self.profile = Profile(trace.submit[0] if len(trace) else 0, trace.machine)
        # the waiting jobs in arrival order as [reservation, procs, estimate, job] (the
        # compression walks them all on every early end; `due` in replay() is the earliest
        # reservation among them)
        self.waiting: list[list] = []
        self.ends: list = []  # heap of (actual end, job)
        # (procs, estimate) -> [lb, n]: no window of that shape starts before lb, given the
        # first n rises in `rises` (where free went up since the last early end)
        self.known: dict = {}
        self.rises: list = []
        self.first_fit = self._searches()

    def replay(self) -> list:
        """Start times in service order. One pass of this loop per instant at which something
        happens: jobs end, arrive, or reach their reservation (the three sources are merged
        by hand; each keeps a sentinel at infinity so that none is ever empty)."""
        submit, run, procs, estimate = self.submit, self.run, self.procs, self.estimate
        start, first_reservation = self.start, self.first_reservation
        waiting, ends = self.waiting, self.ends
        profile = self.profile
        times, free, add, first_fit = profile.times, profile.free, profile.add, self.first_fit
        inf, n = math.inf, len(submit)
        ends.append((inf, -1))
        due = inf  # the earliest reservation of a waiting job
        i = 0
        arrival = submit[0] if n else inf  # the next one
        while True:
            now = arrival
            end = ends[0][0]
            if end < now:
                now = end
            if due < now:
                now = due
            if now == inf:
                break
            if times[1] <= now:  # steps have ended: forget them
                k = bisect_right(times, now) - 1
                del times[:k], free[:k]
            times[0] = now
            if end == now:  # ends, each early one giving back the tail of its reservation
                early = False
                while ends[0][0] == now:
                    j = heappop(ends)[1]
                    until = start[j] + estimate[j]
                    if now < until:
                        add(now, until, procs[j])
                        early = True
                if early:
                    self.known.clear()  # a window of any shape may start from now on
                    self.rises.clear()
                    if waiting:
                        moved = self._compress(now)
                        if moved < due:
                            due = moved
            if arrival == now:  # arrivals, each reserved at its earliest slot
                while True:
                    d, p = estimate[i], procs[i]
                    s = first_fit(p, d, inf)
                    add(s, s + d, -p)
                    first_reservation[i] = s
                    if s == now:
                        start[i] = now
                        heappush(ends, (now + run[i], i))
                    else:
                        waiting.append([s, p, d, i])
                        if s < due:
                            due = s
                    i += 1
                    arrival = submit[i] if i < n else inf
                    if arrival != now:
                        break
            if due == now:  # reservations reached: those jobs start; find the next earliest
                due = inf   # (one pass over the waiting list costs less than booking a wake-up
                starting = []  # at every move: 54,000 of these passes on HPC2N, 1.7 million moves)
                for rec in waiting:
                    s = rec[0]
                    if s <= due:
                        if s == now:
                            starting.append(rec[3])
                        else:
                            due = s
                for j in starting:
                    del waiting[bisect_left(waiting, j, key=_JOB)]
                    start[j] = now
                    heappush(ends, (now + run[j], j))
        return start

    def _searches(self):
        """The window search, first_fit(p, d, limit): the earliest start, not after limit, of a
        window of d seconds with p free throughout; else None. (A closure over the lists it
        reads, which never change identity: it runs 1.4 million times on HPC2N.)

        What an earlier search for the same shape found is kept in `known` as [lb, n]: no
        window starts before lb, given the first n rises. A later rise at x (where free went up)
        can only open windows that overlap it, which start after x - d; a drop opens none. So
        lb comes down to min(lb, x - d) for each new rise, and the search resumes from lb."""
        known, rises, times, free = self.known, self.rises, self.profile.times, self.profile.free

        def first_fit(p: int, d, limit):
            entry = known.get((p, d))
            if entry is None:
                entry = known[p, d] = [None, 0]
                i = 0
            else:
                lb, n = entry
                m = len(rises)
                if n < m:
                    low = (rises[n] if n + 1 == m else min(rises[n:])) - d
                    if low < lb:
                        lb = entry[0] = low
                    entry[1] = m
                if lb > limit:
                    return None
                i = bisect_left(times, lb)
            while True:  # from step i on, over the profile
                while free[i] < p:  # the last finite step has the whole machine: this stops
                    i += 1
                x = times[i]
                if x > limit:
                    entry[0], entry[1] = x, len(rises)
                    return None
                # steps i..k-1 meet [x, x + d): from the last, back to one short of processors
                k = bisect_left(times, x + d, i + 1) - 1
                while free[k] >= p:
                    k -= 1
                if k < i:
                    entry[0], entry[1] = x, len(rises)
                    return x
                i = k + 1  # no window starting before step k + 1 gets past step k

        return first_fit

    def _compress(self, now):
        """Each waiting job, in arrival order, to its earliest slot given all the others; the
        earliest of the new reservations (infinity if none moved).

        A job holding p processors from s for d seconds can use an earlier window [x, x + d)
        if free >= p over [x, min(x + d, s)): from s on its own processors are there. The step
        just before s decides:
          enough free there  it moves: at the latest to the start of the run of such steps that
                             reaches s; earlier if a whole window fits before that run;
          too few there      it moves only if a whole window fits before that step.
        "A whole window fits before time T + d" (limit = T - d, with T the start of the blocking
        step): first_fit() knows, per shape, where no window can start."""
        profile, rises = self.profile, self.rises
        moved = math.inf
        times, free, add, first_fit = profile.times, profile.free, profile.add, self.first_fit
        # the last job that stayed, forgotten at each move: the step that holds the instant
        # just before its reservation is [lo, hi), and it needs lp processors for ld seconds.
        # None stayed: lo > hi holds no time. (Ints, not infinities: CPython compares two small
        # ints fastest, and this test runs 8.3 million times on HPC2N.)
        lo, hi = _NO_STEP
        lp = ld = 0
        for rec in self.waiting:
            s, p, d, j = rec
            if lo < s <= hi and p >= lp and d >= ld:
                continue  # same blocking step, as big and as long: it cannot move either
            k = bisect_left(times, s)
            if not k:
                continue  # due now
            r = k - 1  # the step just before s
            if free[r] < p:  # blocked there: most jobs, most passes
                limit = times[r] - d
                if limit < now:
                    lo, hi, lp, ld = times[r], times[k], p, d
                    continue
                to = first_fit(p, d, limit)
                if to is None:
                    lo, hi, lp, ld = times[r], times[k], p, d
                    continue
                slide = False
            else:  # it moves
                while r and free[r - 1] >= p:
                    r -= 1
                to = times[r]
                slide = True
                if r:
                    limit = times[r - 1] - d
                    if limit >= now:
                        x = first_fit(p, d, limit)
                        if x is not None:
                            to, slide = x, False
            c, e = to + d, s + d
            if slide and c > s:
                # free drops by p over [to, s) and rises by p over [to + d, s + d); over
                # [s, to + d) the job is there before and after. Steps r..k-1 are [to, s).
                if k - r == 1 and times[k] != s and r and free[r - 1] == free[r] - p:
                    # the commonest case (a job queued behind another on the same
                    # processors): [to, s) is part of one step, whose left neighbour has p
                    # fewer; dropping it by p just moves that step's start from to to s
                    times[r] = s
                    k = r
                    shifted = True
                else:
                    shifted = False
                    if times[k] != s:  # s inside a step (a neighbour ends there): split it
                        times.insert(k, s)
                        free.insert(k, free[k - 1])
                    if k - r == 1:
                        free[r] -= p
                    else:
                        for i in range(r, k):
                            free[i] -= p
                # [to + d, s + d) ends where the job ended (usually a breakpoint) and is as
                # long as the slide: few steps, so walk back to its start rather than bisect
                b = bisect_left(times, e, k + 1)
                a = b
                while times[a - 1] >= c:
                    a -= 1
                if b - a == 1 and times[a] == c and times[b] != e and free[a - 1] == free[a] + p:
                    # its mirror image (the next job on those processors starts at s + d):
                    # the step from to + d has p fewer than its left neighbour and goes on
                    # past s + d; raising its start by p just moves that start to s + d
                    times[a] = e
                else:
                    if times[a] != c:
                        times.insert(a, c)
                        free.insert(a, free[a - 1])
                        b += 1
                    if times[b] != e:
                        times.insert(b, e)
                        free.insert(b, free[b - 1])
                    if b - a == 1:
                        free[a] += p
                    else:
                        for i in range(a, b):
                            free[i] += p
                    # stay canonical where a step changed and its neighbour did not (from the
                    # right, so that the indices on the left still hold)
                    if free[b] == free[b - 1]:
                        del free[b], times[b]
                    if free[a] == free[a - 1]:
                        del free[a], times[a]
                if not shifted:
                    if free[k] == free[k - 1]:
                        del free[k], times[k]
                    if r and free[r] == free[r - 1]:
                        del free[r], times[r]
                rises.append(c)
            else:  # [to, to + d) and [s, s + d) apart
                add(to, c, -p)
                add(s, e, p)
                rises.append(s)
            rec[0] = to
            if to < moved:
                moved = to
            lo, hi = _NO_STEP
        return moved


def conservative(trace: Trace) -> list:
    """Conservative backfilling: start times in service order."""
    return _Conservative(trace).replay()
