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
looks at a waiting job, 1.7 million moves), so a job is moved without being taken off the
profile first, and most are dismissed after one bisect, by reading the step just before their
reservation (see _Conservative._compress).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from operator import itemgetter

from .swf import Trace

_JOB = itemgetter(3)  # of a waiting record


class Profile:
    """Free processors over time from now on (see the module docstring). A last breakpoint at
    infinity with free -1 (never enough, never equal to a neighbour) spares every scan and
    split a bounds check."""

    __slots__ = ("times", "free")

    def __init__(self, now, machine: int):
        self.times = [now, math.inf]
        self.free = [machine, -1]

    def advance(self, now) -> None:
        """Forget the steps that ended before now."""
        times = self.times
        k = bisect_right(times, now) - 1
        if k > 0:
            del times[:k]
            del self.free[:k]
        times[0] = now

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
        if b - a == 1:
            free[a] += delta
        else:
            free[a:b] = [f + delta for f in free[a:b]]
        if free[b] == free[b - 1]:  # stay canonical
            del free[b], times[b]
        if a and free[a] == free[a - 1]:
            del free[a], times[a]

    def move(self, start, to, duration, procs: int) -> None:
        """A reservation of `procs` for `duration` moves from `start` to `to` < start."""
        if to + duration <= start:
            self.add(start, start + duration, procs)
            self.add(to, to + duration, -procs)
            return
        # Overlapping (nearly every move): free drops over [to, start) and rises over
        # [to + duration, start + duration). add() twice, inlined: this runs 1.7 million
        # times on HPC2N.
        times, free = self.times, self.free
        for a0, b0, delta in ((to, start, -procs), (to + duration, start + duration, procs)):
            a = bisect_left(times, a0)
            if times[a] != a0:
                times.insert(a, a0)
                free.insert(a, free[a - 1])
            b = bisect_left(times, b0, a)
            if times[b] != b0:
                times.insert(b, b0)
                free.insert(b, free[b - 1])
            if b - a == 1:
                free[a] += delta
            else:
                free[a:b] = [f + delta for f in free[a:b]]
            if free[b] == free[b - 1]:
                del free[b], times[b]
            if a and free[a] == free[a - 1]:
                del free[a], times[a]

    def earliest(self, duration, procs: int):
        """Start of the first window of `duration` with `procs` free throughout."""
        times, free = self.times, self.free
        i = 0
        while True:
            while free[i] < procs:  # the last finite step has the whole machine: this stops
                i += 1
            end = times[i] + duration
            k = i + 1
            while times[k] < end and free[k] >= procs:
                k += 1
            if times[k] >= end:
                return times[i]
            i = k + 1  # the window broke at step k; no start before k+1 can work

    def run_before(self, limit, duration, procs: int):
        """The first x <= limit with `procs` free throughout [x, x + duration), else None.
        The caller knows that no window can run past the step after limit."""
        times, free = self.times, self.free
        i = 0
        while True:
            while free[i] < procs:
                i += 1
            x = times[i]
            if x > limit:
                return None
            end = x + duration
            k = i + 1
            while times[k] < end and free[k] >= procs:
                k += 1
            if times[k] >= end:
                return x
            i = k + 1


