"""A private PostgreSQL server for the tests: Debian's binaries, a temporary data directory, a
free port on 127.0.0.1 only, password (scram-sha-256) logins over TCP as the acceptance check
and an operator's setup have them. One server per test session, started on first use; each
cluster gets a fresh database of its own. Stopped and removed at the session's end.

Wanted when PYSLURM_TEST_POSTGRES=1 (then a missing server is an error, not a skip) or, without
it, when running as root where /usr/lib/postgresql/*/bin/initdb exists. As root the server runs
as the `postgres` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile

ROLE = "pyslurm"  # the role every test database belongs to, as an operator's `slurm` role
START_TIMEOUT = 60  # seconds for pg_ctl start


def initdb_path() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: [int(x) for x in p.split("/")[4].split(".") if x.isdigit()])
    return found[-1] if found else ""


def demanded() -> bool:
    return os.environ.get("PYSLURM_TEST_POSTGRES") == "1" \
        or os.environ.get("PYSLURM_TEST_DATABASE") == "postgresql"


def why_unavailable() -> str:
    """'' when a server can be started here, else why not."""
    if not initdb_path():
        return "no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "no postgres user to run the server as"
    elif not demanded():
        return "not root and PYSLURM_TEST_POSTGRES is not 1"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self):
        self.bin = os.path.dirname(initdb_path())
        self.password = "pw" + secrets.token_hex(8)
        self.port = 0
        self.dir = ""
        self._names = itertools.count(1)
        self._as_postgres = os.geteuid() == 0

    def _run(self, *cmd: str) -> subprocess.CompletedProcess:
        extra = {"user": "postgres", "group": "postgres", "extra_groups": []} if self._as_postgres else {}
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT + 30,
                           cwd="/", **extra)
        if r.returncode != 0:
            log = os.path.join(self.dir, "server.log")
            tail = open(log).read()[-1500:] if os.path.exists(log) else ""
            raise RuntimeError(f"{' '.join(cmd)} -> rc={r.returncode}\n{r.stdout}{r.stderr}{tail}")
        return r

    def start(self) -> "PgServer":
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> "PgServer":
        self.dir = tempfile.mkdtemp(prefix="pyslurm-test-pg.")
        if self._as_postgres:
            os.chown(self.dir, pwd.getpwnam("postgres").pw_uid, pwd.getpwnam("postgres").pw_gid)
        os.chmod(self.dir, 0o700)
        data = os.path.join(self.dir, "data")
        self._run(f"{self.bin}/initdb", "-D", data, "-U", "postgres", "--auth-local=trust",
                  "--auth-host=scram-sha-256", "--no-sync", "-E", "UTF8")
        self.port = _free_port()
        # fsync off: the tests kill controllers, never this server or the machine
        self._run(f"{self.bin}/pg_ctl", "-D", data, "-l", os.path.join(self.dir, "server.log"),
                  "-w", "-t", str(START_TIMEOUT), "-o",
                  f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off",
                  "start")
        self.admin(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{self.password}'")
        atexit.register(self.stop)
        return self

    def admin(self, sql: str) -> str:
        """Run one statement as the superuser over the server's private socket."""
        return self._run(f"{self.bin}/psql", "-h", self.dir, "-p", str(self.port), "-U", "postgres",
                         "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-tAqc", sql).stdout.strip()

    def new_database(self, prefix: str = "c") -> str:
        """A fresh, empty database owned by ROLE; its DatabaseURL."""
        name = f"{prefix}{next(self._names)}"
        self.admin(f"CREATE DATABASE {name} OWNER {ROLE}")
        return self.url(name)

    def url(self, database: str, password: str | None = None) -> str:
        pw = self.password if password is None else password
        return f"postgresql+psycopg://{ROLE}:{pw}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        if not self.dir:
            return
        data = os.path.join(self.dir, "data")
        try:
            self._run(f"{self.bin}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        except (RuntimeError, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = ""


_shared: PgServer | None = None


def shared() -> PgServer:
    """The session's server, started on first use (stopped by stop_shared or at exit)."""
    global _shared
    if _shared is None:
        _shared = PgServer().start()
    return _shared


def stop_shared() -> None:
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None
