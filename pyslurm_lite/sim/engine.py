"""The fast replay engines for fcfs and easy: processor counts on a virtual clock.

Worked example, EASY on a machine of 10 processors; all four jobs are submitted at t=0 and
run exactly their estimate:

    job  procs  estimate    t=0    A starts (4 free). B does not fit: it is the blocked head.
    A    6      100                Shadow: when A ends at 100, 10 are free and B needs 8, so the
    B    8      50                 shadow time is 100 and the extra is 10 - 8 = 2.
    C    2      100                C ends at 100 <= 100: it starts (2 free). D would still run
    D    2      300                at 100, but it needs only the 2 extra: it starts, extra 0.
                            t=100  A and C end (8 free): B starts, on time. D ends at 300.

The rules, textbook EASY (Lifka; Mu'alem and Feitelson 2001):
  1. start queue-head jobs, in service order, while they fit;
  2. the head that does not fit gets the *shadow time*: walking running jobs by estimated end
     (start + estimate), the first end at which enough processors are free; *extra* = what is
     free at that time, counting every job ending at it, beyond the head's need;
  3. a later job starts now if it fits and either ends (by its estimate) no later than the shadow
     time, or uses at most the extra processors, which it then consumes.
fcfs is step 1 alone: the head blocks everyone.

Events at one instant: ends first (their processors are reusable at once), then arrivals, then
one scheduling pass. Between ends nothing that the shadow depends on changes (free processors,
the running set, the head), so at an instant with arrivals only, just the new jobs are tried
against the kept shadow and extra; a full pass runs only after an end or when the queue was
empty. The shadow is worked out only when some waiting job could start at all (a count of waiting jobs
by size says at C speed whether any fits the free processors): on a long queue most passes end
there. The hot loops use plain lists of ints, no attribute access per job: HPC2N's
200,000 jobs replay in about a second.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from heapq import heappop, heappush
from itertools import accumulate

from .swf import Trace


class _Replay:
    """State shared by fcfs and easy: the queue, running jobs by estimated end, end events."""

    def __init__(self, trace: Trace):
        self.submit, self.run, self.procs, self.estimate = (trace.submit, trace.run, trace.procs,
                                                            trace.estimate)
        self.start = [None] * len(trace)
        self.free = trace.machine
        self.queue: list[int] = []  # waiting jobs (indices), service order ...
        self.qprocs: list[int] = []  # ... and their processors, index for index
        self.sizes = [0] * (trace.machine + 1)  # waiting jobs by processors asked
        self.run_end: list = []  # estimated ends of running jobs, sorted ...
        self.run_procs: list[int] = []  # ... and their processors, index for index
        self.ends: list = []  # heap of (actual end, estimated end, procs)

    def replay(self) -> list:
        """Start time of every job, in the trace's (service) order."""
        submit, procs, n, ends, queue, qprocs, sizes = (
            self.submit, self.procs, len(self.submit), self.ends, self.queue, self.qprocs,
            self.sizes)
        i = 0
        while i < n or ends:
            now = ends[0][0] if ends and (i == n or ends[0][0] <= submit[i]) else submit[i]
            ended = ends and ends[0][0] == now
            if ended:
                self._finish(now)
            first = len(queue)
            k = i
            while i < n and submit[i] == now:
                i += 1
            if i > k:
                queue.extend(range(k, i))
                qprocs.extend(procs[k:i])
                for p in procs[k:i]:
                    sizes[p] += 1
            if ended or first == 0:
                self.full_pass(now)
            elif i > k:
                self.arrivals(now, first)
        return self.start

    def _finish(self, now) -> None:
        """Every job ending at `now` gives its processors back."""
        ends, run_end, run_procs = self.ends, self.run_end, self.run_procs
        while ends and ends[0][0] == now:
            _, est_end, p = heappop(ends)
            self.free += p
            k = bisect_left(run_end, est_end)
            while run_procs[k] != p:  # same end and size are interchangeable for the shadow
                k += 1
            del run_end[k]
            del run_procs[k]

    def start_head(self, now) -> None:
        """Rule 1: queue-head jobs start while they fit."""
        queue, qprocs, free = self.queue, self.qprocs, self.free
        n = 0
        while n < len(queue) and qprocs[n] <= free:
            free -= qprocs[n]
            self.launch(queue[n], now)
            n += 1
        if n:
            del queue[:n]
            del qprocs[:n]
        self.free = free

    def launch(self, j: int, now) -> None:
        self.start[j] = now
        est_end, p = now + self.estimate[j], self.procs[j]
        self.sizes[p] -= 1
        k = bisect_right(self.run_end, est_end)
        self.run_end.insert(k, est_end)
        self.run_procs.insert(k, p)
        heappush(self.ends, (now + self.run[j], est_end, p))

    def full_pass(self, now) -> None:
        if self.queue and self.qprocs[0] <= self.free:
            self.start_head(now)

    def arrivals(self, now, first: int) -> None:
        """fcfs: new jobs wait behind a head that still does not fit."""


class _Easy(_Replay):
    def __init__(self, trace: Trace):
        super().__init__(trace)
        self.shadow = None  # (shadow time, extra), worked out when first needed after a change

    def full_pass(self, now) -> None:
        if self.queue and self.qprocs[0] <= self.free:
            self.start_head(now)
        self.shadow = None  # the running set changed
        if self.free and len(self.queue) > 1:
            self.backfill(now, 1)

    def arrivals(self, now, first: int) -> None:
        if self.free:
            self.backfill(now, first)

    def _shadow(self) -> tuple:
        """Rule 2: cumulative processors freed by estimated end; the first end where the head
        fits is the shadow time, and all jobs ending at that same instant count toward the
        extra."""
        need = self.qprocs[0] - self.free
        freed = list(accumulate(self.run_procs))
        shadow = self.run_end[bisect_left(freed, need)]
        return shadow, freed[bisect_right(self.run_end, shadow) - 1] - need

    def backfill(self, now, q: int) -> None:
        """Rule 3 for queue[q:], in service order; stops once no processor is free."""
        queue, qprocs, free = self.queue, self.qprocs, self.free
        if q == 1:  # behind a blocked head: any waiting job of at most `free` processors?
            nobody = not any(self.sizes[1:free + 1])
        else:  # new arrivals only
            nobody = min(qprocs[q:]) > free
        if nobody:
            return  # most passes end here, after one look at C speed

        if self.shadow is None:  # the running set is still the one the pass started with
            self.shadow = self._shadow()
        shadow, extra = self.shadow
        room, estimate = shadow - now, self.estimate
        while q < len(queue):
            p = qprocs[q]
            if p <= free:
                j = queue[q]
                if estimate[j] <= room or p <= extra:
                    if estimate[j] > room:
                        extra -= p  # it still runs at the shadow time: it uses up extra
                    free -= p
                    self.launch(j, now)
                    del queue[q]
                    del qprocs[q]
                    if free == 0:
                        break
                    continue
            q += 1
        self.free, self.shadow = free, (shadow, extra)


def fcfs(trace: Trace) -> list:
    """Strict first-come-first-served: start times in service order."""
    return _Replay(trace).replay()


def easy(trace: Trace) -> list:
    """Textbook EASY backfilling: start times in service order."""
    return _Easy(trace).replay()