class _Conservative:
    def __init__(self, trace: Trace):
        self.submit, self.run, self.procs, self.estimate = (trace.submit, trace.run, trace.procs,
                                                            trace.estimate)
        self.start = [None] * len(trace)
        self.first_reservation = [None] * len(trace)  # what each job was promised on arrival
        self.profile = Profile(trace.submit[0] if len(trace) else 0, trace.machine)
        # the waiting jobs in arrival order as [reservation, procs, estimate, job] (the
        # compression walks them all on every early end), and each job's record while it waits
        self.waiting: list[list] = []
        self.record: list = [None] * len(trace)
        self.ends: list = []  # heap of (actual end, job)
        # wake-ups: the jobs booked at each time (a moved job stays listed at its old time and
        # is skipped there), and those times in a heap, each once
        self.due_at: dict = {}
        self.due: list = []

    def replay(self) -> list:
        submit, n, ends, due, inf = self.submit, len(self.submit), self.ends, self.due, math.inf
        i = 0
        while i < n or ends or due:
            now = min(submit[i] if i < n else inf, ends[0][0] if ends else inf,
                      due[0] if due else inf)
            self.profile.advance(now)
            if ends and ends[0][0] == now and self._finish(now) and self.waiting:
                self._compress(now)
            k = i
            while i < n and submit[i] == now:
                i += 1
            if i > k:
                self._arrive(now, k, i)
            if due and due[0] == now:
                heappop(due)
                self._start_due(now, self.due_at.pop(now))
        return self.start

    def _launch(self, j: int, now) -> None:
        self.start[j] = now
        heappush(self.ends, (now + self.run[j], j))  # its reservation now holds it running

    def _start_due(self, now, jobs: list) -> None:
        waiting, record = self.waiting, self.record
        for j in jobs:
            rec = record[j]
            if rec is not None and rec[0] == now:  # else it moved earlier and started then
                del waiting[bisect_left(waiting, j, key=_JOB)]
                record[j] = None
                self._launch(j, now)

    def _book(self, j: int, at) -> None:
        """Wake up at `at` for j (a moved job stays listed at its old time too)."""
        jobs = self.due_at.get(at)
        if jobs is None:
            self.due_at[at] = [j]
            heappush(self.due, at)
        else:
            jobs.append(j)

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
                rec = self.record[j] = [s, p, d, j]
                self.waiting.append(rec)
                self._book(j, s)

    def _compress(self, now) -> None:
        """Each waiting job, in arrival order, to its earliest slot given all the others.

        A job holding p processors from s for d seconds can use an earlier window [x, x + d)
        if free >= p over [x, min(x + d, s)): from s on its own processors are there. The step
        just before s decides:
          enough free there  it moves: at the latest to the start of the run of such steps that
                             reaches s; earlier if a whole window fits before that run;
          too few there      it moves only if a whole window fits before that step.
        "A whole window fits before time T + d" (limit = T - d, with T the start of the blocking
        step): only if some step up to limit has p free (one max over a slice, at C speed), and
        then a scan says where. A failed search is remembered for that (p, d) until the next
        move changes the profile: users queue many identical jobs."""
        profile, due_at, due = self.profile, self.due_at, self.due
        times, free, run_before, move = profile.times, profile.free, profile.run_before, profile.move
        # (procs, duration) -> (limit, moves): no window of that size starts by limit, as
        # found when `moves` jobs had moved in this pass (identical jobs queue in runs)
        no_window, moves = {}, 0
        for rec in self.waiting:
            s, p, d, j = rec
            r = bisect_left(times, s) - 1  # the step just before s
            if r < 0:
                continue  # due now
            if free[r] < p:  # blocked there: most jobs, most passes
                limit = times[r] - d
                if limit < now:
                    continue
                to = None
            else:  # it moves
                while r and free[r - 1] >= p:
                    r -= 1
                to = times[r]
                limit = times[r - 1] - d if r else now - 1
            if limit >= now:  # is there an earlier window, wholly before `limit + d`?
                known = no_window.get((p, d))
                if known is None or known[1] != moves or known[0] < limit:
                    x = None
                    if max(free[:bisect_right(times, limit)]) >= p:
                        x = run_before(limit, d, p)
                    if x is None:
                        no_window[p, d] = (limit, moves)
                    else:
                        to = x
            if to is None:
                continue
            move(s, to, d, p)
            rec[0] = to
            jobs = due_at.get(to)  # _book(), inlined
            if jobs is None:
                due_at[to] = [j]
                heappush(due, to)
            else:
                jobs.append(j)
            moves += 1


def conservative(trace: Trace) -> list:
    """Conservative backfilling: start times in service order."""
    return _Conservative(trace).replay()
