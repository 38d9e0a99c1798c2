"""`pyslurm-lite simulate` with the policies of issue #18: --list-policies, a dump for every
policy, --projections, and --engine scheduler for a policy of sched/policy.py."""

from __future__ import annotations

import random

import pytest
from click.testing import CliRunner

from pyslurm_lite.cli.admin import main
from pyslurm_lite.sim import POLICIES, replay, swf


def trace_text(jobs: int = 40, seed: int = 2) -> str:
    """A queue on 8 processors with users and estimates above the run times; job ids 501, 508,
    515, ... (not 1..n) and one record skipped (procs above the machine)."""
    rng = random.Random(seed)
    lines = ["; MaxProcs: 8"]
    submit = 10**6  # F1's submit term then weighs the same for every job
    for k in range(jobs):
        submit += rng.choice([0, 5, 20])
        estimate = rng.choice([60, 300, 600])
        run = rng.choice([estimate, estimate // 3, 10])
        procs = rng.choice([1, 2, 4, 8])
        lines.append(f"{501 + 7 * k} {submit} -1 {run} {procs} -1 -1 {procs} {estimate} -1 1 "
                     f"{rng.choice([1, 2, 3])} 1 -1 1 -1 -1 -1")
    lines.append(f"9999 {submit} -1 10 9 -1 -1 9 60 -1 1 1 1 -1 1 -1 -1 -1")
    return "\n".join(lines) + "\n"


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "queue.swf"
    path.write_text(trace_text())
    return str(path)


def simulate(*args):
    return CliRunner().invoke(main, ["simulate", *map(str, args)])


def test_list_policies_names_every_policy_one_a_line():
    result = simulate("--list-policies")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == list(POLICIES)
    assert all(len(line.split()) > 1 for line in lines)  # each with its description


@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_policy_dumps_one_row_per_replayed_job(trace_file, tmp_path, policy):
    out = tmp_path / "out.csv"
    result = simulate(trace_file, "--policy", policy, "--dump", out)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].split()[:4] == ["queue", policy, "40", "1"]
    rows = out.read_text().splitlines()
    assert rows[0] == "id,submit,start,end,procs"
    t = swf.read(trace_file)
    start = replay(t, policy)
    assert rows[1:] == [f"{i},{b},{s},{s + r},{p}" for i, b, s, r, p in
                        zip(t.ids, t.submit, start, t.run, t.procs)]
    assert [int(r.split(",")[0]) for r in rows[1:]] == [501 + 7 * k for k in range(40)]


def test_projections_table_for_easy_and_learned(trace_file):
    result = simulate(trace_file, "--policy", "easy,learned", "--projections")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    head = next(k for k, line in enumerate(lines) if line.split()[:1] == ["policy"]
                and "waited" in line)
    assert lines[head].split() == ["policy", "waited", "projected", "median", "|err|", "s",
                                   "p90", "|err|", "s", "no", "later", "%"]
    rows = [line.split() for line in lines[head + 1:]]
    assert [r[0] for r in rows] == ["easy", "learned"]
    for r in rows:
        waited, projected = int(r[1]), int(r[2])
        assert 0 < projected <= waited <= 40
        assert 0 <= float(r[5]) <= 100


@pytest.mark.parametrize("policy", ["fcfs", "conservative", "easy,conservative"])
def test_projections_refuse_fcfs_and_conservative(trace_file, tmp_path, policy):
    out = tmp_path / "never.csv"
    result = simulate(trace_file, "--policy", policy, "--projections", "--dump", out)
    assert result.exit_code not in (0, None)
    text = result.output  # stdout and stderr
    assert len(text.splitlines()) == 1 and "--projections" in text, text
    assert "Traceback" not in text
    assert not out.exists()


@pytest.mark.parametrize("policy", ["learned", "easy++"])
def test_scheduler_engine_gives_the_fast_engines_dump(trace_file, tmp_path, policy):
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    a = simulate(trace_file, "--policy", policy, "--dump", fast)
    b = simulate(trace_file, "--policy", policy, "--engine", "scheduler", "--dump", slow)
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    assert fast.read_text() == slow.read_text()
    assert len(fast.read_text().splitlines()) == 41
    # ... and the policy matters on this trace: it is not EASY's dump under another name
    easy = tmp_path / "easy.csv"
    assert simulate(trace_file, "--dump", easy).exit_code == 0
    assert easy.read_text() != fast.read_text()
