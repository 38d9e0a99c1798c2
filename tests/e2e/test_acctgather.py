"""Per-step usage sampling on a real cluster (1 node x 2 CPUs x 2 simulated GPUs,
JobAcctGatherFrequency=1): sstat while steps run, the final sample committed with the job's end
(read back from the database), simulated GPU utilization from the simgpu files, GPUs busy with
processes no job started kept out of scheduling; and, without cgroups
(ProctrackType=proctrack/pgid) and with JobAcctGatherFrequency=0 (measured only at the end, as
Slurm), the figures wait4 gives of the batch script, delivered with the report of its end."""

from __future__ import annotations

import os
import re
import subprocess
import time

import pytest

from conftest import configured_cluster, wait_final, wait_state

SHAPE = (1, 2, 2000, 2)
MIB = 1024 * 1024
# 100 MiB resident, ~2 s of CPU, then a rest: long enough for a few samples
HOLD = ("python3 -c 'import time; a = b\"x\" * (100 << 20); t = time.time()\n"
        "while time.time() - t < 2: pass\ntime.sleep(4)'")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "acct", SHAPE, extra="JobAcctGatherFrequency=1\n")


@pytest.fixture(scope="module")
def pgid_cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "acctpgid", SHAPE, extra=(
        "JobAcctGatherFrequency=0\nProctrackType=proctrack/pgid\n"))


def client(cluster):
    from pyslurm_lite import config
    from pyslurm_lite.client import Client
    return Client(config.load(str(cluster.conf)))


def to_bytes(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)([KMGT]?)", text.strip())
    assert m, f"not a size: {text!r}"
    return float(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " ")


def sstat_until(cluster, args: list[str], ok, timeout: float = 15.0) -> list[str]:
    """sstat's lines, polled until ok(lines) (the agents' samples arrive on heartbeats)."""
    deadline, lines = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        r = cluster.run(["sstat", *args])
        assert r.returncode == 0, r.stderr
        lines = [line for line in r.stdout.splitlines() if line.strip()]
        if ok(lines):
            return lines
        time.sleep(0.5)
    pytest.fail(f"sstat {' '.join(args)}: {lines}\n{cluster.log_tails()}")


def stored_usage(cluster, job_id: int, step: str):
    """The job's sample of one step as the database keeps it (sacct's source)."""
    runs, _ = client(cluster).job_history(job_ids=[job_id])
    assert runs, f"job {job_id} not in the database"
    found = [u for u in runs[-1].job.usage if u.step == step]
    assert found, f"no usage of {job_id}.{step} stored: {runs[-1].job.usage}"
    return found[0]


def test_batch_script_memory_and_cpu_from_cgroups(cluster):
    job = cluster.sbatch("-o", "/dev/null", "--mem=400", "--wrap", HOLD)
    wait_state(cluster, job, "RUNNING")
    lines = sstat_until(cluster, ["-j", f"{job}.batch", "-n", "-P", "-o", "JobID,MaxRSS,NTasks"],
                        lambda ls: ls and to_bytes(ls[0].split("|")[1]) >= 80 * MIB)
    assert lines[0].startswith(f"{job}.batch|") and lines[0].endswith("|1"), lines
    # without a step: the lowest srun step, and a batch-only job has none
    r = cluster.run(["sstat", "-j", str(job), "-n", "-P", "-o", "JobID"])
    assert r.returncode == 0 and r.stdout == "", (r.stdout, r.stderr)
    assert wait_final(cluster, job) == "COMPLETED"
    r = cluster.run(["sstat", "-j", str(job), "-P"])
    assert r.returncode == 0 and f"No steps running for job {job}" in r.stderr, r.stderr
    final = stored_usage(cluster, job, "batch")
    assert final.max_rss >= 80 * MIB and final.user_cpu + final.system_cpu >= 0.5, final
    assert final.samples >= 1 and final.node == "node1" and final.tasks == 1, final


def test_without_cgroups_or_sampling_the_end_still_reports_what_the_script_used(pgid_cluster):
    job = pgid_cluster.sbatch("-o", "/dev/null", "--wrap", HOLD)
    wait_state(pgid_cluster, job, "RUNNING")
    r = pgid_cluster.run(["sstat", "-j", f"{job}.batch", "-n", "-P", "-o", "JobID,MaxRSS"])
    assert r.stdout.strip() == f"{job}.batch|0", r  # nothing measured until it ends
    assert wait_final(pgid_cluster, job) == "COMPLETED"  # and the agent lives on (killpg(0))
    final = stored_usage(pgid_cluster, job, "batch")
    assert final.max_rss >= 80 * MIB and final.user_cpu + final.system_cpu >= 0.5, final


