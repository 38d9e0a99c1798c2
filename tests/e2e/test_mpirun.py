"""mpirun inside an allocation starts its daemons with our srun, as it does on Slurm: Open MPI's
plm/slurm runs `srun --ntasks-per-node=1 --kill-on-bad-exit --mpi=none [--nodes=N
--nodelist=...] --ntasks=N orted ...`, MPICH's hydra (bootstrap slurm) runs `srun -N N -n N
--input none hydra_pmi_proxy ...`; both read the allocation from SLURM_JOB_NODELIST /
SLURM_NODELIST, SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE.

On this loopback cluster both nodes are this one host under one hostname, where MPI's shared
memory cannot tell them apart: so the ranks here are shell commands that print what their
launcher gave them (rank, node); real MPI traffic between hosts is test_mpi_netns.py's.
"""

from __future__ import annotations

import time

from conftest import wait_final
from mpi_support import require_launcher

RANK_LINE = "echo T {rank} $SLURMD_NODENAME"
# Open MPI refuses to run as root unless told twice (CI runs the tests as root)
OMPI_AS_ROOT = "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"
BLOCK = [("0", "node1"), ("1", "node1"), ("2", "node2"), ("3", "node2")]


def _ranks(out: str) -> list[tuple[str, str]]:
    return sorted(tuple(line.split()[1:3]) for line in out.splitlines() if line.startswith("T "))


def _steps(cluster, job_id: int) -> list[list[str]]:
    r = cluster.run(["sacct", "-n", "-P", "-j", str(job_id), "-o", "JobID,JobName,NNodes,NTasks,State"])
    assert r.returncode == 0, r.stderr
    rows = [line.split("|") for line in r.stdout.splitlines()]
    return [row for row in rows if row[0].split(".")[-1].isdigit() and "." in row[0]]  # not .batch


def _batch(cluster, tmp_path, body: str) -> tuple[int, str]:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n" + body)
    job_id = cluster.sbatch("-N2", "-n4", "-o", str(tmp_path / "out-%j"), str(script), cwd=tmp_path)
    state = wait_final(cluster, job_id, timeout=90)
    out = (tmp_path / f"out-{job_id}").read_text() if (tmp_path / f"out-{job_id}").exists() else ""
    assert state == "COMPLETED", f"{state}\n{out}\n{cluster.log_tails()}"
    return job_id, out


def test_openmpi_mpirun_in_sbatch_starts_orted_with_srun(cluster, tmp_path):
    mpirun = require_launcher("Open MPI")
    job_id, out = _batch(cluster, tmp_path, OMPI_AS_ROOT +
                         f"{mpirun} --mca plm_base_verbose 10 sh -c "
                         f"'{RANK_LINE.format(rank='$OMPI_COMM_WORLD_RANK')}'\n")
    assert "srun --ntasks-per-node=1 --kill-on-bad-exit --mpi=none" in out, out
    assert "srun: warning" not in out and "srun: error" not in out, out
    assert _ranks(out) == BLOCK, out  # mapped by slot: the allocation's 2 slots a node, in order
    # (not its state: mpirun may end, and the job with it, before srun reports the step; our
    # controller then records it CANCELLED where Slurm's slurmstepds would report it COMPLETED)
    assert [s[1:4] for s in _steps(cluster, job_id)] == [["orted", "2", "2"]]


def test_openmpi_rank_failing_on_the_second_node_ends_every_rank(cluster, tmp_path):
    mpirun = require_launcher("Open MPI")
    rank = (f"echo $$ > {tmp_path}/pid.$OMPI_COMM_WORLD_RANK; "
            "if [ $OMPI_COMM_WORLD_RANK = 3 ]; then sleep 1; exit 3; fi; exec sleep 60")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n{OMPI_AS_ROOT}{mpirun} sh -c '{rank}'\n")
    started = time.monotonic()
    job_id = cluster.sbatch("-N2", "-n4", "-o", str(tmp_path / "out"), str(script), cwd=tmp_path)
    assert wait_final(cluster, job_id, timeout=90) == "FAILED", (tmp_path / "out").read_text()
    assert time.monotonic() - started < 40, "the other ranks ran on after rank 3 failed"
    r = cluster.run(["sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "ExitCode"])
    assert r.stdout.strip() == "3:0", r.stdout  # mpirun's exit code: the failed rank's
    pids = [int((tmp_path / f"pid.{i}").read_text()) for i in range(4)]
    # the job may be over while its nodes still clean up (Slurm's COMPLETING): within KillWait
    deadline = time.monotonic() + 15
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, "ranks left running"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def test_mpich_mpiexec_in_salloc_starts_proxies_with_srun(cluster, tmp_path):
    mpiexec = require_launcher("MPICH")
    r = cluster.run(["salloc", "-N2", "-n4", mpiexec, "sh", "-c",
                     RANK_LINE.format(rank="$PMI_RANK")], cwd=tmp_path, timeout=90)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{cluster.log_tails()}"
    assert "srun: warning" not in r.stderr and "srun: error" not in r.stderr, r.stderr
    # no -n: hydra counts the ranks from SLURM_TASKS_PER_NODE; each proxy is a task of one step
    assert _ranks(r.stdout) == BLOCK, r.stdout
    job_id = int(r.stderr.split("Granted job allocation ")[1].split()[0])
    assert [s[1:] for s in _steps(cluster, job_id)] == [["hydra_pmi_proxy", "2", "2", "COMPLETED"]]


def test_mpich_mpiexec_fewer_ranks_than_the_allocation_fill_the_first_node(cluster, tmp_path):
    mpiexec = require_launcher("MPICH")
    # (in salloc: inside sbatch, hydra would pass the batch host's SLURMD_NODENAME to every rank)
    r = cluster.run(["salloc", "-N2", "-n4", mpiexec, "-n", "3", "sh", "-c",
                     RANK_LINE.format(rank="$PMI_RANK")], cwd=tmp_path, timeout=90)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{cluster.log_tails()}"
    assert _ranks(r.stdout) == BLOCK[:3], r.stdout
