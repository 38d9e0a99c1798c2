"""What `pyslurm-lite simulate` reports and writes: the figures on a trace small enough to
check by hand, the CSV dump, the PNG, and one-line errors."""

from __future__ import annotations

import struct
import zlib

import pytest
from click.testing import CliRunner

from pyslurm_lite.cli.admin import main
from pyslurm_lite.sim import POLICIES, report, swf

# 10 processors. A (10 procs, 100 s) from 0 to 100; B (5 procs, asks 50 s, runs 80: killed at 50)
# submitted at 20, starts at 100 and ends at 150; C (5 procs, 5 s) submitted at 20 too: under
# fcfs it starts beside B at 100, ends 105.
TEXT = """; MaxProcs: 10
1 0 -1 100 10 -1 -1 10 100 -1 1 1 1 -1 1 -1 -1 -1
2 20 -1 80 5 -1 -1 5 50 -1 1 1 1 -1 1 -1 -1 -1
3 20 -1 5 5 -1 -1 5 5 -1 1 1 1 -1 1 -1 -1 -1
"""


def test_summary_by_hand():
    t = swf.parse(TEXT, "hand")
    s = report.summarize(t, "fcfs", POLICIES["fcfs"](t))
    # waits 0, 80, 80; makespan 150 - 0; work 10*100 + 5*50 + 5*5 = 1275 of 10*150
    # bounded slowdowns: 1, (80+50)/50 = 2.6, (80+5)/10 = 8.5
    assert (s.jobs, s.skipped, s.max_wait, s.makespan) == (3, 0, 80, 150)
    assert s.mean_wait == pytest.approx(160 / 3)
    assert s.utilization == pytest.approx(1275 / 1500)
    assert s.mean_bsld == pytest.approx((1 + 2.6 + 8.5) / 3)
    out = report.table([s])
    assert out.splitlines()[0].split() == ["trace", "policy", "jobs", "skipped", "util", "%",
                                           "mean", "wait", "s", "max", "wait", "s", "mean",
                                           "bsld", "makespan", "s", "wall", "s"]
    assert out.splitlines()[1].split()[:5] == ["hand", "fcfs", "3", "0", "85.00"]


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "hand.swf"
    path.write_text(TEXT)
    return str(path)


def test_dump_and_plot(trace_file, tmp_path):
    csv, png = tmp_path / "out.csv", tmp_path / "out.png"
    result = CliRunner().invoke(main, ["simulate", trace_file, "--policy", "fcfs",
                                       "--dump", str(csv), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].split()[:3] == ["hand", "fcfs", "3"]
    assert csv.read_text().splitlines() == ["id,submit,start,end,procs", "1,0,0,100,10",
                                            "2,20,100,150,5", "3,20,100,105,5"]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    idat = data.index(b"IDAT")
    length = struct.unpack(">I", data[idat - 4:idat])[0]
    assert len(zlib.decompress(data[idat + 4:idat + 4 + length])) == height * (1 + 3 * width)


def test_several_policies_write_one_file_each(trace_file, tmp_path):
    result = CliRunner().invoke(main, ["simulate", trace_file, "--policy", "easy,conservative",
                                       "--dump", str(tmp_path / "d.csv")])
    assert result.exit_code == 0, result.output
    assert [r.split()[1] for r in result.output.splitlines()[1:3]] == ["easy", "conservative"]
    assert (tmp_path / "d-easy.csv").exists() and (tmp_path / "d-conservative.csv").exists()


def test_scheduler_engine_from_the_command(trace_file):
    result = CliRunner().invoke(main, ["simulate", trace_file, "--policy", "fcfs,easy",
                                       "--engine", "scheduler"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args, message", [
    (["{dir}/missing.swf"], "cannot read trace {dir}/missing.swf"),
    (["{trace}", "--policy", "sjf"], "unknown policy 'sjf' (choose from fcfs, easy, conservative, easy++, f1, f1-guard, learned)"),
    (["{trace}", "--policy", "conservative", "--engine", "scheduler"],
     "--engine scheduler replays fcfs, easy, easy++, f1, f1-guard, learned only, not conservative"),
    (["{trace}", "--engine", "gpu"], "unknown engine 'gpu' (choose from fast, scheduler)"),
    (["{bad}"], "{bad}:3: expected 18 fields, found 3"),
    (["{trace}", "--dump", "{dir}/no/such/dir/x.csv"], "cannot write {dir}/no/such/dir/x.csv"),
])
def test_bad_input_is_one_line(trace_file, tmp_path, args, message):
    bad = tmp_path / "bad.swf"
    bad.write_text(TEXT.splitlines()[0] + "\n" + TEXT.splitlines()[1] + "\n1 2 3\n")
    fill = dict(dir=tmp_path, trace=trace_file, bad=bad)
    result = CliRunner().invoke(main, ["simulate"] + [a.format(**fill) for a in args])
    assert result.exit_code == 1
    assert result.output.startswith("pyslurm-lite: error: " + message.format(**fill))
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1
