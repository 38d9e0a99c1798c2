"""End to end: a real local cluster (controller + 2 agents on loopback), driven through the real
sbatch/squeue/scancel as subprocesses. One cluster serves the whole module; every test (or test
class) cancels the jobs it leaves pending or running, so the next one starts from a quiet queue."""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
import time
import uuid

import psutil
import pytest

from conftest import wait_final, wait_state
from pyslurm_lite import config

pytestmark = pytest.mark.slow

ME = pwd.getpwuid(os.getuid()).pw_name
HEADER = "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"


def have_cli(name: str) -> bool:
    """True once pyslurm_lite.cli.<name> exists (sinfo/scontrol/sacct are written separately)."""
    return importlib.util.find_spec(f"pyslurm_lite.cli.{name}") is not None


NO_SCONTROL = pytest.mark.skipif(not have_cli("scontrol"), reason="scontrol is not written yet")


def client(cluster):
    """The Python API, in process: fast bookkeeping (the CLIs under test run as subprocesses)."""
    from pyslurm_lite.client import Client
    return Client(conf_path=str(cluster.conf), timeout=10)


def active_ids(cluster) -> set[int]:
    jobs, _ = client(cluster).jobs()
    return {j.job_id for j in jobs}


def all_ids(cluster) -> set[int]:
    jobs, _ = client(cluster).jobs(include_finished=True)
    return {j.job_id for j in jobs}


@pytest.fixture
def cancel_after(cluster):
    """A list: job ids appended to it are cancelled (and waited for) when the test ends."""
    ids: list[int] = []
    yield ids
    if ids:
        cluster.run(["scancel", *map(str, ids)])
        for job_id in ids:
            wait_final(cluster, job_id, 30)


