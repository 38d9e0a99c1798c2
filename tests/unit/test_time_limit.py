"""A job's time limit as the controller settles it at submit (controller/validate.py), one row per
case: the job's --time, else the partition's DefaultTime, else its MaxTime, then capped by the
QOS's MaxWall when the job gave none (Slurm's acct_policy)."""

from __future__ import annotations

import dataclasses

import pytest

from pyslurm_lite import config
from pyslurm_lite.controller import validate
from pyslurm_lite.model import UNLIMITED, JobSpec

CONF = """\
NodeName=n1 CPUs=4 RealMemory=4000
PartitionName=open Nodes=ALL Default=YES MaxTime=UNLIMITED
PartitionName=capped Nodes=ALL MaxTime=60
PartitionName=defaulted Nodes=ALL DefaultTime=10 MaxTime=60
QOSName=normal
QOSName=short MaxWall=30
QOSName=tiny MaxWall=5
"""


@pytest.fixture(scope="module")
def cfg():
    return config.parse(CONF, "slurm.conf")


def spec(**changes) -> JobSpec:
    base = JobSpec(name="job", script="#!/bin/sh\ntrue\n", user="alice", uid=1000, gid=1000,
                   work_dir="/home/alice", std_out="slurm-%j.out")
    return dataclasses.replace(base, **changes)


@pytest.mark.parametrize("partition, qos, time_limit, want", [
    ("open", "normal", 0, UNLIMITED),
    ("open", "short", 0, 30),  # no --time: the QOS's MaxWall, not a job that waits for ever
    ("capped", "normal", 0, 60),
    ("capped", "short", 0, 30),  # MaxTime 60 capped by MaxWall 30
    ("defaulted", "short", 0, 10),  # DefaultTime 10 is below MaxWall 30
    ("defaulted", "tiny", 0, 5),
    ("open", "short", 45, 45),  # a --time of its own is kept (it waits: QOSMaxWall...Limit)
    ("open", "short", UNLIMITED, UNLIMITED),
])
def test_time_limit(cfg, partition, qos, time_limit, want):
    _, limit = validate.validate_spec(cfg, spec(partition=partition, qos=qos, time_limit=time_limit), {})
    assert limit == want
