"""Array task ids (A_T) in every command, and dependencies on arrays, as Slurm 22.05 has them.

squeue -j A_T lists that task alone; scontrol show job A_T prints one record; a pending array
is one record (ArrayTaskId=1-5) until its tasks start; scancel / scontrol hold / release on
A_T touch that task only; afterok:A waits for every task of A, aftercorr pairs tasks.
"""

from __future__ import annotations

import re
import time

import pytest

from conftest import wait_final, wait_state

pytestmark = pytest.mark.slow


def _records(text: str) -> list[str]:
    return re.findall(r"^JobId=.*$", text, re.M)


def _tasks_states(cluster, array_id: int) -> dict[str, str]:
    r = cluster.run(["squeue", "-h", "-r", "-j", str(array_id), "-o", "%i %T"])
    assert r.returncode == 0, r.stderr
    return dict(line.split() for line in r.stdout.splitlines())


def test_squeue_and_scontrol_name_one_task(cluster, tmp_path):
    a = cluster.sbatch("--array=0-2", "-o", "/dev/null", "--wrap", "sleep 30", cwd=tmp_path)
    try:
        r = cluster.run(["squeue", "-h", "-j", f"{a}_2", "-o", "%i"])
        assert (r.returncode, r.stdout) == (0, f"{a}_2\n"), r.stderr
        r = cluster.run(["squeue", "-h", "-r", "-j", f"{a}_[0-1]", "-o", "%i"])
        assert sorted(r.stdout.split()) == [f"{a}_0", f"{a}_1"], r.stderr
        r = cluster.run(["scontrol", "show", "job", f"{a}_2"])
        records = _records(r.stdout)
        assert len(records) == 1 and re.match(rf"JobId={a + 2} ArrayJobId={a} ArrayTaskId=2 ",
                                              records[0]), r.stdout
        r = cluster.run(["squeue", "-j", "x_1"])
        assert r.returncode == 1 and "squeue: error: Invalid job id: x_1" in r.stderr, r.stderr
    finally:
        cluster.run(["scancel", str(a)])


def test_pending_array_is_one_record_until_tasks_start(cluster, tmp_path):
    a = cluster.sbatch("--array=0-5", "-H", "-o", "/dev/null", "--wrap", "sleep 30", cwd=tmp_path)
    try:
        records = _records(cluster.run(["scontrol", "show", "job", str(a)]).stdout)
        assert records == [f"JobId={a} ArrayJobId={a} ArrayTaskId=0-5 JobName=wrap"], records
        r = cluster.run(["scontrol", "release", f"{a}_0"])
        assert r.returncode == 0, r.stderr
        assert wait_state(cluster, f"{a}_0", "RUNNING") == "RUNNING"
        records = _records(cluster.run(["scontrol", "show", "job", str(a)]).stdout)
        assert [r.split(" JobName")[0] for r in records] == [
            f"JobId={a} ArrayJobId={a} ArrayTaskId=0",
            f"JobId={a + 1} ArrayJobId={a} ArrayTaskId=1-5"], records
        states = _tasks_states(cluster, a)
        assert states[f"{a}_0"] == "RUNNING" and states[f"{a}_3"] == "PENDING", states
    finally:
        cluster.run(["scancel", str(a)])


def test_scancel_and_hold_touch_one_task(cluster, tmp_path):
    a = cluster.sbatch("--array=0-3", "-H", "-o", "/dev/null", "--wrap", "sleep 30", cwd=tmp_path)
    try:
        r = cluster.run(["scancel", f"{a}_1"])
        assert r.returncode == 0, r.stderr
        r = cluster.run(["scontrol", "release", f"{a}_2"])
        assert r.returncode == 0, r.stderr
        assert wait_state(cluster, a + 2, "RUNNING") == "RUNNING"
        states = _tasks_states(cluster, a)
        assert states.get(f"{a}_0") == "PENDING" and states.get(f"{a}_1") == "CANCELLED", states
        assert states.get(f"{a}_3") == "PENDING", states
        r = cluster.run(["scontrol", "hold", f"{a}_9"])
        assert r.returncode == 1 and f"{a}_9: Invalid job id specified" in r.stderr, r.stderr
        r = cluster.run(["scancel", f"{a}_9"])
        assert r.returncode == 1 and \
            f"scancel: error: Kill job error on job id {a}_9: Invalid job id specified" in r.stderr
        r = cluster.run(["scancel", f"{a}.0"])
        assert r.returncode == 1 and "not supported" in r.stderr, r.stderr
        assert _tasks_states(cluster, a).get(f"{a}_2") == "RUNNING"  # nothing cancelled
    finally:
        cluster.run(["scancel", str(a)])


