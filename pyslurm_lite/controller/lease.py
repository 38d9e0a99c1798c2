"""The control lease: which of the SlurmctldHost= controllers is in control, kept in the state
database that all of them share.

Owns: one row (its own table, created by migration 3 under the migration lock) naming the holder
(SlurmctldHost index and process instance), an epoch that counts acquisitions (the fencing token),
when it was last renewed and when it expires, and a takeover request. Must not: touch any other
table, read this host's clock (every call is given `now`), or decide what a controller does on
losing it (controller/standby.py).

Whose clock: on PostgreSQL the times are the database server's (clock_timestamp() in the very
UPDATE), and `now` is not used: the controllers of a pair run on different hosts, and comparing
their wall clocks would let a backup whose clock runs ahead take over from a holder still acting.
On SQLite the database is a local file, so every controller is on one host and `now` (its clock)
is the one clock there is.

A worked example, SlurmctldTimeout=10 (the lease's TTL in seconds):
    t=0   primary acquires: epoch 1, expires 10; it renews every second (expires = now + 10)
    t=50  primary is killed -9; its last renewal at t=49.6 set expires 59.6
    t=60  the backup's acquire finds expires < now: epoch 2, the backup holds it
    Had the primary been alive but stalled (a long pause), its next write transaction runs
    `fence`, sees epoch 2 in the row and aborts: a deposed controller writes nothing. It also
    stops on its own before t=59.6 (standby.py's margin), so two never act at once.

Every change is one conditional UPDATE (a compare-and-set): on SQLite the write lock, on
PostgreSQL the row lock with the WHERE re-checked, orders two controllers' attempts.
"""

from __future__ import annotations

import dataclasses
import uuid

import sqlalchemy as sa

from ..errors import ControllerUnreachable
from . import migrations
from .store import open_engine, reaching

NO_TAKEOVER = -1  # the takeover column when no controller asked for control
# seconds a requested takeover waits for the holder to step down before taking the lease from a
# holder that no longer renews (killed, hung): its writes are fenced from then on
TAKEOVER_GRACE = 3.0

lease_table = sa.Table(
    "controller_lease", sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),  # always 1: one lease per cluster
    sa.Column("holder", sa.Integer, nullable=False),  # SlurmctldHost index; -1 none yet
    sa.Column("instance", sa.String(64), nullable=False),  # the holding process
    sa.Column("epoch", sa.Integer, nullable=False),  # +1 at every acquisition
    sa.Column("renewed_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("takeover", sa.Integer, nullable=False),  # index asking for control, or -1
)
_ROW = lease_table.c.id == 1


class LeaseLost(ControllerUnreachable):
    """A write by a controller that no longer holds the lease (UNAVAILABLE to its caller, who
    tries the next controller)."""


@dataclasses.dataclass(frozen=True)
class Holder:
    index: int
    instance: str
    epoch: int
    renewed_at: float
    expires_at: float
    takeover: int
    live: bool  # not expired, by the lease's clock


class Lease:
    """One controller's view of the lease. `epoch` is what it holds (0: nothing)."""

    RENEWED, TAKEOVER, LOST = "renewed", "takeover", "lost"

    def __init__(self, url: str, index: int, ttl: float):
        self.index, self.ttl = index, float(ttl)
        self.instance = uuid.uuid4().hex[:12]
        self.epoch = 0
        # the store's engine settings: a private SQLite file, a server's timeouts (a renewal
        # must fail, not hang, well within the TTL), an unreachable database as one line
        self.engine = open_engine(url, statement_timeout=max(min(self.ttl / 4, 5.0), 0.5))
        with reaching(self.engine):
            migrations.upgrade(self.engine)  # the lease's table and row: migration 3
        self.db_clock = self.engine.dialect.name == "postgresql"

    def _now(self, now: float):
        """The time the lease is reckoned by, as SQL: the database server's, else `now`."""
        if self.db_clock:
            return sa.cast(sa.func.extract("epoch", sa.func.clock_timestamp()), sa.Float)
        return sa.literal(now, sa.Float)

    def holder(self, now: float = 0.0) -> Holder | None:
        c = lease_table.c
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(lease_table, (c.expires_at > self._now(now)).label("live"))
                               .where(_ROW)).first()
        if row is None or row.holder < 0:
            return None
        return Holder(row.holder, row.instance, row.epoch, row.renewed_at, row.expires_at,
                      row.takeover, bool(row.live))

    def acquire(self, now: float) -> bool:
        """Take the lease if it expired (or was released), or if this controller asked for a
        takeover and the holder stopped renewing. True when this controller now holds it."""
        c, clock = lease_table.c, self._now(now)
        free = (c.expires_at < clock) | ((c.takeover == self.index)
                                         & (c.renewed_at < clock - TAKEOVER_GRACE))
        with self.engine.begin() as conn:
            done = conn.execute(lease_table.update().where(_ROW & free).values(
                holder=self.index, instance=self.instance, epoch=c.epoch + 1, renewed_at=clock,
                expires_at=clock + self.ttl, takeover=NO_TAKEOVER)).rowcount
            if done:
                self.epoch = conn.execute(sa.select(c.epoch).where(_ROW)).scalar_one()
        return bool(done)

    def renew(self, now: float) -> str:
        """RENEWED; TAKEOVER (another controller asked for control: step down, then release);
        LOST (someone else holds it now)."""
        c, clock = lease_table.c, self._now(now)
        mine = _ROW & (c.epoch == self.epoch) & (c.instance == self.instance)
        with self.engine.begin() as conn:
            unasked = (c.takeover == NO_TAKEOVER) | (c.takeover == self.index)
            if conn.execute(lease_table.update().where(mine & unasked)
                            .values(renewed_at=clock, expires_at=clock + self.ttl)).rowcount:
                return self.RENEWED
            still = conn.execute(sa.select(c.epoch).where(mine)).first()
        return self.TAKEOVER if still else self.LOST

    def release(self) -> None:
        """Let another controller acquire at once (after this one stopped acting)."""
        c = lease_table.c
        with self.engine.begin() as conn:
            conn.execute(lease_table.update().where(
                _ROW & (c.epoch == self.epoch) & (c.instance == self.instance))
                .values(expires_at=0.0))
        self.epoch = 0

    def request_takeover(self) -> None:
        """scontrol takeover, received by this (standby) controller: the holder steps down at
        its next renewal, or, if it no longer renews, this one takes the lease after
        TAKEOVER_GRACE."""
        with self.engine.begin() as conn:
            conn.execute(lease_table.update().where(_ROW).values(takeover=self.index))

    def fence(self, conn) -> None:
        """Store.fence: inside a write transaction, before it commits. The row is read under
        that transaction's lock (SQLite: the write lock it holds; PostgreSQL: FOR SHARE, so an
        acquisition waits for this commit or this read waits for the acquisition's)."""
        c = lease_table.c
        row = conn.execute(sa.select(c.epoch, c.instance).where(_ROW)
                           .with_for_update(read=True)).first()
        if row is None or row.epoch != self.epoch or row.instance != self.instance:
            raise LeaseLost(f"this controller no longer holds the control lease (epoch "
                            f"{self.epoch}, now {row.epoch if row else '-'}): it is stepping down")

    def close(self) -> None:
        self.engine.dispose()

