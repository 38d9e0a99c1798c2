"""Usage that counts GPUs on a real cluster: TRESBillingWeights make a GPU job bill more than the
same job without one, usage is charged while jobs run (PriorityCalcPeriod), `sshare -a -l -P`
shows it under Slurm's Fair Tree columns, and sprio shows the PriorityWeightTRES factor."""

from __future__ import annotations

import time

import pytest

from conftest import wait_final, wait_state

PARTITION = "PartitionName=main Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP"
LONG_HEADER = ("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|"
               "GrpTRESMins|TRESRunMins")


@pytest.fixture(scope="module")
def gpus(tmp_path_factory):
    from conftest import configured_cluster
    yield from configured_cluster(
        tmp_path_factory, "usage", (1, 2, 2000, 2),
        replace={PARTITION: PARTITION + ' TRESBillingWeights="CPU=1.0,GRES/gpu=10.0"'},
        extra="PriorityType=priority/multifactor\nPriorityCalcPeriod=0:01\nPriorityWeightFairshare=1000\n"
              "PriorityWeightTRES=GRES/gpu=1000\n")


def shares(cluster) -> list[dict[str, str]]:
    r = cluster.run(["sshare", "-a", "-l", "-P"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == LONG_HEADER
    return [dict(zip(lines[0].split("|"), line.split("|"))) for line in lines[1:]]


def raw_usage(cluster, user: str = "root") -> int:
    return sum(int(row["RawUsage"]) for row in shares(cluster) if row["User"] == user)


def billing_rate(cluster, tmp_path, *gres: str) -> float:
    """RawUsage a 3-second job of 1 CPU (and `gres`) added, per second it ran (sacct)."""
    before = raw_usage(cluster)
    job = cluster.sbatch("-c", "1", "--mem=100", *gres, "--wrap", "sleep 3", cwd=tmp_path)
    assert wait_final(cluster, job, 30) == "COMPLETED"
    used = raw_usage(cluster) - before
    elapsed = cluster.run(["sacct", "-X", "-n", "-P", "-j", str(job), "-o", "ElapsedRaw"]).stdout.split()
    assert elapsed and int(elapsed[0]) >= 3, elapsed
    return used / int(elapsed[0])


def test_a_gpu_job_bills_more_than_the_same_job_without(gpus, tmp_path):
    # TRESBillingWeights="CPU=1.0,GRES/gpu=10.0": 11 a second with the GPU, 1 without
    # (ElapsedRaw is whole seconds and RawUsage whole billing-seconds: some slack)
    gpu, cpu = billing_rate(gpus, tmp_path, "--gres=gpu:1"), billing_rate(gpus, tmp_path)
    assert 8.0 <= gpu <= 14.0 and 0.5 <= cpu <= 1.6, (gpu, cpu)


def test_usage_is_charged_while_the_job_runs(gpus, tmp_path):
    before = raw_usage(gpus)
    job = gpus.sbatch("--gres=gpu:1", "--wrap", "sleep 30", cwd=tmp_path)
    wait_state(gpus, job, "RUNNING")
    deadline, used = time.monotonic() + 15, 0
    while time.monotonic() < deadline and used < 22:  # two seconds of 11 billing
        used = raw_usage(gpus) - before
        time.sleep(0.5)
    assert gpus.state(job) == "RUNNING" and used >= 22, used
    rows = [r for r in shares(gpus) if r["User"] == "root"]
    assert rows and 0 < float(rows[0]["FairShare"]) <= 1.0 and rows[0]["TRESRunMins"].startswith("cpu=")
    root = shares(gpus)[0]
    assert root["Account"] == "root" and root["RawShares"] == "" and int(root["RawUsage"]) >= used
    gpus.run(["scancel", str(job)])
    wait_final(gpus, job, 30)


def test_sprio_shows_the_gpu_tres_factor(gpus, tmp_path):
    blockers = [gpus.sbatch("--gres=gpu:1", "--wrap", "sleep 30", cwd=tmp_path) for _ in range(2)]
    for b in blockers:
        wait_state(gpus, b, "RUNNING")
    waiting = gpus.sbatch("--gres=gpu:2", "--wrap", "true", cwd=tmp_path)  # both GPUs: 1000
    deadline, out = time.monotonic() + 20, ""
    while time.monotonic() < deadline:
        r = gpus.run(["sprio", "-j", str(waiting)])
        out = r.stdout
        if r.returncode == 0 and "gres/gpu=1000" in out:
            break
        time.sleep(0.5)
    header, line = out.splitlines()[:2]
    assert header.split()[-1] == "TRES" and line.split()[-1] == "gres/gpu=1000", out
    assert gpus.run(["sprio", "-l", "-h", "-j", str(waiting)]).stdout.split()[-1] == "gres/gpu=1000"
    gpus.run(["scancel", str(waiting), *map(str, blockers)])
    for j in (waiting, *blockers):
        wait_final(gpus, j, 30)
