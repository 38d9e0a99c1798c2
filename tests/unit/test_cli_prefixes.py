"""Long options by any unambiguous prefix, as Slurm's getopt_long takes them (workflow tools
write `sacct --job 3`); an ambiguous prefix is refused with getopt's words and Slurm's exit
status (255 for sbatch, srun and salloc; 1 for the others)."""

from __future__ import annotations

import pytest

from pyslurm_lite.cli import sacct, sbatch, squeue, srun


@pytest.mark.parametrize("parser, argv, attr, value", [
    (sacct.build_parser, ["--job", "3"], "jobs", ["3"]),
    (sbatch.build_parser, ["--job-n", "x", "--wrap", "true"], "name", "x"),
    (sbatch.build_parser, ["--parsab", "--wrap", "true"], "parsable", True),
    (sbatch.build_parser, ["--mem=10"], "mem", "10"),  # an exact name wins over --mem-per-*
    (squeue.build_parser, ["--use", "bob"], "user", ["bob"]),
    (srun.build_parser, ["--ntasks-per-n", "2", "hostname", "--ntasks-per-node", "9"],
     "ntasks_per_node", 2),  # after the command, options are the command's
])
def test_unambiguous_prefix_is_the_option(parser, argv, attr, value):
    assert getattr(parser().parse_args(argv), attr) == value


def test_ambiguous_prefix_is_refused_as_getopt_says(capsys):
    with pytest.raises(SystemExit) as e:
        sbatch.build_parser().parse_args(["--ex=a", "--wrap", "true"])
    assert e.value.code == 255
    err = capsys.readouterr().err
    assert err.startswith("sbatch: option '--ex' is ambiguous; possibilities: ")
    assert all(f"'{o}'" in err for o in ("--exclude", "--exclusive", "--export"))
    assert 'Try "sbatch --help" for more information' in err


def test_usage_makes_us_ambiguous_as_in_slurm(capsys):
    """Slurm's squeue has --user and --usage: `--us` names neither."""
    with pytest.raises(SystemExit) as e:
        squeue.build_parser().parse_args(["--us", "bob"])
    assert e.value.code == 1
    assert capsys.readouterr().err.startswith(
        "squeue: option '--us' is ambiguous; possibilities: '--user' '--usage'")
