"""sacct's option texts and messages as Slurm 22.05's sacct gives them (src/sacct/options.c), and
getopt's words for an option given without its argument, for every command. No cluster: each
case ends before sacct reaches the controller."""

from __future__ import annotations

import pytest

from pyslurm_lite.cli import acctfields, acctfilter, sacct, sbatch, squeue


def refused(fn, argv, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as e:
        fn(argv)
    return e.value.code, capsys.readouterr().err


@pytest.mark.parametrize("argv, code, err", [
    (["foo", "-X", "bar"], 1, "sacct: error: Unknown arguments:\nsacct: error:  foo\n"
                              "sacct: error:  bar\n"),
    (["--json"], 1, "sacct: error: --json is not supported by pyslurm-lite"),
    (["--yaml"], 1, "sacct: error: --yaml is not supported by pyslurm-lite"),
    (["-c"], 1, "Slurm job completion is disabled\n"),
    (["--units=Q"], 1, "sacct: error: Invalid unit type 'Q'. Possible options are 'KMGTP'\n"
                       "sacct: fatal: Invalid unit type\n"),
    (["-k", "0"], 1, "sacct: fatal: Invalid time limit specification\n"),
    (["--timelimit-max=soon"], 1, "sacct: fatal: Invalid time limit specification\n"),
    (["-i", "two"], 1, 'sacct: error: Invalid numeric value "two" for requested node range.\n'),
    (["-I", "2-0"], 1, 'sacct: error: Invalid numeric value "2-0" for requested cpu range.\n'),
    (["-g", "no-such-group-h12"], 1, "sacct: error: Invalid group id: no-such-group-h12\n"),
    (["-N", "node[1-"], 1, "sacct: error: -N/--nodelist: bad hostlist 'node[1-'"),
])
def test_sacct_refuses_as_slurm(argv, code, err, capsys, monkeypatch):
    monkeypatch.setenv("PYSLURM_LITE_CONF", "/nonexistent/slurm.conf")  # never reached
    got_code, got_err = refused(sacct.main_args, argv, capsys)
    assert got_code == code
    assert got_err.startswith(err)


def test_units_warning_text(capsys):
    ns = sacct.build_parser().parse_args(["--units=m", "--noconvert"])
    sacct.not_here(ns)
    err = capsys.readouterr().err
    assert "sacct: warning: --units is not supported here and is ignored" in err
    assert "sacct: warning: --noconvert is not supported here and is ignored" in err


@pytest.mark.parametrize("text, expected", [
    ("2", (2, 0)), ("2-4", (2, 4)), ("*", (1, 2**31 - 1)), ("", (1, 2**31 - 1)),
    ("1k", (1024, 0)), ("0", (0, 0)),
])
def test_ranges_read_as_get_resource_arg_range(text, expected):
    assert acctfilter.parse_range(text, "requested node range") == expected


@pytest.mark.parametrize("value, low, high, kept", [
    (10, 10, 0, True), (11, 10, 0, False), (20, 15, 30, True), (31, 15, 30, False),
    (5, 0, 0, True),  # no -k: no filter
    (-1, -1, 0, True), (60, -1, 0, False), (-1, 15, 30, False),  # UNLIMITED only matches itself
])
def test_time_limit_ranges(value, low, high, kept):
    assert acctfilter._limit_in_range(value, low, high) is kept


@pytest.mark.parametrize("start, end, window, step, expected", [
    (100, 200, (150, 500), False, (150, 200, 50)),   # began before the window
    (100, 0, (150, 500), False, (150, 500, 350)),    # still running: ends at the window's end
    (0, 0, (150, 500), False, (500, 500, 0)),        # never started
    (100, 120, (150, 500), True, (0, 0, 0)),         # a step wholly before the window
])
def test_truncate_as_slurmdbd(start, end, window, step, expected):
    assert acctfields.truncated(start, end, window, step) == expected


@pytest.mark.parametrize("build, argv, code, err", [
    (sbatch.build_parser, ["-p"], 255,
     "sbatch: option requires an argument -- 'p'\nTry \"sbatch --help\" for more information\n"),
    (sbatch.build_parser, ["--wrap", "true", "--part"], 255,
     "sbatch: option '--partition' requires an argument\n"
     "Try \"sbatch --help\" for more information\n"),
    (sbatch.build_parser, ["-Hp"], 255, "sbatch: option requires an argument -- 'p'\n"),
    (squeue.build_parser, ["--user"], 1,
     "squeue: option '--user' requires an argument\nTry \"squeue --help\" for more information\n"),
    (sacct.build_parser, ["-j"], 1, "sacct: option requires an argument -- 'j'\n"),  # no Try line
])
def test_missing_argument_in_getopts_words(build, argv, code, err, capsys):
    got_code, got_err = refused(build().parse_args, argv, capsys)
    assert (got_code, got_err[:len(err)]) == (code, err)
    if build is sacct.build_parser:
        assert got_err == err
