"""srun, salloc and job steps on a real local cluster (2 nodes x 2 CPUs): the distributed-training
environment, block distribution, steps inside sbatch, stdin, exit codes, output patterns,
signals, squeue -s / scontrol show step, and the launch credential."""

from __future__ import annotations

import re
import signal
import subprocess
import time

import grpc
import pytest

from pyslurm_lite import config
from pyslurm_lite.rpc import wire
from pyslurm_lite._proto import agent_pb2, agent_pb2_grpc
from pyslurm_lite.model import Job, NodeAllocation, JobSpec

from conftest import wait_final, wait_state

TASK_VARS = ("RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR MASTER_PORT "
             "SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_NTASKS SLURM_NPROCS SLURM_NNODES "
             "SLURM_JOB_NUM_NODES SLURM_JOB_NODELIST SLURM_STEP_NODELIST SLURM_TASKS_PER_NODE "
             "SLURM_GTIDS SLURM_STEP_ID SLURM_JOB_ID SLURMD_NODENAME SLURM_RESTART_COUNT").split()


def _rows(text: str) -> dict[int, dict[str, str]]:
    rows: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+): (\w+)=(.*)", line)
        if m:
            rows.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
    return rows


def test_srun_n4_over_two_nodes_sets_the_distributed_training_contract(cluster):
    script = "; ".join(f'echo {v}=${v}' for v in TASK_VARS)
    r = cluster.run(["srun", "-N2", "-n4", "--label", "bash", "-c", script], timeout=60)
    assert r.returncode == 0, r.stderr
    rows = _rows(r.stdout)
    assert sorted(rows) == [0, 1, 2, 3]
    for t, v in rows.items():
        assert v["RANK"] == v["SLURM_PROCID"] == str(t)
        assert v["WORLD_SIZE"] == v["SLURM_NTASKS"] == v["SLURM_NPROCS"] == "4"
        assert v["LOCAL_WORLD_SIZE"] == "2" and v["SLURM_TASKS_PER_NODE"] == "2(x2)"
        assert v["SLURM_NNODES"] == "2" and v["SLURM_STEP_NODELIST"] == "node[1-2]"
        assert v["LOCAL_RANK"] == v["SLURM_LOCALID"] == str(t % 2)
        assert v["NODE_RANK"] == v["SLURM_NODEID"] == str(t // 2)
        assert v["SLURMD_NODENAME"] == f"node{t // 2 + 1}"  # block distribution
        assert v["SLURM_GTIDS"] == ("0,1" if t < 2 else "2,3")
        assert v["SLURM_STEP_ID"] == "0" and v["SLURM_RESTART_COUNT"] == "0"
    assert len({v["MASTER_ADDR"] for v in rows.values()}) == 1
    assert len({v["MASTER_PORT"] for v in rows.values()}) == 1 and rows[0]["MASTER_PORT"].isdigit()


def test_uneven_tasks_fill_the_first_nodes_first(cluster):
    r = cluster.run(["srun", "-N2", "-n3", "-l", "printenv", "SLURMD_NODENAME"], timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split("\n")[:-1]) == ["0: node1", "1: node1", "2: node2"]


def test_steps_inside_a_batch_job(cluster, tmp_path):
    (tmp_path / "steps.sh").write_text(
        "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
        "srun bash -c 'echo \"STEP=$SLURM_STEP_ID P=$SLURM_PROCID H=$SLURMD_NODENAME\"'\n"
        "srun -n 1 bash -c 'echo \"STEP=$SLURM_STEP_ID P=$SLURM_PROCID\"'\n")
    j = cluster.sbatch(str(tmp_path / "steps.sh"), cwd=tmp_path)
    assert wait_final(cluster, j) == "COMPLETED"
    out = (tmp_path / f"slurm-{j}.out").read_text()
    assert sorted(re.findall(r"STEP=0 P=\d H=node\d", out)) == ["STEP=0 P=0 H=node1", "STEP=0 P=1 H=node2"]
    assert re.findall(r"STEP=1 P=\d", out) == ["STEP=1 P=0"]


def test_stdin_goes_to_task_zero_only(cluster):
    r = cluster.run(["srun", "-n2", "-l", "bash", "-c", 'echo "got:$(cat)"'], input="hello\n", timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["0: got:hello", "1: got:"]


@pytest.mark.parametrize("cmd, code, message", [
    ('exit $((SLURM_PROCID + 2))', 3, "task 1: Exited with exit code 3"),
    ('[ $SLURM_PROCID = 1 ] && kill -9 $$; exit 0', 137, "task 1: Killed"),
    ('exit 0', 0, None),
])
def test_exit_code_is_the_highest_task_exit(cluster, cmd, code, message):
    r = cluster.run(["srun", "-n2", "bash", "-c", cmd], timeout=60)
    assert r.returncode == code, (r.returncode, r.stderr)
    if message:
        assert f"srun: error: node1: {message}" in r.stderr
    assert "Traceback" not in r.stderr


def test_output_patterns_per_task(cluster, tmp_path):
    r = cluster.run(["srun", "-N2", "-n2", "-o", "out-%j-%t-%N.txt", "bash", "-c", "echo rank $SLURM_PROCID"],
                    cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.glob("out-*.txt"))
    assert len(files) == 2 and re.fullmatch(r"out-\d+-0-node1\.txt", files[0]), files
    assert (tmp_path / files[1]).read_text() == "rank 1\n"


def test_salloc_runs_a_command_in_its_allocation_and_releases_it(cluster):
    r = cluster.run(["salloc", "-N2", "bash", "-c", 'echo "JOB=$SLURM_JOB_ID NL=$SLURM_JOB_NODELIST"; '
                     'srun -l printenv SLURM_STEP_ID'], timeout=60)
    assert r.returncode == 0, r.stderr
    job = int(re.search(r"JOB=(\d+) NL=node\[1-2\]", r.stdout).group(1))
    assert sorted(re.findall(r"\d: 0", r.stdout)) == ["0: 0", "1: 0"]
    assert f"salloc: Granted job allocation {job}" in r.stderr
    assert wait_final(cluster, job) == "COMPLETED"


def test_sigterm_to_srun_ends_the_step_and_its_tasks(cluster, tmp_path):
    marker = f"pyslurm-step-{time.time_ns()}"
    p = subprocess.Popen(["srun", "-N2", "-n2", "bash", "-c", f"exec -a {marker} sleep 300"],
                         env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _count(marker) < 2:
        time.sleep(0.2)
    assert _count(marker) == 2
    r = cluster.run(["squeue", "-s", "-h", "-o", "%i %j"])
    assert re.search(r"\d+\.0 bash", r.stdout), r.stdout
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _count(marker):
        time.sleep(0.2)
    assert _count(marker) == 0


def _count(marker: str) -> int:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.startswith(marker))


def test_two_jobs_on_one_node_get_different_master_ports(cluster, tmp_path):
    ids = [cluster.sbatch("-w", "node1", "-c", "1", "--wrap", "echo PORT=$MASTER_PORT; sleep 2", cwd=tmp_path)
           for _ in range(2)]
    for j in ids:
        wait_state(cluster, j, "RUNNING")
    for j in ids:
        assert wait_final(cluster, j) == "COMPLETED"
    ports = {(tmp_path / f"slurm-{j}.out").read_text().strip() for j in ids}
    assert len(ports) == 2


def test_agent_refuses_a_step_without_a_valid_credential(cluster):
    cfg = config.load(str(cluster.conf))
    node = cfg.nodes["node1"]
    stub = agent_pb2_grpc.AgentStub(grpc.insecure_channel(f"{node.addr}:{node.port}"))
    job = Job(job_id=424242, spec=JobSpec(uid=0), allocations=[NodeAllocation("node1", 1, 10)])
    launch = agent_pb2.StepLaunch(step_id=0, argv=["touch", "/tmp/forged-step"], uid=0, task_ids=[0],
                                  credential="9999999999.deadbeef", step_nodes=["node1"],
                                  step_tasks_per_node=[1])
    launch.job.CopyFrom(wire.to_msg(job, type(launch.job)))
    replies = list(stub.LaunchStep(iter([agent_pb2.StepInput(launch=launch)]), timeout=10))
    assert len(replies) == 1 and "credential" in replies[0].error
