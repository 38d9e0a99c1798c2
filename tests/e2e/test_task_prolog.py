"""TaskProlog/TaskEpilog (slurm.conf) and srun --task-prolog/--task-epilog on a real cluster, as
Slurm 22.05 runs them: the prologs' `export`/`unset`/`print` lines shape each task (TaskProlog
first), a failing prolog ends the task with its status before it runs, the epilogs run after
each task (--task-epilog first) with SLURM_SCRIPT_CONTEXT=epilog_task, and all of them run as
the job's user."""

from __future__ import annotations

import os
import shlex
import time

import pytest
from conftest import configured_cluster, wait_final
from userkit import as_user, drop_user, make_user, user_env, user_venv

SHAPE = (1, 2, 1000, 0)  # nodes, CPUs, MiB, GPUs

SCRIPTS = {
    # TP_FAIL makes it fail; the rest of its lines still count, as in Slurm
    "tprolog.sh": """#!/bin/sh
echo "export FROM_CONF=conf"
echo "unset DROP_ME"
echo "print conf-says-hi"
echo "export PROLOG_UID=$(id -u)"
echo "this line means nothing"
[ -z "$TP_FAIL" ] || exit 3
""",
    "uprolog.sh": """#!/bin/sh
echo "export ORDER=${FROM_CONF:-none}-then-user"
""",
    "tepilog.sh": """#!/bin/sh
echo "conf $SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID ${SLURM_PROCID:-batch} $(id -u) ${FROM_CONF:-clean}" >> "$EPILOG_LOG"
""",
    "uepilog.sh": """#!/bin/sh
echo "user $SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURM_PROCID $(id -u)" >> "$EPILOG_LOG"
""",
}


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    d = tmp_path_factory.mktemp("taskprolog")
    os.chmod(d, 0o755)
    for name, text in SCRIPTS.items():
        (d / name).write_text(text)
        os.chmod(d / name, 0o755)
    logs = d / "logs"
    logs.mkdir()
    os.chmod(logs, 0o1777)  # the epilogs run as the job's user
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, scripts):
    extra = f"TaskProlog={scripts}/tprolog.sh\nTaskEpilog={scripts}/tepilog.sh\n"
    yield from configured_cluster(tmp_path_factory, "taskprolog", SHAPE, extra=extra)


def _epilog_lines(path, count: int, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.2)
    return path.read_text().splitlines() if path.exists() else []


def test_prolog_lines_reach_each_srun_task_and_epilogs_follow(cluster, scripts, tmp_path):
    log = scripts / "logs" / "srun.log"
    task = 'echo "task $SLURM_PROCID: $FROM_CONF $ORDER ${DROP_ME-unset} $SLURM_SCRIPT_CONTEXT"'
    r = cluster.run(f"srun -n2 --task-prolog={scripts}/uprolog.sh "
                    f"--task-epilog={scripts}/uepilog.sh bash -c {shlex.quote(task)}",
                    env={"DROP_ME": "1", "EPILOG_LOG": str(log)}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    lines = sorted(r.stdout.splitlines())
    assert lines == ["conf-says-hi", "conf-says-hi",
                     "task 0: conf conf-then-user unset prolog_task",
                     "task 1: conf conf-then-user unset prolog_task"], r.stdout
    # srun returns once every task's epilogs have run: nothing to wait for
    done = log.read_text().splitlines()
    job_id = done[0].split()[2]
    for rank in ("0", "1"):
        mine = [ln.split()[0:2] for ln in done if ln.split()[3] == rank]
        assert mine == [["user", "epilog_task"], ["conf", "epilog_task"]], done
    # the epilogs get the task's environment, not what the prologs made of it
    assert all(ln.split()[-1] == "clean" for ln in done if ln.startswith("conf")), done
    assert all(ln.split()[2] == job_id for ln in done), done


def test_batch_script_runs_after_the_task_prolog_and_before_the_epilog(cluster, scripts, tmp_path):
    log = scripts / "logs" / "batch.log"
    out = tmp_path / "batch.out"
    job_id = cluster.sbatch("-o", str(out), "--wrap", 'echo "script: $FROM_CONF ${ORDER-none}"',
                            env={"EPILOG_LOG": str(log)})
    assert wait_final(cluster, job_id) == "COMPLETED", out.read_text() if out.exists() else ""
    assert out.read_text().splitlines() == ["conf-says-hi", "script: conf none"]
    assert _epilog_lines(log, 1) == [f"conf epilog_task {job_id} 0 0 clean"]


def test_failing_task_prolog_ends_the_task_with_its_status(cluster):
    r = cluster.run("srun -n1 bash -c 'echo the task ran'", env={"TP_FAIL": "1"}, timeout=60)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "the task ran" not in r.stdout
    assert "conf-says-hi" in r.stdout  # its lines were read before its status was
    assert "slurmstepd: error: TaskProlog failed status=3" in r.stderr, r.stderr


def test_task_prolog_given_by_a_relative_path_is_refused_as_slurm_does(cluster, scripts):
    r = cluster.run("srun -n1 --task-prolog=uprolog.sh bash -c 'echo the task ran'",
                    cwd=str(scripts), timeout=60)
    assert r.returncode == 127, (r.returncode, r.stdout, r.stderr)
    assert "the task ran" not in r.stdout
    assert "user task_prolog is not fully qualified pathname (uprolog.sh)" in r.stderr, r.stderr
    assert "--task-prolog failed status=127" in r.stderr, r.stderr


def test_prolog_and_epilog_run_as_the_jobs_user(cluster, scripts):
    user = make_user("pltp")
    try:
        # slurm.conf, the auth sockets and the scripts, reachable as /etc's would be
        for parent in [cluster.dir, *cluster.dir.parents, scripts, *scripts.parents]:
            if str(parent) in ("/", "/tmp"):
                break
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
        os.chmod(cluster.dir / "run", os.stat(cluster.dir / "run").st_mode | 0o055)
        bin_dir = user_venv(user)
        log = scripts / "logs" / "user.log"
        env = user_env(user, PATH=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
                       PYSLURM_LITE_CONF=str(cluster.conf), EPILOG_LOG=str(log))
        # the user's limits travel too (PropagateResourceLimits=ALL): the task sets them on
        # itself, which needs no privilege the agent may lack (CAP_SYS_RESOURCE in a container)
        r = as_user(user, "srun -n1 bash -c 'echo \"prolog ran as $PROLOG_UID\"'",
                    env=env,
                    cwd=user.pw_dir, timeout=60)
        assert r.returncode == 0, r.stderr
        assert f"prolog ran as {user.pw_uid}" in r.stdout, r.stdout
        assert [ln.split()[4] for ln in log.read_text().splitlines()] == [str(user.pw_uid)]
    finally:
        drop_user(user)


def test_task_epilog_given_by_a_relative_path_is_refused_as_slurm_does(cluster, scripts):
    """Never looked up through PATH (a program of that name there would run instead)."""
    r = cluster.run("srun -n1 --task-epilog=uepilog.sh true", cwd=str(scripts), timeout=60)
    assert "user task_epilog is not fully qualified pathname (uepilog.sh)" in r.stderr, r.stderr
