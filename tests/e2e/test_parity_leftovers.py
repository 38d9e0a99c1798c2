"""Slurm parity leftovers on a real cluster (#14): preemption behind a pending job under
priority/basic, a QOS's MaxWall as the limit of a job without --time, Slurm's
"ReqNodeNotAvail, UnavailableNodes:" reason, and CLI details (-M, versions, scancel -h).

Two nodes with 2 CPUs and a GPU; priority/basic (submit order); QOS high may preempt normal, whose jobs
are requeued at once (no grace time); QOS short has MaxWall=1."""

from __future__ import annotations

import time

import pytest

from conftest import configured_cluster, wait_final, wait_state


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    yield from configured_cluster(
        tmp_path_factory, "leftovers", (2, 2, 2000, 1),
        extra=("PreemptType=preempt/qos\nPreemptMode=REQUEUE\n"
               "QOSName=normal\nQOSName=high Preempt=normal\nQOSName=short MaxWall=1\n"))


def _field(c, job_id, key: str) -> str:
    out = c.run(["scontrol", "show", "job", str(job_id)]).stdout
    return out.split(f"{key}=")[1].split()[0]


def _squeue(c, job_id, fmt: str) -> str:
    return c.run(["squeue", "-h", "-j", str(job_id), "-o", fmt]).stdout.strip()


def _wait_reason(c, job_id, want: str, timeout: float = 15.0) -> str:
    end = time.monotonic() + timeout
    while True:
        got = _field(c, job_id, "Reason")
        if got == want or time.monotonic() > end:
            return got
        time.sleep(0.3)


def test_high_qos_job_behind_a_pending_job_preempts(c, tmp_path):
    running = [c.sbatch("-c", "2", "--wrap", "sleep 120", cwd=tmp_path) for _ in range(2)]
    for job in running:
        wait_state(c, job, "RUNNING")
    ahead = c.sbatch("-c", "2", "--wrap", "sleep 120", cwd=tmp_path)  # normal, first in line
    high = c.sbatch("-c", "2", "--qos=high", "--wrap", "sleep 120", cwd=tmp_path)
    try:
        assert wait_state(c, high, "RUNNING", timeout=20) == "RUNNING", _squeue(c, high, "%T %r")
        assert sorted(_field(c, j, "Restarts") for j in running) == ["0", "1"]  # one victim
        assert _squeue(c, ahead, "%T") == "PENDING"
    finally:
        c.run(["scancel", *map(str, running + [ahead, high])])


def test_job_without_time_gets_the_qos_max_wall(c, tmp_path):
    job = c.sbatch("--qos=short", "--wrap", "true", cwd=tmp_path)
    assert wait_final(c, job, 30) == "COMPLETED", _squeue(c, job, "%T %r")
    assert _field(c, job, "TimeLimit") == "00:01:00"
    longer = c.sbatch("--qos=short", "-t", "5", "--wrap", "true", cwd=tmp_path)
    try:  # a --time of its own above MaxWall still waits, as in Slurm
        assert _wait_reason(c, longer, "QOSMaxWallDurationPerJobLimit") == "QOSMaxWallDurationPerJobLimit"
    finally:
        c.run(["scancel", str(longer)])


def test_reason_names_the_unavailable_node(c, tmp_path):
    r = c.run(["scontrol", "update", "NodeName=node2", "State=DRAIN", "Reason=maintenance"])
    assert r.returncode == 0, r.stderr
    job = c.sbatch("-w", "node2", "--wrap", "true", cwd=tmp_path)
    try:
        want = "ReqNodeNotAvail,_UnavailableNodes:node2"
        assert _wait_reason(c, job, want) == want
    finally:
        c.run(["scontrol", "update", "NodeName=node2", "State=RESUME"])
    assert wait_final(c, job, 30) == "COMPLETED"
    assert _field(c, job, "Reason") == "None"


