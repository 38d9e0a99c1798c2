"""squeue's -O/--Format, -S/--sort and SQUEUE_* variables (cli/squeue_opts.py), table-driven."""

from __future__ import annotations

import argparse

import pytest

from pyslurm_lite.cli import fmt
from pyslurm_lite.cli.squeue_opts import env_defaults, long_fields, parse_long, parse_sort, sort_jobs
from pyslurm_lite.cli.jobfields import _blank
from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.model import Job, JobSpec


def job(job_id, state="PENDING", priority=10, name="j", partition="main", **kw) -> Job:
    j = Job(job_id=job_id, spec=JobSpec(name=name), priority=priority, partition=partition, **kw)
    j.state = state  # the CLIs see states as plain strings (protobuf messages)
    return j


def render(form: str, jobs) -> list[str]:
    tokens, headers = parse_long(form)
    row = fmt.compile_row(tokens, long_fields(tokens), _blank)
    return [fmt.render(tokens, headers)] + [row(j, 0.0) for j in jobs]


@pytest.mark.parametrize("form, want", [
    ("JobID,State", ["JOBID".ljust(20) + "STATE".ljust(20), "12".ljust(20) + "PENDING".ljust(20)]),
    ("jobid:5,name:.6", ["JOBID  NAME", "12    train"]),
    ("JobID:4|,Reason:8", ["JOBI|REASON  ", "12  |None    "]),
    ("ArrayJobID:4,ArrayTaskID:4,JobArrayID:6", ["ARRAARRAJOBID ", "9   3   9_3   "]),
    ("NumNodes:3,NumCPUs:3,TimeLimit:.11", ["NODCPU TIME_LIMIT", "1  1    UNLIMITED"]),
])
def test_long_format(form, want):
    j = job(12, name="train")
    if "Array" in form:
        j = job(12, array_job_id=9, array_task_id=3)
    assert render(form, [j]) == want


def test_admin_comment_shows_the_idle_gpu_flag():
    flagged = job(12, admin_comment="IdleGPU: 1 GPU(s) under 5% for 20 s")
    assert render("JobID:3,AdminComment:40", [flagged, job(13)]) == [
        "JOBADMIN_COMMENT".ljust(43), "12 IdleGPU: 1 GPU(s) under 5% for 20 s".ljust(43),
        "13 (null)".ljust(43)]


def test_jobid_is_the_tasks_own_id_and_a_field_may_repeat():
    j = job(12, array_job_id=9, array_task_id=3)
    assert render("JobID:3,JobID:3", [j])[1] == "12 12 "


def test_unknown_long_field_is_refused_naming_it():
    with pytest.raises(InvalidRequest, match="Invalid job format specification: Bogus"):
        parse_long("JobID,Bogus")


@pytest.mark.parametrize("spec, want", [
    ("P,t,-p", [("P", False), ("t", False), ("p", True)]),
    ("-t,+i", [("t", True), ("i", False)]),
    ("-j", [("j", True)]),
    ("c,i", [("i", False)]),  # letters squeue accepts without sorting by them
])
def test_parse_sort(spec, want):
    assert parse_sort(spec) == want


def test_bad_sort_letter_is_refused():
    with pytest.raises(InvalidRequest, match="Invalid sort specification: X"):
        parse_sort("i,X")


@pytest.mark.parametrize("spec, want", [
    ("P,t,-p", [2, 1, 3, 4]),       # squeue's default: partition, state (PD < R), priority down
    ("-i", [4, 3, 2, 1]),
    ("-t,+i", [3, 4, 1, 2]),         # R before PD, then by id
    ("j", [2, 4, 1, 3]),
])
def test_sort_jobs(spec, want):
    jobs = [job(1, "PENDING", 5, "c"), job(2, "PENDING", 7, "a"), job(3, "RUNNING", 1, "d"),
            job(4, "RUNNING", 9, "b", partition="z")]
    assert [j.job_id for j in sort_jobs(jobs, parse_sort(spec), 0.0)] == want


def test_environment_fills_only_what_flags_left_unset():
    ns = argparse.Namespace(all=False, array=False, sort=None, format=None, Format=None,
                            account=None, name=None, partition=["p1"], qos=None, states=None,
                            user=None)
    env_defaults(ns, {"SQUEUE_SORT": "-i", "SQUEUE_FORMAT2": "JobID", "SQUEUE_USERS": "bob",
                      "SQUEUE_PARTITION": "p2", "SQUEUE_STATES": "R", "SQUEUE_ARRAY": "1",
                      "SQUEUE_ALL": "1"})
    assert (ns.sort, ns.Format, ns.user, ns.partition, ns.states, ns.array, ns.all) == \
        ("-i", "JobID", ["bob"], ["p1"], ["R"], True, True)
    ns2 = argparse.Namespace(**{**vars(ns), "Format": None, "format": None, "sort": "P"})
    env_defaults(ns2, {"SQUEUE_FORMAT": "%i", "SQUEUE_FORMAT2": "JobID", "SQUEUE_SORT": "-i"})
    assert (ns2.format, ns2.Format, ns2.sort) == ("%i", None, "P")  # SQUEUE_FORMAT first
