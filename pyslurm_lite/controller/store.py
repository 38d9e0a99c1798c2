"""Durable controller state in a SQL database through SQLAlchemy: SQLite by default, PostgreSQL
(psycopg 3) through DatabaseURL=postgresql+psycopg://...

Owns: the schema (its versions and their migrations: migrations.py), the engine, and every
read and write of state. ORM or row objects never leave this module: callers get and give model
dataclasses. A job row holds queryable columns (for accounting and the restart scan) and the
whole Job as a protobuf blob, so a new field needs no migration; rows are kept for ever (sacct
reads them), and an earlier run of a requeued job is kept in job_runs. Must not: decide
anything; it only records.

SQLite is used with WAL (readers never block the writer), a busy timeout and synchronous=NORMAL:
a commit survives the controller being killed (-9), which is the failure we promise to survive.
Statements are kept to what both dialects do alike: upserts are update-then-insert, every list
is read in a stated order, and PostgreSQL's stricter types are chosen per dialect (_Str, _Int).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
import time

import sqlalchemy as sa

from ..rpc import wire
from .._proto import types_pb2
from ..errors import ConfigError, StaleState
from ..model import Job, Reservation
from . import migrations

SCHEMA_VERSION = migrations.LATEST  # a table changes only through a new migration there
CONNECT_TIMEOUT = 10  # seconds to reach a database server before giving up with its reason

metadata = sa.MetaData()
# PostgreSQL enforces VARCHAR(n) where SQLite never did: a job name or node reason as long as a
# user made it must not fail there alone, so strings are TEXT on PostgreSQL (SQLite's DDL is as
# it was). uid and job ids are 64-bit on PostgreSQL, as every integer is in SQLite.
def _Str(length: int) -> sa.types.TypeEngine:  # noqa: N802 (read as a type, like sa.String)
    return sa.String(length).with_variant(sa.Text(), "postgresql")


_Int = sa.Integer().with_variant(sa.BigInteger(), "postgresql")

meta_table = sa.Table(
    "meta", metadata,
    sa.Column("key", _Str(64), primary_key=True),
    sa.Column("value", _Str(256), nullable=False),
)

jobs_table = sa.Table(
    "jobs", metadata,
    sa.Column("job_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("state", _Str(16), nullable=False),
    sa.Column("user_name", _Str(64), nullable=False),
    sa.Column("uid", _Int, nullable=False),
    sa.Column("partition", _Str(64), nullable=False),
    sa.Column("name", _Str(256), nullable=False),
    sa.Column("submit_time", sa.Float, nullable=False),
    sa.Column("start_time", sa.Float, nullable=False, default=0.0),
    sa.Column("end_time", sa.Float, nullable=False, default=0.0),
    sa.Column("data", sa.LargeBinary, nullable=False),
    # the restart scan loads unfinished jobs; accounting filters by state and time
    sa.Index("ix_jobs_state_for_restart_scan", "state"),
    sa.Index("ix_jobs_user_for_sacct", "user_name", "submit_time"),
    sa.Index("ix_jobs_end_time_for_sacct", "end_time"),  # schema version 2
)

# What only the launch needs, kept out of the jobs' blobs so thousands of pending jobs cost
# little memory and squeue moves little data. Schema version 2.
scripts_table = sa.Table(
    "job_scripts", metadata,
    sa.Column("job_id", sa.BigInteger, sa.ForeignKey("jobs.job_id"), primary_key=True,
              autoincrement=False),
    sa.Column("script", sa.Text, nullable=False),
    sa.Column("environment", sa.LargeBinary, nullable=False),
)

nodes_table = sa.Table(
    "nodes", metadata,
    sa.Column("name", _Str(64), primary_key=True),
    sa.Column("drain", sa.Boolean, nullable=False, default=False),
    sa.Column("down", sa.Boolean, nullable=False, default=False),
    sa.Column("reason", _Str(256), nullable=False, default=""),
    sa.Column("reason_time", sa.Float, nullable=False, default=0.0),
)

# Fair share's memory: TRES-seconds per association (account, user) and TRES ("billing" is
# Slurm's RawUsage), decayed to `updated` (priority/multifactor; controller/usage.py). Replaces
# the per-user "usage" table of CPU-seconds, left alone in older databases. Schema version 2.
usage_table = sa.Table(
    "assoc_usage", metadata,
    sa.Column("account", _Str(64), primary_key=True),
    sa.Column("user_name", _Str(64), primary_key=True),
    sa.Column("tres", _Str(64), primary_key=True),
    sa.Column("seconds", sa.Float, nullable=False),
    sa.Column("updated", sa.Float, nullable=False),
)

# Up to when each job's use has been charged: a charge and its mark commit together, so no
# time is charged twice, across a controller restart too.
charged_table = sa.Table(
    "usage_charged", metadata,
    sa.Column("job_id", _Int, primary_key=True, autoincrement=False),
    sa.Column("charged_until", sa.Float, nullable=False),
)

# Advance reservations (scontrol create reservation), as protobuf blobs like jobs. Schema
# version 2, as every table below.
reservations_table = sa.Table(
    "reservations", metadata,
    sa.Column("name", _Str(128), primary_key=True),
    sa.Column("end_time", sa.Float, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

# Earlier runs of requeued jobs (sacct -D), archived by save_jobs when it sees a job's restart
# count grow: the row as it stood before the requeue, and when that run ended.
runs_table = sa.Table(
    "job_runs", metadata,
    sa.Column("job_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("restart_count", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("end_time", sa.Float, nullable=False),
    sa.Column("data", sa.LargeBinary, nullable=False),
)

# Accounting (sacctmgr; controller/assoc.py): associations (an account when user_name is "",
# else a user in an account), users' default accounts, and QOS. Limits and lists are JSON, so a
# new one needs no migration.
acct_assoc_table = sa.Table(
    "acct_assoc", metadata,
    sa.Column("account", _Str(64), primary_key=True),
    sa.Column("user_name", _Str(64), primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
)
acct_users_table = sa.Table(
    "acct_users", metadata,
    sa.Column("user_name", _Str(64), primary_key=True),
    sa.Column("default_account", _Str(64), nullable=False),
)
acct_qos_table = sa.Table(
    "acct_qos", metadata,
    sa.Column("name", _Str(64), primary_key=True),
    sa.Column("data", sa.Text, nullable=False),
)

# Notifications waiting to go out (controller/notify.py): written in the transaction of the job
# change they tell of, sent and retried by the notifier's worker; a sent row is kept a while so
# that `key` (job, run, event, channel) keeps the same notice from being queued twice.
outbox_table = sa.Table(
    "outbox", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", _Str(256), nullable=False, unique=True),
    sa.Column("job_id", sa.BigInteger, nullable=False),
    sa.Column("channel", _Str(16), nullable=False),  # mail | smtp | webhook
    sa.Column("target", _Str(1024), nullable=False),  # recipient or URL
    sa.Column("payload", sa.Text, nullable=False),  # JSON: subject, body, environment, ...
    sa.Column("attempts", sa.Integer, nullable=False, default=0),
    sa.Column("next_at", sa.Float, nullable=False),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("sent", sa.Float, nullable=False, default=0.0),  # 0: not yet
    sa.Column("error", _Str(512), nullable=False, default=""),
    sa.Index("ix_outbox_sent_next_at_for_worker", "sent", "next_at"),
)
OUTBOX_FIELDS = ("key", "job_id", "channel", "target", "payload")

ACTIVE_STATES = ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING")

# Built once: constructing an SQLAlchemy statement costs more than executing it, and these run
# on every scheduling pass, batch of job ends and launch.
_UPDATE_JOB = (jobs_table.update().where(jobs_table.c.job_id == sa.bindparam("b_job_id"))
               .values({c.name: sa.bindparam(c.name) for c in jobs_table.c if c.name != "job_id"}))
_SCRIPTS_OF = sa.select(scripts_table).where(scripts_table.c.job_id.in_(sa.bindparam("ids", expanding=True)))


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA busy_timeout=5000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


# PostgreSQL's server-side limits for every session of ours (seconds): a statement, or a wait for
# a lock, that runs past them fails instead of hanging its thread; a session left idle inside a
# transaction (its client cut off after the fence's FOR SHARE) is ended, so the row lock it held
# is freed within seconds, not after the kernel's two hours of TCP keepalive
STATEMENT_TIMEOUT = 60.0  # a controller's everyday statement (sacct over many jobs included)
LOCK_TIMEOUT = 10.0  # no writer of ours holds a row that long
IDLE_IN_TRANSACTION_TIMEOUT = 15.0
# TCP keepalives on both ends (seconds idle, seconds between probes, probes): a half-open
# connection is found in ~25 s; TCP_USER_TIMEOUT bounds unacknowledged sends the same way
KEEPALIVE = (10, 5, 3)
TCP_USER_TIMEOUT = 25.0


def _ms(seconds: float) -> int:
    return int(seconds * 1000)  # PostgreSQL's and libpq's timeouts are in milliseconds


def _postgresql_connect_args(statement_timeout: float) -> dict:
    idle, interval, count = KEEPALIVE
    settings = {"statement_timeout": _ms(statement_timeout),
                "lock_timeout": _ms(min(LOCK_TIMEOUT, statement_timeout)),
                "idle_in_transaction_session_timeout": _ms(IDLE_IN_TRANSACTION_TIMEOUT),
                "tcp_keepalives_idle": idle, "tcp_keepalives_interval": interval,
                "tcp_keepalives_count": count}
    return {"connect_timeout": CONNECT_TIMEOUT,
            "options": " ".join(f"-c {k}={v}" for k, v in settings.items()),
            "keepalives": 1, "keepalives_idle": idle, "keepalives_interval": interval,
            "keepalives_count": count, "tcp_user_timeout": _ms(TCP_USER_TIMEOUT)}


def open_engine(url: str, create: bool = True,
                statement_timeout: float = STATEMENT_TIMEOUT) -> sa.Engine:
    """The engine for DatabaseURL: SQLite's file made (private) unless not `create`, and its
    pragmas set; a server's connections checked before use, given CONNECT_TIMEOUT, keepalives
    and PostgreSQL's session limits (statement_timeout: the lease asks for a shorter one). A
    malformed URL or a missing driver is a ConfigError (the password never shown)."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        raise ConfigError("DatabaseURL: not a database URL (sqlite:///PATH or "
                          "postgresql+psycopg://USER:PASSWORD@HOST:PORT/DATABASE)") from None
    backend, options = parsed.get_backend_name(), {}
    if backend == "sqlite" and create:
        _private_sqlite_file(parsed.database)
    else:
        # a server may drop idle connections (restart, failover): test each before use
        options["pool_pre_ping"] = True
    if backend == "postgresql":
        options["connect_args"] = _postgresql_connect_args(statement_timeout)
    try:
        engine = sa.create_engine(parsed, **options)
    except (ImportError, sa.exc.NoSuchModuleError) as e:
        raise ConfigError(f"DatabaseURL={parsed.render_as_string(hide_password=True)}: its driver "
                          f"is not installed ({e}); PostgreSQL is postgresql+psycopg://... with "
                          f"psycopg 3 (pip install 'psycopg[binary]')") from None
    if backend == "sqlite":
        sa.event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _private_sqlite_file(database: str | None) -> None:
    if not database or database == ":memory:":
        return
    path = os.path.abspath(database)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # Job scripts and environments are private: the file (and the -wal/-shm files SQLite
    # creates with the same mode) is readable by the controller's user alone. Only a missing
    # file is opened here: closing any descriptor of a database this process already uses drops
    # every POSIX lock SQLite holds on it, and another process (the other controller of a pair)
    # then takes itself for the last user, checkpoints and deletes the -wal and -shm files
    # under us — from then on each process writes a WAL the other cannot see.
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
    except FileExistsError:
        pass
    os.chmod(path, 0o600)


