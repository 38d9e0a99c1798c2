"""priority/multifactor in the controller: each pending job's priority from its factors, and the
usage fair share is computed from (charged as jobs end). The arithmetic is sched/priority.py's;
this module gathers its inputs from the state and the store and writes the results back.
"""

from __future__ import annotations

from ..model import Job, JobState
from .state import ClusterState


class PriorityManager:
    def __init__(self, state: ClusterState):
        self.s = state

    def recompute_priorities(self, now: float) -> None:
        """priority/multifactor: every pending job's priority from its factors (sched/priority)."""
        from ..sched import priority as prio
        cfg = self.s.cfg
        if cfg.priority_type != "priority/multifactor":
            return
        w = cfg.priority_weights
        weights = prio.Weights(w.get("age", 0), w.get("fairshare", 0), w.get("jobsize", 0),
                               w.get("partition", 0), w.get("qos", 0), cfg.priority_max_age * 60.0)
        usage = self.s.store.load_usage(now, cfg.priority_decay_half_life * 60.0)
        total_cpus = sum(n.cpus for n in cfg.nodes.values())
        top_factor = max((p.priority_job_factor for p in cfg.partitions.values()), default=1) or 1
        top_qos = max((q.priority for q in cfg.qos.values()), default=0) or 1
        with self.s.lock:
            pending = [j for j in self.s.jobs.values() if j.state == JobState.PENDING]
            shares = prio.fairshare(usage, {j.spec.user for j in pending})
            for job in pending:
                if job.direct_priority:
                    continue  # an operator's value stays (Slurm's direct_set_prio)
                part = cfg.partitions.get(job.partition)
                f = prio.factors(job.eligible_time or job.submit_time, now,
                                 job.spec.cpus_on_node(0) * job.spec.num_nodes, total_cpus,
                                 (part.priority_job_factor if part else 1) / top_factor,
                                 shares.get(job.spec.user, 1.0), weights,
                                 cfg.qos[job.spec.qos or "normal"].priority / top_qos
                                 if (job.spec.qos or "normal") in cfg.qos else 0.0)
                value = prio.combine(f, weights, job.spec.nice)
                if value != job.priority:
                    job.priority = value
                    job.factors = {k: getattr(weights, k) * v for k, v in f.items()}
                    self.s.touch(job)

    def charge_usage(self, jobs: list[Job]) -> None:
        """Fair share: what ended jobs used (CPU-seconds) is added to their users' usage."""
        if self.s.cfg.priority_type != "priority/multifactor":
            return
        charges: dict[str, float] = {}
        for job in jobs:
            if job.start_time and job.end_time > job.start_time:
                charges[job.spec.user] = charges.get(job.spec.user, 0.0) + \
                    job.num_cpus * (job.end_time - job.start_time)
        if charges:
            self.s.store.add_usage(charges, self.s.clock(), self.s.cfg.priority_decay_half_life * 60.0)

    def shares(self, users: list[str]):
        """sshare's rows from the usage the fair-share factor is computed from."""
        from .fairshare import share_rows
        cfg = self.s.cfg
        usage = self.s.store.load_usage(self.s.clock(), cfg.priority_decay_half_life * 60.0)
        with self.s.lock:
            known = {(j.spec.account, j.spec.user) for j in self.s.jobs.values()}
        return share_rows(usage, known, users)

