"""Shared test fixtures and helpers.

Unit tests need nothing from here but `factories` (importable because this directory is on
sys.path). End-to-end tests take the module-scoped `cluster` fixture: a real local cluster (one
controller and two agents on loopback, started by `pyslurm-lite cluster up`) shared by every test
of one module, torn down with `pyslurm-lite cluster down`. The CLIs run as subprocesses with this
virtual environment's bin directory first on PATH, so `sbatch` is ours and never the system's
real Slurm in /usr/bin.

PYSLURM_TEST_DATABASE=postgresql puts every cluster's state in a fresh database of a private
PostgreSQL server (tests/pgserver.py) instead of SQLite. The modules that exercise the store are
marked `pg` (PG_MODULES): .ci/run runs them a second time that way (`-m pg`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN_DIR = os.path.dirname(os.path.abspath(sys.executable))
PYSLURM_LITE = os.path.join(BIN_DIR, "pyslurm-lite")

# Slurm's final job states (squeue -o %T); "CANCELLED by N" counts as CANCELLED.
FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                          "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"})

# The shared cluster's shape: 2 nodes x 2 CPUs x 2000 MiB x 4 GPUs.
NODES, CPUS, MEM_MB, GPUS = 2, 2, 2000, 4
CLI_TIMEOUT = 60.0  # seconds for any one CLI call
UP_TIMEOUT = 120.0  # seconds for `cluster up` (it waits for every node itself)

# The end-to-end modules that exercise the state database (jobs across a controller kill -9 and
# restart, sacct from the database, sacctmgr's tables, fair-share usage, requeued runs, node
# state, the notification outbox): run again on PostgreSQL by .ci/run (about 4 minutes on 2
# cores). One place, so the subset is declared, not guessed.
PG_MODULES = frozenset({
    "test_restart.py", "test_foundation.py", "test_sacct_db.py", "test_sacctmgr.py",
    "test_usage_fairshare.py", "test_faults.py", "test_notifications.py",
})
DATABASES = ("sqlite", "postgresql")  # PYSLURM_TEST_DATABASE


def state_database() -> str:
    db = os.environ.get("PYSLURM_TEST_DATABASE") or "sqlite"
    if db not in DATABASES:
        raise pytest.UsageError(f"PYSLURM_TEST_DATABASE={db}: one of {', '.join(DATABASES)}")
    return db


def pytest_configure(config):
    config.addinivalue_line("markers", "pg: runs again on PostgreSQL in .ci/run (PG_MODULES)")
    state_database()


def pytest_collection_modifyitems(config, items):
    """Tests marked `root` need root (cgroups, switching users): skip them with a reason otherwise.
    Tests of PG_MODULES get the `pg` marker."""
    for item in items:
        if item.path.name in PG_MODULES:
            item.add_marker(pytest.mark.pg)
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (os.geteuid() != 0)")
    for item in items:
        if item.get_closest_marker("root"):
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    import pgserver
    pgserver.stop_shared()


@pytest.fixture(scope="session")
def postgres():
    """The session's private PostgreSQL server (tests/pgserver.py); skipped where none can be
    started, unless PYSLURM_TEST_POSTGRES=1 or PYSLURM_TEST_DATABASE=postgresql demand one."""
    import pgserver
    why = pgserver.why_unavailable()
    if why:
        if pgserver.demanded():
            pytest.fail(f"PostgreSQL demanded but unavailable: {why}")
        pytest.skip(f"no PostgreSQL: {why}")
    return pgserver.shared()


def cli_env(conf: str | os.PathLike | None = None, **extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: our bin dir first on PATH, no stray Slurm settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_", "SCANCEL_"))
           and k not in ("PYSLURM_LITE_CONF", "PYTEST_CURRENT_TEST")}
    env["PATH"] = BIN_DIR + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    if conf is not None:
        env["PYSLURM_LITE_CONF"] = str(conf)
    env.update(extra)
    return env


def run_cmd(cmd, env: dict[str, str], *, cwd=None, input: str | None = None,
            timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess:
    """Run a command list (or a bash command line when a str); capture text output, never raise
    on a non-zero exit."""
    if isinstance(cmd, str):
        cmd = ["/bin/bash", "-c", cmd]
    else:
        cmd = [str(c) for c in cmd]
    return subprocess.run(cmd, env=env, cwd=cwd, input=input, capture_output=True, text=True,
                          timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)


@dataclass
class Cluster:
    dir: Path
    conf: Path
    env: dict[str, str]
    shape: tuple = (NODES, CPUS, MEM_MB, GPUS)  # nodes, CPUs, MiB, GPUs per node

    def run(self, cmd, *, cwd=None, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = CLI_TIMEOUT) -> subprocess.CompletedProcess:
        """Run cmd against this cluster; `env` adds to (or overrides) the cluster's environment."""
        return run_cmd(cmd, {**self.env, **(env or {})}, cwd=cwd, input=input, timeout=timeout)

    def sbatch(self, *args: str, cwd=None, input: str | None = None, env=None) -> int:
        """Submit with --parsable and return the job id; fail the test on any error."""
        r = self.run(["sbatch", "--parsable", *args], cwd=cwd, input=input, env=env)
        assert r.returncode == 0 and r.stdout.strip().isdigit(), \
            f"sbatch {shlex.join(args)} -> rc={r.returncode} out={r.stdout!r} err={r.stderr!r}"
        return int(r.stdout.strip())

    def state(self, job_id: int) -> str:
        r = self.run(["squeue", "-h", "-j", str(job_id), "-o", "%T"])
        return r.stdout.strip().splitlines()[0].strip() if r.returncode == 0 and r.stdout.strip() else ""

    def pid_of(self, daemon: str) -> int:
        """The pid recorded by `cluster up` for 'controller' or 'agent-nodeK'."""
        return int((self.dir / f"{daemon}.pid").read_text().split()[0])

    def up(self) -> subprocess.CompletedProcess:
        nodes, cpus, mem, gpus = self.shape
        return run_cmd([PYSLURM_LITE, "cluster", "up", "--nodes", nodes, "--cpus", cpus,
                        "--mem", mem, "--gpus", gpus, "--dir", self.dir],
                       cli_env(), timeout=UP_TIMEOUT)

    def down(self) -> subprocess.CompletedProcess:
        return run_cmd([PYSLURM_LITE, "cluster", "down", "--dir", self.dir], cli_env(), timeout=60)

    def log_tails(self, chars: int = 1500) -> str:
        out = []
        for log in sorted(self.dir.glob("*.log")):
            out.append(f"--- {log.name}\n{log.read_text(errors='replace')[-chars:]}")
        return "\n".join(out)


