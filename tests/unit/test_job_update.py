"""scontrol update JobId=: Slurm's rules for who may change what in which state, table-driven
over controller/job_update.apply (pure: a Job and the configuration)."""

from __future__ import annotations

import pytest

from pyslurm_lite import config
from pyslurm_lite.controller.job_update import Context, apply
from pyslurm_lite.errors import InvalidRequest, PermissionDenied, SlurmError, StaleState
from pyslurm_lite.model import Job, JobSpec, JobState

CFG = config.parse(
    "NodeName=n[1-2] CPUs=4 RealMemory=4000 Feature=fast\n"
    "PartitionName=main Nodes=n[1-2] Default=YES MaxTime=60\n"
    "PartitionName=small Nodes=n1 MaxTime=30\n"
    "QOSName=high Priority=10\n")


def job(state=JobState.PENDING, limit=10, **spec) -> Job:
    return Job(job_id=7, spec=JobSpec(time_limit=limit, uid=1000, **spec), state=state,
               time_limit=limit, partition="main", priority=100)


def ctx(operator=False) -> Context:
    return Context(CFG, operator, now=1000.0, reservations={})


@pytest.mark.parametrize("changes, operator, state, check", [
    ({"TimeLimit": "5"}, False, JobState.PENDING, lambda j: j.time_limit == 5),
    ({"TimeLimit": "5"}, False, JobState.RUNNING, lambda j: j.time_limit == 5),
    ({"TimeLimit": "20"}, True, JobState.RUNNING, lambda j: j.time_limit == 20),
    ({"TimeLimit": "2:00:00"}, True, JobState.PENDING, lambda j: j.time_limit == 120),  # > MaxTime
    ({"Partition": "small"}, False, JobState.PENDING, lambda j: j.partition == "small"),
    ({"NumNodes": "2"}, False, JobState.PENDING, lambda j: j.spec.num_nodes == 2),
    ({"Nice": "50"}, False, JobState.PENDING, lambda j: (j.spec.nice, j.priority) == (50, 50)),
    ({"Nice": "-5"}, True, JobState.PENDING, lambda j: j.spec.nice == -5),
    ({"QOS": "high"}, False, JobState.PENDING, lambda j: j.spec.qos == "high"),
    ({"JobName": "x", "Comment": "c"}, False, JobState.RUNNING,
     lambda j: (j.spec.name, j.spec.comment) == ("x", "c")),
    ({"Dependency": "afterok:3"}, False, JobState.PENDING, lambda j: j.spec.dependency == "afterok:3"),
    ({"StartTime": "now+60"}, False, JobState.PENDING, lambda j: j.eligible_time == 1060.0),
    ({"Features": "fast"}, False, JobState.PENDING, lambda j: j.spec.constraint == "fast"),
    ({"ReqNodeList": "n2", "ExcNodeList": "n1"}, False, JobState.PENDING,
     lambda j: (j.spec.nodelist, j.spec.exclude) == ("n2", "n1")),
    ({"MinMemoryNode": "1G"}, False, JobState.PENDING, lambda j: j.spec.mem_per_node == 1024),
])
def test_allowed_changes(changes, operator, state, check):
    j = job(state)
    assert apply(j, changes, ctx(operator)) == list(changes)
    assert check(j), j


@pytest.mark.parametrize("changes, operator, state, error, text", [
    ({"TimeLimit": "20"}, False, JobState.PENDING, PermissionDenied, "Access/permission denied"),
    ({"TimeLimit": "UNLIMITED"}, False, JobState.PENDING, PermissionDenied, "Access/permission denied"),
    ({"TimeLimit": "abc"}, True, JobState.PENDING, InvalidRequest, "Invalid time limit specification"),
    # beyond any limit a job may have (as at submit): scontrol show job could not print its end
    ({"TimeLimit": "999999999999-0"}, True, JobState.PENDING, InvalidRequest, "Requested time limit is invalid"),
    ({"Partition": "small"}, False, JobState.RUNNING, StaleState, "Job is no longer pending execution"),
    ({"NumNodes": "2"}, True, JobState.RUNNING, StaleState, "Job is no longer pending execution"),
    ({"NumNodes": "3"}, True, JobState.PENDING, SlurmError, "Node count specification invalid"),
    ({"Partition": "nope"}, True, JobState.PENDING, InvalidRequest, "Invalid partition name specified"),
    ({"Nice": "-5"}, False, JobState.PENDING, PermissionDenied, "Access/permission denied"),
    ({"QOS": "gold"}, False, JobState.PENDING, InvalidRequest, "Invalid qos specification"),
    ({"Dependency": "before:1"}, False, JobState.PENDING, InvalidRequest, "Job dependency problem"),
    ({"Features": "slow"}, False, JobState.PENDING, InvalidRequest, "Invalid feature specification"),
    ({"Comment": "x"}, True, JobState.COMPLETED, StaleState, "Job has already finished"),
    ({"ArrayTaskThrottle": "2"}, False, JobState.PENDING, InvalidRequest, "not an array job"),
    ({"Bogus": "1"}, True, JobState.PENDING, InvalidRequest, "not supported: Bogus"),
])
def test_refused_changes_leave_the_job_as_it_was(changes, operator, state, error, text):
    j = job(state)
    before = repr(j)
    with pytest.raises(error, match=text):
        apply(j, changes, ctx(operator))
    assert repr(j) == before


def test_one_refused_field_refuses_the_whole_request():
    j = job()
    with pytest.raises(PermissionDenied):
        apply(j, {"Comment": "changed", "TimeLimit": "50"}, ctx())
    assert (j.spec.comment, j.time_limit) == ("", 10)


def test_a_user_may_not_exceed_the_partitions_max_time_by_lowering_from_unlimited():
    j = job(limit=-1)
    with pytest.raises(InvalidRequest, match="Requested time limit is invalid"):
        apply(j, {"TimeLimit": "90"}, ctx())
    apply(j, {"TimeLimit": "45"}, ctx())
    assert j.time_limit == 45