@contextlib.contextmanager
def reaching(engine: sa.Engine):
    """A database that cannot be reached (server down, wrong password, no such database) is a
    ConfigError with the driver's first line of reason, never a traceback or the password."""
    try:
        yield
    except sa.exc.DBAPIError as e:
        url = engine.url
        lines = str(e.orig).strip().splitlines()
        reason = lines[0] if lines else type(e.orig).__name__
        if url.password:
            reason = reason.replace(str(url.password), "***")
        raise ConfigError(f"state database {url.render_as_string(hide_password=True)}: "
                          f"{reason}") from None


class Store:
    """All durable state. Thread-safe: writes are serialized by one lock."""

    def __init__(self, url: str, clock=time.time):
        self.engine = open_engine(url)
        self._lock = threading.Lock()
        # fence(conn): called inside every write transaction before it commits; raises to abort
        # it (a controller that lost its lease must not write: controller/lease.py)
        self.fence = None
        self.clock = clock  # when a requeued run ended, for the archive
        self._runs_seen: dict[int, int] = {}  # job id -> restart count whose run is archived
        self._group = GroupCommit(self._insert_rows)
        with reaching(self.engine):
            migrations.upgrade(self.engine)

    @contextlib.contextmanager
    def _write(self):
        """A write transaction, fenced: it commits only while self.fence lets it."""
        with self.engine.begin() as conn:
            yield conn
            if self.fence is not None:
                self.fence(conn)

    # ---- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str = "") -> str:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(meta_table.c.value).where(meta_table.c.key == key)).first()
        return row[0] if row else default

    def max_job_id(self) -> int:
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.max(jobs_table.c.job_id))).scalar() or 0

    # ---- jobs ---------------------------------------------------------------------------------
    @staticmethod
    def _row(job: Job) -> dict:
        return {
            "job_id": job.job_id, "state": job.state.value, "user_name": job.spec.user,
            "uid": job.spec.uid, "partition": job.partition, "name": job.spec.name,
            "submit_time": job.submit_time, "start_time": job.start_time, "end_time": job.end_time,
            "data": wire.to_msg(job, types_pb2.Job).SerializeToString(),
        }

    def insert_jobs(self, jobs: list[Job], scripts: list[tuple[str, dict]]) -> None:
        """Commit new jobs with their (script, environment); returns once they are durable.
        Concurrent callers share one transaction (group commit): that is what makes thousands
        of submissions a second possible."""
        rows = [(self._row(j), {"job_id": j.job_id, "script": script,
                                "environment": _encode_env(env)})
                for j, (script, env) in zip(jobs, scripts)]
        self._group.commit(rows)

    def _insert_rows(self, rows: list[tuple[dict, dict]]) -> None:
        with self._lock, self._write() as conn:
            conn.execute(jobs_table.insert(), [r[0] for r in rows])
            conn.execute(scripts_table.insert(), [r[1] for r in rows])

    def load_scripts(self, job_ids: list[int]) -> dict[int, tuple[str, dict]]:
        """job id -> (script, environment), for launching."""
        with self.engine.connect() as conn:
            return {r.job_id: (r.script, _decode_env(r.environment))
                    for r in conn.execute(_SCRIPTS_OF, {"ids": job_ids})}

    def save_jobs(self, jobs: list[Job], outbox: list[dict] = ()) -> None:
        """Commit the current form of existing jobs in one transaction, with the notifications
        their change makes (outbox rows: OUTBOX_FIELDS), so neither is kept without the other."""
        if not jobs:
            return
        rows = [self._row(j) for j in jobs]
        for r in rows:
            r["b_job_id"] = r.pop("job_id")
        with self._lock, self._write() as conn:
            self._archive_requeued_runs(conn, jobs)
            conn.execute(_UPDATE_JOB, rows)
            if outbox:
                _queue_outbox(conn, outbox, self.clock())

    def _archive_requeued_runs(self, conn, jobs: list[Job]) -> None:
        """Before a requeued job's row is overwritten, keep the run it ends (sacct -D). Only jobs
        whose restart count moved since it was last looked at cost a read: a requeue is rare."""
        moved = [j for j in jobs if j.restart_count and self._runs_seen.get(j.job_id) != j.restart_count]
        if not moved:
            return
        stored = dict(conn.execute(sa.select(jobs_table.c.job_id, jobs_table.c.data)
                                   .where(jobs_table.c.job_id.in_([j.job_id for j in moved]))).all())
        for job in moved:
            self._runs_seen[job.job_id] = job.restart_count
            blob = stored.get(job.job_id)
            if blob is None:
                continue
            old = decode_job(blob)
            if old.restart_count >= job.restart_count:
                continue
            done = conn.execute(sa.select(runs_table.c.job_id).where(
                (runs_table.c.job_id == job.job_id) & (runs_table.c.restart_count == old.restart_count))).first()
            if done is None:
                conn.execute(runs_table.insert().values(
                    job_id=job.job_id, restart_count=old.restart_count,
                    end_time=old.end_time or self.clock(), data=blob))

    def load_jobs(self, active_only: bool = True) -> list[Job]:
        query = sa.select(jobs_table.c.data)
        if active_only:
            query = query.where(jobs_table.c.state.in_(ACTIVE_STATES))
        with self.engine.connect() as conn:
            blobs = conn.execute(query.order_by(jobs_table.c.job_id)).scalars().all()
        return [decode_job(b) for b in blobs]

    def load_finished(self, job_ids: list[int] | None = None, limit: int = 10000) -> list[Job]:
        query = sa.select(jobs_table.c.data).where(jobs_table.c.state.not_in(ACTIVE_STATES))
        if job_ids:
            query = query.where(jobs_table.c.job_id.in_(job_ids))
        query = query.order_by(jobs_table.c.job_id.desc()).limit(limit)
        with self.engine.connect() as conn:
            blobs = conn.execute(query).scalars().all()
        return [decode_job(b) for b in reversed(blobs)]

    # ---- accounting (sacct) --------------------------------------------------------------------
    def job_history(self, job_ids: list[int] | None = None, id_spans: list[tuple[int, int]] = (),
                    users: list[str] = (), partitions: list[str] = (), names: list[str] = (),
                    ended_after: float = 0.0, submitted_before: float = 0.0) -> list:
        """Jobs in their latest form, by id (or id span: an array's tasks), owner (name or uid),
        partition and name, that had not ended by ended_after and were submitted before
        submitted_before (0: no bound). A coarse cut the indexes serve; accounting decides.
        Each is the stored types_pb2.Job message, parsed and not converted: sacct reads tens
        of thousands, and the reply sends them as they are."""
        c = jobs_table.c
        query = sa.select(c.data)
        if job_ids is not None or id_spans:
            by_id = [c.job_id.in_(job_ids or [])] + [c.job_id.between(lo, hi) for lo, hi in id_spans]
            query = query.where(sa.or_(*by_id))
        if users:
            uids = [int(u) for u in users if u.isdigit()]
            query = query.where(sa.or_(c.user_name.in_(users), c.uid.in_(uids)))
        if partitions:
            query = query.where(c.partition.in_(partitions))
        if names:
            query = query.where(c.name.in_(names))
        if ended_after:
            query = query.where(sa.or_(c.end_time == 0, c.end_time >= ended_after))
        if submitted_before:
            query = query.where(c.submit_time < submitted_before)
        with self.engine.connect() as conn:
            blobs = conn.execute(query.order_by(c.job_id)).scalars().all()
        return [parse_job(b) for b in blobs]

    def started_jobs(self, limit: int = 0) -> list[tuple[int, float, float, float]]:
        """(uid, submit, start, end: 0 while it runs) of the latest `limit` jobs that started (0:
        every one), oldest start first, from the columns alone: the scheduling policy's waits
        and run-time history are seeded from them at start-up (sched/policy.py)."""
        c = jobs_table.c
        query = sa.select(c.uid, c.submit_time, c.start_time, c.end_time, c.state).where(c.start_time > 0)
        query = query.order_by(c.start_time.desc())
        if limit:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            rows = list(conn.execute(query))
        return [(uid, submit, start, 0.0 if state in ACTIVE_STATES else end)
                for uid, submit, start, end, state in reversed(rows)]

    def refit_window(self, opens: float, lookback: float) -> list[Job]:
        """The jobs a re-fit of the starvation guard replays: those submitted since `opens`,
        and those submitted up to `lookback` earlier that had not started when it opened
        (controller/guard_refit.py), by submit time."""
        c = jobs_table.c
        query = (sa.select(c.data).where(c.submit_time >= opens - lookback)
                 .where(sa.or_(c.submit_time >= opens, c.start_time == 0, c.start_time >= opens))
                 .order_by(c.submit_time, c.job_id))
        with self.engine.connect() as conn:
            return [decode_job(r[0]) for r in conn.execute(query)]

    def wait_totals(self) -> tuple[int, float]:
        """(how many jobs started, the sum of their waits): the starvation guard's mean over
        every job, without reading them all."""
        c = jobs_table.c
        query = sa.select(sa.func.count(), sa.func.sum(c.start_time - c.submit_time)).where(c.start_time > 0)
        with self.engine.connect() as conn:
            count, total = conn.execute(query).one()
        return int(count or 0), float(total or 0.0)

    def oldest_submit(self) -> float:
        """The submit time of the oldest job stored (0: none)."""
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.min(jobs_table.c.submit_time))).scalar() or 0.0

    def job_runs(self, job_ids: list[int]) -> dict[int, list[tuple[object, float]]]:
        """job id -> its archived earlier runs (types_pb2.Job messages, as job_history's),
        oldest first, each with when it ended."""
        query = (sa.select(runs_table.c.job_id, runs_table.c.end_time, runs_table.c.data)
                 .where(runs_table.c.job_id.in_(job_ids)).order_by(runs_table.c.job_id, runs_table.c.restart_count))
        out: dict[int, list[tuple[object, float]]] = {}
        with self.engine.connect() as conn:
            for job_id, end_time, blob in conn.execute(query):
                out.setdefault(job_id, []).append((parse_job(blob), end_time))
        return out

    # ---- usage (fair share) -------------------------------------------------------------------
    def add_usage(self, usage: dict[tuple[str, str], dict[str, float]], charged: dict[int, float],
                  now: float, forget: tuple[int, ...] = ()) -> None:
        """Write associations' usage (TRES-seconds, already decayed to `now` and charged by the
        caller) and the jobs' new charged-until marks in one transaction; `forget` drops the
        marks of jobs that can no longer be charged."""
        rows = [{"k_account": account, "k_user": user, "k_tres": tres, "seconds": seconds,
                 "updated": now} for (account, user), per_tres in usage.items()
                for tres, seconds in per_tres.items()]
        marks = [{"k_job": job_id, "charged_until": until} for job_id, until in charged.items()]
        with self._lock, self._write() as conn:
            _upsert(conn, _USAGE_UPDATE, usage_table, rows)
            _upsert(conn, _CHARGED_UPDATE, charged_table, marks)
            if forget:
                conn.execute(charged_table.delete().where(charged_table.c.job_id.in_(forget)))

    def load_usage(self, now: float, half_life: float) -> dict[tuple[str, str], dict[str, float]]:
        """Associations' usage: (account, user) -> {tres: TRES-seconds decayed to `now`}."""
        from ..sched.priority import decayed
        out: dict[tuple[str, str], dict[str, float]] = {}
        with self.engine.connect() as conn:
            for r in conn.execute(sa.select(usage_table)).all():
                out.setdefault((r.account, r.user_name), {})[r.tres] = decayed(r.seconds, now - r.updated, half_life)
        return out

    def load_charged(self) -> dict[int, float]:
        """Jobs' charged-until marks (job id -> time)."""
        with self.engine.connect() as conn:
            return {r.job_id: r.charged_until for r in conn.execute(sa.select(charged_table)).all()}

    # ---- advance reservations -----------------------------------------------------------------
    def save_reservation(self, resv: Reservation) -> None:
        """Insert a new reservation; StaleState if the name is taken."""
        blob = wire.to_msg(resv, types_pb2.Reservation).SerializeToString()
        with self._lock, self._write() as conn:
            if conn.execute(sa.select(reservations_table.c.name)
                            .where(reservations_table.c.name == resv.name)).first():
                raise StaleState(f"Reservation {resv.name} already exists")
            conn.execute(reservations_table.insert().values(name=resv.name, end_time=resv.end_time,
                                                            data=blob))

    def delete_reservation(self, name: str) -> bool:
        with self._lock, self._write() as conn:
            return conn.execute(reservations_table.delete()
                                .where(reservations_table.c.name == name)).rowcount > 0

    def load_reservations(self) -> list[Reservation]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(reservations_table.c.data)
                                .order_by(reservations_table.c.name)).all()
        out = []
        for (blob,) in rows:
            msg = types_pb2.Reservation()
            msg.ParseFromString(blob)
            out.append(wire.from_msg(msg, Reservation))
        return out

    # ---- notifications (outbox) -----------------------------------------------------------------
    def add_outbox(self, rows: list[dict]) -> None:
        """Queue notifications (OUTBOX_FIELDS); one whose key is queued already is skipped."""
        if rows:
            with self._lock, self._write() as conn:
                _queue_outbox(conn, rows, self.clock())

    def due_outbox(self, now: float, limit: int = 50) -> list[dict]:
        """Unsent notifications whose time has come, oldest first."""
        c = outbox_table.c
        query = (sa.select(outbox_table).where((c.sent == 0) & (c.next_at <= now))
                 .order_by(c.next_at, c.id).limit(limit))
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def next_outbox_time(self) -> float | None:
        """When the next unsent notification is due (None: none waits)."""
        c = outbox_table.c
        with self.engine.connect() as conn:
            return conn.execute(sa.select(sa.func.min(c.next_at)).where(c.sent == 0)).scalar()

    def outbox_sent(self, row_id: int, now: float) -> None:
        with self._lock, self._write() as conn:
            conn.execute(outbox_table.update().where(outbox_table.c.id == row_id)
                         .values(sent=now, error=""))

    def outbox_retry(self, row_id: int, attempts: int, next_at: float, error: str) -> None:
        with self._lock, self._write() as conn:
            conn.execute(outbox_table.update().where(outbox_table.c.id == row_id)
                         .values(attempts=attempts, next_at=next_at, error=error[:512]))

    def prune_outbox(self, sent_before: float) -> None:
        """Forget notifications sent before then (their keys no longer guard repeats)."""
        c = outbox_table.c
        with self._lock, self._write() as conn:
            conn.execute(outbox_table.delete().where((c.sent > 0) & (c.sent < sent_before)))

    # ---- nodes --------------------------------------------------------------------------------
    def save_node(self, name: str, drain: bool, down: bool, reason: str, reason_time: float) -> None:
        values = {"drain": drain, "down": down, "reason": reason, "reason_time": reason_time}
        with self._lock, self._write() as conn:
            updated = conn.execute(nodes_table.update().where(nodes_table.c.name == name).values(values))
            if updated.rowcount == 0:
                conn.execute(nodes_table.insert().values(name=name, **values))

    def load_nodes(self) -> dict[str, dict]:
        with self.engine.connect() as conn:
            return {r.name: dict(r._mapping)
                    for r in conn.execute(sa.select(nodes_table).order_by(nodes_table.c.name))}

    # ---- accounting (controller/assoc.py) -----------------------------------------------------
    def load_accounting(self) -> tuple[list, dict[str, str], list]:
        """(associations, user -> default account, QOS), as model dataclasses."""
        from .. import model
        with self.engine.connect() as conn:
            assocs = [_assoc_from(r.account, r.user_name, r.data)
                      for r in conn.execute(sa.select(acct_assoc_table).order_by(
                          acct_assoc_table.c.account, acct_assoc_table.c.user_name))]
            users = {r.user_name: r.default_account for r in conn.execute(sa.select(acct_users_table))}
            qos = [model.Qos(**json.loads(r.data))
                   for r in conn.execute(sa.select(acct_qos_table).order_by(acct_qos_table.c.name))]
        return assocs, users, qos

    def save_accounting(self, assocs=(), users=None, qos=(), drop_assocs=(), drop_users=(),
                        drop_qos=()) -> None:
        """One sacctmgr change, all of it or nothing: rows written, then rows dropped."""
        t_a, t_u, t_q = acct_assoc_table, acct_users_table, acct_qos_table
        with self._lock, self._write() as conn:
            for a in assocs:
                conn.execute(t_a.delete().where((t_a.c.account == a.account) & (t_a.c.user_name == a.user)))
                conn.execute(t_a.insert().values(account=a.account, user_name=a.user,
                                                 data=json.dumps(dataclasses.asdict(a))))
            for name, default in (users or {}).items():
                conn.execute(t_u.delete().where(t_u.c.user_name == name))
                conn.execute(t_u.insert().values(user_name=name, default_account=default))
            for q in qos:
                conn.execute(t_q.delete().where(t_q.c.name == q.name))
                conn.execute(t_q.insert().values(name=q.name, data=json.dumps(dataclasses.asdict(q))))
            for account, user in drop_assocs:
                conn.execute(t_a.delete().where((t_a.c.account == account) & (t_a.c.user_name == user)))
            for name in drop_users:
                conn.execute(t_u.delete().where(t_u.c.user_name == name))
            for name in drop_qos:
                conn.execute(t_q.delete().where(t_q.c.name == name))

    def close(self) -> None:
        self.engine.dispose()


