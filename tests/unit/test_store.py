"""controller/store.py: durable state in SQLite (a temporary file per test)."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading

import pytest
import sqlalchemy as sa

from factories import model_job
from pyslurm_lite.controller.store import SCHEMA_VERSION, Store
from pyslurm_lite.errors import ConfigError
from pyslurm_lite.model import JobState, Reason


@pytest.fixture
def db(tmp_path):
    return tmp_path / "state" / "state.db"  # the directory does not exist yet: Store makes it


def open_store(path):
    return Store(f"sqlite:///{path}")


def insert(store, jobs_):
    """Insert jobs with their script and environment, as the controller does at submit."""
    store.insert_jobs(jobs_, [(j.spec.script, {"JOB": str(j.job_id)}) for j in jobs_])


def jobs(*states):
    out = []
    for i, state in enumerate(states, start=1):
        job = model_job(i, name=f"j{i}")
        job.state = state
        out.append(job)
    return out


def test_jobs_persist_across_reopen(db):
    store = open_store(db)
    written = jobs(JobState.PENDING, JobState.RUNNING, JobState.COMPLETED)
    insert(store, written)
    store.close()

    reopened = open_store(db)
    assert reopened.load_jobs(active_only=False) == written
    assert reopened.max_job_id() == 3
    reopened.close()


def test_saved_changes_persist(db):
    store = open_store(db)
    job = jobs(JobState.RUNNING)[0]
    insert(store, [job])
    job.state, job.reason, job.exit_code, job.end_time = JobState.FAILED, Reason.NON_ZERO_EXIT, 3, 9.5
    store.save_jobs([job])
    store.close()
    (back,) = open_store(db).load_jobs(active_only=False)
    assert (back.state, back.reason, back.exit_code, back.end_time) == \
        (JobState.FAILED, Reason.NON_ZERO_EXIT, 3, 9.5)


def test_active_and_finished_queries(db):
    store = open_store(db)
    insert(store, jobs(JobState.PENDING, JobState.COMPLETED, JobState.RUNNING,
                       JobState.CANCELLED, JobState.COMPLETING))
    assert [j.job_id for j in store.load_jobs()] == [1, 3, 5]           # the restart scan
    assert [j.job_id for j in store.load_finished()] == [2, 4]
    assert [j.job_id for j in store.load_finished([4, 5, 99])] == [4]
    assert [j.job_id for j in store.load_finished(limit=1)] == [4]      # the newest ones


def test_duplicate_job_id_is_refused(db):
    store = open_store(db)
    insert(store, jobs(JobState.PENDING))
    with pytest.raises(sa.exc.IntegrityError):
        insert(store, jobs(JobState.PENDING))
    assert len(store.load_jobs(active_only=False)) == 1


def test_scripts_and_environments_persist(db):
    store = open_store(db)
    a, b = jobs(JobState.PENDING, JobState.PENDING)
    store.insert_jobs([a, b], [("#!/bin/sh\necho a\n", {"X": "1", "EMPTY": ""}),
                               ("#!/bin/sh\necho b\n", {})])
    store.close()
    assert open_store(db).load_scripts([1, 2, 99]) == {
        1: ("#!/bin/sh\necho a\n", {"X": "1", "EMPTY": ""}),
        2: ("#!/bin/sh\necho b\n", {}),
    }


def test_concurrent_inserts_all_become_durable(db):
    """Submissions from many RPC threads at once (they may share one transaction)."""
    store = open_store(db)
    errors = []

    def submit(i):
        try:
            job = model_job(i)
            store.insert_jobs([job], [(f"#!/bin/sh\necho {i}\n", {})])
        except Exception as e:  # collected: an assert in a thread would pass silently
            errors.append(e)
    threads = [threading.Thread(target=submit, args=(i,)) for i in range(1, 41)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    store.close()
    reopened = open_store(db)
    assert [j.job_id for j in reopened.load_jobs(active_only=False)] == list(range(1, 41))
    assert reopened.load_scripts([17]) == {17: ("#!/bin/sh\necho 17\n", {})}


def test_database_file_is_private(db):
    open_store(db).close()
    assert stat.S_IMODE(os.stat(db).st_mode) & 0o077 == 0


def test_empty_store(db):
    store = open_store(db)
    assert (store.load_jobs(), store.load_finished(), store.max_job_id(), store.load_nodes()) == \
        ([], [], 0, {})


def test_nodes_persist(db):
    store = open_store(db)
    store.save_node("node1", drain=True, down=False, reason="maint", reason_time=5.0)
    store.save_node("node1", drain=False, down=True, reason="dead", reason_time=6.0)  # update
    store.save_node("node2", drain=False, down=False, reason="", reason_time=0.0)
    store.close()
    nodes = open_store(db).load_nodes()
    assert nodes == {
        "node1": {"name": "node1", "drain": False, "down": True, "reason": "dead", "reason_time": 6.0},
        "node2": {"name": "node2", "drain": False, "down": False, "reason": "", "reason_time": 0.0},
    }


def test_sqlite_pragmas(db):
    store = open_store(db)
    with store.engine.connect() as conn:
        pragma = lambda name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()  # noqa: E731
        assert str(pragma("journal_mode")).lower() == "wal"
        assert pragma("busy_timeout") > 0
        assert pragma("foreign_keys") == 1
    store.close()
    # WAL is a property of the file: a plain sqlite3 connection sees it too
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"


def test_schema_version_row(db):
    open_store(db).close()
    with sqlite3.connect(db) as raw:
        rows = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    assert rows == [(str(SCHEMA_VERSION),)]
    store = open_store(db)  # reopening keeps one row
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT COUNT(*) FROM meta WHERE key = 'schema_version'").fetchone()[0] == 1


def test_unknown_schema_version_is_refused(db):
    open_store(db).close()
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(ConfigError) as e:
        open_store(db)
    assert str(SCHEMA_VERSION + 1) in e.value.message


# ---- accounting: every job kept, earlier runs of requeued jobs archived ------------------------
def requeue(job, now):
    """What job_mgr.requeue does to a running job's record."""
    job.state, job.restart_count = JobState.PENDING, job.restart_count + 1
    job.start_time = job.end_time = 0.0
    job.eligible_time = now


