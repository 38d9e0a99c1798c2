"""controller/migrations.py on SQLite files: an old database reaches the latest version with its
rows kept and the very schema a new one gets; a newer one is refused; migrating is exclusive;
`pyslurm-lite db version|upgrade`. (tests/e2e/test_postgres.py does the same on PostgreSQL.)"""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from factories import model_job
from pyslurm_lite.cli.admin import main as admin
from pyslurm_lite.controller import migrations
from pyslurm_lite.controller.store import Store, metadata, open_engine
from pyslurm_lite.errors import ConfigError
from pyslurm_lite.model import JobState
from pyslurm_lite.rpc import wire
from pyslurm_lite._proto import types_pb2

# The schema as pyslurm-lite first wrote it and stamped version 1 (commit 9cf2bcf), by hand:
# what databases in the field hold, whatever store.py says today.
V1_DDL = """
CREATE TABLE meta (key VARCHAR(64) NOT NULL, value VARCHAR(256) NOT NULL, PRIMARY KEY (key));
CREATE TABLE jobs (job_id BIGINT NOT NULL, state VARCHAR(16) NOT NULL, user_name VARCHAR(64) NOT NULL,
    uid INTEGER NOT NULL, partition VARCHAR(64) NOT NULL, name VARCHAR(256) NOT NULL,
    submit_time FLOAT NOT NULL, start_time FLOAT NOT NULL, end_time FLOAT NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (job_id));
CREATE INDEX ix_jobs_state_for_restart_scan ON jobs (state);
CREATE INDEX ix_jobs_user_for_sacct ON jobs (user_name, submit_time);
CREATE TABLE nodes (name VARCHAR(64) NOT NULL, drain BOOLEAN NOT NULL, down BOOLEAN NOT NULL,
    reason VARCHAR(256) NOT NULL, reason_time FLOAT NOT NULL, PRIMARY KEY (name));
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO nodes VALUES ('node1', 1, 0, 'maint', 5.0);
"""


def v1_database(path) -> None:
    job = model_job(7)
    job.state = JobState.COMPLETED
    job.end_time = 1_700_000_100.0
    with sqlite3.connect(path) as raw:
        raw.executescript(V1_DDL)
        raw.execute("INSERT INTO jobs VALUES (7, 'COMPLETED', ?, ?, ?, ?, ?, 0, ?, ?)",
                    (job.spec.user, job.spec.uid, job.partition, job.spec.name, job.submit_time,
                     job.end_time, wire.to_msg(job, types_pb2.Job).SerializeToString()))
    raw.close()


def schema(engine) -> dict:
    """Tables -> (columns, indexes) as the database itself describes them."""
    insp = sa.inspect(engine)
    return {t: (sorted((c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns(t)),
                sorted((i["name"], tuple(i["column_names"])) for i in insp.get_indexes(t)))
            for t in insp.get_table_names()}


def version_row(path) -> list:
    with sqlite3.connect(path) as raw:
        return raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()


def test_a_v1_database_upgrades_to_the_latest_with_its_rows(tmp_path):
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    v1_database(old)
    store = Store(f"sqlite:///{old}")
    assert version_row(old) == [(str(migrations.LATEST),)]
    [job] = store.job_history(job_ids=[7])
    assert (job.job_id, job.state, job.end_time) == (7, JobState.COMPLETED, 1_700_000_100.0)
    assert store.load_nodes()["node1"]["reason"] == "maint"
    Store(f"sqlite:///{new}").close()
    # the path from version 1 ends at the schema a new database starts with
    assert schema(store.engine) == schema(open_engine(f"sqlite:///{new}"))
    store.close()


def test_every_table_and_index_of_store_py_comes_from_a_migration(tmp_path):
    """A table or index added to store.py without a migration leaves older databases without it."""
    engine = open_engine(f"sqlite:///{tmp_path / 's.db'}")
    assert migrations.upgrade(engine) == (0, migrations.LATEST)
    have = schema(engine)
    for table in metadata.sorted_tables:
        assert table.name in have, f"no migration creates table {table.name}"
        names = {name for name, _ in have[table.name][1]}
        for index in table.indexes:
            assert index.name in names, f"no migration creates index {index.name}"
    assert migrations.upgrade(engine) == (migrations.LATEST, migrations.LATEST)  # nothing twice


def test_a_newer_database_is_refused_and_left_alone(tmp_path):
    db = tmp_path / "s.db"
    Store(f"sqlite:///{db}").close()
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(migrations.LATEST + 1),))
    raw.close()
    with pytest.raises(ConfigError) as e:
        Store(f"sqlite:///{db}")
    assert f"schema version {migrations.LATEST + 1}, newer than this pyslurm-lite's {migrations.LATEST}" \
        in e.value.message
    assert version_row(db) == [(str(migrations.LATEST + 1),)]


