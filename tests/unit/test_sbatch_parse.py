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


# ---- options with an optional value, -N ranges, -w files, input variables (H3) ------------------

@pytest.mark.parametrize("argv, attrs", [
    # getopt's optional_argument: only an attached value; the next word is the script
    (["--exclusive", "job.sh"], {"exclusive": "exclusive", "script": "job.sh"}),
    (["--exclusive=user", "job.sh"], {"exclusive": "user", "script": "job.sh"}),
    (["--exclus", "job.sh"], {"exclusive": "exclusive", "script": "job.sh"}),  # a prefix, bare
    (["-I", "job.sh"], {"immediate": "", "script": "job.sh"}),
    (["-I5", "job.sh"], {"immediate": "5", "script": "job.sh"}),
    (["--nice", "job.sh"], {"nice": 100, "script": "job.sh"}),
    # what follows the script is the script's own, untouched
    (["job.sh", "--exclusive", "-I"], {"exclusive": None, "script_args": ["--exclusive", "-I"]}),
    (["-J", "x", "--exclusive", "job.sh"], {"name": "x", "exclusive": "exclusive"}),
    (["-Jx", "--exclusive", "job.sh"], {"name": "x", "exclusive": "exclusive"}),
])
def test_optional_values_are_attached_only(argv, attrs):
    ns = sbatch.build_parser().parse_args(argv)
    assert {k: getattr(ns, k) for k in attrs} == attrs


def test_salloc_immediate_leaves_the_command_alone():
    from pyslurm_lite.cli import salloc
    ns = salloc.build_parser().parse_args(["-I", "true"])
    assert (ns.immediate, ns.command) == ("", "true")


@pytest.mark.parametrize("argv, fields", [
    (["-N", "2-4"], {"num_nodes": 2, "max_nodes": 4, "num_tasks": 2}),
    (["-N", "2-2"], {"num_nodes": 2, "max_nodes": 0}),
    (["-N", "1-3", "--use-min-nodes"], {"num_nodes": 1, "max_nodes": 0}),
    (["-w", "n[1-3]"], {"num_nodes": 3, "num_tasks": 3, "nodelist": "n[1-3]"}),
    (["-w", "n[1-2]", "-N", "1-4"], {"num_nodes": 2, "max_nodes": 4}),
    (["--mem=0"], {"mem_per_node": 0, "mem_whole_node": True}),
    (["--exclusive"], {"exclusive": True, "exclusive_user": False}),
    (["--exclusive=user"], {"exclusive": False, "exclusive_user": True}),
    (["--exclusive=mcs"], {"exclusive": True, "exclusive_user": False}),
    (["--mincpus=4", "-O"], {"min_cpus_per_node": 4, "overcommit": True}),
    (["--no-requeue"], {"requeue": False}),
    (["--no-requeue", "--requeue"], {"requeue": True}),  # the last one given wins
])
def test_placement_options_in_the_spec(argv, fields, monkeypatch):
    ns = sbatch.build_parser().parse_args(argv + ["--wrap", "true"])
    spec = sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")
    assert {k: getattr(spec, k) for k in fields} == fields


@pytest.mark.parametrize("argv, message", [
    (["-N", "3-2"], "Invalid node count specification: 3-2"),
    (["--exclusive=bogus"], "Invalid --exclusive specification: bogus"),
    (["--mincpus=0"], "Invalid --mincpus specification: 0"),
    (["-w", "/nonexistent/hosts"], "Unable to open file /nonexistent/hosts"),
])
def test_bad_placement_options(argv, message):
    ns = sbatch.build_parser().parse_args(argv + ["--wrap", "true"])
    with pytest.raises(InvalidRequest) as e:
        sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")
    assert e.value.message.startswith(message)


def test_nodelist_from_a_file(tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("n1\nn3, n4\n")
    ns = sbatch.build_parser().parse_args(["-w", str(hosts), "--wrap", "true"])
    spec = sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")
    assert (spec.nodelist, spec.num_nodes) == ("n1,n3,n4", 3)


def test_input_variables_sit_between_command_line_and_directives(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH -p fromdirective -A dacct -t 5\ntrue\n")
    env = {"SBATCH_PARTITION": "fromenv", "SBATCH_ACCOUNT": "eacct", "SBATCH_NO_REQUEUE": "1",
           "SBATCH_EXCLUSIVE": "", "SBATCH_OVERCOMMIT": "no"}  # "no": a flag not set
    parser = sbatch.build_parser()
    ns, _ = sbatch.merged_options(parser, ["-A", "cacct", str(script)], env)
    spec = sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")
    assert (spec.partition, spec.account, spec.time_limit, spec.requeue, spec.exclusive,
            spec.overcommit) == ("fromenv", "cacct", 5, False, True, False)


def test_salloc_reads_salloc_variables():
    from pyslurm_lite.cli import salloc
    ns = salloc.parse_options(["-p", "cli", "true"], {"SALLOC_PARTITION": "env", "SALLOC_QOS": "q",
                                                      "SBATCH_QOS": "not-mine"})
    assert (ns.partition, ns.qos, ns.command) == ("cli", "q", "true")
