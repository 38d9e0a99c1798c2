"""The environment of batch scripts and srun tasks against Slurm 22.05's own, recorded in
shared/slurm-reference (env_srun.txt, env_sbatch.txt) on 2 nodes x 2 CPUs with fake GPUs: the
same job shapes run here, every variable Slurm set must be set, and where a value does not depend
on the site (counts, layouts, ids, GPU lists) it must be Slurm's.

Deliberately left out: LEFT_OUT below, each with its reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import wait_final

REFERENCE = Path("/work/shared/slurm-reference")
if not REFERENCE.is_dir():
    REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "slurm-reference"

LEFT_OUT = {
    "SLURM_SRUN_COMM_PORT": "srun listens on no port: tasks reach srun through their agent's "
                            "stream (SLURM_SRUN_COMM_HOST is set)",
    "SLURM_STEP_LAUNCHER_PORT": "the same port as SLURM_SRUN_COMM_PORT",
    "SLURM_JOB_ACCOUNT": "the reference cluster gives every user a default account; here a job "
                         "has one only with -A (then the variable is set: tests/unit/test_env.py)",
}
# With --gpus-per-task Slurm fences each task to its own device, which the task then sees as 0;
# here a job's devices are fenced together, so each task names its own device by its index
# (task 1: CUDA_VISIBLE_DEVICES=1), the value that keeps two tasks off one GPU.
PER_TASK_DEVICES = {"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES",
                    "ZE_AFFINITY_MASK"}
# Values that do not depend on the site (names, ids, paths, pids, ports, times do).
COMPARED = ("SLURM_NTASKS SLURM_NPROCS SLURM_NNODES SLURM_JOB_NUM_NODES SLURM_TASKS_PER_NODE "
            "SLURM_STEP_TASKS_PER_NODE SLURM_STEP_NUM_TASKS SLURM_STEP_NUM_NODES SLURM_GTIDS "
            "SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_CPUS_ON_NODE SLURM_JOB_CPUS_PER_NODE "
            "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0 SLURM_CPU_BIND_TYPE SLURM_CPU_BIND_VERBOSE "
            "SLURM_DISTRIBUTION SLURM_LABELIO SLURM_UMASK SLURM_TOPOLOGY_ADDR_PATTERN "
            "SLURM_JOB_QOS SLURM_NODE_ALIASES SLURM_GPUS_ON_NODE SLURMD_TRES_BIND "
            "CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES ZE_AFFINITY_MASK "
            "SLURM_STEPID SLURM_STEP_ID").split()
SHOWN = re.compile(r"(SLURM\w*|CUDA_VISIBLE_DEVICES|GPU_\w+|ROCR_VISIBLE_DEVICES|ZE_AFFINITY_MASK"
                   r"|PMI\w*)=(.*)")


def _tasks(lines) -> dict[int, dict[str, str]]:
    """'N: NAME=value' lines -> {task: {NAME: value}} (only the variables the reference shows)."""
    out: dict[int, dict[str, str]] = {}
    for line in lines:
        m = re.fullmatch(r"\s*(\d+): (.*)", line)
        if m and (v := SHOWN.fullmatch(m.group(2))):
            out.setdefault(int(m.group(1)), {})[v.group(1)] = v.group(2)
    return out


def _srun_cases() -> list[tuple[str, dict[int, dict[str, str]]]]:
    text = (REFERENCE / "env_srun.txt").read_text()
    cases = []
    for block in text.split("\n### ")[1:]:
        m = re.search(r"^\$ (srun .*)$\n\[rc=0\]", block, re.M)
        if m:
            cases.append((m.group(1), _tasks(block.splitlines())))
    return cases


def _batch_reference() -> tuple[dict[str, str], dict[int, dict[str, str]]]:
    text = (REFERENCE / "env_sbatch.txt").read_text()
    script, _, rest = text.partition("### srun -l env inside the batch job")
    batch = dict(m.groups() for line in script.partition("### batch script environment")[2]
                 .splitlines() if (m := SHOWN.fullmatch(line)))
    return batch, _tasks(rest.partition("### variables present")[0].splitlines())


def _compare(what: str, ref: dict[str, str], ours: dict[str, str], skip=frozenset()) -> list[str]:
    problems = [f"{what}: {name} missing" for name in sorted(set(ref) - set(ours) - set(LEFT_OUT))]
    problems += [f"{what}: {name}={ours[name]!r}, Slurm {ref[name]!r}" for name in COMPARED
                 if name in ref and name in ours and ours[name] != ref[name] and name not in skip]
    return problems


@pytest.mark.parametrize("command, reference", _srun_cases(), ids=lambda c: str(c)[:40])
def test_srun_task_environment_matches_slurm(cluster, command, reference):
    r = cluster.run(command.split() + [], timeout=60)
    assert r.returncode == 0, r.stderr
    ours = _tasks(r.stdout.splitlines())
    assert sorted(ours) == sorted(reference), f"tasks {sorted(ours)}, Slurm {sorted(reference)}"
    skip = PER_TASK_DEVICES if "--gpus-per-task" in command else frozenset()
    problems = [p for task in reference
                for p in _compare(f"task {task}", reference[task], ours[task], skip)]
    assert not problems, "\n".join(problems)


def test_batch_environment_matches_slurm(cluster, tmp_path):
    ref_batch, ref_tasks = _batch_reference()
    script = tmp_path / "env.sh"
    script.write_text("#!/bin/bash\n#SBATCH -J envtest\n#SBATCH -N2\n#SBATCH -n4\n"
                      "#SBATCH --gres=gpu:2\nenv | sort\necho =====\nsrun -l env\n")
    job = cluster.sbatch("-o", str(tmp_path / "out"), str(script), cwd=tmp_path)
    assert wait_final(cluster, job) == "COMPLETED", (tmp_path / "out").read_text()
    batch_text, _, step_text = (tmp_path / "out").read_text().partition("=====\n")
    ours = dict(m.groups() for line in batch_text.splitlines() if (m := SHOWN.fullmatch(line)))
    problems = _compare("batch script", ref_batch, ours)
    tasks = _tasks(step_text.splitlines())
    problems += [p for t in ref_tasks for p in _compare(f"srun task {t}", ref_tasks[t], tasks.get(t, {}))]
    assert not problems, "\n".join(problems)