# ---- CLI --------------------------------------------------------------------------------------
def test_sbatch_clusters_names_the_cluster(c, tmp_path):
    r = c.run(["sbatch", "-M", "local", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert r.stdout.startswith("Submitted batch job ") and r.stdout.endswith(" on cluster local\n")
    r = c.run(["sbatch", "--parsable", "--clusters=all", "--wrap", "true"], cwd=tmp_path)
    job, cluster = r.stdout.strip().split(";")
    assert job.isdigit() and cluster == "local", r.stdout
    r = c.run(["sbatch", "--parsable", "--wrap", "true"], cwd=tmp_path, env={"SBATCH_CLUSTERS": "local"})
    assert r.stdout.strip().endswith(";local"), r.stdout + r.stderr
    assert c.run(["sbatch", "--parsable", "--wrap", "true"], cwd=tmp_path).stdout.strip().isdigit()
    r = c.run(["sbatch", "-M", "elsewhere", "--wrap", "true"], cwd=tmp_path)
    assert (r.returncode, r.stdout) == (1, ""), r.stdout
    assert "sbatch: error: No cluster 'elsewhere' known by database." in r.stderr
    r = c.run(["srun", "-M", "local", "true"], cwd=tmp_path)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr


def test_sacct_clusters_is_a_filter(c, tmp_path):
    job = c.sbatch("--wrap", "true", cwd=tmp_path)
    assert wait_final(c, job, 30) == "COMPLETED"
    listed = lambda *args, env=None: c.run(  # noqa: E731
        ["sacct", "-n", "-X", "-j", str(job), "-o", "JobID", *args], env=env)
    for args in (["-M", "local"], ["--clusters=all"], []):
        r = listed(*args)
        assert (r.returncode, r.stdout.split()) == (0, [str(job)]), (args, r.stdout, r.stderr)
    r = listed("-M", "elsewhere")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert listed(env={"SACCT_CLUSTERS": "elsewhere"}).stdout == ""
    assert listed(env={"SLURM_CLUSTERS": "elsewhere"}).stdout == ""


def test_scancel_has_no_dash_h(c):
    r = c.run(["scancel", "-h"])
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "scancel: invalid option -- 'h'\nTry \"scancel --help\" for more information\n"
    r = c.run(["scancel", "--help"])
    assert r.returncode == 0 and r.stdout.startswith("Usage: scancel"), r.stdout


def test_versions_are_slurms(c):
    r = c.run(["scontrol", "version"])
    assert (r.returncode, r.stdout) == (0, "slurm 22.05.8\n"), r.stdout + r.stderr
    out = c.run(["scontrol", "show", "node", "node1"]).stdout
    assert " Version=22.05.8" in out, out


def test_show_node_details_has_gres_used(c, tmp_path):
    job = c.sbatch("-w", "node1", "--gres=gpu:1", "--wrap", "sleep 30", cwd=tmp_path)
    try:
        wait_state(c, job, "RUNNING")
        out = c.run(["scontrol", "-d", "show", "node", "node1"]).stdout
        lines = [line.strip() for line in out.splitlines()]
        at = lines.index("Gres=gpu:1")
        assert lines[at + 1:at + 3] == ["GresDrain=N/A", "GresUsed=gpu:1(IDX:0)"], lines
        assert not any(line.startswith("GresUsed=") for line in
                       c.run(["scontrol", "show", "node", "node1"]).stdout.splitlines())
    finally:
        c.run(["scancel", str(job)])


@pytest.mark.parametrize("cmd, env", [
    (["squeue", "-M", "local", "-l"], {}),
    (["squeue", "-l"], {"SQUEUE_CLUSTERS": "local"}),
    (["sinfo", "--clusters=all", "-l"], {}),
    (["sinfo", "-l"], {"SINFO_CLUSTERS": "local"}),
    (["sinfo", "-l"], {"SLURM_CLUSTERS": "local"}),
])
def test_cluster_line_below_the_date(c, cmd, env):
    r = c.run(cmd, env=env)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and time.strptime(lines[0], "%a %b %d %H:%M:%S %Y"), r.stdout + r.stderr
    assert lines[1] == "CLUSTER: local", r.stdout
    assert lines[2].split()[0] in ("JOBID", "PARTITION"), r.stdout


@pytest.mark.parametrize("prog", ["squeue", "sinfo"])
def test_cluster_line_on_every_iteration(c, prog):
    r = c.run(f"timeout -s INT 2.5 {prog} -M local -i 1; true")
    lines = r.stdout.splitlines()
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    dates = [i for i, line in enumerate(lines) if line[:3] in days]
    assert len(dates) >= 2, r.stdout
    assert all(lines[i + 1] == "CLUSTER: local" for i in dates), r.stdout
    assert lines.count("CLUSTER: local") == len(dates), r.stdout
