"""Nothing silent: every option sbatch, salloc and srun accept either changes the job they submit
or prints a warning naming it; every slurm.conf key config.py knows is read by some module.

The walk is over the parsers themselves (argparse's actions), so a new option is checked the day
it is added: one accepted and ignored without a word fails here. Options that shape what the
command does rather than the job are listed, each with where its effect is tested.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re

import pytest

from pyslurm_lite import config
from pyslurm_lite.cli import jobopts, salloc, sbatch, srun

# A value for each option that takes one; the others get "x" (they only have to warn).
SAMPLES = {
    "propagate": "CORE",
    "nodes": "2-3", "ntasks": "4", "cpus_per_task": "2", "ntasks_per_node": "2", "mincpus": "3",
    "mem": "0", "mem_per_cpu": "100", "mem_per_gpu": "100", "time": "5", "gres": "gpu:1",
    "gpus": "2", "gpus_per_node": "2", "gpus_per_task": "1", "cpus_per_gpu": "2",
    "export": "NONE", "open_mode": "append", "begin": "now+60", "exclusive": "user",
    "nice": "5", "nodelist": "node1", "exclude": "node2", "signal": "USR1@60", "array": "0-3",
    "dependency": "afterok:1", "kill_on_invalid_dep": "yes", "immediate": "5",
    "wait_all_nodes": "1", "deadline": "now+1hour", "priority": "10",
    "mail_type": "END,FAIL", "switches": "1@5", "gpu_bind": "closest", "gres_flags": "enforce-binding",
}
# What an option's effect needs before it (its baseline and its own run both start with these)
CONTEXT = {"--use-min-nodes": ["-N", "1-3"], "--requeue": ["--no-requeue"]}

# Options that decide what the command itself does, not the job it submits.
COMMAND_BEHAVIOUR = {
    "help": "prints the usage",
    "quiet": "no 'Submitted batch job' line (tests/e2e/test_foundation.py)",
    "parsable": "the id alone (tests/e2e/test_foundation.py)",
    "wait": "sbatch -W waits for the end (tests/e2e/test_foundation.py)",
    "wrap": "the script itself (test_sbatch_parse.py)",
    "immediate": "withdrawn unless it starts at once (tests/e2e/test_placement.py)",
    "no_shell": "salloc runs no command",
    "no_bell": "no bell is ever rung, as asked",
    "ignore_pbs": "#PBS lines are never read here, as asked",
    "wait_all_nodes": "nodes are never booted for a job here: it starts when they are up, as asked",
}
# srun's own options, carried out in its step path (cli/srun.py), not in a JobSpec.
SRUN_STEP = {
    "pty": "task 0 on a pseudo terminal (tests/e2e/test_pty.py)",
    "label": "task id before each line (Output)",
    "unbuffered": "output forwarded as written (StepLaunch.unbuffered)",
    "overlap": "the step shares CPUs with others (CreateStep.overlap)",
    "exact": "only the CPUs the step asks (CreateStep.exclusive)",
    "jobid": "the allocation the step runs in",
    "kill_on_bad_exit": "a task's bad exit ends the step (StepSession.kill_on_bad_exit)",
    "verbose": "srun's verbose lines",
    "distribution": "task layout over nodes (H4, acceptance 08-parity sub-check 8)",
    "cpu_bind": "tasks bound to their CPUs (H4, acceptance 08-parity sub-check 8)",
    # run on the node around each task (StepLaunch.task_prolog/task_epilog; agent/taskprolog.py)
    "task_prolog": "its export/unset/print lines shape the task (tests/e2e/test_task_prolog.py)",
    "task_epilog": "run after each task ends (tests/e2e/test_task_prolog.py)",
    "mpi": "the step's PMI server and SLURM_MPI_TYPE (agent/pmi.py, tests/e2e/test_pmi2.py)",
}
PARSERS = {"sbatch": sbatch.build_parser, "salloc": salloc.build_parser, "srun": srun.build_parser}
POSITIONALS = ["--wrap", "true"]


@functools.lru_cache(maxsize=None)
def _options(prog: str) -> tuple:
    """(longest option string, action) for each option of the command's parser."""
    return tuple((max(a.option_strings, key=len), a) for a in PARSERS[prog]()._actions
                 if a.option_strings)


def _cases():
    seen = set()
    for prog in PARSERS:
        for option, action in _options(prog):
            if (prog, action.dest, option) not in seen:
                seen.add((prog, action.dest, option))
                yield pytest.param(prog, option, id=f"{prog} {option}")


def _argv(prog: str, option: str) -> list[str]:
    action = dict(_options(prog))[option]
    if action.nargs == 0:
        return [option]
    return [f"{option}={SAMPLES.get(action.dest, 'x')}"]


