"""sacct from the controller's database on a real cluster (2 nodes x 2 CPUs, MinJobAge=2): jobs
gone from the controller's memory, the time window (-S/-E) and states (-s), steps (ID.batch,
ID.0, ID.1), every run of a requeued job (-D), array tasks, and Slurm's fields and formats."""

from __future__ import annotations

import time

import pytest

from conftest import configured_cluster, wait_final, wait_state

SHAPE = (2, 2, 2000, 0)
AN_HOUR_AGO = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 3600))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "sacct", SHAPE, extra="MinJobAge=2\n")


@pytest.fixture(scope="module")
def done(cluster, tmp_path_factory):
    """Jobs every test reads, run once: a plain one, one with two srun steps (the second fails)
    and a two-task array; each ended."""
    out = tmp_path_factory.mktemp("out")
    jobs = {
        "plain": cluster.sbatch("-J", "plain", "--comment", "hello world", "-o", "/dev/null",
                                "--wrap", "true"),
        "steps": cluster.sbatch("-J", "steps", "-o", str(out / "s.out"),
                                "--wrap", "srun true; srun -n1 false; exit 0"),
        "array": cluster.sbatch("-J", "arr", "--array=0-1", "-o", "/dev/null", "--wrap", "true"),
    }
    for name, job_id in jobs.items():
        if name != "array":
            assert wait_final(cluster, job_id) == "COMPLETED"
    for task in (0, 1):
        assert wait_final(cluster, jobs["array"] + task) == "COMPLETED"
    return jobs


def sacct(cluster, *args: str) -> list[str]:
    r = cluster.run(["sacct", *args])
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_a_job_gone_from_memory_is_listed_from_the_database(cluster, done):
    job = done["plain"]
    deadline = time.monotonic() + 15  # MinJobAge=2 and a monitor pass a second
    while time.monotonic() < deadline:
        listed = cluster.run(["squeue", "-h", "-t", "all", "-o", "%i"]).stdout.split()
        if str(job) not in listed:
            break
        time.sleep(0.5)
    assert str(job) not in listed, "MinJobAge=2: the ended job is still in the controller's memory"
    assert f"{job}|COMPLETED" in sacct(cluster, "-X", "-n", "-P", "-o", "JobID,State", "-S", AN_HOUR_AGO)
    assert f"{job}|COMPLETED" in sacct(cluster, "-X", "-n", "-P", "-o", "JobID,State")  # since midnight
    assert sacct(cluster, "-X", "-n", "-P", "-o", "JobID", "-S", "2001-01-01", "-E", "2001-01-02") == []


def test_states_select_runs_that_ended_so_within_the_window(cluster, done):
    job = str(done["plain"])
    ids = lambda *a: sacct(cluster, "-X", "-n", "-P", "-o", "JobID", "-S", AN_HOUR_AGO, "-E", "now", *a)  # noqa: E731
    assert job in ids("-s", "CD") and job in ids("-s", "completed,F")
    assert job in ids("-s", "R")  # it was running within the window
    assert job not in ids("-s", "CA")
    assert job not in sacct(cluster, "-X", "-n", "-P", "-o", "JobID", "-s", "CD")  # default: this second
    # with -s, -E defaults to -S (Slurm's rule): the window is the hour-old second alone
    assert job not in sacct(cluster, "-X", "-n", "-P", "-o", "JobID", "-s", "CD", "-S", AN_HOUR_AGO)


def test_steps_batch_and_srun_each_with_their_own_state(cluster, done):
    job = done["steps"]
    lines = sacct(cluster, "-n", "-P", "-o", "JobID,JobName,State,ExitCode,NTasks,NodeList", "-j", str(job))
    rows = {line.split("|")[0]: line.split("|")[1:] for line in lines}
    assert list(rows) == [str(job), f"{job}.batch", f"{job}.0", f"{job}.1"], lines
    assert rows[str(job)][1:3] == ["COMPLETED", "0:0"]
    assert rows[f"{job}.batch"][:4] == ["batch", "COMPLETED", "0:0", "1"]
    assert rows[f"{job}.0"][:4] == ["true", "COMPLETED", "0:0", "1"]
    assert rows[f"{job}.1"][:4] == ["false", "FAILED", "1:0", "1"]
    assert rows[f"{job}.1"][4].startswith("node")
    # one step by its id, and -X leaves steps out
    assert sacct(cluster, "-n", "-P", "-o", "JobID", "-j", f"{job}.1") == [f"{job}.1"]
    assert sacct(cluster, "-n", "-P", "-o", "JobID", "-j", f"{job}.batch") == [f"{job}.batch"]
    assert sacct(cluster, "-n", "-X", "-P", "-o", "JobID", "-j", str(job)) == [str(job)]
    assert sacct(cluster, "-n", "-X", "-P", "-o", "DerivedExitCode", "-j", str(job)) == ["1:0"]


def test_array_tasks_by_array_id_and_by_task(cluster, done):
    a = done["array"]
    assert sacct(cluster, "-n", "-X", "-P", "-o", "JobID,JobIDRaw", "-j", str(a)) == [
        f"{a}_0|{a}", f"{a}_1|{a + 1}"]
    assert sacct(cluster, "-n", "-P", "-o", "JobID", "-j", f"{a}_1") == [f"{a}_1", f"{a}_1.batch"]