def wait_state(cluster: Cluster, job_id: int, wanted, timeout: float = 60.0) -> str:
    """Poll squeue until the job's state is in `wanted` (or final); return it, fail on timeout."""
    wanted = {wanted} if isinstance(wanted, str) else set(wanted)
    deadline, state = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        state = cluster.state(job_id)
        if state in wanted or state.split(" ")[0] in FINAL_STATES:
            return state
        time.sleep(0.2)
    pytest.fail(f"job {job_id} not in {sorted(wanted)} after {timeout:.0f}s (last state "
                f"{state or 'unknown'})\n{cluster.log_tails()}")


def wait_final(cluster: Cluster, job_id: int, timeout: float = 60.0) -> str:
    """Poll `squeue -h -j ID -o %T` until the job is in a final state; return that state
    ('CANCELLED by 0' is returned as 'CANCELLED'); fail the test on timeout."""
    deadline, state = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        state = cluster.state(job_id)
        if state.split(" ")[0] in FINAL_STATES:
            return state.split(" ")[0]
        time.sleep(0.2)
    pytest.fail(f"job {job_id} not final after {timeout:.0f}s (last state {state or 'unknown'})\n"
                f"{cluster.log_tails()}")


def start_cluster(directory: Path, shape: tuple = (NODES, CPUS, MEM_MB, GPUS),
                  prepare=None) -> Cluster:
    """Bring up a local cluster in directory; `prepare(directory)` may write slurm.conf and
    gres.conf first (`cluster up` keeps an existing slurm.conf)."""
    if not os.access(PYSLURM_LITE, os.X_OK):
        pytest.fail(f"no pyslurm-lite console script next to {sys.executable}: "
                    f"install the project (pip install -e .) into this environment")
    cluster = Cluster(dir=directory, conf=directory / "slurm.conf", env={}, shape=shape)
    if prepare is not None:
        prepare(directory)
    in_postgres = state_database() == "postgresql" and _state_in_postgres(directory, shape)
    cluster.env = cli_env(cluster.conf)
    for cmd in ("sbatch", "squeue", "scancel"):
        found = shutil.which(cmd, path=cluster.env["PATH"])
        assert found == os.path.join(BIN_DIR, cmd), f"{cmd} resolves to {found}, not ours"
    r = cluster.up()
    if r.returncode != 0:
        cluster.down()
        pytest.fail(f"cluster up failed: rc={r.returncode}\n{r.stdout}\n{r.stderr}\n"
                    f"{cluster.log_tails()}")
    assert f"export PYSLURM_LITE_CONF={cluster.conf}" in r.stdout, r.stdout
    if in_postgres and list(directory.rglob("state.db")):  # the state went to SQLite after all
        cluster.down()
        pytest.fail(f"PYSLURM_TEST_DATABASE=postgresql, but a SQLite state.db under {directory}")
    return cluster


