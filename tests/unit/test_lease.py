"""The control lease on a real SQLite file: two controllers' Lease objects, one store. On a real
PostgreSQL server (the `postgres` fixture): the lease kept by the database's clock, and the
session limits that turn a hanging statement into a failure."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from pyslurm_lite.controller import migrations
from pyslurm_lite.controller.lease import TAKEOVER_GRACE, Lease, LeaseLost, lease_table
from pyslurm_lite.controller.store import Store, open_engine
from pyslurm_lite.model import Reservation

TTL = 10.0


@pytest.fixture
def pair(tmp_path):
    url = f"sqlite:///{tmp_path / 'state.db'}"
    store = Store(url)
    primary, backup = Lease(url, 0, TTL), Lease(url, 1, TTL)
    yield store, primary, backup
    for x in (primary, backup, store):
        x.close()


def test_one_holder_at_a_time_and_the_epoch_counts_acquisitions(pair):
    _, primary, backup = pair
    assert primary.acquire(100.0) and primary.epoch == 1
    assert not backup.acquire(105.0)  # not expired yet
    assert primary.renew(108.0) == Lease.RENEWED  # expires 118 now
    assert not backup.acquire(115.0)
    assert backup.acquire(118.5) and backup.epoch == 2  # the primary stopped renewing
    assert primary.renew(119.0) == Lease.LOST
    holder = backup.holder()
    assert (holder.index, holder.epoch, holder.expires_at) == (1, 2, 118.5 + TTL)


def test_a_deposed_controllers_writes_abort(pair):
    """The fence: once the backup holds the lease, the primary's store refuses to commit."""
    store, primary, backup = pair
    store.fence = primary.fence
    assert primary.acquire(100.0)
    store.save_reservation(Reservation(name="before", start_time=1, end_time=2))
    assert backup.acquire(100.0 + TTL + 1)
    with pytest.raises(LeaseLost):
        store.save_reservation(Reservation(name="after", start_time=1, end_time=2))
    assert [r.name for r in store.load_reservations()] == ["before"]  # nothing half-written


def test_takeover_is_handed_over_by_a_live_holder(pair):
    _, primary, backup = pair
    assert primary.acquire(100.0)
    backup.request_takeover()
    assert not backup.acquire(101.0)  # the holder still renews: it steps down first
    assert primary.renew(101.0) == Lease.TAKEOVER
    primary.release()
    assert backup.acquire(101.5) and backup.epoch == 2
    assert backup.renew(102.0) == Lease.RENEWED  # the granted request is cleared


def test_takeover_from_a_holder_that_stopped_renewing(pair):
    _, primary, backup = pair
    assert primary.acquire(100.0)
    backup.request_takeover()
    assert not backup.acquire(100.0 + TAKEOVER_GRACE - 0.5)
    assert backup.acquire(100.0 + TAKEOVER_GRACE + 0.5)  # long before the TTL ran out
    assert primary.renew(104.0) == Lease.LOST


def test_a_holders_own_stale_request_does_not_depose_it(pair):
    _, primary, _ = pair
    primary.request_takeover()
    assert primary.acquire(100.0)
    primary.request_takeover()
    assert primary.renew(101.0) == Lease.RENEWED


def test_the_lease_table_comes_from_a_migration(tmp_path):
    """Created under the migration lock (L2), not by whichever controller starts first."""
    engine = open_engine(f"sqlite:///{tmp_path / 'state.db'}")
    migrations.upgrade(engine)
    with engine.connect() as conn:
        assert sa.inspect(conn).has_table("controller_lease")
        assert conn.execute(sa.select(lease_table.c.holder)).scalars().all() == [-1]
    engine.dispose()


# ---- PostgreSQL ---------------------------------------------------------------------------------
@pytest.fixture
def pg_pair(postgres):
    url = postgres.new_database("lease")
    primary, backup = Lease(url, 0, TTL), Lease(url, 1, TTL)
    yield url, primary, backup
    primary.close()
    backup.close()


def test_on_postgresql_the_lease_keeps_the_servers_time_not_the_hosts(pg_pair):
    """A backup whose clock runs 1000 s ahead (or a primary's that runs behind) changes nothing:
    the times in the row are the server's."""
    _, primary, backup = pg_pair
    assert primary.acquire(time.time() - 1000)
    holder = backup.holder(time.time() + 1000)
    assert holder.live and abs(holder.expires_at - (time.time() + TTL)) < 2
    assert not backup.acquire(time.time() + 1000)
    assert primary.renew(0.0) == Lease.RENEWED


def test_on_postgresql_a_lock_wait_fails_within_the_leases_timeout(pg_pair):
    """A session holding the lease row (a cut-off fence's FOR SHARE) makes an acquisition fail
    in seconds, for a retry, instead of hanging the controller's lease thread."""
    url, _, backup = pg_pair
    blocker, outcome = sa.create_engine(url), []

    def acquire():
        try:
            outcome.append(backup.acquire(0.0))
        except sa.exc.OperationalError as e:
            outcome.append(e)
    with blocker.begin() as conn:
        conn.execute(sa.select(lease_table).with_for_update())
        attempt = threading.Thread(target=acquire)
        attempt.start()
        attempt.join(TTL / 4 + 2)  # not hanging: it ends (and the blocker lets go) either way
    attempt.join()
    blocker.dispose()
    assert len(outcome) == 1 and "timeout" in str(outcome[0]), outcome


def test_on_postgresql_every_session_has_server_side_limits(pg_pair):
    url, _, backup = pg_pair
    store = Store(url)
    want = {"statement_timeout": "1min", "lock_timeout": "10s",
            "idle_in_transaction_session_timeout": "15s", "tcp_keepalives_idle": "10"}
    with store.engine.connect() as conn:
        assert {k: conn.exec_driver_sql(f"SHOW {k}").scalar() for k in want} == want
    with backup.engine.connect() as conn:  # a renewal must fail well within the TTL
        assert conn.exec_driver_sql("SHOW statement_timeout").scalar() == "2500ms"
    store.close()


def test_on_postgresql_two_controllers_starting_together_both_start(postgres):
    url = postgres.new_database("race")
    errors, leases = [], []

    def start(index):
        try:
            leases.append(Lease(url, index, TTL))
        except Exception as e:  # noqa: BLE001 (the very failure looked for)
            errors.append(e)
    threads = [threading.Thread(target=start, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sum(lease.acquire(0.0) for lease in leases) == 1
    for lease in leases:
        lease.close()
