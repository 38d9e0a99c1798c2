"""cli/sbatch.py: #SBATCH directives, --gres and --export forms, and how the command line and the
script are merged into a JobSpec (the controller is replaced by a fake that records the spec)."""

from __future__ import annotations

import pytest

from pyslurm_lite.cli import sbatch
from pyslurm_lite.cli.common import run
from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.model import GresRequest

# ---- read_directives ----------------------------------------------------------------------------


@pytest.mark.parametrize("script, args", [
    ("#!/bin/bash\n#SBATCH -J x\n#SBATCH --time=5\necho hi\n", ["-J", "x", "--time=5"]),
    # blank lines and ordinary comments may sit between directives
    ("#!/bin/bash\n\n# setup\n#SBATCH -N 2\n\n#SBATCH -c 4\nhostname\n", ["-N", "2", "-c", "4"]),
    # several options on one line
    ("#!/bin/sh\n#SBATCH -N 2 -n 4\ntrue\n", ["-N", "2", "-n", "4"]),
    # quoting follows the shell
    ("#!/bin/sh\n#SBATCH -J 'a b'\ntrue\n", ["-J", "a b"]),
    # a trailing comment is not part of the directive
    ("#!/bin/sh\n#SBATCH -J x # the name\ntrue\n", ["-J", "x"]),
    # only the leading comment block counts: nothing after the first command
    ("#!/bin/sh\n#SBATCH -J x\necho start\n#SBATCH -N 2\n", ["-J", "x"]),
    ("#!/bin/sh\nset -e\n#SBATCH -J x\n", []),
    # not directives: a space after '#', lower case, a different prefix
    ("#!/bin/sh\n# SBATCH -J x\n#sbatch -N 2\n#SBATCHX -c 2\ntrue\n", []),
    # the shebang line itself is never a directive
    ("#SBATCH -J x\n#SBATCH -N 2\n", ["-N", "2"]),
    ("#!/bin/sh\n", []),
])
def test_read_directives(script, args):
    assert sbatch.read_directives(script) == args


def test_read_directives_unbalanced_quote():
    with pytest.raises(InvalidRequest) as e:
        sbatch.read_directives("#!/bin/sh\n#SBATCH -J 'oops\ntrue\n")
    assert "#SBATCH" in e.value.message


# ---- --gres -------------------------------------------------------------------------------------

@pytest.mark.parametrize("values, parsed", [
    (None, []),
    ([], []),
    (["gpu"], [GresRequest("gpu", "", 1)]),
    (["gpu:2"], [GresRequest("gpu", "", 2)]),
    (["gpu:a100"], [GresRequest("gpu", "a100", 1)]),
    (["gpu:a100:2"], [GresRequest("gpu", "a100", 2)]),
    (["gres:gpu:2"], [GresRequest("gpu", "", 2)]),
    (["gres/gpu:2"], [GresRequest("gpu", "", 2)]),
    (["gpu:2,gpu:a100:1"], [GresRequest("gpu", "", 2), GresRequest("gpu", "a100", 1)]),
    (["gpu:1", "gpu:v100:3"], [GresRequest("gpu", "", 1), GresRequest("gpu", "v100", 3)]),
    (["tpu:1"], [GresRequest("tpu", "", 1)]),  # syntactically fine; the controller refuses it
])
def test_parse_gres(values, parsed):
    assert sbatch.parse_gres(values) == parsed


@pytest.mark.parametrize("value", ["gpu:a100:x", "gpu:a:b:c", ":2", "gpu:1:2:3"])
def test_parse_gres_rejects(value):
    with pytest.raises(InvalidRequest) as e:
        sbatch.parse_gres([value])
    assert "gres" in e.value.message


# ---- --export -----------------------------------------------------------------------------------

ENVIRON = {"HOME": "/home/u", "FOO": "foo", "SLURM_CONF": "/etc/slurm.conf", "PATH": "/bin"}


