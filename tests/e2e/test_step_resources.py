"""Steps that ask for their own share of an allocation (srun -c/--mem/--gres/--gpus* inside
salloc), srun's getopt-style optional values and srun -I, on a real cluster (2 nodes x 2 CPUs x
2000 MiB x 4 GPUs)."""

from __future__ import annotations

import os
import re

from conftest import wait_final

GPUS = 'echo "P=$SLURM_PROCID CVD=$CUDA_VISIBLE_DEVICES SG=$SLURM_STEP_GPUS"'


def _salloc(cluster, opts: list[str], script: str, timeout: float = 60):
    """salloc OPTS bash -c SCRIPT: the script runs srun steps inside the allocation."""
    return cluster.run(["salloc", *opts, "bash", "-c", script], timeout=timeout)


def _field(text: str, key: str) -> list[str]:
    return re.findall(rf"{key}=(\S*)", text)


def test_a_step_gets_the_gpus_it_asks_for_and_the_next_step_others(cluster):
    r = _salloc(cluster, ["-N1", "--gres=gpu:3"],
                f"srun --gres=gpu:1 bash -c '{GPUS}; sleep 2' & sleep 0.7; "
                f"srun --gpus=2 bash -c '{GPUS}'; wait; srun bash -c '{GPUS}'")
    assert r.returncode == 0, r.stderr
    first, second, whole = _field(r.stdout, "SG")
    assert len(first.split(",")) == 1 and len(second.split(",")) == 2, r.stdout
    assert not set(first.split(",")) & set(second.split(",")), r.stdout  # disjoint while both run
    assert len(whole.split(",")) == 3, r.stdout  # a step asking none gets the job's
    assert "not supported" not in r.stderr, r.stderr


def test_a_step_waits_for_gpus_another_step_holds_unless_it_overlaps(cluster):
    r = _salloc(cluster, ["-N1", "--gres=gpu:1"],
                "srun --gres=gpu:1 sleep 2 & sleep 0.7; "
                f"srun --overlap --gres=gpu:1 bash -c '{GPUS}'; "
                "srun --gres=gpu:1 true; echo rc=$?; wait")
    assert r.returncode == 0 and "rc=0" in r.stdout, r.stderr
    m = re.search(r"srun: Job (\d+) step creation temporarily disabled, retrying "
                  r"\(Requested nodes are busy\)\n(?:.*\n)*?srun: Step created for StepId=\1\.2\n",
                  r.stderr)
    assert m, r.stderr
    assert r.stderr.count("temporarily disabled") == 1, r.stderr  # the overlapping step did not wait


def test_gpus_per_task_splits_the_steps_gpus_not_another_steps(cluster):
    r = _salloc(cluster, ["-N1", "-n2", "--gres=gpu:4"],
                f"srun -n1 --gres=gpu:2 bash -c '{GPUS}; sleep 2' & sleep 0.7; "
                f"srun -n2 --gpus-per-task=1 bash -c '{GPUS}' | sed s/^/T/; wait")
    assert r.returncode == 0, r.stderr
    other = set(re.search(r"^P=0 CVD=\S+ SG=(\S+)", r.stdout, re.M).group(1).split(","))
    seen = dict(re.findall(r"TP=(\d) CVD=\S+ SG=(\S+)", r.stdout))
    assert len(seen) == 2 and seen["0"] != seen["1"], r.stdout
    assert all(len(v.split(",")) == 1 and v not in other for v in seen.values()), r.stdout


def test_a_step_asking_more_than_the_job_holds_is_refused(cluster):
    r = _salloc(cluster, ["-N1", "-n1", "--mem=500", "--gres=gpu:1"],
                "srun --gres=gpu:2 true; echo rc=$?; srun --mem=600 true; echo rc=$?; "
                "srun -n3 true; echo rc=$?")
    assert r.stdout.split() == ["rc=1", "rc=1", "rc=1"], (r.stdout, r.stderr)
    job = re.search(r"Granted job allocation (\d+)", r.stderr).group(1)
    no_config = f"srun: error: Unable to create step for job {job}: Requested node configuration is not available"
    assert r.stderr.count(no_config) == 2, r.stderr
    assert f"srun: error: Unable to create step for job {job}: More processors requested than permitted" \
        in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


LIMIT = """#!/bin/bash
cg=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
echo "L=$(cat /sys/fs/cgroup/memory$cg/memory.limit_in_bytes 2>/dev/null || echo none)"
sleep 2
"""


def test_a_step_memory_is_its_own_and_held_against_other_steps(cluster, tmp_path):
    script = tmp_path / "limit.sh"
    script.write_text(LIMIT)
    script.chmod(0o755)
    r = _salloc(cluster, ["-N1", "--mem=1000"],
                f"srun --mem=700 {script} & sleep 0.7; srun --mem=400 true; echo rc=$?; wait")
    assert r.returncode == 0 and "rc=0" in r.stdout, r.stderr
    assert "step creation temporarily disabled, retrying (Requested nodes are busy)" in r.stderr
    lim = _field(r.stdout, "L")
    v1 = os.geteuid() == 0 and os.path.exists("/sys/fs/cgroup/memory/cgroup.procs")
    assert lim == [str(700 * 1024 * 1024) if v1 else "none"], r.stdout  # the step's, not the job's


def test_bare_optional_values_take_nothing_from_the_command(cluster):
    r = cluster.run(["srun", "--exclusive", "-K", "echo", "ran"])
    assert r.returncode == 0 and r.stdout == "ran\n", (r.stdout, r.stderr)
    r = cluster.run(["srun", "-I", "echo", "ran"])
    assert r.returncode == 0 and r.stdout == "ran\n" and "immediate" not in r.stderr, r.stderr
    r = cluster.run(["srun", "--immediate=x", "true"])
    assert r.returncode != 0 and "Invalid --immediate specification: x" in r.stderr, r.stderr


def test_srun_immediate_gives_up_on_a_busy_cluster(cluster, tmp_path):
    busy = cluster.sbatch("-N2", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 30",
                          cwd=tmp_path)
    try:
        r = cluster.run(["srun", "-I", "true"], cwd=tmp_path)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "srun: error: Unable to allocate resources: Requested nodes are busy" in r.stderr
        left = cluster.run(["squeue", "-h", "-t", "PD", "-o", "%i"]).stdout.split()
        assert left == [], left  # withdrawn
    finally:
        cluster.run(["scancel", str(busy)])
    wait_final(cluster, busy, 60)


def test_srun_immediate_inside_an_allocation_does_not_wait_for_a_step(cluster):
    r = _salloc(cluster, ["-N1", "--gres=gpu:1"],
                "srun --gres=gpu:1 sleep 3 & sleep 0.7; srun -I --gres=gpu:1 true; echo rc=$?; wait")
    assert "rc=1" in r.stdout, (r.stdout, r.stderr)
    assert re.search(r"srun: error: Unable to create step for job \d+: Requested nodes are busy",
                     r.stderr), r.stderr
