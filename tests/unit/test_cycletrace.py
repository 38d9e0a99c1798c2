"""cycletrace: stage marks go to the file PYSLURM_LITE_CYCLE_TRACE names, and nowhere without it."""

from __future__ import annotations

import importlib

from pyslurm_lite import cycletrace


def fresh(monkeypatch, path):
    mod = importlib.reload(cycletrace)
    if path:
        monkeypatch.setenv("PYSLURM_LITE_CYCLE_TRACE", str(path))
    else:
        monkeypatch.delenv("PYSLURM_LITE_CYCLE_TRACE", raising=False)
    return mod


def test_marks_are_lines_of_time_process_stage_job(tmp_path, monkeypatch):
    path = tmp_path / "t"
    mod = fresh(monkeypatch, path)
    mod.start("agent:n1")
    mod.mark("forked", 7)
    mod.marks("start.decided", [8, 9])
    lines = [line.split() for line in path.read_text().splitlines()]
    assert [(who, stage, job) for _, who, stage, job in lines] == [
        ("agent:n1", "forked", "7"), ("agent:n1", "start.decided", "8"),
        ("agent:n1", "start.decided", "9")]
    assert lines[1][0] == lines[2][0] and float(lines[0][0]) <= float(lines[1][0])
    importlib.reload(cycletrace)


def test_nothing_is_written_without_the_variable(tmp_path, monkeypatch):
    mod = fresh(monkeypatch, None)
    mod.start("controller")
    mod.mark("forked", 7)
    assert mod._FD is None and list(tmp_path.iterdir()) == []
    importlib.reload(cycletrace)
