"""`pyslurm-lite db copy`: a stopped controller's state from one database into another — SQLite
to PostgreSQL when a cluster outgrows one box, or any SQLAlchemy URL to any other.

Owns: reading the source through store.py's table definitions (`store.metadata`, never changed
here), the refusals that keep a copy safe, and writing every row into the empty target in one
transaction. Must not: write to the source; copy beside a running controller; add to a database
that already holds state (ids, usage and accounting would mix with another cluster's).

Telling that a controller runs on the source:
  * SQLite: a controller keeps its connections to the file open (SQLAlchemy's pool) in WAL mode.
    A connection in `locking_mode=EXCLUSIVE` cannot take the file while any other connection has
    it open, so "database is locked" means a controller (or another reader) is there. The copy
    keeps that lock until it ends: a controller started meanwhile fails to open the database
    rather than writing into a source half read.
  * PostgreSQL: any other session connected to the source database (pg_stat_activity): a
    controller holds a pool of connections for as long as it runs. The copy then reads in one
    REPEATABLE READ transaction holding every table in SHARE mode, so no write lands meanwhile.

Job ids continue after the copy because the controller starts from the largest job id in the
`jobs` table; PostgreSQL's sequences behind autoincrement keys are moved past the copied ids.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

from ..errors import SlurmError
from . import store
from .lease import lease_table

BATCH_ROWS = 1000  # rows read and inserted at a time: bounded memory for any number of jobs


class CopyRefused(SlurmError):
    """The copy would be unsafe or cannot start; nothing was written."""


@dataclass
class CopyResult:
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows copied, in copy order
    schema_version: str = ""
    skipped: list[str] = field(default_factory=list)  # source tables no longer in the schema
    fresh: list[str] = field(default_factory=list)  # left behind on purpose: the lease


def copy(src_url: str, dst_url: str) -> CopyResult:
    """Copy every table of the controller's state from src_url into dst_url (empty) in one
    transaction; CopyRefused when that is unsafe, with nothing written."""
    src_u, dst_u = _parse(src_url, "--from"), _parse(dst_url, "--to")
    if _same_database(src_u, dst_u):
        raise CopyRefused("--from and --to name the same database")
    src = _open_source(src_u)
    try:
        with src.connect() as sconn:
            _freeze_source(sconn)
            result = CopyResult(schema_version=_schema_version(sconn, src_u))
            present = set(sa.inspect(sconn).get_table_names())
            # the control lease names controllers of the old database: the new one starts afresh
            result.fresh = sorted(present & {lease_table.name})
            result.skipped = sorted(present - set(store.metadata.tables) - {lease_table.name})
            _write_target(sconn, dst_u, present, result)
    finally:
        src.dispose()
    return result


def _write_target(sconn: sa.Connection, dst_u: sa.engine.URL, present: set[str],
                  result: CopyResult) -> None:
    """The schema and every row, in one transaction on the target: all of it or nothing."""
    dst = _open_target(dst_u)
    try:
        with dst.begin() as dconn:
            _check_empty(dconn, dst_u)
            store.metadata.create_all(dconn)  # the shape migrations.py brings a new database to
            for table in store.metadata.sorted_tables:  # parents before children
                if table.name in present:
                    result.rows[table.name] = _copy_table(sconn, dconn, table)
            _advance_sequences(dconn)
            _verify(dconn, result)
    finally:
        dst.dispose()


def _parse(url: str, option: str) -> sa.engine.URL:
    try:
        return sa.engine.make_url(url)
    except sa.exc.ArgumentError as e:
        raise CopyRefused(f"{option} {url!r} is not a database URL: {e}") from None


def _same_database(a: sa.engine.URL, b: sa.engine.URL) -> bool:
    if a.get_backend_name() == b.get_backend_name() == "sqlite":
        return _sqlite_path(a) == _sqlite_path(b)
    return a.render_as_string(hide_password=True) == b.render_as_string(hide_password=True)


def _sqlite_path(url: sa.engine.URL) -> str:
    return os.path.realpath(url.database or "")


def _shown(url: sa.engine.URL) -> str:
    """A URL as messages may show it: never with its password."""
    return url.render_as_string(hide_password=True)


# ---- the source -------------------------------------------------------------------------------
def _open_source(url: sa.engine.URL) -> sa.Engine:
    if url.get_backend_name() != "sqlite":
        return _engine(url, "--from")
    path = _sqlite_path(url)
    if not url.database or not os.path.isfile(path):
        raise CopyRefused(f"--from {_shown(url)}: no such SQLite file {path}")
    raw = None
    try:
        raw = sqlite3.connect(path, timeout=0.5, isolation_level=None, check_same_thread=False)
        raw.execute("PRAGMA locking_mode=EXCLUSIVE")
        raw.execute("BEGIN EXCLUSIVE")  # takes the lock, kept (exclusive mode) until close
        raw.execute("COMMIT")
    except sqlite3.OperationalError as e:
        if raw is not None:
            raw.close()
        if "locked" not in str(e) and "busy" not in str(e):
            raise CopyRefused(f"--from {path}: {e} (the copy reads it as its owner would: "
                              f"run it as the controller's user)") from None
        raise CopyRefused(f"{path} is in use ({e}): stop the controller that uses it "
                          f"(and anything else that has it open), then copy") from None
    return sa.create_engine("sqlite://", creator=lambda: raw, poolclass=StaticPool)


def _freeze_source(conn: sa.Connection) -> None:
    """On a database server: refuse when a controller is connected; hold the tables still."""
    if conn.dialect.name != "postgresql":
        return
    conn.execute(sa.text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
    others = conn.execute(sa.text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()")).scalar()
    if others:
        raise CopyRefused(f"{others} other session(s) are connected to database "
                          f"{conn.engine.url.database}: stop the controller(s) that use it, then copy")
    names = [t.name for t in store.metadata.sorted_tables
             if t.name in sa.inspect(conn).get_table_names()]
    if names:
        conn.execute(sa.text(f"LOCK TABLE {', '.join(names)} IN SHARE MODE"))


def _schema_version(conn: sa.Connection, url: sa.engine.URL) -> str:
    if "meta" not in sa.inspect(conn).get_table_names():
        raise CopyRefused(f"--from {_shown(url)} holds no pyslurm-lite state (no meta table)")
    meta = store.meta_table
    version = conn.execute(sa.select(meta.c.value).where(meta.c.key == "schema_version")).scalar()
    if version == str(store.SCHEMA_VERSION):
        return version
    if version is not None and version.isdigit() and int(version) > store.SCHEMA_VERSION:
        raise CopyRefused(f"--from {_shown(url)} has schema version {version}, newer than this "
                          f"pyslurm-lite's {store.SCHEMA_VERSION}: copy with the pyslurm-lite that wrote it")
    raise CopyRefused(f"--from {_shown(url)} has schema version {version}; this pyslurm-lite "
                      f"copies version {store.SCHEMA_VERSION}: upgrade it first (`pyslurm-lite db "
                      f"upgrade --conf` with the slurm.conf that uses it)")


# ---- the target -------------------------------------------------------------------------------
def _open_target(url: sa.engine.URL) -> sa.Engine:
    if url.get_backend_name() == "sqlite" and url.database:
        # a new state file is private from its first byte, as the controller makes its own
        path = _sqlite_path(url)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        os.chmod(path, 0o600)
    return _engine(url, "--to")


def _engine(url: sa.engine.URL, option: str) -> sa.Engine:
    try:
        engine = sa.create_engine(url)
        with engine.connect():
            pass
    except (sa.exc.SQLAlchemyError, ImportError) as e:
        reason = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        raise CopyRefused(f"{option} {_shown(url)}: cannot connect: {reason}") from None
    return engine


def _check_empty(conn: sa.Connection, url: sa.engine.URL) -> None:
    """A target whose tables exist but hold no rows is empty (a copy that failed leaves that)."""
    present = set(sa.inspect(conn).get_table_names())
    full = []
    for table in store.metadata.sorted_tables:
        if table.name in present:
            n = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
            if n:
                full.append(f"{table.name} ({n} rows)")
    if full:
        raise CopyRefused(f"--to {_shown(url)} already holds state: {', '.join(full)}; "
                          f"copy into an empty database")


# ---- rows -------------------------------------------------------------------------------------
def _copy_table(sconn: sa.Connection, dconn: sa.Connection, table: sa.Table) -> int:
    """Only the columns both sides know: a source from before a column was added (a table added
    without a schema bump) gives the target column its default."""
    have = {c["name"] for c in sa.inspect(sconn).get_columns(table.name)}
    cols = [c for c in table.columns if c.name in have]
    rows = sconn.execute(sa.select(*cols).order_by(*table.primary_key.columns))
    n = 0
    while batch := rows.fetchmany(BATCH_ROWS):
        dconn.execute(table.insert(), [dict(r._mapping) for r in batch])
        n += len(batch)
    return n


def _advance_sequences(conn: sa.Connection) -> None:
    """PostgreSQL hands out autoincrement keys from a sequence that copied rows did not move;
    without this the controller's next insert would collide with a copied key."""
    if conn.dialect.name != "postgresql":
        return
    for table in store.metadata.sorted_tables:
        col = table.autoincrement_column
        if col is None:
            continue
        conn.execute(sa.text(
            f"SELECT setval(pg_get_serial_sequence('{table.name}', '{col.name}'), "
            f"coalesce((SELECT max({col.name}) FROM {table.name}), 0) + 1, false)"))


def _verify(conn: sa.Connection, result: CopyResult) -> None:
    """Count again inside the transaction: a difference aborts it (nothing is kept)."""
    for name, n in result.rows.items():
        got = conn.execute(sa.select(sa.func.count()).select_from(store.metadata.tables[name])).scalar()
        if got != n:
            raise CopyRefused(f"table {name}: {n} rows read, {got} in the target; nothing copied")