@pytest.mark.parametrize("export, mode, env", [
    ("ALL", "ALL", ENVIRON),
    ("all", "ALL", ENVIRON),
    ("ALL,FOO=bar", "ALL", {**ENVIRON, "FOO": "bar"}),
    ("ALL,NEW=1", "ALL", {**ENVIRON, "NEW": "1"}),
    # NONE: nothing of the submitter's but SLURM_* variables
    ("NONE", "NONE", {"SLURM_CONF": "/etc/slurm.conf"}),
    ("none", "NONE", {"SLURM_CONF": "/etc/slurm.conf"}),
    # a list: only those variables (named ones from the environment, VAR=val as given)
    ("FOO", "ALL", {"FOO": "foo", "SLURM_CONF": "/etc/slurm.conf"}),
    ("VAR=val", "ALL", {"VAR": "val", "SLURM_CONF": "/etc/slurm.conf"}),
    ("FOO,A=1,MISSING", "ALL", {"FOO": "foo", "A": "1", "SLURM_CONF": "/etc/slurm.conf"}),
    ("A=x=y", "ALL", {"A": "x=y", "SLURM_CONF": "/etc/slurm.conf"}),
])
def test_export_environment(export, mode, env, monkeypatch):
    monkeypatch.delenv("SBATCH_EXPORT", raising=False)
    assert sbatch.export_environment(export, dict(ENVIRON)) == (mode, env)


@pytest.mark.parametrize("sbatch_export, mode, env", [
    (None, "ALL", ENVIRON),                  # default: ALL
    ("NONE", "NONE", {"SLURM_CONF": "/etc/slurm.conf"}),  # SBATCH_EXPORT sets the default
])
def test_export_default(sbatch_export, mode, env, monkeypatch):
    if sbatch_export is None:
        monkeypatch.delenv("SBATCH_EXPORT", raising=False)
    else:
        monkeypatch.setenv("SBATCH_EXPORT", sbatch_export)
    assert sbatch.export_environment("", dict(ENVIRON)) == (mode, env)


# ---- spec_from_args -------------------------------------------------------------------------------

def spec(*argv, script="#!/bin/sh\ntrue\n", cwd="/work/dir"):
    ns = sbatch.build_parser().parse_args(list(argv))
    return sbatch.spec_from_args(ns, script, cwd)


@pytest.mark.parametrize("argv, expected", [
    ((), dict(name="sbatch", num_nodes=1, num_tasks=1, cpus_per_task=1, time_limit=0,
              work_dir="/work/dir", submit_dir="/work/dir", std_out="", std_err="",
              open_mode="truncate", hold=False, mem_per_node=0)),
    (("job.sh",), dict(name="job.sh")),
    (("sub/job.sh", "a", "b"), dict(name="job.sh", argv=["a", "b"])),
    (("--wrap", "true"), dict(name="wrap")),
    (("-J", "n1", "job.sh"), dict(name="n1")),
    (("-N", "2"), dict(num_nodes=2, num_tasks=2)),
    (("-N", "2-4"), dict(num_nodes=2)),
    (("-N", "2", "--ntasks-per-node", "3"), dict(num_nodes=2, num_tasks=6, ntasks_per_node=3)),
    (("-n", "4", "-c", "2"), dict(num_tasks=4, ntasks_set=True, cpus_per_task=2)),
    (("-t", "1-2:30"), dict(time_limit=1590)),
    (("--time=UNLIMITED",), dict(time_limit=-1)),
    (("--mem", "4G"), dict(mem_per_node=4096)),
    (("--mem-per-cpu", "512"), dict(mem_per_cpu=512)),
    (("--gpus-per-node", "a100:2"), dict(gpus_per_node=2, gpu_type="a100")),
    (("-G", "3"), dict(gpus=3)),
    (("-D", "sub"), dict(work_dir="/work/dir/sub", submit_dir="/work/dir")),
    (("--chdir", "/abs"), dict(work_dir="/abs")),
    (("-o", "out-%j.txt", "-e", "err-%j.txt"), dict(std_out="out-%j.txt", std_err="err-%j.txt")),
    (("--open-mode=append",), dict(open_mode="append")),
    (("-H",), dict(hold=True)),
    (("--exclusive",), dict(exclusive=True)),
    (("-p", "gpu", "-A", "lab", "-q", "high"), dict(partition="gpu", account="lab", qos="high")),
])
def test_spec_from_args(argv, expected, monkeypatch):
    monkeypatch.delenv("SBATCH_PARTITION", raising=False)
    s = spec(*argv)
    assert {k: getattr(s, k) for k in expected} == expected