def test_a_second_migrator_waits_for_the_first_and_finds_nothing_to_do(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    first, second = open_engine(url), open_engine(url)
    result = {}
    with migrations._exclusive(first) as conn:
        assert migrations.version_in(conn) == 0
        racer = threading.Thread(target=lambda: result.update(got=migrations.upgrade(second)))
        racer.start()
        time.sleep(0.5)
        assert racer.is_alive(), "a second migrator ran while the first held the database"
        for _version, _description, apply in migrations.MIGRATIONS:
            apply(conn, "sqlite")
        migrations._stamp(conn, migrations.LATEST)
    racer.join(10)
    assert result["got"] == (migrations.LATEST, migrations.LATEST)


def test_a_failed_migration_leaves_the_version_where_it_was(tmp_path, monkeypatch):
    db = tmp_path / "old.db"
    v1_database(db)

    def broken(conn, dialect):
        conn.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("disk full")
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, (99, "broken", broken)])
    monkeypatch.setattr(migrations, "LATEST", 99)
    with pytest.raises(RuntimeError):
        migrations.upgrade(open_engine(f"sqlite:///{db}"))
    assert version_row(db) == [("1",)]
    with sqlite3.connect(db) as raw:
        tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    raw.close()
    assert tables == {"meta", "jobs", "nodes"}  # version 2's tables rolled back with it


def test_db_version_and_upgrade_commands(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"SlurmctldHost=localhost\nStateSaveLocation={state}\n"
                    "NodeName=node1 CPUs=1\nPartitionName=main Nodes=ALL Default=YES\n")
    runner = CliRunner()
    r = runner.invoke(admin, ["db", "version", "--conf", str(conf)])
    assert r.exit_code == 0 and "schema version 0" in r.output, r.output
    assert not (state / "state.db").exists()  # looking creates nothing
    v1_database(state / "state.db")
    r = runner.invoke(admin, ["db", "version", "--conf", str(conf)])
    assert f"schema version 1 (this pyslurm-lite: {migrations.LATEST})" in r.output, r.output
    assert "to apply: 2 " in r.output
    r = runner.invoke(admin, ["db", "upgrade", "--conf", str(conf)])
    assert r.exit_code == 0 and f"schema version {migrations.LATEST}, upgraded from 1" in r.output, r.output
    r = runner.invoke(admin, ["db", "upgrade", "--conf", str(conf)])
    assert "up to date" in r.output, r.output


@pytest.mark.parametrize("url, words", [
    ("postgresql+nosuchdriver://slurm:s3cret@127.0.0.1:5432/pyslurm", "driver is not installed"),
    ("postgresql+psycopg://slurm:s3cret@127.0.0.1:1/pyslurm", "127.0.0.1"),  # nothing listens
    ("not a url", "not a database URL"),
])
def test_an_unusable_database_is_one_line_without_the_password(url, words):
    with pytest.raises(ConfigError) as e:
        Store(url)
    assert words in e.value.message
    assert "s3cret" not in e.value.message and "\n" not in e.value.message
