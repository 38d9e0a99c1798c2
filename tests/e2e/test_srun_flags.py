"""srun's step flags on a real cluster (2 nodes x 2 CPUs x 4 GPUs): --cpu-bind, -m/--distribution,
-K, -i, -e FILE, -v, --gpus-per-task, --overlap and srun's input variables."""

from __future__ import annotations

import os
import re

import pytest

ALLOWED = 'echo "P=$SLURM_PROCID A=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"'


def _by_task(text: str, key: str = "A") -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(rf"P=(\d+) {key}=(\S*)", text)}


def _cpus(text: str) -> set[int]:
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def test_cpu_bind_cores_gives_each_task_its_own_cpus(cluster):
    r = cluster.run(["srun", "-N1", "-n2", "--cpu-bind=cores", "bash", "-c",
                     ALLOWED + '; echo "P=$SLURM_PROCID T=$SLURM_CPU_BIND_TYPE"'])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    a = _by_task(r.stdout)
    assert len(_cpus(a[0])) == 1 and not _cpus(a[0]) & _cpus(a[1]), a
    assert set(_by_task(r.stdout, "T").values()) == {"mask_cpu:"}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_cpu_bind_map_cpu_and_verbose(cluster):
    r = cluster.run(["srun", "-N1", "-n2", "--cpu-bind=verbose,map_cpu:1,0", "bash", "-c", ALLOWED])
    assert r.returncode == 0, r.stderr
    assert _by_task(r.stdout) == {0: "1", 1: "0"}
    assert re.search(r"cpu-bind=MASK - node1, task  0  0 \[\d+\]: mask 0x2 set", r.stderr), r.stderr


def test_cpu_bind_none_leaves_tasks_unbound(cluster):
    r = cluster.run(["srun", "-N1", "-n2", "--cpu-bind=none", "bash", "-c",
                     ALLOWED + '; echo "P=$SLURM_PROCID T=$SLURM_CPU_BIND"'])
    assert r.returncode == 0, r.stderr
    assert set(_by_task(r.stdout, "T").values()) == {"quiet,none"}
    a = _by_task(r.stdout)
    assert a[0] == a[1] and len(_cpus(a[0])) == min(2, len(os.sched_getaffinity(0))), a


def test_bad_cpu_bind_is_refused_before_allocating(cluster):
    r = cluster.run(["srun", "-n1", "--cpu-bind=diagonal", "true"])
    assert r.returncode != 0 and "--cpu-bind" in r.stderr, r.stderr
    assert "allocated" not in r.stderr


def test_distribution_cyclic_deals_tasks_round_the_nodes(cluster):
    r = cluster.run(["srun", "-N2", "-n4", "--distribution=cyclic", "bash", "-c",
                     'echo "P=$SLURM_PROCID A=$SLURMD_NODENAME D=$SLURM_DISTRIBUTION"'])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert _by_task(r.stdout) == {0: "node1", 1: "node2", 2: "node1", 3: "node2"}
    assert "D=cyclic" in r.stdout


def test_distribution_arbitrary_follows_the_hostfile(cluster, tmp_path):
    (tmp_path / "hosts").write_text("node2\nnode1\nnode1\n")
    r = cluster.run(["srun", "-N2", "-n3", "-m", "arbitrary", "bash", "-c",
                     'echo "P=$SLURM_PROCID A=$SLURMD_NODENAME"'],
                    env={"SLURM_HOSTFILE": str(tmp_path / "hosts")})
    assert r.returncode == 0, r.stderr
    assert _by_task(r.stdout) == {0: "node2", 1: "node1", 2: "node1"}


def test_socket_level_of_distribution_is_named_in_a_warning(cluster):
    r = cluster.run(["srun", "-n1", "-m", "block:cyclic", "true"])
    assert r.returncode == 0
    assert "warning: --distribution=block:cyclic" in r.stderr, r.stderr


def test_bad_distribution_is_refused(cluster):
    r = cluster.run(["srun", "-n1", "-m", "diagonal", "true"])
    assert r.returncode != 0 and "Invalid --distribution" in r.stderr, r.stderr


@pytest.mark.parametrize("flag", ["-K", "-K1", "--kill-on-bad-exit"])
def test_kill_on_bad_exit_ends_the_step(cluster, flag):
    r = cluster.run(["srun", "-N1", "-n2", flag, "bash", "-c",
                     '[ "$SLURM_PROCID" = 1 ] && exit 3; sleep 60'], timeout=30)
    assert r.returncode != 0
    assert "task 1: Exited with exit code 3" in r.stderr, r.stderr


def test_kill_on_bad_exit_0_lets_the_others_finish(cluster):
    r = cluster.run(["srun", "-N1", "-n2", "-K0", "bash", "-c",
                     '[ "$SLURM_PROCID" = 1 ] && exit 3; sleep 1; echo "P=0 A=done"'], timeout=30)
    assert r.returncode == 3 and _by_task(r.stdout) == {0: "done"}, r.stderr


@pytest.mark.parametrize("mode, readers", [("all", {0, 1}), ("1", {1}), ("none", set()),
                                           (None, {0})])
def test_input_modes(cluster, mode, readers):
    args = ["-i", mode] if mode else []
    r = cluster.run(["srun", "-N1", "-n2", *args, "bash", "-c",
                     'read -r x; echo "P=$SLURM_PROCID A=${x:-nothing}"'], input="hello\n")
    assert r.returncode == 0, r.stderr
    assert {t for t, v in _by_task(r.stdout).items() if v == "hello"} == readers, r.stdout


def test_input_from_a_file_goes_to_every_task(cluster, tmp_path):
    (tmp_path / "in").write_text("fromfile\n")
    r = cluster.run(["srun", "-N1", "-n2", "-i", str(tmp_path / "in"), "bash", "-c",
                     'read -r x; echo "P=$SLURM_PROCID A=$x"'])
    assert r.returncode == 0, r.stderr
    assert _by_task(r.stdout) == {0: "fromfile", 1: "fromfile"}


def test_error_file_alone_is_created(cluster, tmp_path):
    r = cluster.run(["srun", "-n1", "--error", str(tmp_path / "err-%t.txt"), "bash", "-c",
                     "echo out; echo err >&2"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "out\n"
    assert (tmp_path / "err-0.txt").read_text() == "err\n"


def test_verbose_prints_slurms_launch_lines(cluster):
    r = cluster.run(["srun", "-v", "-N2", "-n4", "true"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"srun: jobid \d+: nodes\(2\):`node\[1-2\]', cpu counts: 2\(x2\)", r.stderr)
    assert re.search(r"srun: launching StepId=\d+\.0 on host node2, 2 tasks: \[2-3\]", r.stderr)


def test_gpus_per_task_gives_each_task_its_own(cluster):
    r = cluster.run(["srun", "-N1", "-n2", "--gpus-per-task=1", "bash", "-c",
                     'echo "P=$SLURM_PROCID A=$CUDA_VISIBLE_DEVICES"'])
    assert r.returncode == 0, r.stderr
    gpus = _by_task(r.stdout)
    assert len(gpus) == 2 and gpus[0] != gpus[1] and "," not in gpus[0] + gpus[1], gpus


def test_input_variables_stand_for_options(cluster):
    r = cluster.run(["srun", "-n1", "echo", "hi"], env={"SLURM_LABELIO": "1"})
    assert r.returncode == 0 and r.stdout == "0: hi\n", (r.stdout, r.stderr)


def test_overlap_is_accepted_silently(cluster):
    r = cluster.run(["srun", "-n1", "--overlap", "true"])
    assert r.returncode == 0 and r.stderr == "", r.stderr
