"""PropagateResourceLimits on a real cluster: the caller's soft limits reach srun's tasks and batch
scripts; --propagate=NONE, PropagateResourceLimitsExcept and PropagateResourceLimits choose
which; a limit above the node's hard limit is lowered to it and logged, as slurmd does."""

from __future__ import annotations

import pytest
from conftest import wait_final

CORE = 12345  # ulimit -c blocks: a value no daemon here starts with


def _agent_limit(cluster, name: str, column: int = 1) -> str:
    """A limit of node1's agent from /proc (column 1 soft, 2 hard), as `ulimit` prints it."""
    pid = cluster.pid_of("agent-node1")
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith(name):
                value = line[len(name):].split()[column - 1]
                if value == "unlimited" or name != "Max core file size":
                    return value
                return str(int(value) // 1024)
    raise AssertionError(f"no {name} in /proc/{pid}/limits")


def _task_core(cluster, command: str, conf=None) -> str:
    env = {"PYSLURM_LITE_CONF": str(conf)} if conf else None
    r = cluster.run(f"ulimit -S -c {CORE}; {command}", env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.fixture(scope="module")
def agent_core(cluster):
    core = _agent_limit(cluster, "Max core file size")
    assert core != str(CORE), "the agent already has the caller's limit: nothing would be seen"
    return core


def test_srun_task_gets_the_callers_core_limit(cluster, agent_core):
    assert _task_core(cluster, "srun -n1 -w node1 bash -c 'ulimit -c'") == str(CORE)


def test_batch_script_gets_the_callers_core_limit(cluster, agent_core, tmp_path):
    out = tmp_path / "core.out"
    r = cluster.run(f"ulimit -S -c {CORE}; sbatch --parsable -w node1 -o {out} --wrap \"bash -c 'ulimit -c'\"")
    assert r.returncode == 0, r.stderr
    assert wait_final(cluster, int(r.stdout.strip())) == "COMPLETED"
    assert out.read_text().strip() == str(CORE)


def test_propagate_none_leaves_the_nodes_limit(cluster, agent_core):
    got = _task_core(cluster, "srun -n1 -w node1 --propagate=NONE bash -c 'ulimit -c'")
    assert got == agent_core


def test_propagate_list_sends_only_those(cluster, agent_core):
    got = _task_core(cluster, "srun -n1 -w node1 --propagate=NOFILE bash -c 'ulimit -c'")
    assert got == agent_core


@pytest.mark.parametrize("line", ["PropagateResourceLimitsExcept=CORE",
                                  "PropagateResourceLimits=NOFILE,STACK"])
def test_slurm_conf_leaves_core_to_the_node(cluster, agent_core, tmp_path, line):
    conf = tmp_path / "slurm.conf"  # the commands' slurm.conf decides what they send
    conf.write_text(cluster.conf.read_text() + f"\n{line}\n")
    got = _task_core(cluster, "srun -n1 -w node1 bash -c 'ulimit -c'", conf)
    assert got == agent_core
    r = cluster.run(f"ulimit -S -c {CORE}; srun -n1 -w node1 --propagate=CORE bash -c 'ulimit -c'",
                    env={"PYSLURM_LITE_CONF": str(conf)})
    assert r.stdout.strip() == str(CORE), r.stderr  # --propagate overrides slurm.conf


def test_a_bad_name_is_refused_before_anything_runs(cluster):
    for cmd in ("srun -n1 --propagate=BOGUS true", "sbatch --propagate=CORE,nofile --wrap true"):
        r = cluster.run(cmd)
        value = cmd.split("--propagate=")[1].split()[0]
        assert r.returncode == 1 and f"--propagate={value} is not valid." in r.stderr, r.stderr
    assert cluster.run("squeue -h -t PD,R").stdout.strip() == ""


@pytest.mark.root  # only root raises a hard limit, so the caller can ask more than the node has
def test_above_the_nodes_hard_limit_is_lowered_and_logged(cluster):
    hard = int(_agent_limit(cluster, "Max open files", column=2))
    with open("/proc/sys/fs/nr_open") as f:
        wanted = hard + 1000
        if wanted > int(f.read()):
            pytest.skip("the node's open-file limit is already the kernel's maximum")
    r = cluster.run(f"ulimit -n {wanted} || exit 99; srun -n1 -w node1 bash -c 'ulimit -n'")
    if r.returncode == 99:  # root without CAP_SYS_RESOURCE (a container): tests/unit covers it
        pytest.skip(f"cannot raise the open-file limit here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(hard)
    log = (cluster.dir / "agent-node1.log").read_text()
    assert f"Can't propagate RLIMIT_NOFILE of {wanted} from submit host" in log
