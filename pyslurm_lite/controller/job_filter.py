"""Which jobs a query names: squeue's, scontrol's and scancel's filters (ids, array tasks,
states, users, partitions, names, nodes) combined with AND."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Job


@dataclass
class JobFilter:
    job_ids: list[int] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    include_finished: bool = False
    nodes: list[str] = field(default_factory=list)
    array_tasks: list[str] = field(default_factory=list)  # "12_3": one task of array 12

    def task_pairs(self) -> set[tuple[int, int]]:
        """(array id, task index) of each named task; InvalidRequest for a malformed name."""
        from ..arrays import parse_task_name
        return {parse_task_name(t) for t in self.array_tasks}

    def matches(self, job: Job, ids: set[int] | None = None,
                tasks: set[tuple[int, int]] | None = None) -> bool:
        wanted = ids if ids is not None else set(self.job_ids)
        pairs = tasks if tasks is not None else self.task_pairs()
        named = self.job_ids or self.array_tasks
        if named and not names_job(job, wanted, pairs):
            return False
        if self.states and job.state.value not in self.states:
            return False
        if not self.states and not named and not self.include_finished and job.state.is_final:
            return False
        if self.users and job.spec.user not in self.users and str(job.spec.uid) not in self.users:
            return False
        if self.partitions and job.partition not in self.partitions:
            return False
        if self.names and job.spec.name not in self.names:
            return False
        if self.nodes and not set(self.nodes) & set(job.node_names):
            return False
        return True


def names_job(job: Job, ids: set[int], tasks: set[tuple[int, int]]) -> bool:
    """Is job named by these ids (its own, or its array's: an array's id names all of its
    tasks) or task names (12_3)?"""
    if job.job_id in ids:
        return True
    return bool(job.array_job_id) and (job.array_job_id in ids
                                       or (job.array_job_id, job.array_task_id) in tasks)
