"""sreport's figures: TRES-seconds of a cluster and of its users over a window, from the job
records sacct reads and the nodes the controller has. Pure: no clock, no I/O.

Slurm's slurmdbd rolls usage up per hour, so sreport works on whole hours: a given Start/End is
rounded to the nearest hour (30 s rounds a minute up, 30 min an hour), End is never past now,
the window is at least an hour, and without them it is yesterday, 00:00 to 00:00
(slurmdb_report_set_start_end_time). Within it, for each TRES (cpu, mem in MB, node, billing,
gres/gpu):
  Reported   the cluster's count x the window's seconds
  Allocated  each job's allocation x the seconds it ran inside the window
  Down       each node down or drained now, from when it went so (or the window's start); the
             controller keeps no history of node states, so a node down earlier in the window
             and up again is not counted (Slurm's event table would count it)
  PLND Down  0: maintenance reservations are not accounted here
  Planned    what eligible jobs waited for (their request x seconds pending in the window), up
             to what was neither allocated nor down (Slurm's "reserved" time)
  Idle       the rest
Worked example: 2 nodes x 1 CPU, window 10:00-11:00 (7200 CPU-s reported); one 1-CPU job ran
10:30-10:45 (900 CPU-s allocated); node2 drained since 10:50 (1 CPU x 600 s = 600 down):
idle = 7200 - 900 - 600 = 5700 CPU-s, i.e. in minutes Allocated 15, Down 10, Idle 95, Reported 120.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

# Slurm's TRES, in its id order ("ALL"); those we hold no count of have no records here.
ALL_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages", "gres/gpu")
COUNTED = ("cpu", "mem", "node", "billing", "gres/gpu")
HOUR = 3600


# ---- the window -------------------------------------------------------------------------------
def _round_to_hour(t: datetime) -> datetime:
    minute = t.minute + (1 if t.second >= 30 else 0)
    hour_up = minute >= 30
    t = t.replace(minute=0, second=0, microsecond=0)
    return t + timedelta(hours=1) if hour_up else t


def report_window(start: float, end: float, now: float) -> tuple[float, float]:
    """(start, end) as slurmdb_report_set_start_end_time makes them (0: not given)."""
    today = datetime.fromtimestamp(int(now)).replace(hour=0, minute=0, second=0, microsecond=0)
    if end:
        e = _round_to_hour(datetime.fromtimestamp(int(min(end, now))))
    else:
        e = today
    s = _round_to_hour(datetime.fromtimestamp(int(start))) if start else today - timedelta(days=1)
    lo, hi = s.timestamp(), e.timestamp()
    return lo, (hi if hi - lo >= HOUR else lo + HOUR)


def overlap(start: float, end: float, window: tuple[float, float]) -> float:
    return max(min(end, window[1]) - max(start, window[0]), 0.0)


# ---- what jobs and nodes count ----------------------------------------------------------------
def alloc_counts(job) -> dict[str, float]:
    """A started job's allocation in the TRES reported (mem in MB; billing as recorded at its
    start, else its CPUs), counted as usage charging counts it (controller/usage.py)."""
    from ..controller.usage import alloc_tres
    counts = alloc_tres(job)
    return {t: counts.get(t, 0.0) for t in COUNTED}


def request_counts(spec, def_mem_per_cpu: int = 0, def_mem_per_node: int = 0) -> dict[str, float]:
    nodes = max(spec.num_nodes, 1)
    cpus = sum(spec.cpus_on_node(i) for i in range(nodes))
    return {"cpu": cpus, "mem": spec.mem_on_node(0, def_mem_per_cpu, def_mem_per_node) * nodes,
            "node": nodes, "billing": cpus, "gres/gpu": spec.gpus_needed_per_node() * nodes}


def node_counts(node, billing_of=None) -> dict[str, float]:
    c = node.config
    counts = {"cpu": c.cpus, "mem": c.real_memory, "node": 1,
              "gres/gpu": sum(g.count for g in c.gres if g.name == "gpu")}
    counts["billing"] = billing_of(node, counts) if billing_of else c.cpus
    return counts


def ran(job, now: float) -> tuple[float, float]:
    """(start, end) of the run; one still running runs to now."""
    return job.start_time, (job.end_time if job.end_time else now)


def waited(job, now: float) -> tuple[float, float]:
    """(eligible, start) of the wait: a job that never started waited until it ended (or now)."""
    eligible = job.eligible_time or job.submit_time
    if job.held and not job.start_time:
        return 0.0, 0.0
    return eligible, (job.start_time or job.end_time or now)


# ---- cluster utilization ----------------------------------------------------------------------
@dataclass
class Utilization:
    """One TRES's seconds in the window."""

    count: float = 0.0  # the cluster's count of the TRES
    allocated: float = 0.0
    down: float = 0.0
    planned_down: float = 0.0
    planned: float = 0.0
    idle: float = 0.0

    @property
    def reported(self) -> float:
        return self.allocated + self.down + self.planned_down + self.idle + self.planned


