"""The surface every command shares with Slurm 22.05's: --usage, --help in Slurm's layout,
-V/--version and -M/--clusters. The installed commands run as subprocesses against a slurm.conf
that names the cluster (ClusterName=alpha); nothing reaches a controller: each call ends in the
option's own exit (usage, help, version) or in -M's refusal."""

from __future__ import annotations

import re

import pytest

from conftest import BIN_DIR, cli_env, run_cmd
from pyslurm_lite.cli import common, usage

COMMANDS = ("sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "scontrol", "sacct",
            "sprio", "sshare", "sdiag")
# Commands whose -M this module owns (sacct, sbatch, srun and salloc declare their own -M).
CLUSTER_CHECKED = ("squeue", "scancel", "sinfo", "scontrol", "sprio", "sshare", "sdiag")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    conf = tmp_path_factory.mktemp("surface") / "slurm.conf"
    conf.write_text("ClusterName=alpha\nSlurmctldHost=localhost\nNodeName=node1 CPUs=2\n"
                    "PartitionName=debug Nodes=ALL Default=YES\n")
    return cli_env(conf)


def cli(env, *argv):
    return run_cmd([f"{BIN_DIR}/{argv[0]}", *argv[1:]], env)


# ---- --usage ----------------------------------------------------------------------------------
def _slurm_usage(prog: str) -> str:
    from pyslurm_lite.cli.helptext import HELP
    return usage.USAGE.get(prog) or "".join(HELP[prog])


@pytest.mark.parametrize("prog", COMMANDS)
def test_usage_prints_slurms_block_and_exits_0(env, prog):
    r = cli(env, prog, "--usage")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    ours, slurms = r.stdout.splitlines()[0], _slurm_usage(prog).splitlines()[0]
    assert ours.split()[:2] == slurms.split()[:2]  # "Usage: sbatch", "scontrol [<OPTION>]"
    words = iter(slurms.split())  # Slurm's first line, thinned to the options we take
    assert all(re.fullmatch(r"\[-[A-Za-z]+\]", w) or w in words for w in ours.split()), ours


# ---- --help -----------------------------------------------------------------------------------
HELP_LINES = {  # (line that must be there, verbatim) per command
    "sbatch": ["Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]",
               "Parallel run options:",
               "  -a, --array=indexes         job array index values",
               "Constraint options:", "GPU scheduling options:", "Help options:",
               "  -h, --help                  show this help message",
               "      --usage                 display brief usage message",
               "Other options:",
               "  -V, --version               output version information and exit"],
    "srun": ["Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] "
             "executable(N) [args(N)...]", "Parallel run options:",
             "  -l, --label                 prepend task number to lines of stdout/err"],
    "salloc": ["Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)]] [command(0) [args(0)...]]",
               "Parallel run options:"],
    "squeue": ["Usage: squeue [OPTIONS]",
               "  -h, --noheader                  no headers on output",
               "  -M, --clusters=cluster_name     cluster to issue commands to.  Default is",
               "      --me                        equivalent to --user=<my username>",
               "Help options:",
               "  --usage                         display a brief summary of squeue options"],
    "scancel": ["Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]",
                "  -M, --clusters                  clusters to issue commands to."],
    "sinfo": ["Usage: sinfo [OPTIONS]", "  -h, --noheader             no headers on output",
              "  -N, --Node                 Node-centric format"],
    "scontrol": ["scontrol [<OPTION>] [<COMMAND>]", "    Valid <COMMAND> values are:",
                 "     show <ENTITY> [<ID>]     display state of identified entity, default"],
    "sacct": ["sacct [<OPTION>]", "     -X, --allocations:"],
    "sprio": ["Usage: sprio [OPTIONS]", "  -n, --norm                      display normalized values"],
    "sshare": ["Usage:  sshare [OPTION]", "    -P or --parsable2      '|' delimited output "
               "without a trailing '|'"],
    "sdiag": ["Usage: sdiag [OPTIONS]", "  -a, --all           all statistics",
              "  --usage         display brief usage message"],
}
HELP_ABSENT = {  # what Slurm lists and we refuse: not shown
    "sbatch": ["Cray related options:"],
    "squeue": ["--json", "--federation", "-L, --licenses"],
    "scontrol": ["     abort "],
    "sdiag": ["--reset", "--sort-by-id"],
}


