"""Placement flags on a real cluster (2 nodes x 2 CPUs x 2000 MiB): -w/--nodelist (a hostlist or
a file) and -x/--exclude decide where jobs run; a -w node drained keeps the job pending with
Reason=ReqNodeNotAvail; -N min-max takes both nodes when free; --mem=0 holds a node's whole
memory; -O lets 8 tasks share 2 CPUs; --immediate gives up at once on a busy cluster; options
accepted without an effect say so; SBATCH_* variables sit between the command line and
#SBATCH directives."""

from __future__ import annotations

import re
import time

import pytest

from conftest import start_cluster, wait_final, wait_state

WHERE = 'echo "N=$SLURMD_NODENAME NN=$SLURM_JOB_NUM_NODES L=$SLURM_JOB_NODELIST T=$SLURM_NTASKS"'


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("placement") / "c", shape=(2, 2, 2000, 0))
    try:
        yield c
    finally:
        c.down()


def _ran(c, job_id, tmp_path) -> dict[str, str]:
    assert wait_final(c, job_id, 60) == "COMPLETED"
    text = (tmp_path / f"out-{job_id}").read_text()
    return dict(item.split("=", 1) for item in text.split())


def _submit(c, tmp_path, *args, env=None) -> int:
    return c.sbatch("-o", str(tmp_path / "out-%j"), *args, "--wrap", WHERE, cwd=tmp_path, env=env)


def test_nodelist_and_exclude_decide_where_jobs_run(two, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("node2\n")
    jobs = {"-w node2": _submit(two, tmp_path, "-w", "node2"),
            "-x node1": _submit(two, tmp_path, "-x", "node1"),
            "--nodelist=FILE": _submit(two, tmp_path, f"--nodelist={hosts}"),
            "-x node2": _submit(two, tmp_path, "--exclude=node[2]")}
    where = {flag: _ran(two, j, tmp_path)["N"] for flag, j in jobs.items()}
    assert where == {"-w node2": "node2", "-x node1": "node2", "--nodelist=FILE": "node2",
                     "-x node2": "node1"}


def test_nodelist_of_two_nodes_takes_both(two, tmp_path):
    seen = _ran(two, _submit(two, tmp_path, "-w", "node[1-2]"), tmp_path)
    assert (seen["NN"], seen["L"]) == ("2", "node[1-2]")


def test_drained_nodelist_node_is_req_node_not_avail(two, tmp_path):
    r = two.run(["scontrol", "update", "NodeName=node1", "State=DRAIN", "Reason=placement test"])
    assert r.returncode == 0, r.stderr
    try:
        j = _submit(two, tmp_path, "-w", "node1")
        for _ in range(50):
            r = two.run(["squeue", "-h", "-j", str(j), "-o", "%T %r"])
            if "ReqNodeNotAvail" in r.stdout:
                break
            time.sleep(0.2)
        assert r.stdout.split()[:3] == ["PENDING", "ReqNodeNotAvail,", "UnavailableNodes:node1"], r.stdout
    finally:
        two.run(["scontrol", "update", "NodeName=node1", "State=RESUME"])
    assert _ran(two, j, tmp_path)["N"] == "node1"


def test_node_range_takes_as_many_nodes_as_are_free(two, tmp_path):
    seen = _ran(two, _submit(two, tmp_path, "-N", "1-2"), tmp_path)
    assert (seen["NN"], seen["L"], seen["T"]) == ("2", "node[1-2]", "2")
    seen = _ran(two, _submit(two, tmp_path, "-N", "1-2", "--use-min-nodes"), tmp_path)
    assert seen["NN"] == "1"


def test_mem_zero_holds_the_whole_memory_of_the_node(two, tmp_path):
    j = two.sbatch("-w", "node1", "--mem=0", "-o", "/dev/null", "--wrap", "sleep 3", cwd=tmp_path)
    wait_state(two, j, "RUNNING")
    tres = re.search(r"TRES=(\S+)", two.run(["scontrol", "show", "job", str(j)]).stdout).group(1)
    assert "mem=2000M" in tres, tres
    # nothing else fits beside it on node1, though a CPU is free there
    k = two.sbatch("-w", "node1", "--mem=10", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    assert two.run(["squeue", "-h", "-j", str(k), "-o", "%T"]).stdout.strip() == "PENDING"
    assert wait_final(two, k, 60) == "COMPLETED"


def test_overcommit_runs_more_tasks_than_cpus(two, tmp_path):
    r = two.run(["sbatch", "-N1", "-n8", "-o", "/dev/null", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode != 0 and "Requested node configuration is not available" in r.stderr, r.stderr
    seen = _ran(two, _submit(two, tmp_path, "-N1", "-n8", "-O"), tmp_path)
    assert seen["T"] == "8"
    r = two.run(["sbatch", "--mincpus=3", "-o", "/dev/null", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode != 0 and "Requested node configuration is not available" in r.stderr, r.stderr


def test_immediate_gives_up_when_the_cluster_is_busy(two, tmp_path):
    busy = two.sbatch("-N2", "--exclusive", "-o", "/dev/null", "--wrap", "sleep 30", cwd=tmp_path)
    wait_state(two, busy, "RUNNING")
    try:
        r = two.run(["salloc", "-I", "true"], cwd=tmp_path)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "salloc: error: Unable to allocate resources: Requested nodes are busy" in r.stderr, r.stderr
        r = two.run(["sbatch", "--immediate", "--wrap", "true"], cwd=tmp_path)
        assert r.returncode == 1 and not r.stdout, (r.stdout, r.stderr)
        assert "sbatch: error: Batch job submission failed: Requested nodes are busy" in r.stderr
        left = two.run(["squeue", "-h", "-t", "PD", "-o", "%i"]).stdout.split()
        assert left == [], left  # withdrawn: nothing left pending
    finally:
        two.run(["scancel", str(busy)])
    wait_final(two, busy, 60)
    r = two.run(["sbatch", "--parsable", "-I", "-o", "/dev/null", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip().isdigit(), r.stderr


def test_unsupported_options_warn_once_naming_them(two, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --gpu-freq=high\n#SBATCH --hint=compute_bound\ntrue\n")
    r = two.run(["sbatch", "--parsable", "--hint=nomultithread", "-o", "/dev/null", str(script)],
                cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip().isdigit(), r.stderr
    assert r.stderr.splitlines() == [
        "sbatch: warning: --hint=nomultithread is not supported here and is ignored",
        "sbatch: warning: --gpu-freq=high is not supported here and is ignored"]
    assert wait_final(two, int(r.stdout), 60) == "COMPLETED"


def test_input_variables_between_command_line_and_directives(two, tmp_path):
    script = tmp_path / "named.sh"
    script.write_text("#!/bin/sh\n#SBATCH -J fromdirective\n#SBATCH -t 7\ntrue\n")
    env = {"SBATCH_JOB_NAME": "fromenv", "SBATCH_TIMELIMIT": "9"}
    a = two.sbatch("-o", "/dev/null", str(script), cwd=tmp_path, env=env)
    b = two.sbatch("-J", "fromcli", "-o", "/dev/null", str(script), cwd=tmp_path, env=env)
    shown = {j: two.run(["squeue", "-h", "-j", str(j), "-o", "%j %l"]).stdout.split() for j in (a, b)}
    assert shown == {a: ["fromenv", "9:00"], b: ["fromcli", "9:00"]}