def _state_in_postgres(directory: Path, shape: tuple) -> bool:
    """DatabaseURL= a fresh database of the session's server, in the slurm.conf `cluster up`
    writes (or the one `prepare` wrote); restarts keep it, as they keep the conf. False where
    `prepare` chose a DatabaseURL itself (kept)."""
    import pgserver
    from pyslurm_lite.cli.cluster import write_config
    why = pgserver.why_unavailable()
    if why:
        pytest.fail(f"PYSLURM_TEST_DATABASE=postgresql but no PostgreSQL: {why}")
    conf = directory / "slurm.conf"
    if not conf.exists():
        directory.mkdir(parents=True, exist_ok=True)
        write_config(str(directory), *shape)
    text = conf.read_text()
    if any(line.strip().lower().startswith("databaseurl") for line in text.splitlines()):
        return False
    conf.write_text(text + f"DatabaseURL={pgserver.shared().new_database()}\n")
    return True


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local cluster (2 nodes x 2 CPUs x 2000 MiB x 4 GPUs) shared by one test module."""
    c = start_cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        r = c.down()
        assert r.returncode == 0, f"cluster down failed: {r.stdout}{r.stderr}"


def configured_cluster(tmp_path_factory, name: str, shape: tuple, extra: str = "",
                       replace: dict[str, str] | None = None):
    """A local cluster whose slurm.conf (as `cluster up` writes it) has `replace` applied
    (old -> new text) and `extra` lines appended before it starts; yield it, then bring it down.
    Use from a module-scoped fixture: `yield from configured_cluster(...)`."""
    from pyslurm_lite.cli.cluster import write_config

    def prepare(directory: Path) -> None:
        directory.mkdir(exist_ok=True)
        conf = write_config(str(directory), *shape)
        text = open(conf).read()
        for old, new in (replace or {}).items():
            text = text.replace(old, new)
        open(conf, "w").write(text + extra)

    c = start_cluster(tmp_path_factory.mktemp(name) / "c", shape=shape, prepare=prepare)
    try:
        yield c
    finally:
        c.down()