def test_a_requeue_archives_the_run_it_ends(db):
    store = Store(f"sqlite:///{db}", clock=lambda: 1_700_000_050.0)
    job = jobs(JobState.RUNNING)[0]
    job.start_time = 1_700_000_000.0
    insert(store, [job])
    requeue(job, 1_700_000_050.0)
    store.save_jobs([job])
    store.save_jobs([job])  # saved again unchanged: archived once
    [(old, ended)] = store.job_runs([job.job_id])[job.job_id]
    assert (old.state, old.restart_count, old.start_time, ended) == \
        (JobState.RUNNING, 0, 1_700_000_000.0, 1_700_000_050.0)
    job.state, job.start_time, job.end_time = JobState.COMPLETED, 1_700_000_060.0, 1_700_000_070.0
    store.save_jobs([job])
    assert len(store.job_runs([job.job_id])[job.job_id]) == 1
    requeue(job, 1_700_000_080.0)  # a second requeue, after the job had ended
    store.close()
    reopened = Store(f"sqlite:///{db}")  # a restarted controller archives it too
    reopened.save_jobs([job])
    runs = reopened.job_runs([job.job_id])[job.job_id]
    assert [(r.restart_count, r.state, end) for r, end in runs] == \
        [(0, JobState.RUNNING, 1_700_000_050.0), (1, JobState.COMPLETED, 1_700_000_070.0)]
    reopened.close()