def utilization(jobs, nodes, window, now: float, billing_of=None, requested=request_counts
                ) -> dict[str, Utilization]:
    """TRES name -> its Utilization over the window (see the module's docstring)."""
    seconds = window[1] - window[0]
    out = {t: Utilization() for t in COUNTED}
    for node in nodes:
        counts = node_counts(node, billing_of)
        down_since = _down_since(node)
        for t in COUNTED:
            out[t].count += counts[t]
            if down_since is not None:
                out[t].down += counts[t] * overlap(down_since or window[0], now, window)
    planned = {t: 0.0 for t in COUNTED}
    for job in jobs:
        if job.start_time and job.allocations:
            span = overlap(*ran(job, now), window)
            for t, n in alloc_counts(job).items():
                out[t].allocated += n * span
        wait = overlap(*waited(job, now), window)
        if wait:
            for t, n in requested(job.spec).items():
                planned[t] += n * wait
    for t, u in out.items():
        capacity = u.count * seconds
        u.allocated = min(u.allocated, capacity)
        u.down = min(u.down, capacity - u.allocated)
        u.planned = min(planned[t], capacity - u.allocated - u.down)
        u.idle = capacity - u.allocated - u.down - u.planned
    return out


def _down_since(node) -> float | None:
    """When the node went down or drained (0: unknown, the window's start); None: it is up."""
    if node.state.value == "DOWN" or node.drain:
        return node.reason_time or 0.0
    return None


# ---- top users --------------------------------------------------------------------------------
@dataclass
class UserUsage:
    """One row of `sreport user topusage`: a user in an account (or in all of them: Group)."""

    user: str
    accounts: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # TRES -> allocated seconds


def top_users(jobs, window, now: float, group: bool = False, users=(), accounts=()) -> list[UserUsage]:
    """Every (user, account), or user with Group, that used the cluster in the window."""
    rows: dict[tuple, UserUsage] = {}
    for job in jobs:
        user, account = job.spec.user, job.spec.account
        if (users and user not in users) or (accounts and account not in accounts):
            continue
        if not (job.start_time and job.allocations):
            continue
        span = overlap(*ran(job, now), window)
        if not span:
            continue
        key = (user,) if group else (user, account)
        row = rows.setdefault(key, UserUsage(user))
        if account not in row.accounts:
            row.accounts.append(account)
        for t, n in alloc_counts(job).items():
            row.seconds[t] = row.seconds.get(t, 0.0) + n * span
    return list(rows.values())


def sort_users(rows: list[UserUsage], tres: str, by_time: bool = True) -> list[UserUsage]:
    """Slurm's sort_user_dec: most of the first TRES first, then by name."""
    if by_time:
        return sorted(rows, key=lambda r: (-r.seconds.get(tres, 0.0), r.user))
    return sorted(rows, key=lambda r: r.user)
