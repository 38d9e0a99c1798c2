"""The state database on a real PostgreSQL server (tests/pgserver.py: Debian's postgresql, a
private server, password logins over TCP): every kind of state store.py keeps goes in and comes
back as on SQLite, values SQLite takes that PostgreSQL's types would refuse, migrations under the
advisory lock, and the controller refusing an unusable server with a one-line reason. The e2e
modules of conftest.PG_MODULES run whole clusters on it (PYSLURM_TEST_DATABASE=postgresql)."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from conftest import PYSLURM_LITE, cli_env, run_cmd
from factories import model_job
from pyslurm_lite import model
from pyslurm_lite.controller import migrations
from pyslurm_lite.controller.store import Store, open_engine
from pyslurm_lite.errors import ConfigError
from pyslurm_lite.model import JobState, Reservation


@pytest.fixture
def url(postgres):
    return postgres.new_database("s")


def stored(store, jobs_):
    store.insert_jobs(jobs_, [(j.spec.script, {"JOB": str(j.job_id)}) for j in jobs_])


def test_jobs_scripts_runs_and_history(url):
    store = Store(url, clock=lambda: 1_700_000_050.0)
    a, b, c = (model_job(i, name=f"j{i}") for i in (1, 2, 3))
    b.state, c.state = JobState.COMPLETED, JobState.PENDING
    b.end_time = 1_700_000_030.0
    a.spec.name = "n" * 300  # longer than the column's VARCHAR(256): SQLite never minded
    stored(store, [a, b, c])
    a.restart_count, a.state = 1, JobState.PENDING  # requeued: its run is archived
    store.save_jobs([a], outbox=[{"key": "1:0:END:mail", "job_id": 1, "channel": "mail",
                                  "target": "alice", "payload": "{}"}])
    store.close()
    store = Store(url)
    assert [j.job_id for j in store.load_jobs()] == [1, 3]
    assert [j.job_id for j in store.load_finished()] == [2]
    assert store.max_job_id() == 3
    assert store.load_scripts([1]) == {1: (a.spec.script, {"JOB": "1"})}
    [back] = store.job_history(job_ids=[1])
    assert (back.spec.name, back.restart_count) == ("n" * 300, 1)
    assert [j.job_id for j in store.job_history(users=["alice"], ended_after=1_700_000_040.0)] == [1, 3]
    [(run, ended)] = store.job_runs([1])[1]
    assert (run.restart_count, run.state, ended) == (0, JobState.RUNNING, 1_700_000_050.0)
    [due] = store.due_outbox(now=2e9)
    assert due["key"] == "1:0:END:mail"
    store.outbox_sent(due["id"], 2e9)
    assert store.due_outbox(now=2e9) == [] and store.next_outbox_time() is None
    store.close()


def test_usage_nodes_reservations_and_accounting(url):
    store = Store(url)
    store.add_usage({("physics", "alice"): {"billing": 10.5, "gres/gpu": 2.0}}, {7: 100.0}, now=100.0)
    store.add_usage({("physics", "alice"): {"billing": 11.5}}, {7: 150.0}, now=100.0)
    assert store.load_usage(now=100.0, half_life=0)[("physics", "alice")] == \
        {"billing": 11.5, "gres/gpu": 2.0}
    assert store.load_charged() == {7: 150.0}
    store.save_node("node2", drain=True, down=False, reason="r" * 400, reason_time=5.0)
    store.save_node("node1", drain=False, down=True, reason="dead", reason_time=6.0)
    store.save_node("node1", drain=False, down=False, reason="", reason_time=7.0)
    assert list(store.load_nodes()) == ["node1", "node2"]
    assert store.load_nodes()["node2"]["reason"] == "r" * 400 and store.load_nodes()["node2"]["drain"] is True
    store.save_reservation(Reservation("maint", 10.0, 20.0, nodes=["node1"], users=["root"]))
    assert [r.name for r in store.load_reservations()] == ["maint"]
    assert store.delete_reservation("maint") and store.load_reservations() == []
    store.save_accounting(assocs=[model.Association("physics", "", parent="root")],
                          users={"alice": "physics"}, qos=[model.Qos("high")])
    assocs, users, qos = Store(url).load_accounting()
    assert ([(a.account, a.user) for a in assocs], users, [q.name for q in qos]) == \
        ([("physics", "")], {"alice": "physics"}, ["high"])
    store.close()


def test_two_controllers_starting_together_migrate_once(url):
    first, second = open_engine(url), open_engine(url)
    result = {}
    with migrations._exclusive(first) as conn:
        assert migrations.version_in(conn) == 0
        racer = threading.Thread(target=lambda: result.update(got=migrations.upgrade(second)))
        racer.start()
        time.sleep(0.5)
        assert racer.is_alive(), "a second migrator ran while the first held the advisory lock"
        for _version, _description, apply in migrations.MIGRATIONS:
            apply(conn, "postgresql")
        migrations._stamp(conn, migrations.LATEST)
    racer.join(10)
    assert result["got"] == (migrations.LATEST, migrations.LATEST)
    with first.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM meta")).scalar() == 1


def test_a_newer_database_is_refused(url):
    Store(url).close()
    with open_engine(url).begin() as conn:
        conn.execute(sa.text("UPDATE meta SET value = '99' WHERE key = 'schema_version'"))
    with pytest.raises(ConfigError, match="schema version 99, newer than"):
        Store(url)


def test_a_wrong_password_is_one_line_without_it(postgres):
    url = postgres.url("postgres", password="not-the-pw")
    with pytest.raises(ConfigError) as e:
        Store(url)
    assert "password authentication failed" in e.value.message and "not-the-pw" not in e.value.message


def test_the_controller_exits_with_one_line_when_the_server_is_unreachable(tmp_path):
    from pyslurm_lite.cli.cluster import write_config
    conf = write_config(str(tmp_path), 1, 1, 1000, 0)
    with open(conf, "a") as f:
        f.write("DatabaseURL=postgresql+psycopg://slurm:s3cret@127.0.0.1:1/pyslurm\n")
    r = run_cmd([PYSLURM_LITE, "controller", "--conf", conf], cli_env(), timeout=60)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert r.stderr.splitlines()[-1].startswith(
        "pyslurm-lite: error: state database postgresql+psycopg://slurm:***@127.0.0.1:1/pyslurm: "), r.stderr
    assert "Traceback" not in r.stderr and "s3cret" not in r.stdout + r.stderr
