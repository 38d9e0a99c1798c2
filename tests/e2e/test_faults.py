"""Fault tolerance on a real local cluster: an agent killed with -9 (restarted quickly, or left
dead until its node is declared DOWN), requeue with the same id and SLURM_RESTART_COUNT+1,
output appended, and a job that requeues itself after a USR1."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from conftest import configured_cluster, wait_final

SLURMD_TIMEOUT = 4  # seconds of agent silence before its node is DOWN


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    # a health check that fails while a flag file exists (an operator's NHC would test disks)
    flag = "$(dirname $SLURM_CONF)/sick"
    yield from configured_cluster(
        tmp_path_factory, "faults", (2, 2, 2000, 0),
        replace={"SlurmdTimeout=30": f"SlurmdTimeout={SLURMD_TIMEOUT}"},
        extra=f"HealthCheckProgram=\"test ! -e {flag} || (echo disk full; exit 1)\"\n"
              "HealthCheckInterval=1\n")


JOB = """#!/bin/bash
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH -o job-%j.out
#SBATCH -w {node}
echo "run restart=$SLURM_RESTART_COUNT node=$SLURMD_NODENAME pid=$$"
if [ "$SLURM_RESTART_COUNT" = 0 ]; then sleep 300; fi
echo done
"""


def _first_run(work, job_id: int, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    out = work / f"job-{job_id}.out"
    while time.monotonic() < deadline:
        m = out.exists() and re.search(r"run restart=0 node=(\S+) pid=(\d+)", out.read_text())
        if m:
            return {"node": m.group(1), "pid": int(m.group(2))}
        time.sleep(0.2)
    pytest.fail(f"job {job_id} did not start")


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_agent_killed_and_restarted_kills_its_leftovers_and_the_job_is_requeued(faulty, tmp_path):
    (tmp_path / "job.sh").write_text(JOB.format(node="node1").replace("#SBATCH -w node1\n", ""))
    job_id = faulty.sbatch("job.sh", cwd=tmp_path)
    first = _first_run(tmp_path, job_id)
    agent = f"agent-{first['node']}"
    os.kill(faulty.pid_of(agent), signal.SIGKILL)
    r = faulty.up()  # restarts the dead agent well within SlurmdTimeout... or after: both are fine
    assert r.returncode == 0, r.stderr
    assert wait_final(faulty, job_id, 60) == "COMPLETED"
    assert not _alive(first["pid"]), "the first run survived its agent's restart"
    runs = re.findall(r"run restart=(\d+)", (tmp_path / f"job-{job_id}.out").read_text())
    assert runs == ["0", "1"]  # appended, same job id, restart count + 1


def test_silent_node_goes_down_and_its_job_completes_elsewhere(faulty, tmp_path):
    (tmp_path / "job.sh").write_text(JOB.format(node="node1").replace("#SBATCH -w node1\n", ""))
    job_id = faulty.sbatch("job.sh", cwd=tmp_path)
    first = _first_run(tmp_path, job_id)
    os.kill(faulty.pid_of(f"agent-{first['node']}"), signal.SIGKILL)
    assert wait_final(faulty, job_id, 60) == "COMPLETED"
    text = (tmp_path / f"job-{job_id}.out").read_text()
    second = re.search(r"run restart=1 node=(\S+)", text).group(1)
    assert second != first["node"]
    r = faulty.run(["sinfo", "-h", "-n", first["node"], "-o", "%T %E"])
    assert r.stdout.startswith("down") and "Not responding" in r.stdout, r.stdout
    assert faulty.up().returncode == 0  # the agent comes back: its node returns to service
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = faulty.run(["sinfo", "-h", "-n", first["node"], "-o", "%T"]).stdout.strip()
        if state == "idle":
            break
        time.sleep(0.3)
    assert state == "idle"
    assert not _alive(first["pid"])  # killed by the returning agent before it registered


def test_job_requeues_itself_after_usr1_and_continues(faulty, tmp_path):
    (tmp_path / "self.sh").write_text(
        "#!/bin/bash\n#SBATCH -o self-%j.out\n#SBATCH --open-mode=append\n"
        "trap 'echo got USR1; echo step=5 > ckpt; scontrol requeue $SLURM_JOB_ID; exit 0' USR1\n"
        "echo \"self restart=$SLURM_RESTART_COUNT from=$(cat ckpt 2>/dev/null || echo none)\"\n"
        "if [ \"$SLURM_RESTART_COUNT\" = 0 ]; then sleep 120 & wait; fi\n")
    job_id = faulty.sbatch("self.sh", cwd=tmp_path)
    out = tmp_path / f"self-{job_id}.out"
    deadline = time.monotonic() + 30
    while not (out.exists() and "self restart=0" in out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert faulty.run(["scancel", "--batch", "--signal=USR1", str(job_id)]).returncode == 0
    assert wait_final(faulty, job_id, 60) == "COMPLETED"
    text = out.read_text()
    assert "got USR1" in text and "self restart=1 from=step=5" in text, text
    r = faulty.run(["scontrol", "show", "job", str(job_id)])
    assert "Restarts=1" in r.stdout


def test_failing_health_check_drains_the_node(faulty):
    flag = faulty.dir / "sick"
    flag.write_text("")
    try:
        deadline = time.monotonic() + 20
        out = ""
        while time.monotonic() < deadline:
            out = faulty.run(["sinfo", "-h", "-N", "-o", "%N %T %E"]).stdout
            if out.count("HealthCheck: disk full") == 2:
                break
            time.sleep(0.3)
        assert out.count("HealthCheck: disk full") == 2, out
    finally:
        flag.unlink()
    time.sleep(2.5)  # a health check passes (interval 1 s) before the operator resumes the nodes
    assert faulty.run(["scontrol", "update", "NodeName=node[1-2]", "State=RESUME"]).returncode == 0
    out = faulty.run(["sinfo", "-h", "-N", "-o", "%T"]).stdout.split()
    assert out == ["idle", "idle"], out
