"""`pyslurm-lite db copy`: a cluster's SQLite state into a real PostgreSQL server, and the cluster
carrying on there — the same jobs in sacct, new job ids after the old ones.

The PostgreSQL server is the session's private one (tests/pgserver.py, conftest's `postgres`
fixture: initdb in a temp dir, a free port on 127.0.0.1, password logins), skipped with a reason
where none can be started.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from pyslurm_lite.controller import store
from pyslurm_lite.controller.lease import lease_table

from conftest import PYSLURM_LITE, cli_env, run_cmd, start_cluster, wait_final

pytestmark = pytest.mark.slow

SHAPE = (1, 2, 1000, 0)  # one node is enough: this is about the state, not placement


def _copy(src: str, dst: str) -> subprocess.CompletedProcess:
    return run_cmd([PYSLURM_LITE, "db", "copy", "--from", src, "--to", dst], cli_env())


def _rows(url: str, table: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if table not in sa.inspect(conn).get_table_names():
                return 0
            return conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar()
    finally:
        engine.dispose()


def _sql(url: str, statement: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(statement))
    engine.dispose()  # an open connection is what makes a SQLite source "in use"


def _sacct(cluster, ids) -> list[str]:
    r = cluster.run(["sacct", "-X", "-n", "-P", "-o", "JobID,JobName,State",
                     "-j", ",".join(map(str, ids))])
    assert r.returncode == 0, r.stderr
    return sorted(r.stdout.split())


def _on_sqlite(directory: Path) -> None:
    """The cluster starts on SQLite even where PYSLURM_TEST_DATABASE=postgresql (an explicit
    DatabaseURL is kept): SQLite is what this test copies from."""
    from pyslurm_lite.cli.cluster import write_config
    directory.mkdir(parents=True)
    conf = Path(write_config(str(directory), *SHAPE))
    conf.write_text(conf.read_text() + f"DatabaseURL=sqlite:///{directory / 'state' / 'state.db'}\n")


def test_sqlite_to_postgresql_and_the_cluster_carries_on(tmp_path, postgres):
    url, other = postgres.new_database("copy"), postgres.new_database("copy")
    cluster = start_cluster(tmp_path / "c", shape=SHAPE, prepare=_on_sqlite)
    try:
        ids = [cluster.sbatch("-J", f"before{i}", "--wrap", "true", cwd=tmp_path) for i in range(3)]
        for j in ids:
            assert wait_final(cluster, j) == "COMPLETED"
        before = _sacct(cluster, ids)
        source = f"sqlite:///{cluster.dir / 'state' / 'state.db'}"

        r = _copy(source, url)  # the controller still runs on it
        assert r.returncode == 1 and "in use" in r.stderr and "stop the controller" in r.stderr, r
        assert _rows(url, "jobs") == 0 and _rows(url, "meta") == 0

        assert cluster.down().returncode == 0
        r = _copy(source, url)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "jobs             3 rows" in r.stdout and "schema version" in r.stdout, r.stdout
        assert _rows(url, "jobs") == 3 and _rows(url, "job_scripts") == 3

        r = _copy(source, url)  # now the target holds state: refused, unchanged
        assert r.returncode == 1 and "already holds state: " in r.stderr, r
        assert _rows(url, "jobs") == 3

        text = cluster.conf.read_text()
        assert f"DatabaseURL={source}" in text
        cluster.conf.write_text(text.replace(f"DatabaseURL={source}", f"DatabaseURL={url}"))
        assert cluster.up().returncode == 0, cluster.log_tails()
        assert _sacct(cluster, ids) == before
        new = cluster.sbatch("-J", "after", "--wrap", "true", cwd=tmp_path)
        assert new > max(ids)
        assert wait_final(cluster, new) == "COMPLETED"
        assert _rows(url, "jobs") == 4  # the controller writes to PostgreSQL now

        # a PostgreSQL source with its controller connected is refused too
        r = _copy(url, other)
        assert r.returncode == 1 and "other session(s) are connected" in r.stderr, r
        assert _rows(other, "jobs") == 0
    finally:
        cluster.down()
    r = _copy(url, other)  # stopped: PostgreSQL to PostgreSQL, sequences moved past copied ids
    assert r.returncode == 0 and "jobs             4 rows" in r.stdout, r.stdout + r.stderr


def test_postgresql_sequences_move_past_copied_keys(postgres):
    """outbox.id is handed out by a sequence: after a copy the next notification must not take
    the id of a copied one."""
    src, dst = postgres.new_database("seq"), postgres.new_database("seq")
    rows = [{"key": f"k{i}", "job_id": i, "channel": "mail", "target": "u", "payload": "{}"}
            for i in range(3)]
    s = store.Store(src)
    s.add_outbox(rows)
    s.close()
    r = _copy(src, dst)
    assert r.returncode == 0 and "outbox           3 rows" in r.stdout, r.stdout + r.stderr
    t = store.Store(dst)
    try:
        t.add_outbox([{**rows[0], "key": "after-copy"}])  # IntegrityError if the sequence stayed
        assert len(t.due_outbox(now=1e12)) == 4
    finally:
        t.close()


def test_sqlite_refusals(tmp_path):
    """No server needed: what is refused, with nothing written."""
    src, dst = f"sqlite:///{tmp_path / 'a' / 'state.db'}", f"sqlite:///{tmp_path / 'b' / 'state.db'}"
    r = _copy(src, dst)
    assert r.returncode == 1 and "no such SQLite file" in r.stderr, r
    store.Store(src).close()
    _sql(src, "CREATE TABLE usage (user_name TEXT)")  # a table of an old schema
    engine = sa.create_engine(src)
    lease_table.metadata.create_all(engine)  # a pair's lease: left behind, and said so
    engine.dispose()
    _sql(src, "UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    r = _copy(src, dst)
    assert r.returncode == 1 and "schema version 999" in r.stderr, r
    assert not os.path.exists(tmp_path / "b"), "refused, yet the target was made"
    _sql(src, f"UPDATE meta SET value = '{store.SCHEMA_VERSION}' WHERE key = 'schema_version'")
    r = _copy(src, src.replace("/a/", "/a/../a/"))
    assert r.returncode == 1 and "same database" in r.stderr, r
    r = _copy(src, dst)
    assert r.returncode == 0, r.stderr
    assert "warning: table usage is not part of this schema: not copied" in r.stderr
    assert "controller_lease: not copied" in r.stdout and "controller_lease" not in r.stderr
    assert oct(os.stat(tmp_path / "b" / "state.db").st_mode & 0o777) == "0o600"
