"""sacctmgr and AccountingStorageEnforce=associations,limits,qos on a real cluster, with real
unprivileged users (useradd): accounts and users in the database, the default account, the QOS
an association allows, limits held by the scheduler with Slurm's reasons, refusals for users who
are not operators, and the database surviving a controller restart."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import Cluster, configured_cluster, wait_final, wait_state
from userkit import as_user, drop_user, make_user, need_root, user_env, user_venv

pytestmark = [pytest.mark.root]

SHAPE = (2, 2, 2000, 2)  # nodes, CPUs, MiB, GPUs
EXTRA = ("AccountingStorageEnforce=associations,limits,qos\n"
         "QOSName=fromconf Priority=5\n")
INVALID_ACCOUNT = "Invalid account or account/partition combination specified"


@dataclass
class Lab:
    cluster: Cluster
    phys: object  # pwd entries
    bio: object
    stranger: object  # no association at all
    bin_dir: str

    def as_(self, user, cmd: str):
        env = user_env(user, PATH=f"{self.bin_dir}:/usr/bin:/bin", PYSLURM_LITE_CONF=str(self.cluster.conf))
        return as_user(user, cmd, env=env, cwd=user.pw_dir)

    def mgr(self, *args: str):
        r = self.cluster.run(["sacctmgr", *args])
        return r

    def ok(self, *args: str) -> str:
        r = self.mgr(*args)
        assert r.returncode == 0, f"sacctmgr {shlex.join(args)}: rc={r.returncode} {r.stdout!r} {r.stderr!r}"
        return r.stdout

    def rows(self, *args: str) -> list[list[str]]:
        return [line.split("|") for line in self.ok("show", *args, "-P", "-n").splitlines()]

    def sbatch(self, *args: str) -> int:
        """As root, output in the cluster's directory (not the tests' working directory)."""
        return self.cluster.sbatch(*args, cwd=self.cluster.dir)

    def queued(self, user) -> int:
        r = self.cluster.run(["squeue", "-h", "-u", user.pw_name])
        return len(r.stdout.splitlines())


def _open_up(cluster: Cluster) -> None:
    """Users reach slurm.conf and the auth sockets, as /etc and /run (tmp dirs are 0700)."""
    for parent in [cluster.dir, *cluster.dir.parents]:
        if str(parent) in ("/", "/tmp"):
            break
        os.chmod(parent, os.stat(parent).st_mode | 0o011)
    run = cluster.dir / "run"
    os.chmod(run, os.stat(run).st_mode | 0o055)


class _OpenTmp:
    """mktemp() under /tmp itself: pytest makes /tmp/pytest-of-root 0700 again whenever another
    session starts, which would lock the users out of slurm.conf half way through."""

    def __init__(self):
        self.made: list[Path] = []

    def mktemp(self, name: str) -> Path:
        self.made.append(Path(tempfile.mkdtemp(prefix=f"pyslurm-lite-{name}-", dir="/tmp")))
        return self.made[-1]


@pytest.fixture(scope="module")
def lab():
    need_root()
    made, tmp = [], _OpenTmp()
    try:
        for prefix in ("placp", "placb", "placs"):
            made.append(make_user(prefix))
        gen = configured_cluster(tmp, "sacctmgr", SHAPE, extra=EXTRA)
        cluster = next(gen)
        try:
            _open_up(cluster)
            yield Lab(cluster, *made, user_venv(made[0]))
        finally:
            gen.close()
    finally:
        for u in made:
            drop_user(u)
        for d in tmp.made:
            shutil.rmtree(d, ignore_errors=True)


def test_bootstrap_root_and_imported_qos(lab):
    assert ["root", "", "1"] in lab.rows("assoc", "format=Account,User,Fairshare")
    assert ["root", "root", "1"] in lab.rows("assoc", "format=Account,User,Fairshare")
    names = [r[0] for r in lab.rows("qos", "format=Name,Priority")]
    assert "normal" in names and ["fromconf", "5"] in lab.rows("qos", "format=Name,Priority")
    log = (lab.cluster.dir / "controller.log").read_text()
    assert "imported QOS fromconf from slurm.conf" in log


def test_accounts_users_and_show_assoc(lab):
    p, b = lab.phys.pw_name, lab.bio.pw_name
    out = lab.ok("-i", "add", "account", "physics", "Fairshare=3")
    assert out.startswith(" Adding Account(s)\n  physics\n Settings\n  Description     = Account Name\n")
    lab.ok("-i", "add", "account", "bio", "Fairshare=1")
    out = lab.ok("-i", "add", "user", p, "Account=physics")
    assert f" Adding User(s)\n  {p}\n Settings =\n  Default Account = physics\n" in out
    lab.ok("-i", "add", "user", b, "Account=bio")
    lab.ok("-i", "add", "user", "root", "Account=physics")
    text = lab.ok("show", "assoc", "format=Account,User,Fairshare", "-P")
    lines = text.splitlines()
    assert lines[0] == "Account|User|Share"
    for row in ("physics||3", "bio||1", f"physics|{p}|1", f"bio|{b}|1", "physics|root|1"):
        assert row in lines, text
    # root keeps its first account as its default; the new users get theirs
    assert ["root", "root"] in lab.rows("user", "format=User,DefAcct")
    assert [p, "physics"] in lab.rows("user", "format=User,DefaultAccount")


def test_default_account_and_account_checked_at_submit(lab):
    before = lab.queued(lab.bio)
    r = lab.as_(lab.bio, "sbatch -A physics --wrap true")
    assert r.returncode != 0 and INVALID_ACCOUNT in r.stderr and "Traceback" not in r.stderr
    assert lab.queued(lab.bio) == before
    r = lab.as_(lab.stranger, "sbatch --wrap true")
    assert r.returncode != 0 and INVALID_ACCOUNT in r.stderr
    r = lab.as_(lab.bio, "sbatch --parsable --wrap true")
    assert r.returncode == 0, r.stderr
    job = int(r.stdout.strip())
    assert wait_final(lab.cluster, job) == "COMPLETED"
    acct = lab.cluster.run(["sacct", "-X", "-n", "-P", "-j", str(job), "-o", "Account,QOS"]).stdout
    assert acct.splitlines()[0] == "bio|normal"


def test_qos_allowed_for_one_association_only(lab):
    p = lab.phys.pw_name
    lab.ok("-i", "add", "qos", "high", "Priority=100")
    r = lab.as_(lab.phys, "sbatch --qos=high --wrap true")
    assert r.returncode != 0 and "Invalid qos specification" in r.stderr
    lab.ok("-i", "modify", "user", p, "set", "QOS=normal,high", "DefaultQOS=normal")
    assert [p, "physics", "normal,high", "normal"] in lab.rows("assoc", "format=User,Account,QOS,DefQOS")
    r = lab.as_(lab.phys, "sbatch --parsable --qos=high --wrap true")
    assert r.returncode == 0, r.stderr
    job = int(r.stdout.strip())
    assert wait_final(lab.cluster, job) == "COMPLETED"
    q = lab.cluster.run(["sacct", "-X", "-n", "-P", "-j", str(job), "-o", "QOS"]).stdout
    assert q.splitlines()[0] == "high"
    # sacct -q knows the QOS the database holds, not only slurm.conf's
    by_qos = lab.cluster.run(["sacct", "-X", "-n", "-P", "-q", "high", "-o", "JobID", "-S", "2020-01-01"])
    assert by_qos.returncode == 0 and str(job) in by_qos.stdout.split(), by_qos.stderr
    r = lab.as_(lab.bio, "sbatch --qos=high --wrap true")
    assert r.returncode != 0 and "Invalid qos specification" in r.stderr
    lab.ok("-i", "modify", "user", p, "set", "QOS-=high")
    assert [p, "normal"] in lab.rows("assoc", "format=User,QOS", f"user={p}")


def test_unknown_option_refused_nothing_changed(lab):
    r = lab.mgr("-i", "add", "account", "typo", "Fairshare=2", "Bogus=1")
    assert r.returncode == 1 and r.stderr.startswith(" Unknown option: Bogus=1"), (r.stdout, r.stderr)
    assert "typo" not in [row[0] for row in lab.rows("account", "format=Account")]


def test_users_may_look_but_not_change(lab):
    r = lab.as_(lab.phys, "sacctmgr -i add account evil")
    assert r.returncode == 1 and r.stderr.strip() == "Problem adding accounts: Access/permission denied"
    r = lab.as_(lab.phys, f"sacctmgr -i modify user {lab.phys.pw_name} set Fairshare=1000")
    assert r.returncode == 1 and "Access/permission denied" in r.stderr
    r = lab.as_(lab.phys, "sacctmgr show account -P -n format=Account")
    assert r.returncode == 0 and "physics" in r.stdout.split() and "evil" not in r.stdout.split()


def test_grp_gres_holds_the_second_gpu_job(lab):
    lab.ok("-i", "add", "account", "gpulab", "GrpTRES=gres/gpu=1")
    lab.ok("-i", "add", "user", "root", "Account=gpulab")
    first = lab.sbatch("-A", "gpulab", "--gres=gpu:1", "--wrap", "sleep 60")
    second = lab.sbatch("-A", "gpulab", "--gres=gpu:1", "--wrap", "sleep 60")
    try:
        assert wait_state(lab.cluster, first, "RUNNING") == "RUNNING"
        deadline, reason = time.monotonic() + 20, ""
        while time.monotonic() < deadline and reason != "AssocGrpGRES":
            reason = lab.cluster.run(["squeue", "-h", "-j", str(second), "-o", "%r"]).stdout.strip()
            time.sleep(0.3)
        assert reason == "AssocGrpGRES"
        assert lab.cluster.state(second) == "PENDING"
        # a job of another account is not held by gpulab's limit
        other = lab.sbatch("-A", "physics", "--gres=gpu:1", "--wrap", "true")
        assert wait_final(lab.cluster, other) == "COMPLETED"
    finally:
        lab.cluster.run(["scancel", str(first), str(second)])


def test_max_submit_jobs_refused_at_submit(lab):
    lab.ok("-i", "add", "account", "tiny", "MaxSubmitJobs=1")
    lab.ok("-i", "add", "user", "root", "Account=tiny")
    job = lab.sbatch("-A", "tiny", "--hold", "--wrap", "true")
    try:
        r = lab.cluster.run(["sbatch", "-A", "tiny", "--wrap", "true"], cwd=lab.cluster.dir)
        assert r.returncode != 0 and "Job violates accounting/QOS policy" in r.stderr
    finally:
        lab.cluster.run(["scancel", str(job)])


def test_update_account_runs_the_submit_limits_of_the_new_one(lab):
    """A job moved by scontrol update Account= counts against MaxSubmitJobs where it goes (else
    the limit is a submit to another account away)."""
    lab.ok("-i", "add", "account", "capped", "MaxSubmitJobs=1")
    lab.ok("-i", "add", "user", "root", "Account=capped")
    first = lab.sbatch("-A", "capped", "--hold", "--wrap", "true")
    other = lab.sbatch("-A", "root", "--hold", "--wrap", "true")
    try:
        r = lab.cluster.run(["scontrol", "update", f"JobId={other}", "Account=capped"])
        assert r.returncode != 0 and "Job violates accounting/QOS policy" in r.stderr, r.stderr
        shown = lab.cluster.run(["squeue", "-h", "-j", str(other), "-o", "%a"]).stdout.strip()
        assert shown == "root"  # nothing changed
        lab.cluster.run(["scancel", str(first)])
        wait_final(lab.cluster, first)
        r = lab.cluster.run(["scontrol", "update", f"JobId={other}", "Account=capped"])
        assert r.returncode == 0, r.stderr  # room again
    finally:
        lab.cluster.run(["scancel", str(first), str(other)])


def test_requeue_of_an_ended_job_checks_its_association(lab):
    """An ended job's association may be deleted (no job of it is active then): requeueing the
    job is a submission again, refused as sbatch would be."""
    lab.ok("-i", "add", "account", "shortlived")
    lab.ok("-i", "add", "user", "root", "Account=shortlived")
    job = lab.sbatch("-A", "shortlived", "--wrap", "true")
    assert wait_final(lab.cluster, job) == "COMPLETED"
    lab.ok("-i", "delete", "user", "root", "where", "Account=shortlived")
    r = lab.cluster.run(["scontrol", "requeue", str(job)])
    assert r.returncode != 0 and INVALID_ACCOUNT in r.stderr, r.stderr
    assert lab.cluster.state(job) == "COMPLETED"


def test_no_terminal_commits_and_says_so(lab):
    r = lab.mgr("add", "account", "piped")  # stdin is /dev/null: nobody to ask
    assert r.returncode == 0 and "not a terminal" in r.stderr and " Adding Account(s)" in r.stdout
    assert "piped" in [row[0] for row in lab.rows("account", "format=Account")]


def test_database_survives_a_controller_restart(lab):
    pid = lab.cluster.pid_of("controller")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.1)
    r = lab.cluster.up()
    assert r.returncode == 0, r.stdout + r.stderr
    assert ["physics", "", "3"] in lab.rows("assoc", "format=Account,User,Fairshare")
    assert "high" in [row[0] for row in lab.rows("qos", "format=Name")]
    # the restarted controller enforces what it reloaded
    r = lab.as_(lab.bio, "sbatch -A physics --wrap true")
    assert r.returncode != 0 and INVALID_ACCOUNT in r.stderr
    log = (lab.cluster.dir / "controller.log").read_text()
    assert len(re.findall("imported QOS fromconf", log)) == 1  # not again: it is in the database
