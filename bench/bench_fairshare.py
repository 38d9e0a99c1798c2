"""Fair share on a real local cluster: two accounts with Fairshare 3 and 1, one Unix user in each
(added with useradd, removed after), both keeping every GPU busy with short GPU jobs; prints the
GPU-seconds each account got and their ratio (Fair Tree should hold it near 3:1).

    sudo .venv/bin/python bench/bench_fairshare.py [--duration 180] [--nodes 2 --gpus 2]

Needs root (useradd, jobs run as their users). The cluster (`pyslurm-lite cluster up`) runs in a
fresh directory with PriorityWeightFairshare high, a short PriorityDecayHalfLife and
PriorityCalcPeriod, and TRESBillingWeights that make a GPU cost 10 CPUs. Each user keeps a few
jobs queued beyond what can run (job arrays, one sbatch per top-up). GPU-seconds are measured
independently of the usage fair share charges: from sacct's ElapsedRaw of every job (1 GPU each).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
SHARES = {"physics": 3, "bio": 1}
EXTRA_CONF = """PriorityType=priority/multifactor
PriorityWeightFairshare=100000
PriorityWeightAge=0
PriorityDecayHalfLife={half_life}
PriorityCalcPeriod=0:02
"""
BILLING = ' TRESBillingWeights="CPU=1.0,GRES/gpu=10.0"'


def sh(cmd: list[str], env=None, check: bool = True) -> str:
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if check and r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: rc={r.returncode}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def users_bin(user: str, work: Path) -> Path:
    """A bin/ whose python and commands `user` can run: the project's venv if they can enter it,
    else a venv of /usr/bin/python3 that sees the project venv's packages (same minor version)."""
    probe = ["su", "-s", "/bin/sh", user, "-c", f"'{VENV_BIN}/python' -c 'import pyslurm_lite'"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return VENV_BIN
    venv = work / "uvenv"
    sh(["/usr/bin/python3", "-m", "venv", "--without-pip", str(venv)])
    purelib = sysconfig.get_paths()["purelib"]
    user_lib = sh([str(venv / "bin/python"), "-c",
                   "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
    Path(user_lib, "_bench_users.pth").write_text(f"import site; site.addsitedir('{purelib}')\n")
    for name in ("sbatch", "squeue", "scancel"):
        text = (VENV_BIN / name).read_text().split("\n", 1)[1]
        target = venv / "bin" / name
        target.write_text(f"#!{venv}/bin/python\n{text}")
        target.chmod(0o755)
    if subprocess.run(probe[:-1] + [f"'{venv}/bin/python' -c 'import pyslurm_lite'"],
                      capture_output=True).returncode != 0:
        raise SystemExit(f"no python that {user} can run the project's commands with")
    return venv / "bin"


class Bench:
    def __init__(self, args):
        self.args = args
        self.dir = Path(tempfile.mkdtemp(prefix="bench-fairshare-"))
        self.dir.chmod(0o755)
        self.env = {**os.environ, "PYSLURM_LITE_CONF": str(self.dir / "c" / "slurm.conf"),
                    "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        self.users = {acct: f"bf{acct[:4]}{os.getpid() % 100000}" for acct in SHARES}
        self.added: list[str] = []
        self.bin = VENV_BIN

    # ---- set-up and tear-down ---------------------------------------------------------------
    def up(self) -> None:
        from pyslurm_lite.cli.cluster import write_config
        a = self.args
        cdir = self.dir / "c"
        cdir.mkdir()
        cdir.chmod(0o755)
        conf = Path(write_config(str(cdir), a.nodes, a.cpus, a.mem, a.gpus))
        lines = [line + BILLING if line.startswith("PartitionName=") else line
                 for line in conf.read_text().splitlines()]
        conf.write_text("\n".join(lines) + "\n" + EXTRA_CONF.format(half_life=a.half_life))
        sh([str(VENV_BIN / "pyslurm-lite"), "cluster", "up", "--nodes", str(a.nodes), "--cpus", str(a.cpus),
            "--mem", str(a.mem), "--gpus", str(a.gpus), "--dir", str(cdir)], env=self.env)
        for acct, user in self.users.items():
            sh(["useradd", "-M", "-s", "/bin/bash", user])
            self.added.append(user)
            home = self.dir / user
            home.mkdir()
            shutil.chown(home, user)
            sh(["sacctmgr", "-i", "add", "account", acct, f"Fairshare={SHARES[acct]}"], env=self.env)
            sh(["sacctmgr", "-i", "add", "user", user, f"Account={acct}"], env=self.env)
        self.bin = users_bin(self.users["physics"], self.dir)

    def down(self) -> None:
        subprocess.run([str(VENV_BIN / "pyslurm-lite"), "cluster", "down", "--dir", str(self.dir / "c")],
                       env=self.env, capture_output=True, timeout=120)
        for user in self.added:
            subprocess.run(["userdel", "-f", user], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- the run ------------------------------------------------------------------------------
    def as_user(self, user: str, command: str) -> str:
        path = f"{self.bin}:/usr/local/bin:/usr/bin:/bin"
        return sh(["su", "-s", "/bin/bash", user, "-c",
                   f"export PATH='{path}' PYSLURM_LITE_CONF='{self.env['PYSLURM_LITE_CONF']}'; "
                   f"cd '{self.dir / user}' && {command}"], check=False)

    def queued(self, user: str) -> int:
        out = sh(["squeue", "-h", "-u", user, "-t", "PD,R", "-r", "-o", "%i"], env=self.env, check=False)
        return len(out.split())

    def top_up(self) -> None:
        """Keep each user's queue a whole cluster's worth of GPUs beyond what runs."""
        want = 2 * self.args.nodes * self.args.gpus
        for acct, user in self.users.items():
            missing = want - self.queued(user)
            if missing > 0:
                self.as_user(user, f"sbatch -A {acct} --array=1-{missing} -c 1 --mem=100 --gres=gpu:1 "
                                   f"-o /dev/null --wrap 'sleep {self.args.job_seconds}'")

    def run(self) -> dict[str, float]:
        began = time.monotonic()
        while time.monotonic() - began < self.args.duration:
            self.top_up()
            time.sleep(1.0)
        for user in self.users.values():
            sh(["scancel", "-u", user], env=self.env, check=False)
        time.sleep(3)
        return self.gpu_seconds()

    def gpu_seconds(self) -> dict[str, float]:
        out = {acct: 0.0 for acct in self.users}
        for acct, user in self.users.items():
            rows = sh(["sacct", "-X", "-n", "-P", "-u", user, "-S", "2000-01-01", "-o", "ElapsedRaw"],
                      env=self.env, check=False)
            out[acct] = float(sum(int(v) for v in rows.split() if v.isdigit()))
        return out

    def shares(self) -> str:
        return sh(["sshare", "-a", "-l"], env=self.env, check=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=180.0, help="seconds both users keep the GPUs busy")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--cpus", type=int, default=4)
    p.add_argument("--mem", type=int, default=4000)
    p.add_argument("--gpus", type=int, default=2, help="GPUs per node (simulated)")
    p.add_argument("--job-seconds", type=int, default=5, help="how long each GPU job sleeps")
    p.add_argument("--half-life", default="5", help="PriorityDecayHalfLife (minutes, Slurm's time format)")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench_fairshare needs root: it adds two Unix users whose jobs run as them")
    bench = Bench(args)
    try:
        bench.up()
        got = bench.run()
        print(bench.shares())
    finally:
        bench.down()
    total = sum(got.values()) or 1.0
    print(f"{'account':<10} {'shares':>6} {'GPU-seconds':>12} {'fraction':>9}")
    for acct, seconds in got.items():
        print(f"{acct:<10} {SHARES[acct]:>6} {seconds:>12.0f} {seconds / total:>9.3f}")
    ratio = got["physics"] / got["bio"] if got["bio"] else float("inf")
    print(f"ratio physics:bio = {ratio:.2f} (shares 3:1) over {args.duration:.0f} s, "
          f"{args.nodes * args.gpus} GPUs, {args.job_seconds} s jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