def test_job_history_filters_by_id_span_user_and_time(db):
    store = open_store(db)
    a, b, c = jobs(JobState.COMPLETED, JobState.COMPLETED, JobState.RUNNING)
    a.end_time, b.end_time, c.end_time = 100.0, 200.0, 0.0
    a.spec.user, b.spec.user = "bob", "alice"
    for j in (a, b, c):
        j.submit_time = 50.0
    insert(store, [a, b, c])
    ids = lambda js: [j.job_id for j in js]  # noqa: E731
    assert ids(store.job_history()) == [1, 2, 3]
    assert ids(store.job_history(job_ids=[3])) == [3]
    assert ids(store.job_history(job_ids=[], id_spans=[(2, 10)])) == [2, 3]
    assert ids(store.job_history(users=["alice"])) == [2, 3]
    assert ids(store.job_history(users=["1000"])) == [1, 2, 3]  # a uid
    assert ids(store.job_history(ended_after=150.0)) == [2, 3]  # 3 has not ended
    assert ids(store.job_history(submitted_before=50.0)) == []
    store.close()


def test_opening_the_database_again_keeps_the_other_processes_view(tmp_path):
    """The Store of a controller of a pair opens the SQLite file its control lease already
    holds: that must not drop this process's SQLite locks (closing any descriptor of the file
    drops them all), or the next process to close its connection takes itself for the last
    user and deletes the -wal and -shm under us; from then on each side writes a WAL the other
    cannot see (seen: both controllers of a pair in control at once)."""
    import subprocess
    import sys

    import sqlalchemy as sa

    from pyslurm_lite.controller.store import open_engine
    path = str(tmp_path / "state.db")
    url = f"sqlite:///{path}"
    mine = open_engine(url)
    with mine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (v INTEGER)"))
        conn.execute(sa.text("INSERT INTO t VALUES (1)"))
    held = mine.connect()  # a running controller keeps pooled connections open
    held.execute(sa.text("SELECT 1")).all()
    open_engine(url).dispose()  # the Store, opened after the lease

    subprocess.run([sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
                    "c.execute('SELECT max(v) FROM t').fetchone(); c.close()", path], check=True)
    # the other controller: connected throughout, writes 5, then reads what is there
    other = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "for line in sys.stdin:\n"
         "    if int(line): c.execute('INSERT INTO t VALUES (?)', (int(line),))\n"
         "    print(c.execute('SELECT max(v) FROM t').fetchone()[0], flush=True)\n", path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(value: int) -> str:
        other.stdin.write(f"{value}\n")
        other.stdin.flush()
        return other.stdout.readline().strip()
    try:
        assert ask(5) == "5"
        with mine.connect() as conn:
            seen_here = conn.execute(sa.text("SELECT max(v) FROM t")).scalar()
        with mine.begin() as conn:
            conn.execute(sa.text("INSERT INTO t VALUES (7)"))
        seen_there = ask(0)
    finally:
        other.stdin.close()
        other.wait(10)
        held.close()
        mine.dispose()
    assert (seen_here, seen_there) == (5, "7"), "the two processes no longer see each other's commits"


def test_usage_rows_are_inserted_then_updated_with_their_time(db):
    """add_usage writes each (account, user, TRES) once, then updates it in place with the
    time it was decayed to: a restarted controller decays it from there."""
    store = open_store(db)
    usage = {("lab", "alice"): {"cpu": 100.0, "mem": 50.0}}
    store.add_usage(usage, {7: 1000.0}, now=1000.0)
    store.add_usage({("lab", "alice"): {"cpu": 300.0}}, {7: 2000.0, 8: 2000.0}, now=2000.0)
    half_life = 100.0
    assert store.load_usage(now=2000.0, half_life=half_life) == \
        {("lab", "alice"): {"cpu": 300.0, "mem": pytest.approx(50.0 / 2 ** 10)}}
    assert store.load_charged() == {7: 2000.0, 8: 2000.0}
    store.add_usage({}, {}, now=2100.0, forget=(7,))
    assert store.load_charged() == {8: 2000.0}
    store.close()