def _spec(prog: str, argv: list[str], capsys):
    """(JobSpec, stderr) for these arguments, as the command would build them."""
    capsys.readouterr()
    parser = PARSERS[prog]()
    tail = POSITIONALS if prog == "sbatch" else ["true"]
    ns = parser.parse_args(argv + tail)
    ns.script, ns.script_args = None, []
    ns.wrap = getattr(ns, "wrap", None)
    spec = sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")
    err = capsys.readouterr().err
    fields = dataclasses.asdict(spec)
    fields.pop("environment")  # the caller's, the same in both
    return fields, err


@pytest.mark.parametrize("prog, option", list(_cases()))
def test_every_option_changes_the_job_or_warns(prog, option, capsys, monkeypatch):
    monkeypatch.delenv("SBATCH_EXPORT", raising=False)
    action = dict(_options(prog))[option]
    if action.dest in COMMAND_BEHAVIOUR or (prog == "srun" and action.dest in SRUN_STEP):
        return
    context = CONTEXT.get(option, [])
    base, _ = _spec(prog, context, capsys)
    spec, err = _spec(prog, context + _argv(prog, option), capsys)
    changed = {k for k in spec if spec[k] != base[k]}
    named = re.search(rf"{prog}: warning: .*{re.escape(option)}", err)
    assert changed or named, f"{prog} {option}: accepted, but the job is the same and nothing was said"


def test_a_warning_names_the_option_once_whatever_its_source(capsys, monkeypatch, tmp_path):
    """From the command line, an #SBATCH directive and an input variable: one line."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --hint=compute_bound\ntrue\n")
    monkeypatch.setenv("SBATCH_HINT", "memory_bound")
    parser = sbatch.build_parser()
    sbatch.merged_options(parser, ["--hint=nomultithread", str(script)])
    err = capsys.readouterr().err
    assert err == f"sbatch: warning: --hint=nomultithread {jobopts.IGNORED}\n"
    parser = sbatch.build_parser()
    monkeypatch.delenv("SBATCH_HINT")
    sbatch.merged_options(parser, [str(script)])
    assert capsys.readouterr().err == f"sbatch: warning: --hint=compute_bound {jobopts.IGNORED}\n"


def test_srun_implements_what_it_does_not_warn_about():
    """--cpu-bind and --distribution are srun's (its step path); sbatch and salloc warn."""
    for option in ("--cpu-bind", "--distribution"):
        action = dict(_options("sbatch"))[option]
        assert "srun" in action.implemented_by and "sbatch" not in action.implemented_by


# ---- slurm.conf -----------------------------------------------------------------------------
# config.py included: some keys are read through Config's own properties (db_url, key_path)
SOURCES = [p for p in pathlib.Path(config.__file__).parent.rglob("*.py") if "_proto" not in p.parts]
TEXT = "\n".join(p.read_text() for p in SOURCES)
@pytest.mark.parametrize("key, attr", [(k, v[0]) for k, v in config._SIMPLE_KEYS.items()])
def test_every_slurm_conf_key_is_read_somewhere(key, attr):
    """A key config.py stores in a Config field is read by some module (else it belongs in
    Config.ignored, which the daemons warn about at start). `.attr` is how every reader
    spells it; the field's declaration and the key table do not."""
    assert re.search(rf"\.{attr}\b", TEXT), f"slurm.conf {key} is parsed into Config.{attr}, read nowhere"


@pytest.mark.parametrize("key", sorted(config.EXTRA_READ))
def test_every_extra_key_said_read_is_read(key):
    assert re.search(rf"extra(\.get\(|\[)\s*['\"]{key}['\"]", TEXT), f"{key} is in EXTRA_READ, read nowhere"


def test_an_unknown_slurm_conf_key_is_named_in_ignored():
    cfg = config.parse("ClusterName=c\nNoSuchKey=1\nNodeName=n1 CPUs=1 Bogus=2\n"
                       "PartitionName=p Nodes=n1 Whatever=3\n")
    ignored = " ".join(cfg.ignored).lower()
    for item in ("nosuchkey=1", "bogus=2", "whatever=3"):
        assert item in ignored


def test_accounting_words_and_weights_without_effect_are_named_in_ignored():
    """AccountingStorageEnforce=safe/wckeys/nojobs/nosteps and weights of TRES no job counts
    (energy, licenses) are accepted, as Slurm's slurm.conf has them, and named at start."""
    cfg = config.parse("AccountingStorageEnforce=associations,limits,qos,safe,nojobs\n"
                       "PriorityWeightTRES=GRES/gpu=1000,energy=5\nNodeName=n1 CPUs=1\n"
                       "PartitionName=p Nodes=n1 TRESBillingWeights=\"CPU=1.0,license/matlab=3\"\n")
    ignored = " ".join(cfg.ignored)
    for item in ("AccountingStorageEnforce=safe", "AccountingStorageEnforce=nojobs",
                 "energy=5", "license/matlab=3"):
        assert item in ignored, ignored
    for done in ("=associations", "=limits", "=qos", "gres/gpu", "cpu="):
        assert done not in ignored, ignored
