"""scontrol update JobId=..., scontrol show config, and squeue's -O, -S, -i and SQUEUE_* on a
real cluster, in Slurm 22.05's words and layouts."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from conftest import wait_state

pytestmark = pytest.mark.slow


def _field(cluster, job_id, name: str) -> str:
    r = cluster.run(["scontrol", "show", "job", str(job_id)])
    m = re.search(rf"\b{name}=(\S*)", r.stdout)
    return m.group(1) if m else f"<no {name} in {r.stdout!r} {r.stderr!r}>"


@pytest.fixture
def held(cluster, tmp_path):
    job_id = cluster.sbatch("-H", "--time=10", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    yield job_id
    cluster.run(["scancel", str(job_id)])


def test_update_time_limit_and_fields(cluster, held):
    r = cluster.run(["scontrol", "update", f"JobId={held}", "TimeLimit=5"])
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert _field(cluster, held, "TimeLimit") == "00:05:00"
    r = cluster.run(["scontrol", "update", f"jobid={held}", "name=renamed", "Comment=why",
                     "Nice=10", "Dependency=afterany:1", "StartTime=now+1hour"])
    assert r.returncode == 0, r.stderr
    assert (_field(cluster, held, "JobName"), _field(cluster, held, "Nice"),
            _field(cluster, held, "Dependency")) == ("renamed", "10", "afterany:1")
    r = cluster.run(["scontrol", "update", f"JobId={held}", "StartTime=now"])
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args, rc, words", [
    (["Bogus=1"], 1, "Update of this parameter is not supported: Bogus=1\nRequest aborted\n"),
    (["TimeLimit=abc"], 1, "scontrol: error: Invalid TimeLimit value\n"),
    (["Partition=nosuch"], 1, "Invalid partition name specified for job {id}\n"),
    (["NumNodes=9"], 1, "Node count specification invalid for job {id}\n"),
    (["QOS=gold"], 1, "Invalid qos specification for job {id}\n"),
])
def test_update_refusals(cluster, held, args, rc, words):
    before = cluster.run(["scontrol", "show", "job", str(held)]).stdout
    r = cluster.run(["scontrol", "update", f"JobId={held}", *args])
    assert (r.returncode, r.stderr) == (rc, words.format(id=held))
    assert cluster.run(["scontrol", "show", "job", str(held)]).stdout == before  # nothing changed


def test_update_of_a_running_job_keeps_pending_only_fields(cluster, tmp_path):
    job_id = cluster.sbatch("-o", "/dev/null", "--wrap", "sleep 30", cwd=tmp_path)
    try:
        assert wait_state(cluster, job_id, "RUNNING") == "RUNNING"
        r = cluster.run(["scontrol", "update", f"JobId={job_id}", "NumNodes=2"])
        assert (r.returncode, r.stderr) == (1, f"Job is no longer pending execution for job {job_id}\n")
        r = cluster.run(["scontrol", "update", f"JobId={job_id}", "TimeLimit=3"])
        assert r.returncode == 0, r.stderr
        assert _field(cluster, job_id, "TimeLimit") == "00:03:00"
    finally:
        cluster.run(["scancel", str(job_id)])


def test_update_array_task_and_throttle(cluster, tmp_path):
    a = cluster.sbatch("--array=0-3", "-H", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    try:
        r = cluster.run(["scontrol", "update", f"JobId={a}_2", "Comment=only2"])
        assert r.returncode == 0, r.stderr
        assert _field(cluster, f"{a}_2", "Comment") == "only2"
        assert _field(cluster, f"{a}_1", "Comment").startswith("<no Comment")
        r = cluster.run(["scontrol", "update", f"JobId={a}", "ArrayTaskThrottle=2"])
        assert r.returncode == 0, r.stderr
        r = cluster.run(["squeue", "-h", "-j", str(a), "-o", "%i"])
        assert r.stdout.strip() == f"{a}_[0-3%2]", r.stdout
    finally:
        cluster.run(["scancel", str(a)])


def test_show_config(cluster):
    r = cluster.run(["scontrol", "show", "config"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"Configuration data as of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", lines[0]), lines[0]
    keys = [line.split(" = ")[0].rstrip() for line in lines[1:] if " = " in line]
    assert keys[:3] == sorted(keys[:3], key=str.lower)
    assert "ClusterName             = " in r.stdout and "MinJobAge               = 300 sec" in r.stdout
    assert lines[-1].startswith("Slurmctld(primary) at ") and lines[-1].endswith(" is UP")


def test_squeue_format_long_names_sort_and_environment(cluster, tmp_path):
    ids = [cluster.sbatch("-H", "-J", name, "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
           for name in ("bb", "aa")]
    try:
        jobs = ",".join(map(str, ids))
        r = cluster.run(["squeue", "-O", "JobID,State,Reason", "-h", "-j", str(ids[0])])
        assert r.stdout == f"{ids[0]:<20}{'PENDING':<20}{'JobHeldUser':<20}\n", r.stdout
        r = cluster.run(["squeue", "--Format=Name:4,JobID:.6", "-j", jobs, "-S", "j"])
        assert r.stdout.splitlines() == ["NAME JOBID", f"aa  {ids[1]:>6}", f"bb  {ids[0]:>6}"]
        r = cluster.run(["squeue", "-h", "-j", jobs, "-o", "%i"], env={"SQUEUE_SORT": "-i"})
        assert r.stdout.split() == [str(ids[1]), str(ids[0])]
        r = cluster.run(["squeue", "-h", "-j", jobs], env={"SQUEUE_FORMAT2": "Name:3"})
        assert sorted(r.stdout.split()) == ["aa", "bb"]
        r = cluster.run(["squeue", "-O", "JobID,Nope"])
        assert (r.returncode, r.stderr) == (1, "squeue: error: Invalid job format specification: Nope\n")
        r = cluster.run(["squeue", "-S", "X"])
        assert (r.returncode, r.stderr) == (1, "squeue: error: Invalid sort specification: X\n")
    finally:
        cluster.run(["scancel", *map(str, ids)])


def test_squeue_iterate_repeats(cluster):
    p = subprocess.Popen(["squeue", "-i", "1", "-o", "%i"], env=cluster.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3.5)
    finally:
        p.terminate()
        out, _ = p.communicate(timeout=10)
    stamps = re.findall(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$", out, re.M)
    assert len(stamps) >= 2 and out.count("JOBID") == len(stamps), out
    r = cluster.run(["squeue", "-i", "0"])
    assert (r.returncode, r.stderr) == (1, "squeue: error: --iterate=0\n")