def read_env_file(path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


# ---- a batch job: Slurm's environment and output naming ------------------------------------------

ENV_VARS = ["SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_JOB_NODELIST", "SLURM_SUBMIT_DIR",
            "SLURM_JOB_NUM_NODES", "SLURM_NTASKS", "SLURM_CPUS_ON_NODE", "SLURM_JOB_PARTITION",
            "SLURMD_NODENAME", "SLURM_CLUSTER_NAME", "CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS"]

ENV_SCRIPT = "#!/bin/bash\n#SBATCH -J found-env\n#SBATCH -o out-%j-%x.txt\n#SBATCH --time=5\n" \
             "#SBATCH --gres=gpu:2\n" + "".join(f'echo "{v}=${v}"\n' for v in ENV_VARS)


def test_batch_job_gets_slurm_env_and_named_output(cluster, tmp_path):
    (tmp_path / "job.sh").write_text(ENV_SCRIPT)
    r = cluster.run(["sbatch", "job.sh"], cwd=tmp_path)
    m = re.fullmatch(r"Submitted batch job (\d+)\n", r.stdout)
    assert r.returncode == 0 and m and r.stderr == "", (r.stdout, r.stderr)
    job_id = int(m.group(1))
    assert wait_final(cluster, job_id) == "COMPLETED"

    out = tmp_path / f"out-{job_id}-found-env.txt"
    assert out.exists(), sorted(p.name for p in tmp_path.iterdir())
    env = read_env_file(out)
    node = env.get("SLURMD_NODENAME", "")
    assert re.fullmatch(r"node[12]", node), env
    expected = {
        "SLURM_JOB_ID": str(job_id), "SLURM_JOB_NAME": "found-env", "SLURM_JOB_NODELIST": node,
        "SLURM_SUBMIT_DIR": str(tmp_path), "SLURM_JOB_NUM_NODES": "1", "SLURM_NTASKS": "1",
        "SLURM_CPUS_ON_NODE": "1", "SLURM_JOB_PARTITION": "main",
        "SLURM_CLUSTER_NAME": config.load(str(cluster.conf)).cluster_name,
    }
    assert {k: env.get(k) for k in expected} == expected
    gpus = env["CUDA_VISIBLE_DEVICES"].split(",")
    assert len(gpus) == 2 and len(set(gpus)) == 2 and set(gpus) <= {"0", "1", "2", "3"}, env
    assert env["SLURM_JOB_GPUS"].split(",") == gpus


def test_two_node_job_environment(cluster, tmp_path):
    job_id = cluster.sbatch("-N", "2", "--wrap",
                            'echo "NODES=$SLURM_JOB_NODELIST NN=$SLURM_JOB_NUM_NODES NT=$SLURM_NTASKS"',
                            cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "NODES=node[1-2] NN=2 NT=2\n"


def test_parsable_prints_only_the_id(cluster, tmp_path, cancel_after):
    r = cluster.run(["sbatch", "--parsable", "--hold", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    assert re.fullmatch(r"\d+\n", r.stdout), repr(r.stdout)
    cancel_after.append(int(r.stdout))
    assert int(r.stdout) in active_ids(cluster)


def test_wrap(cluster, tmp_path):
    job_id = cluster.sbatch("--wrap", "echo wrapped; echo $SLURM_JOB_NAME", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "wrapped\nwrap\n"


def test_script_from_stdin(cluster, tmp_path):
    job_id = cluster.sbatch(cwd=tmp_path, input="#!/bin/sh\n#SBATCH -J from-stdin\necho read-from-stdin\n")
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "read-from-stdin\n"
    r = cluster.run(["squeue", "-h", "-j", str(job_id), "-o", "%j"])
    assert r.stdout.strip() == "from-stdin"
def test_script_arguments_reach_the_script(cluster, tmp_path):
    (tmp_path / "args.sh").write_text('#!/bin/sh\necho "$#:$1:$2"\n')
    job_id = cluster.sbatch("args.sh", "one", "two words", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "2:one:two words\n"


# ---- exit codes -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def failed_job(cluster, tmp_path_factory):
    """A job that printed a line and exited 3, finished; (job id, its work dir)."""
    cwd = tmp_path_factory.mktemp("exit3")
    job_id = cluster.sbatch("--wrap", "echo before; exit 3", cwd=cwd)
    assert wait_final(cluster, job_id) == "FAILED"
    return job_id, cwd


def test_exit_code_3_is_failed(cluster, failed_job):
    job_id, cwd = failed_job
    r = cluster.run(["squeue", "-h", "-j", str(job_id), "-o", "%T|%r|%t"])
    assert r.stdout == "FAILED|NonZeroExitCode|F\n"
    assert (cwd / f"slurm-{job_id}.out").read_text() == "before\n"
    job = client(cluster).job(job_id)  # squeue has no exit code field: the API every CLI uses
    assert f"{job.exit_code}:{job.exit_signal}" == "3:0"


@pytest.mark.parametrize("cmd, expected", [
    pytest.param(["scontrol", "show", "job", "{id}"], ["JobState=FAILED", "ExitCode=3:0"],
                 id="scontrol", marks=NO_SCONTROL),
    pytest.param(["sacct", "-X", "-n", "-P", "-j", "{id}", "-o", "State,ExitCode"], ["FAILED|3:0"],
                 id="sacct", marks=pytest.mark.skipif(not have_cli("sacct"),
                                                      reason="sacct is not written yet")),
])
def test_exit_code_3_shown_as_slurm_does(cluster, failed_job, cmd, expected):
    job_id, _ = failed_job
    r = cluster.run([c.format(id=job_id) for c in cmd])
    assert r.returncode == 0, r.stderr
    assert [e for e in expected if e not in r.stdout] == [], r.stdout


def test_exit_code_0_is_completed(cluster, tmp_path):
    job_id = cluster.sbatch("--wrap", "true", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    r = cluster.run(["squeue", "-h", "-j", str(job_id), "-o", "%T|%r|%t"])
    assert r.stdout.strip() == "COMPLETED|None|CD"


# ---- output files -------------------------------------------------------------------------------------

def test_separate_error_file(cluster, tmp_path):
    job_id = cluster.sbatch("-o", "o-%j.txt", "-e", "e-%j.txt", "--wrap",
                            "echo to-out; echo to-err >&2", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"o-{job_id}.txt").read_text() == "to-out\n"
    assert (tmp_path / f"e-{job_id}.txt").read_text() == "to-err\n"


def test_stderr_joins_stdout_without_e(cluster, tmp_path):
    job_id = cluster.sbatch("--wrap", "echo to-out; echo to-err >&2", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "to-out\nto-err\n"


@pytest.mark.parametrize("flags, expected", [
    (["--open-mode=append"], "before\nafter\n"),
    (["--open-mode=truncate"], "after\n"),
    ([], "after\n"),  # truncate is the default
])
def test_open_mode(cluster, tmp_path, flags, expected):
    (tmp_path / "log.txt").write_text("before\n")
    job_id = cluster.sbatch(*flags, "-o", "log.txt", "--wrap", "echo after", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / "log.txt").read_text() == expected


@pytest.mark.parametrize("flag", [["-D", "sub"], ["--chdir=sub"], ["--chdir", "{abs}"]])
def test_chdir(cluster, tmp_path, flag):
    sub = tmp_path / "sub"
    sub.mkdir()
    flag = [f.replace("{abs}", str(sub)) for f in flag]
    job_id = cluster.sbatch(*flag, "--wrap", 'echo "PWD=$(pwd) SUBMIT=$SLURM_SUBMIT_DIR"', cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert not (tmp_path / f"slurm-{job_id}.out").exists()  # output is relative to the work dir
    assert (sub / f"slurm-{job_id}.out").read_text() == f"PWD={sub} SUBMIT={tmp_path}\n"


# ---- --export ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags, expected", [
    ([], "FOO=[from-submitter] VAR=[] ID=[set]"),
    (["--export=ALL"], "FOO=[from-submitter] VAR=[] ID=[set]"),
    (["--export=NONE"], "FOO=[] VAR=[] ID=[set]"),
    (["--export=VAR=val"], "FOO=[] VAR=[val] ID=[set]"),
    (["--export=ALL,VAR=val"], "FOO=[from-submitter] VAR=[val] ID=[set]"),
    (["--export=FOO"], "FOO=[from-submitter] VAR=[] ID=[set]"),
])
def test_export(cluster, tmp_path, flags, expected):
    job_id = cluster.sbatch(*flags, "--wrap",
                            'echo "FOO=[$FOO] VAR=[$VAR] ID=[${SLURM_JOB_ID:+set}]"',
                            cwd=tmp_path, env={"FOO": "from-submitter"})
    assert wait_final(cluster, job_id) == "COMPLETED"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == expected + "\n"


# ---- hold, squeue, scancel ---------------------------------------------------------------------------

def test_hold_then_scancel(cluster, tmp_path, cancel_after):
    job_id = cluster.sbatch("--hold", "-J", "held", "--wrap", "echo ran", cwd=tmp_path)
    cancel_after.append(job_id)  # only if the test fails before its own scancel
    assert cluster.run(["squeue", "-h", "-j", str(job_id), "-o", "%T|%r"]).stdout == "PENDING|JobHeldUser\n"
    time.sleep(1.5)  # several scheduling passes: a held job never starts
    r = cluster.run(["squeue", "-h", "-j", str(job_id), "-o", "%T|%r|%R"])
    assert r.stdout == "PENDING|JobHeldUser|(JobHeldUser)\n"
    r = cluster.run(["scancel", str(job_id)])
    assert (r.returncode, r.stderr) == (0, "")
    assert wait_final(cluster, job_id, 15) == "CANCELLED"
    assert not (tmp_path / f"slurm-{job_id}.out").exists()


def test_squeue_default_header_and_row(cluster, tmp_path, cancel_after):
    assert active_ids(cluster) == set(), "an earlier test left jobs behind"
    r = cluster.run(["squeue"])
    assert (r.returncode, r.stdout, r.stderr) == (0, HEADER + "\n", "")
    job_id = cluster.sbatch("--hold", "-J", "a-long-job-name", "--wrap", "true", cwd=tmp_path)
    cancel_after.append(job_id)
    r = cluster.run(["squeue"])
    row = f"{job_id:>18} {'main':>9} {'a-long-j':>8} {ME[:8]:>8} {'PD':>2} {'0:00':>10} {'1':>6} (JobHeldUser)"
    assert r.stdout.splitlines() == [HEADER, row]


@pytest.fixture(scope="class")
def two_jobs(cluster, tmp_path_factory):
    """One running sleep job ('runner') and one held job ('waiter'), shared by a test class."""
    cwd = tmp_path_factory.mktemp("squeue")
    running = cluster.sbatch("-J", "runner", "--wrap", "sleep 120", cwd=cwd)
    held = cluster.sbatch("-J", "waiter", "--hold", "--wrap", "true", cwd=cwd)
    try:
        assert wait_state(cluster, running, "RUNNING") == "RUNNING"
        yield running, held
    finally:
        cluster.run(["scancel", str(running), str(held)])
        wait_final(cluster, running, 30)
        wait_final(cluster, held, 30)


class TestSqueueFilters:
    """squeue's filters and formats over one running and one held job, submitted once."""

    @pytest.mark.parametrize("args, which", [
        (["-t", "PD"], {"held"}),
        (["-t", "PENDING"], {"held"}),
        (["-t", "R"], {"running"}),
        (["-t", "running,pending"], {"running", "held"}),
        (["-t", "R", "-t", "PD"], {"running", "held"}),
        (["-u", ME], {"running", "held"}),
        (["--user=nobody"], set()),
        (["-j", "{running}"], {"running"}),
        (["--jobs={held}"], {"held"}),
        (["-j", "{running},{held}"], {"running", "held"}),
        (["-n", "waiter"], {"held"}),
        (["-p", "main"], {"running", "held"}),
        ([], {"running", "held"}),
    ])
    def test_filters(self, cluster, two_jobs, args, which):
        running, held = two_jobs
        ids = {"running": running, "held": held}
        args = [a.format(running=running, held=held) for a in args]
        r = cluster.run(["squeue", "-h", "-o", "%i", *args])
        assert r.returncode == 0, r.stderr
        assert sorted(map(int, r.stdout.split())) == sorted(ids[w] for w in which)

    def test_format(self, cluster, two_jobs):
        running, held = two_jobs
        r = cluster.run(["squeue", "-o", "%i|%j|%T|%r|%D|%C|%P"])
        lines = r.stdout.splitlines()
        assert lines[0] == "JOBID|NAME|STATE|REASON|NODES|CPUS|PARTITION"
        assert lines[1:] == [f"{held}|waiter|PENDING|JobHeldUser|1|1|main",   # pending first, as Slurm
                             f"{running}|runner|RUNNING|None|1|1|main"]

    def test_widths_and_noheader(self, cluster, two_jobs):
        running, _ = two_jobs
        # %.N right-justifies, %N left-justifies, longer values are cut to N
        r = cluster.run(["squeue", "-h", "-j", str(running), "-o", "%.8i:%8j:%.3j:%N:%t"])
        assert re.fullmatch(rf"{running:>8}:runner  :run:node[12]:R\n", r.stdout), repr(r.stdout)
        r = cluster.run(["squeue", "--noheader", "-j", str(running)])
        assert len(r.stdout.splitlines()) == 1 and "JOBID" not in r.stdout
    def test_job_filtered_out_by_state_is_not_an_error(self, cluster, two_jobs):
        running, held = two_jobs
        r = cluster.run(["squeue", "-h", "-t", "CD", "-j", f"{running},{held}"])
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


def test_scancel_running_job_kills_its_processes(cluster, tmp_path, cancel_after):
    marker = f"{1000 + uuid.uuid4().int % 9000}.{uuid.uuid4().int % 10**6:06d}"  # unique sleep arg
    job_id = cluster.sbatch("--wrap", f"echo started; sleep {marker}; echo not-reached", cwd=tmp_path)
    cancel_after.append(job_id)  # only if the test fails before its own scancel
    assert wait_state(cluster, job_id, "RUNNING") == "RUNNING"
    procs = wait_for_procs(marker, present=True)
    assert procs, f"no process with 'sleep {marker}' in its command line"
    r = cluster.run(["scancel", str(job_id)])
    assert (r.returncode, r.stderr) == (0, "")
    assert wait_final(cluster, job_id, 30) == "CANCELLED"
    assert wait_for_procs(marker, present=False) == [], "the job's processes outlived scancel"
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "started\n"


def wait_for_procs(marker: str, present: bool, timeout: float = 10.0) -> list[int]:
    """PIDs whose command line contains `sleep MARKER`, once some exist (present) or none do."""
    deadline = time.monotonic() + timeout
    while True:
        pids = []
        for p in psutil.process_iter(["pid", "cmdline", "status"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if f"sleep {marker}" in cmd and p.info["status"] != psutil.STATUS_ZOMBIE:
                pids.append(p.info["pid"])
        if bool(pids) == present or time.monotonic() > deadline:
            return pids
        time.sleep(0.1)


def test_scancel_of_a_completed_job_is_not_an_error(cluster, tmp_path):
    job_id = cluster.sbatch("--wrap", "true", cwd=tmp_path)
    assert wait_final(cluster, job_id) == "COMPLETED"
    r = cluster.run(["scancel", str(job_id)])  # Slurm: cancelling a finished job is not an error
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert cluster.state(job_id) == "COMPLETED"


# ---- bad input: a clear message, exit != 0, no traceback, nothing queued -----------------------------

BAD_FILES = {
    "bad_directive.sh": "#!/bin/bash\n#SBATCH --bogus-option=1\necho x\n",
    "bad_time.sh": "#!/bin/bash\n#SBATCH --time=1-2-3\necho x\n",
    "no_shebang.sh": "echo no shebang\n",
    "script.sh": "#!/bin/sh\ntrue\n",
    "broken.conf": "NodeName=node[1-2 CPUs=oops\n",
}


def bad(cmd, words, conf=None, *, id, marks=()):
    """One bad input: the command, words its error message must contain, and the slurm.conf
    (in the test's directory) to point PYSLURM_LITE_CONF at instead of the cluster's."""
    return pytest.param(cmd, words, conf, id=id, marks=marks)


BAD_INPUTS = [
    bad(["sbatch", "--time=abc", "--wrap=true"], "time", id="bad-time"),
    bad(["sbatch", "--gres=gpu:99", "--wrap=true"], "not available", id="too-many-gpus"),
    bad(["sbatch", "--gres=tpu:1", "--wrap=true"], "gres", id="unknown-gres"),
    bad(["sbatch", "-p", "nosuchpartition", "--wrap=true"], "partition", id="unknown-partition"),
    bad(["sbatch", "--mem=999999999", "--wrap=true"], "memory", id="too-much-memory"),
    bad(["sbatch", "-c", "9999", "--wrap=true"], "not available", id="too-many-cpus"),
    bad(["sbatch", "-N", "50", "--wrap=true"], "node count", id="too-many-nodes"),
    bad(["sbatch", "--nosuchoption", "--wrap=true"], "unrecognized option", id="unknown-option"),
    bad(["sbatch", "bad_directive.sh"], "unrecognized option", id="bad-directive"),
    bad(["sbatch", "bad_time.sh"], "time", id="bad-time-directive"),
    bad(["sbatch", "no_shebang.sh"], "#!", id="no-shebang"),
    bad(["sbatch", "does_not_exist.sh"], "does_not_exist.sh", id="missing-script"),
    bad(["sbatch", "--array=5-1", "--wrap=true"], "array", id="bad-array"),
    bad(["sbatch", "--mem=lots", "--wrap=true"], "mem", id="bad-mem"),
    bad(["sbatch", "-N", "0", "--wrap=true"], "node count", id="zero-nodes"),
    bad(["sbatch", "--wrap=true", "script.sh"], "--wrap", id="wrap-and-script"),
    bad(["scancel", "99999999"], "invalid job id", id="scancel-unknown-job"),
    bad(["scancel", "abc"], "invalid job id", id="scancel-bad-id"),
    bad(["scancel"], "no job identification", id="scancel-nothing"),
    bad(["squeue", "-j", "abc"], "invalid job id", id="squeue-bad-id"),
    bad(["squeue", "-t", "WEIRD"], "invalid job state", id="squeue-bad-state"),
    bad(["squeue", "--nosuchoption"], "unrecognized option", id="squeue-unknown-option"),
    bad(["squeue"], "broken.conf:1", "broken.conf", id="broken-config-squeue"),
    bad(["sbatch", "--wrap=true"], "broken.conf:1", "broken.conf", id="broken-config-sbatch"),
    bad(["squeue"], "missing.conf", "missing.conf", id="missing-config"),
    bad(["sbatch", "--wrap=true"], "unable to contact", "down.conf", id="unreachable-sbatch"),
    bad(["squeue"], "unable to contact", "down.conf", id="unreachable-squeue"),
    bad(["scancel", "1"], "unable to contact", "down.conf", id="unreachable-scancel"),
    bad(["scontrol", "show", "job", "99999999"], "invalid job id", id="scontrol-unknown-job",
        marks=NO_SCONTROL),
    bad(["scontrol", "update", "NodeName=nosuchnode", "State=DRAIN", "Reason=x"], "nosuchnode",
        id="scontrol-unknown-node", marks=NO_SCONTROL),
]


@pytest.mark.parametrize("cmd, words, conf", BAD_INPUTS)
def test_bad_input(cluster, tmp_path, cmd, words, conf):
    for name, text in BAD_FILES.items():
        (tmp_path / name).write_text(text)
    down = re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=1", cluster.conf.read_text())
    (tmp_path / "down.conf").write_text(down)
    env = {"PYSLURM_LITE_CONF": str(tmp_path / conf)} if conf else {}
    before, active = all_ids(cluster), active_ids(cluster)

    r = cluster.run(cmd, cwd=tmp_path, env=env, timeout=30)

    assert r.returncode != 0, f"exit 0 for {cmd}: {r.stdout!r}"
    assert r.stderr.strip(), "no message on stderr"
    assert words.lower() in r.stderr.lower(), r.stderr
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    assert r.stdout == "", "nothing on stdout when the command fails"
    after = all_ids(cluster)
    assert after <= before and active_ids(cluster) == active, f"the queue changed: {after - before}"