@pytest.mark.parametrize("argv, message", [
    (("--time=abc",), "Invalid --time specification"),
    (("-t", "1-2-3"), "Invalid --time specification"),
    (("--mem=lots",), "--mem"),
    (("-N", "0"), "node count"),
    (("-N", "x"), "node count"),
    (("--gpus", "a:b:c"), "--gpus"),
    (("--begin", "someday"), "time"),
    (("--array=5-1",), "array"),
    (("--array=0-3%x",), "array"),
    (("--dependency=afterok:x",), "dependency"),
    (("--dependency=before:1",), "dependency"),
])
def test_spec_from_args_rejects(argv, message):
    with pytest.raises(InvalidRequest) as e:
        spec(*argv)
    assert message.lower() in e.value.message.lower()


# ---- main: the script's directives merged with the command line ----------------------------------

class FakeClient:
    """Stands in for the controller: records the spec, hands out job 123."""

    submitted: list = []

    def __init__(self, *args, **kwargs):
        pass

    def submit(self, spec):
        FakeClient.submitted.append(spec)
        return 123


@pytest.fixture
def submit(tmp_path, monkeypatch, capsys):
    """submit(script_text, *argv) -> (exit code, stdout, stderr, spec or None)."""
    import pyslurm_lite.client
    monkeypatch.setattr(pyslurm_lite.client, "Client", FakeClient)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SBATCH_PARTITION", raising=False)
    FakeClient.submitted = []

    def go(script_text, *argv):
        (tmp_path / "job.sh").write_text(script_text)
        try:  # through the CLI boundary, which maps errors to messages and exit codes
            run("sbatch", sbatch.main_args, [*argv, "job.sh"])
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err, (FakeClient.submitted[-1] if FakeClient.submitted else None)
    return go


SCRIPT = """#!/bin/bash
#SBATCH -J from-script
#SBATCH --time=10
#SBATCH -c 2
#SBATCH -o script-%j.out
echo hi
#SBATCH -N 2
"""


def test_directives_reach_the_spec(submit, tmp_path):
    code, out, err, s = submit(SCRIPT)
    assert (code, out, err) == (0, "Submitted batch job 123\n", "")
    assert (s.name, s.time_limit, s.cpus_per_task, s.std_out) == ("from-script", 10, 2, "script-%j.out")
    assert s.num_nodes == 1, "#SBATCH after the first command must be ignored"
    assert s.script == SCRIPT and s.work_dir == str(tmp_path)


@pytest.mark.parametrize("argv, field, value", [
    (("-J", "from-cli"), "name", "from-cli"),
    (("--time=20",), "time_limit", 20),
    (("-c", "1"), "cpus_per_task", 1),
    (("-o", "cli.out"), "std_out", "cli.out"),
    (("-N", "2"), "num_nodes", 2),
])
def test_command_line_overrides_script(submit, argv, field, value):
    code, _, err, s = submit(SCRIPT, *argv)
    assert code == 0, err
    assert getattr(s, field) == value
    assert s.name == ("from-cli" if field == "name" else "from-script")  # the rest is kept
def test_command_line_gres_replaces_script_gres(submit):
    code, _, err, s = submit("#!/bin/sh\n#SBATCH --gres=gpu:a100:1\ntrue\n", "--gres=gpu:2")
    assert code == 0, err
    assert s.gres == [GresRequest("gpu", "", 2)]


def test_parsable_prints_only_the_id(submit):
    code, out, err, _ = submit("#!/bin/sh\ntrue\n", "--parsable")
    assert (code, out, err) == (0, "123\n", "")


@pytest.mark.parametrize("script, argv, code, message", [
    ("#!/bin/sh\ntrue\n", ("--time=abc",), 255, "sbatch: error: Invalid --time specification"),
    ("#!/bin/sh\n#SBATCH --time=1-2-3\ntrue\n", (), 255, "sbatch: error: Invalid --time specification"),
    ("#!/bin/sh\n#SBATCH --bogus=1\ntrue\n", (), 255, "sbatch: unrecognized option '--bogus=1'"),
    ("#!/bin/sh\ntrue\n", ("--bogus",), 255, "sbatch: unrecognized option '--bogus'"),
    ("#!/bin/sh\n#SBATCH -J 'open\ntrue\n", (), 1, "sbatch: error: Invalid #SBATCH line"),
    ("echo no shebang\n", (), 1, "sbatch: error: This does not look like a batch script"),
    ("", (), 1, "sbatch: error: Batch script is empty"),
])
def test_bad_submissions_exit_with_a_message(submit, script, argv, code, message):
    got, out, err, s = submit(script, *argv)
    assert (got, out, s) == (code, "", None), err
    assert err.startswith(message), err
    assert "Traceback" not in err
