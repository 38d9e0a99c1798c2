"""MinJobAge from slurm.conf: how long the controller keeps an ended job in memory (sacct reads
the database, so the job stays listed there)."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite import config
from pyslurm_lite.controller.daemon import Controller
from pyslurm_lite.errors import ConfigError
from pyslurm_lite.model import JobState

CONF = "ClusterName=c\nStateSaveLocation={dir}\nNodeName=node1 CPUs=1\nPartitionName=main Nodes=node1 Default=YES\n"


def controller(tmp_path, extra: str) -> Controller:
    cfg = config.parse(CONF.format(dir=tmp_path) + extra, str(tmp_path / "slurm.conf"))
    ctl = Controller(cfg, clock=lambda: 1000.0)
    job = model_job(1)
    job.state, job.end_time = JobState.COMPLETED, 1000.0
    ctl.state.jobs[1] = job
    return ctl


@pytest.mark.parametrize("extra, age, kept", [
    ("MinJobAge=10\n", 9, True), ("MinJobAge=10\n", 11, False),
    ("", 299, True), ("", 301, False),  # Slurm's default, 300 s
    ("MinJobAge=0\n", 10**6, True),  # 0: never forgotten
])
def test_ended_jobs_are_forgotten_after_min_job_age(tmp_path, extra, age, kept):
    ctl = controller(tmp_path, extra)
    ctl.forget_ended_jobs(1000.0 + age)
    assert (1 in ctl.state.jobs) is kept
    ctl.store.close()


def test_a_bad_min_job_age_is_refused():
    with pytest.raises(ConfigError, match="(?i)slurm.conf:1: MinJobAge=soon is not a number"):
        config.parse("MinJobAge=soon\n")