@pytest.mark.parametrize("prog", COMMANDS)
def test_help_is_slurms_layout(env, prog):
    r = cli(env, prog, "--help")
    assert r.returncode == 0, r.stderr
    lines = [line.rstrip() for line in r.stdout.splitlines()]
    assert lines[0] == HELP_LINES[prog][0]
    for want in HELP_LINES[prog][1:]:
        assert want.rstrip() in lines, f"{prog} --help lacks {want!r}"
    for gone in HELP_ABSENT.get(prog, []):
        assert gone not in r.stdout, f"{prog} --help lists {gone!r}, which we refuse"


@pytest.mark.parametrize("prog, flag", [("sbatch", "-h"), ("srun", "-h"), ("scontrol", "-h"),
                                        ("sacct", "-h"), ("sdiag", "-h")])
def test_short_h_is_help_where_slurm_has_it(env, prog, flag):
    r = cli(env, prog, flag)
    assert r.returncode == 0 and r.stdout.startswith(HELP_LINES[prog][0]), r.stderr


def _parser_of(prog, monkeypatch, capsys):
    """The parser behind `prog --help`, caught as it renders, and what it printed."""
    import importlib
    seen = []
    render = common.SlurmArgParser.format_help
    monkeypatch.setattr(common.SlurmArgParser, "format_help",
                        lambda self: seen.append(self) or render(self))
    module = importlib.import_module(f"pyslurm_lite.cli.{prog}")
    with pytest.raises(SystemExit):
        module.main_args(["--help"])
    return seen[-1], capsys.readouterr().out


@pytest.mark.parametrize("prog", COMMANDS)
def test_help_lists_every_option_we_take(prog, monkeypatch, capsys):
    parser, out = _parser_of(prog, monkeypatch, capsys)
    shown = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", out))
    for action in parser._actions:
        names = action.option_strings
        # Slurm's text may give a long option by a prefix getopt resolves (--step for --steps)
        if names and not any(n in shown or any(n.startswith(s) and s.startswith("--") and
                                               len(s) > 4 for s in shown) for n in names):
            pytest.fail(f"{prog} --help does not show {'/'.join(names)}")


# ---- -V / --version ---------------------------------------------------------------------------
@pytest.mark.parametrize("prog", COMMANDS)
def test_version_is_slurms_line(env, prog):
    for flag in ("-V", "--version"):
        r = cli(env, prog, flag)
        assert (r.returncode, r.stdout, r.stderr) == (0, "slurm 22.05.8\n", ""), flag
    # what clients do with it: OSG Gratia `name, version = out.split()`, law's regex
    name, version = r.stdout.split()
    assert re.match(r"^slurm (\d+)\.(\d+)\.(\d+)$", r.stdout.strip()) and name == "slurm"


# ---- -M / --clusters --------------------------------------------------------------------------
@pytest.mark.parametrize("prog", CLUSTER_CHECKED)
def test_clusters_all_is_accepted(env, prog):
    r = cli(env, prog, "-M", "all", "--usage")
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize("names, ours", [("all", ["alpha"]), ("ALL", ["alpha"]),
                                         ("alpha", ["alpha"]), ("Alpha,alpha", ["alpha"])])
def test_clusters_names_that_are_ours(env, monkeypatch, names, ours):
    monkeypatch.setenv("PYSLURM_LITE_CONF", env["PYSLURM_LITE_CONF"])
    assert common.resolve_clusters("squeue", names) == ours
    ns = common.SlurmArgParser(prog="squeue", add_help=False).parse_known_args(
        ["--clus", names])[0]  # getopt's prefix of --clusters/--cluster
    assert ns.clusters == ours


@pytest.mark.parametrize("prog", CLUSTER_CHECKED)
def test_clusters_other_is_refused_in_slurms_words(env, prog):
    r = cli(env, prog, "-M", "beta", "--usage")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (
        f"{prog}: error: No cluster 'beta' known by database.\n"
        f"{prog}: error: 'beta' can't be reached now, or it is an invalid entry for --cluster.  "
        "Use 'sacctmgr list clusters' to see available clusters.\n")


