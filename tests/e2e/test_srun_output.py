"""srun's output integrity on a real cluster: a task's output is forwarded in whole lines (as
slurmstepd does unless -u), so lines written in pieces by many tasks at once, in several steps at
once, arrive whole and in order per task; the last line without its newline still arrives."""

from __future__ import annotations

import re
import subprocess

LINES = 1500  # per task

# Each line is written in three pieces (three write() calls): the worst case for interleaving.
PIECES = ('for i in $(seq 1 %d); do printf "s%%s " "$STEP"; printf "t%%s " "$SLURM_PROCID"; '
          'printf "l%%s\\n" "$i"; done' % LINES)
LINE = re.compile(r"s(\d) t(\d+) l(\d+)")


def _check(text: str, step: int, ntasks: int) -> None:
    last = {t: 0 for t in range(ntasks)}
    bad = []
    for line in text.splitlines():
        m = LINE.fullmatch(line)
        if not m or int(m.group(1)) != step:
            bad.append(line)
            continue
        task, n = int(m.group(2)), int(m.group(3))
        assert n == last[task] + 1, f"step {step} task {task}: line {n} after {last[task]}"
        last[task] = n
    assert not bad, f"step {step}: {len(bad)} malformed lines, e.g. {bad[:3]}"
    assert last == {t: LINES for t in range(ntasks)}, f"step {step}: lines per task {last}"


def test_lines_written_in_pieces_arrive_whole_under_load(cluster):
    procs = []
    for step in (1, 2):  # two steps at once, each over both nodes
        procs.append(subprocess.Popen(
            ["srun", "-N2", "-n2", "bash", "-c", PIECES], env={**cluster.env, "STEP": str(step)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True))
    for step, p in enumerate(procs, 1):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        _check(out, step, 2)


def test_labelled_lines_and_a_last_line_without_newline(cluster):
    r = cluster.run(["srun", "-N2", "-n2", "-l", "bash", "-c",
                     'printf "a"; sleep 0.2; printf "b\\nc"; sleep 0.2; printf "d"'], timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["0: ab", "0: cd", "1: ab", "1: cd"], r.stdout


def test_a_last_line_without_newline_is_not_given_one(cluster):
    r = cluster.run(["srun", "-n1", "printf", "x\\ny"], timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "x\ny", repr(r.stdout)


def test_unbuffered_forwards_a_partial_line_at_once(cluster):
    # With -u the piece before the newline reaches srun while the task still sleeps.
    p = subprocess.Popen(["srun", "-n1", "-u", "bash", "-c", 'printf "early"; sleep 30'],
                         env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    try:
        got = p.stdout.read(5)
        assert got == b"early"
    finally:
        p.terminate()
        p.wait(timeout=30)
