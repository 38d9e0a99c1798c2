"""A pending job whose --dependency does not parse (a record from before submit-time checks)
is held as never satisfiable; the scheduler's snapshot of everyone else goes on."""

from __future__ import annotations

from pyslurm_lite import config
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.model import Job, JobSpec, JobState
from pyslurm_lite.sched import dependency


def test_unparsable_dependency_is_never_and_others_are_judged(tmp_path):
    cfg = config.parse("NodeName=n1 CPUs=2 RealMemory=100\nPartitionName=p Nodes=n1\n")
    state = ClusterState(cfg, Store(f"sqlite:///{tmp_path / 'state.db'}"), clock=lambda: 100.0)
    for job_id, dep in ((1, ""), (2, "aftesok:1"), (3, "afterok:1")):
        job = Job(job_id=job_id, spec=JobSpec(dependency=dep), state=JobState.PENDING)
        state.jobs[job_id] = job
        state.touch(job)
    assert state.unmet_dependencies() == {2: dependency.NEVER, 3: dependency.WAIT}
    state.snapshot()  # the pass the scheduler makes does not fail on job 2