def test_fields_and_fixed_width_output(cluster, done):
    job = str(done["plain"])
    [line] = sacct(cluster, "-n", "-X", "-P", "-j", job, "-o",
                   "JobIDRaw,Reason,ReqTRES,AllocTRES,Comment,User,UID,ReqCPUS,ReqNodes,"
                   "Timelimit,ElapsedRaw,Cluster,MaxRSS,TotalCPU")
    raw, reason, req, alloc, comment, user, uid, cpus, nodes, limit, elapsed, clus, rss, cpu = line.split("|")
    assert (raw, reason, comment, user, uid, cpus, nodes) == (job, "None", "hello world", "root", "0", "1", "1")
    assert req.startswith("billing=1,cpu=1,") and req.endswith(",node=1"), req
    assert alloc.startswith("billing=1,cpu=1,") and alloc.endswith(",node=1"), alloc
    # the job's line: no MaxRSS (a step's statistic); TotalCPU its steps' sampled CPU, "00:00.004"
    assert limit and elapsed.isdigit() and clus and rss == "" and cpu.startswith("00:")
    head, dashes, row = sacct(cluster, "-X", "-j", job, "-o", "JobID%20,State%-5")  # %N right, %-N left
    assert head == f"{'JobID':>20} State "
    assert dashes == f"{'-' * 20} {'-' * 5} "
    assert row == f"{job:>20} COMP+ "  # cut to width-1 and a '+'
    assert sacct(cluster, "-X", "-n", "-j", job, "-o", "JobID,State") == [f"{job:<12} {'COMPLETED':>10} "]
    r = cluster.run(["sacct", "-e"])
    assert r.returncode == 0 and "JobIDRaw" in r.stdout and "DerivedExitCode" in r.stdout
    r = cluster.run(["sacct", "-o", "JobID,Flags", "-j", job, "-X", "-n", "-P"])
    assert r.returncode == 0 and r.stdout == f"{job}|\n" and "Flags" in r.stderr  # named, not silent


def test_bad_input_is_refused(cluster, done):
    r = cluster.run(["sacct", "-o", "JobID,NoSuchField"])
    assert r.returncode == 1 and 'Invalid field requested: "NoSuchField"' in r.stderr
    r = cluster.run(["sacct", "-S", "yesterdayish"])
    assert r.returncode == 1 and "Invalid time specification" in r.stderr
    r = cluster.run(["sacct", "-s", "SLEEPING"])
    assert r.returncode == 1 and "Invalid state" in r.stderr
    r = cluster.run(["sacct", "-M", "elsewhere", "-n"])  # a filter, as Slurm's: no such cluster's jobs
    assert r.returncode == 0 and r.stdout == "", (r.stdout, r.stderr)
    assert cluster.run(["sacct", "-M", "all", "-L", "-n", "-j", str(done["plain"])]).returncode == 0


def test_requeued_job_shows_every_run_with_duplicates(cluster, tmp_path):
    job = cluster.sbatch("-o", str(tmp_path / "rq.out"), "--requeue",
                         "--wrap", '[ "${SLURM_RESTART_COUNT:-0}" != 0 ] || sleep 60')
    wait_state(cluster, job, "RUNNING")
    r = cluster.run(["scontrol", "requeue", str(job)])
    assert r.returncode == 0, r.stderr
    assert wait_final(cluster, job) == "COMPLETED"
    rows = sacct(cluster, "-D", "-X", "-n", "-P", "-o", "JobID,State", "-j", str(job))
    assert rows == [f"{job}|REQUEUED", f"{job}|COMPLETED"]
    assert sacct(cluster, "-X", "-n", "-P", "-o", "JobID,State", "-j", str(job)) == [f"{job}|COMPLETED"]
    with_steps = sacct(cluster, "-D", "-n", "-P", "-o", "JobID,State", "-j", str(job))
    assert with_steps == [f"{job}|REQUEUED", f"{job}.batch|CANCELLED", f"{job}|COMPLETED",
                          f"{job}.batch|COMPLETED"]
    assert f"{job}|REQUEUED" in sacct(cluster, "-D", "-X", "-n", "-P", "-o", "JobID,State",
                                      "-s", "RQ", "-S", AN_HOUR_AGO, "-E", "now")


def test_selection_options_and_output_modes(cluster, done):
    plain, steps = str(done["plain"]), str(done["steps"])
    ids = lambda *a: sacct(cluster, "-X", "-n", "-P", "-o", "JobID", "-S", AN_HOUR_AGO, *a)  # noqa: E731
    assert plain in ids("--name", "plain") and steps not in ids("--name", "plain")
    assert plain in ids("-r", "main") and ids("-r", "nosuchpart") == []
    assert ids("-A", "nosuchaccount") == [] and ids("-u", "nobody") == []
    assert plain in ids("-u", "root") and plain in ids("-u", "0")
    assert sacct(cluster, "-X", "-n", "-p", "-o", "JobID,State", "-j", plain) == [f"{plain}|COMPLETED|"]
    assert sacct(cluster, "-X", "-P", "--delimiter", ";", "-o", "JobID,State", "-j", plain) == [
        "JobID;State", f"{plain};COMPLETED"]
    assert sacct(cluster, "-X", "-b", "-P", "-j", plain)[0] == "JobID|State|ExitCode"
    assert sacct(cluster, "-X", "-P", "-j", plain)[0] == \
        "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode"
    long_head = sacct(cluster, "-X", "-l", "-P", "-j", plain)[0].split("|")
    assert long_head[:4] == ["JobID", "JobIDRaw", "JobName", "Partition"] and "AllocTRES" in long_head
    r = cluster.run(["sacct", "-X", "-n", "-P", "-o", "JobID", "-j", plain], env={"SACCT_FORMAT": "JobID,User"})
    assert r.stdout == f"{plain}\n"  # -o wins over SACCT_FORMAT
    r = cluster.run(["sacct", "-X", "-n", "-P", "-j", plain], env={"SACCT_FORMAT": "JobID,User"})
    assert r.stdout == f"{plain}|root\n"