def test_afterok_on_an_array_waits_for_every_task(cluster, tmp_path):
    a = cluster.sbatch("--array=0-1", "-o", "/dev/null",
                       "--wrap", "sleep $((1 + 2 * SLURM_ARRAY_TASK_ID))", cwd=tmp_path)
    ends = tmp_path / "ends"
    d = cluster.sbatch(f"--dependency=afterok:{a}", "-o", "/dev/null",
                       "--wrap", f"date +%s.%N > {ends}", cwd=tmp_path)
    one = cluster.sbatch(f"--dependency=afterok:{a}_0", "-o", "/dev/null", "--wrap", "true",
                         cwd=tmp_path)
    assert wait_final(cluster, one) == "COMPLETED"
    # task 0 has ended; task 1 still runs, so the job on the whole array still waits
    r = cluster.run(["squeue", "-h", "-j", str(d), "-o", "%T %r"])
    states = _tasks_states(cluster, a)
    if states.get(f"{a}_1") == "RUNNING":
        assert r.stdout.split() == ["PENDING", "Dependency"], (r.stdout, states)
    assert wait_final(cluster, d) == "COMPLETED"
    r = cluster.run(["scontrol", "show", "job", str(a + 1)])
    end_1 = re.search(r"EndTime=(\S+)", r.stdout).group(1)
    started = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(float(ends.read_text())))
    assert started >= end_1, (started, end_1)


def test_afterok_on_an_array_that_failed_never_runs(cluster, tmp_path):
    a = cluster.sbatch("--array=0-1", "-o", "/dev/null",
                       "--wrap", 'exit "$SLURM_ARRAY_TASK_ID"', cwd=tmp_path)
    d = cluster.sbatch(f"--dependency=afterok:{a}", "-o", "/dev/null", "--wrap", "true",
                       cwd=tmp_path)
    ok = cluster.sbatch(f"--dependency=afternotok:{a}", "-o", "/dev/null", "--wrap", "true",
                        cwd=tmp_path)
    try:
        assert wait_final(cluster, ok) == "COMPLETED"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            r = cluster.run(["squeue", "-h", "-j", str(d), "-o", "%r"])
            if r.stdout.strip() == "DependencyNeverSatisfied":
                break
            time.sleep(0.3)
        assert r.stdout.strip() == "DependencyNeverSatisfied", r.stdout
    finally:
        cluster.run(["scancel", str(d)])


def test_aftercorr_pairs_tasks(cluster, tmp_path):
    a = cluster.sbatch("--array=0-1", "-o", "/dev/null",
                       "--wrap", 'sleep $((1 + 4 * SLURM_ARRAY_TASK_ID))', cwd=tmp_path)
    b = cluster.sbatch("--array=0-1", f"--dependency=aftercorr:{a}", "-o", "/dev/null",
                       "--wrap", "true", cwd=tmp_path)
    # b_0 needs only a_0 (1 s); b_1 waits for a_1 (5 s)
    assert wait_final(cluster, f"{b}_0") == "COMPLETED"
    r = cluster.run(["squeue", "-h", "-r", "-j", f"{a}_1,{b}_1", "-o", "%i %T %r"])
    rows = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    if rows.get(f"{a}_1", "").startswith("RUNNING"):
        assert rows.get(f"{b}_1") == "PENDING Dependency", rows
    assert wait_final(cluster, f"{b}_1") == "COMPLETED"
