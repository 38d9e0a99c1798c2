"""Versioned migrations of the state database, the same path for SQLite and PostgreSQL.

Owns: the ordered list of migrations and bringing a database to the latest one. `meta` holds
`schema_version`, where a database is (0: nothing yet). At start the controller applies every
migration after that, in order, in ONE transaction with the new version: a database is at one
version or the next, never half way. The transaction is exclusive, so two controllers starting
together against one database do not both migrate: PostgreSQL takes a transaction-scoped
advisory lock (pg_advisory_xact_lock) before it reads the version; SQLite starts the transaction
with BEGIN IMMEDIATE (the write lock first, then the read). A database newer than this code is
refused: nothing here downgrades. Must not: touch rows it does not migrate.

Writing a migration: append (version, description, function(conn, dialect)). A function may
create store.py's tables as they stand today only while no later migration changes them; a
migration that changes a table must first freeze here the shape the earlier ones created.
Every step checks what exists first (checkfirst), because databases older than the versioning
of those tables got them from create_all without a version bump.

    0 (empty) --1--> jobs, nodes, meta --2--> the tables added since, an index for sacct
      --3--> the control lease of a controller pair (lease.py), its one row
"""

from __future__ import annotations

import contextlib
import logging
import os

import sqlalchemy as sa

from ..errors import ConfigError

log = logging.getLogger("pyslurm_lite.controller.migrations")

# pg_advisory_xact_lock's key for "migrating the state database" ('pslm'): any 64-bit number
# that nothing else in the database uses
PG_LOCK_KEY = 0x70736C6D


def _v1_first_tables(conn, dialect: str) -> None:
    # jobs as store.py has it today brings version 2's index along; _v2 then finds it there
    from . import store
    _create(conn, store.meta_table, store.jobs_table, store.nodes_table)


def _v2_later_tables(conn, dialect: str) -> None:
    from . import store
    _create(conn, store.scripts_table, store.usage_table, store.charged_table,
            store.reservations_table, store.runs_table, store.acct_assoc_table,
            store.acct_users_table, store.acct_qos_table, store.outbox_table)
    # sacct -S/-E cut jobs by when they ended; without it every window scans every job
    _index(conn, "ix_jobs_end_time_for_sacct")


def _v3_control_lease(conn, dialect: str) -> None:
    # under the migration lock: two controllers of a pair starting together against a new
    # database would otherwise race on CREATE TABLE, and one exit
    from .lease import NO_TAKEOVER, lease_table
    _create(conn, lease_table)
    if conn.execute(sa.select(lease_table.c.id).where(lease_table.c.id == 1)).first() is None:
        conn.execute(lease_table.insert().values(id=1, holder=-1, instance="", epoch=0,
                                                 renewed_at=0.0, expires_at=0.0,
                                                 takeover=NO_TAKEOVER))


MIGRATIONS: list[tuple[int, str, object]] = [
    (1, "jobs, nodes and meta", _v1_first_tables),
    (2, "job scripts, runs, reservations, fair-share usage, accounting, outbox; "
        "jobs(end_time) index for sacct", _v2_later_tables),
    (3, "the control lease of a controller pair", _v3_control_lease),
]
LATEST = MIGRATIONS[-1][0]


def upgrade(engine: sa.Engine) -> tuple[int, int]:
    """Bring the database to LATEST; (version found, version now). ConfigError for a database
    newer than this code."""
    with _exclusive(engine) as conn:
        found = version_in(conn)
        _refuse_newer(found, engine)
        for version, description, apply in MIGRATIONS:
            if version > found:
                apply(conn, conn.dialect.name)
                log.info("state database: schema version %d: %s", version, description)
        if found != LATEST:
            _stamp(conn, LATEST)
    return found, LATEST


def version_of(engine: sa.Engine) -> int:
    """The database's schema version without changing anything (0: an empty database)."""
    with engine.connect() as conn:
        return version_in(conn)


def pending(found: int) -> list[tuple[int, str]]:
    """(version, description) of the migrations a database at `found` lacks."""
    return [(v, d) for v, d, _ in MIGRATIONS if v > found]


def version_in(conn) -> int:
    if not sa.inspect(conn).has_table("meta"):
        return 0
    value = conn.execute(sa.text("SELECT value FROM meta WHERE key = 'schema_version'")).scalar()
    if value is None:
        return 0  # tables from create_all, killed before the version was written
    if not str(value).isdigit():
        raise ConfigError(f"state database: meta.schema_version is {value!r}, not a version number")
    return int(value)


def _refuse_newer(found: int, engine: sa.Engine) -> None:
    if found > LATEST:
        where = engine.url.render_as_string(hide_password=True)
        raise ConfigError(f"state database {where} has schema version {found}, newer than this "
                          f"pyslurm-lite's {LATEST}: run the newer pyslurm-lite (nothing downgrades)")


def _stamp(conn, version: int) -> None:
    from .store import meta_table
    key = meta_table.c.key == "schema_version"
    if conn.execute(meta_table.update().where(key).values(value=str(version))).rowcount == 0:
        conn.execute(meta_table.insert().values(key="schema_version", value=str(version)))


def _create(conn, *tables: sa.Table) -> None:
    for table in tables:
        table.create(conn, checkfirst=True)


def _index(conn, name: str) -> None:
    from .store import metadata
    index = next(i for t in metadata.tables.values() for i in t.indexes if i.name == name)
    index.create(conn, checkfirst=True)


@contextlib.contextmanager
def _exclusive(engine: sa.Engine):
    """One transaction that only one process holds at a time, around read-version-then-migrate."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        with _sqlite_immediate(engine) as conn:
            yield conn
        return
    with engine.begin() as conn:
        if dialect == "postgresql":
            # open_engine's timeouts are for everyday statements: a migration of a large
            # database, or one waiting for another controller's, may take longer
            conn.exec_driver_sql("SET LOCAL statement_timeout = 0")
            conn.exec_driver_sql("SET LOCAL lock_timeout = 0")
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(PG_LOCK_KEY)))
        yield conn


@contextlib.contextmanager
def _sqlite_immediate(engine: sa.Engine):
    """pysqlite begins a transaction only before DML, so DDL would run outside one and two
    starters could both read version 0: the driver is told to stay out of it (AUTOCOMMIT) and
    the transaction is ours, taken with the write lock (BEGIN IMMEDIATE waits busy_timeout for
    another migrator)."""
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.exec_driver_sql("ROLLBACK")
            raise
        conn.exec_driver_sql("COMMIT")


# ---- for `pyslurm-lite db version|upgrade` ---------------------------------------------------
def version_at(url: str) -> tuple[str, int]:
    """(the URL as shown, its schema version); a SQLite file that does not exist is version 0
    and is not created."""
    from .store import open_engine, reaching
    engine = open_engine(url, create=False)
    if engine.dialect.name == "sqlite" and engine.url.database \
            and not os.path.exists(engine.url.database):
        return engine.url.render_as_string(hide_password=True), 0
    try:
        with reaching(engine):
            return engine.url.render_as_string(hide_password=True), version_of(engine)
    finally:
        engine.dispose()


def upgrade_at(url: str) -> tuple[str, int, int]:
    """(the URL as shown, version found, version now) after upgrading the database at url."""
    from .store import open_engine, reaching
    engine = open_engine(url)
    try:
        with reaching(engine):
            found, now = upgrade(engine)
        return engine.url.render_as_string(hide_password=True), found, now
    finally:
        engine.dispose()