def test_clusters_keeps_the_names_that_are_ours(env):
    r = cli(env, "squeue", "-M", "beta,alpha", "--usage")
    assert r.returncode == 0 and r.stdout.startswith("Usage: squeue")
    assert r.stderr == "squeue: error: No cluster 'beta' known by database.\n"


# ---- pure parts -------------------------------------------------------------------------------
def test_cluster_banner_is_slurms_line_unless_headers_are_off():
    from argparse import Namespace
    assert common.cluster_banner(Namespace(clusters=["alpha"], noheader=False)) == ["CLUSTER: alpha"]
    assert common.cluster_banner(Namespace(clusters=["alpha"], noheader=True)) == []
    assert common.cluster_banner(Namespace(clusters=None, noheader=False)) == []


@pytest.mark.parametrize("prog, argv, code, err", [
    ("squeue", ["--bogus"], 1, "squeue: unrecognized option '--bogus'\n"
                               'Try "squeue --help" for more information\n'),
    ("squeue", ["-k"], 1, "squeue: invalid option -- 'k'\n"),
    ("sacct", ["--bogus"], 1, "sacct: unrecognized option '--bogus'\n"),  # no "Try" line
    ("sbatch", ["--bogus"], 255, "sbatch: unrecognized option '--bogus'\n"),
])
def test_bad_option_exit_status_and_words_are_slurms(env, prog, argv, code, err):
    r = cli(env, prog, *argv)
    assert r.returncode == code
    assert r.stderr.startswith(err) and (prog != "sacct" or "Try" not in r.stderr)


def test_usage_filter_thins_flag_clusters_and_keeps_operands():
    p = common.SlurmArgParser(prog="x", add_help=False)
    p.add_argument("-a", action="store_true")
    p.add_argument("--name")
    text = "Usage: x [-abc] [--name=n] [--gone] [job_id[_array_id]]\n     [--gone2]\n"
    assert usage.filter_usage(text, usage.Options(p)) == \
        "Usage: x [-a] [--name=n] [job_id[_array_id]]\n"


def test_help_keeps_slurms_words_for_what_we_take_and_drops_the_rest():
    p = common.SlurmArgParser(prog="x", add_help=False)
    p.add_argument("--steps", nargs="?")
    p.add_argument("-k", "--keep", action="store_true")
    p.add_argument("--ours", help="an option of our own")
    text = ("Usage: x [OPTIONS]\n"
            "  -s, --step=step(s)    steps to view,\n"
            "                        default is all\n"
            "      --gone            not taken\n"
            "\n"
            "Gone options:\n"
            "      --gone2           not taken either\n"
            "\n"
            "Help options:\n"
            "  -k, --keep            taken\n")
    assert usage.render_help(text, p) == (
        "Usage: x [OPTIONS]\n"
        "      --step=step(s)    steps to view,\n"  # -s is not ours: blanked, columns kept
        "                        default is all\n"
        "      --ours=value      an option of our own\n"
        "\n"
        "Help options:\n"
        "  -k, --keep            taken\n")


def test_pyslurm_lite_version_names_ours_and_slurms():
    """Our own version lives here, where no Slurm client looks."""
    from click.testing import CliRunner
    from pyslurm_lite import __version__
    from pyslurm_lite.cli.admin import main
    r = CliRunner().invoke(main, ["--version"])
    assert (r.exit_code, r.output) == (0, f"pyslurm-lite {__version__} (Slurm 22.05.8 commands)\n")


@pytest.mark.parametrize("prog", ("sacctmgr", "sstat", "sreport"))
def test_accounting_commands_print_slurms_version(env, prog):
    """The #15 commands answer -V/--version as Slurm's do (clients parse that line); their
    --usage/--help are their own texts, not yet checked against Slurm's here."""
    for flag in ("-V", "--version"):
        r = cli(env, prog, flag)
        assert (r.returncode, r.stdout, r.stderr) == (0, "slurm 22.05.8\n", ""), flag