def _assoc_from(account: str, user: str, data: str):
    from ..model import Association, TresLimits
    fields = json.loads(data)
    fields.update(account=account, user=user, limits=TresLimits(**fields.get("limits", {})))
    return Association(**fields)


class GroupCommit:
    """Leader/follower batching: the first caller writes everything queued so far in one
    transaction while later callers wait; each caller returns once its rows are committed (or
    raises the error that transaction raised)."""

    def __init__(self, write):
        self._write = write
        self._cv = threading.Condition()
        self._queue: list[list] = []
        self._busy = False

    def commit(self, rows: list[dict]) -> None:
        ticket = [rows, None, False]  # rows, error, done
        with self._cv:
            self._queue.append(ticket)
            while self._busy and not ticket[2]:
                self._cv.wait()
            if not ticket[2]:
                self._busy = True
                batch, self._queue = self._queue, []
        if not ticket[2]:
            self._lead(batch)
        if ticket[1] is not None:
            raise ticket[1]

    def _lead(self, batch: list[list]) -> None:
        error = None
        try:
            self._write([row for t in batch for row in t[0]])
        except Exception as e:  # handed to every waiting caller, each re-raises it
            error = e
        with self._cv:
            for t in batch:
                t[1], t[2] = error, True
            self._busy = False
            self._cv.notify_all()


