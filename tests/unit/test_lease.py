"""The control lease on a real SQLite file: two controllers' Lease objects, one store."""

from __future__ import annotations

import pytest

from pyslurm_lite.controller.lease import TAKEOVER_GRACE, Lease, LeaseLost
from pyslurm_lite.controller.store import Store
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