def test_srun_step_is_sampled_and_its_end_delivers_its_final_figures(cluster, tmp_path):
    job = cluster.sbatch("-o", "/dev/null", "--wrap", f"srun {HOLD}")
    wait_state(cluster, job, "RUNNING")
    lines = sstat_until(cluster, ["-j", str(job), "-n", "-P", "-o", "JobID,MaxRSS,MaxRSSNode,AveCPU"],
                        lambda ls: ls and to_bytes(ls[0].split("|")[1]) >= 80 * MIB)
    assert lines[0].startswith(f"{job}.0|") and "|node1|" in lines[0], lines
    everything = sstat_until(cluster, ["-a", "-j", str(job), "-n", "-P", "-o", "JobID"],
                             lambda ls: len(ls) == 2)
    assert everything == [f"{job}.batch", f"{job}.0"]
    assert wait_final(cluster, job) == "COMPLETED"
    step = stored_usage(cluster, job, "0")
    assert step.max_rss >= 80 * MIB and step.user_cpu + step.system_cpu >= 0.5, step


def _simgpu(cluster, index: int, text: str | None) -> None:
    d = cluster.dir / "state" / "agent-node1" / "simgpu"
    path = d / str(index)
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(text)
        os.chmod(path, 0o644)


def test_a_simulated_gpu_reports_what_its_file_says_and_0_without_one(cluster):
    _simgpu(cluster, 0, "70 1024")
    _simgpu(cluster, 1, "70 1024")
    try:
        busy = cluster.sbatch("-o", "/dev/null", "--gres=gpu:1", "--wrap", "sleep 4")
        wait_state(cluster, busy, "RUNNING")
        lines = sstat_until(cluster, ["-a", "-j", str(busy), "-n", "-P", "-o", "TRESUsageInMax"],
                            lambda ls: ls and "gres/gpuutil=70" in ls[0])
        assert "gres/gpumem=1G" in lines[0], lines
        wait_final(cluster, busy)
    finally:
        _simgpu(cluster, 0, None)
        _simgpu(cluster, 1, None)
    idle = cluster.sbatch("-o", "/dev/null", "--gres=gpu:1", "--wrap", "sleep 3")
    wait_final(cluster, idle)
    final = stored_usage(cluster, idle, "batch")
    assert final.gpus == 1 and final.max_gpu_util == 0 and final.max_gpu_mem == 0, final


def test_a_gpu_used_by_a_process_no_job_started_is_kept_out_of_scheduling(cluster, tmp_path):
    outsider = subprocess.Popen(["sleep", "120"])
    try:
        _simgpu(cluster, 0, f"40 512 {outsider.pid}")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            nodes, _ = client(cluster).nodes(names=["node1"])
            if [(f.index, list(f.pids)) for f in nodes[0].foreign_gpus] == [(0, [outsider.pid])]:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"node1 reports no foreign GPU 0: {nodes[0].foreign_gpus}")
        shown = cluster.run(["scontrol", "show", "node", "node1"]).stdout
        assert f"Comment=GPU(s) 0 used by processes no job started (pids {outsider.pid})" in shown, shown
        # first a job that needs both GPUs: it cannot start, and holds back nobody behind it
        both = cluster.sbatch("-o", "/dev/null", "--gres=gpu:2", "-w", "node1", "--wrap", "true")
        one = cluster.sbatch("-o", str(tmp_path / "one.out"), "--gres=gpu:1", "-w", "node1",
                             "--wrap", "echo $SLURM_JOB_GPUS")
        assert wait_final(cluster, one) == "COMPLETED"
        assert (tmp_path / "one.out").read_text().strip() == "1"  # not the outsider's GPU 0
        assert cluster.state(both) == "PENDING"
        _simgpu(cluster, 0, None)  # the outsider leaves the GPU
        assert wait_final(cluster, both) == "COMPLETED"
        assert "used by processes no job started" in (cluster.dir / "controller.log").read_text()
    finally:
        _simgpu(cluster, 0, None)
        outsider.kill()
        outsider.wait()


def test_sstat_errors_as_slurm(cluster):
    r = cluster.run(["sstat", "-j", "999999", "-n"])
    assert (r.returncode, r.stdout, r.stderr) == (
        0, "", "sstat: error: couldn't get steps for job 999999\n")  # Slurm's main returns 0
    r = cluster.run(["sstat", "-n"])
    assert (r.returncode, r.stderr) == (1, "sstat: error: You didn't give me any jobs to stat.\n")
    r = cluster.run(["sstat", "-j", "1", "-o", "MaxRSS,nosuch"])
    assert (r.returncode, r.stderr) == (1, 'sstat: error: Invalid field requested: "nosuch"\n')