def _queue_outbox(conn, rows: list[dict], now: float) -> None:
    """Insert the rows whose key is new, due now. Keys are looked up first rather than relying
    on a dialect's INSERT OR IGNORE, so any SQLAlchemy backend does."""
    keys = [r["key"] for r in rows]
    have = set(conn.execute(sa.select(outbox_table.c.key).where(outbox_table.c.key.in_(keys))).scalars())
    fresh = {}
    for r in rows:
        if r["key"] not in have:
            fresh[r["key"]] = {f: r[f] for f in OUTBOX_FIELDS}
    if fresh:
        conn.execute(outbox_table.insert(), [{**r, "attempts": 0, "next_at": now, "created": now,
                                              "sent": 0.0, "error": ""} for r in fresh.values()])


# Every ended job writes its usage and charge mark: the statements are built once, with bind
# parameters (k_*: the key), not per call (SQLAlchemy's expression building was most of it).
_USAGE_UPDATE = usage_table.update().where(
    (usage_table.c.account == sa.bindparam("k_account"))
    & (usage_table.c.user_name == sa.bindparam("k_user"))
    & (usage_table.c.tres == sa.bindparam("k_tres"))).values(
    seconds=sa.bindparam("seconds"), updated=sa.bindparam("updated"))
_CHARGED_UPDATE = charged_table.update().where(
    charged_table.c.job_id == sa.bindparam("k_job")).values(
    charged_until=sa.bindparam("charged_until"))


_KEY_COLUMNS = {"k_account": "account", "k_user": "user_name", "k_tres": "tres", "k_job": "job_id"}


def _upsert(conn, update, table, rows: list[dict]) -> None:
    """Update each row by its key (its k_* parameters), then insert those no row matched."""
    missing = [r for r in rows if conn.execute(update, r).rowcount == 0]
    if missing:
        conn.execute(table.insert(), [{_KEY_COLUMNS.get(k, k): v for k, v in r.items()}
                                      for r in missing])


def _encode_env(env: dict[str, str]) -> bytes:
    return types_pb2.JobSpec(environment=env).SerializeToString()


def _decode_env(blob: bytes) -> dict[str, str]:
    msg = types_pb2.JobSpec()
    msg.ParseFromString(blob)
    return dict(msg.environment)


def parse_job(blob: bytes):
    """A stored job as its types_pb2.Job message."""
    msg = types_pb2.Job()
    msg.ParseFromString(blob)
    return msg


def decode_job(blob: bytes) -> Job:
    return wire.from_msg(parse_job(blob), Job)
