"""sacct's usage fields, seff and sreport on a real cluster (1 node x 2 CPUs x 2 simulated GPUs,
JobAcctGatherFrequency=1, TRESBillingWeights="CPU=1.0,GRES/gpu=10.0"): a job that holds 200 MiB
of its 400M, a job with a GPU beside one without; the commands read what the agents sampled."""

from __future__ import annotations

import re
import time

import pytest

from conftest import configured_cluster, wait_final, wait_state

SHAPE = (1, 2, 2000, 2)
HOLD = "python3 -c 'import time; a = b\"x\" * (200 << 20); time.sleep(6)'"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(
        tmp_path_factory, "acctreports", SHAPE, extra="JobAcctGatherFrequency=1\n",
        replace={"PartitionName=main": 'PartitionName=main TRESBillingWeights="CPU=1.0,GRES/gpu=10.0"'})


def cmd(cluster, *argv: str) -> str:
    r = cluster.run(list(argv))
    assert r.returncode == 0, f"{argv}: rc={r.returncode} {r.stderr}"
    return r.stdout


def in_mib(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)", text)
    assert m, text
    return float(m.group(1)) * {"": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 2**20}[m.group(2)]


@pytest.fixture(scope="module")
def held(cluster):
    """The 200 MiB job, with what seff said while it ran."""
    job = cluster.sbatch("-c", "1", "--mem=400M", "-o", "/dev/null", "--wrap", HOLD)
    wait_state(cluster, job, "RUNNING")
    running, deadline = "", time.monotonic() + 15
    while time.monotonic() < deadline and utilized_mb(running) < 150:  # the 200 MiB once sampled
        running = cmd(cluster, "seff", str(job))
        time.sleep(0.5)
    assert wait_final(cluster, job) == "COMPLETED"
    return job, running


def utilized_mb(seff: str) -> float:
    used = re.search(r"Memory Utilized: ([0-9.]+) MB", seff)
    return float(used.group(1)) if used else 0.0


def test_seff_of_a_running_job_reads_its_live_samples_and_warns(held):
    _, running = held
    assert "State: RUNNING" in running, running
    assert "WARNING: Efficiency statistics may be misleading for RUNNING jobs." in running
    assert utilized_mb(running) >= 150, running


def test_sacct_step_line_has_max_rss_and_the_job_line_cpu(cluster, held):
    job, _ = held
    lines = cmd(cluster, "sacct", "-j", str(job), "-n", "-P", "-o",
                "JobID,MaxRSS,MaxRSSNode,AveRSS,TotalCPU,CPUTimeRAW,TRESUsageInMax").splitlines()
    rows = {line.split("|")[0]: line.split("|") for line in lines}
    batch, whole = rows[f"{job}.batch"], rows[str(job)]
    assert in_mib(batch[1]) >= 150 and batch[2] == "node1" and batch[3], batch
    assert whole[1] == "" and whole[4] == batch[4] and re.fullmatch(r"(\d\d:)?\d\d:\d\d(\.\d{3})?", whole[4])
    assert int(whole[5]) >= 6  # 1 CPU for the job's 6 s or more
    assert re.fullmatch(r"cpu=\d\d:\d\d:\d\d,mem=[0-9.]+[KMG]", batch[6]), batch[6]


def test_seff_memory_efficiency_is_about_half(cluster, held):
    job, _ = held
    out = cmd(cluster, "seff", str(job))
    assert f"Job ID: {job}\n" in out and "State: COMPLETED (exit code 0)" in out and "Cores: 1" in out
    pct = float(re.search(r"Memory Efficiency: ([0-9.]+)% of 400.00 MB", out).group(1))
    assert 40 <= pct <= 65, out
    assert "GPU Efficiency" not in out


def test_seff_errors_as_seffs(cluster):
    r = cluster.run(["seff", "999999"])
    assert (r.returncode, r.stderr) == (2, "Job not found.\n")
    r = cluster.run(["seff"])
    assert r.returncode == 1 and r.stdout.startswith("Usage: seff [Options] <Jobid>")


def test_a_gpu_bills_ten_and_seff_shows_gpu_lines(cluster):
    gpu = cluster.sbatch("-c", "1", "--mem=100", "--gres=gpu:1", "-o", "/dev/null", "--wrap", "sleep 2")
    cpu = cluster.sbatch("-c", "1", "--mem=100", "-o", "/dev/null", "--wrap", "sleep 2")
    assert wait_final(cluster, gpu) == wait_final(cluster, cpu) == "COMPLETED"
    tres = {j: cmd(cluster, "sacct", "-X", "-n", "-P", "-j", str(j), "-o", "AllocTRES,ReqTRES").strip()
            for j in (gpu, cpu)}
    assert tres[gpu] == "billing=11,cpu=1,gres/gpu=1,mem=100M,node=1|billing=11,cpu=1,gres/gpu=1,mem=100M,node=1"
    assert tres[cpu].startswith("billing=1,cpu=1,mem=100M,node=1|")
    out = cmd(cluster, "seff", str(gpu))
    assert re.search(r"GPU Efficiency: [0-9.]+% of 1 GPU\(s\)\nGPU Memory Utilized: ", out), out


def test_sreport_cluster_utilization_over_a_past_window(cluster):
    out = cmd(cluster, "sreport", "-P", "cluster", "utilization", "start=2026-01-10T10:00:00",
              "end=2026-01-10T12:00:00").splitlines()
    assert out[0] == out[3] == "-" * 80
    assert out[1] == "Cluster Utilization 2026-01-10T10:00:00 - 2026-01-10T11:59:59"
    assert out[2] == "Usage reported in CPU Minutes"
    assert out[4:] == ["Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported",
                       "local|0|0|0|240|0|240"]  # 2 CPUs x 120 minutes, nothing ran
    gpu = cmd(cluster, "sreport", "-n", "-P", "-t", "hours", "-T", "cpu,gres/gpu", "cluster",
              "utilization", "start=2026-01-10T10:00:00", "end=2026-01-10T12:00:00")
    assert gpu.splitlines() == ["local|cpu|0|0|0|4|0|4", "local|gres/gpu|0|0|0|4|0|4"]
    elsewhere = cmd(cluster, "sreport", "-n", "-P", "-M", "elsewhere", "cluster", "utilization")
    assert elsewhere == ""  # a cluster the database does not know: no rows


def test_sreport_user_topusage_counts_this_hours_jobs(cluster, held):
    out = cmd(cluster, "sreport", "-P", "-T", "cpu,gres/gpu", "user", "topusage",
              "start=now-3hours", "end=now").splitlines()
    assert out[1].startswith("Top 10 Users ") and out[2] == "Usage reported in TRES Minutes"
    assert out[4] == "Cluster|Login|Proper Name|Account|TRES Name|Used"
    assert all(re.fullmatch(r"local\|[^|]+\|[^|]*\|[^|]*\|(cpu|gres/gpu)\|\d+", line) for line in out[5:])
    r = cluster.run(["sreport", "cluster", "AccountUtilizationByUser"])
    assert r.returncode == 1 and "not supported by pyslurm-lite" in r.stderr
