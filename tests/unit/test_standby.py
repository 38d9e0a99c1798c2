"""standby.Role's loop on a real SQLite lease, time given: when a controller in control steps
down, and whether it hands the lease over. (Stepping down is recorded here instead of
re-executing the process; the controller in control is a stand-in holding only its stop flag.)"""

from __future__ import annotations

import threading
import types

import pytest
import sqlalchemy as sa

from pyslurm_lite import config
from pyslurm_lite.controller.lease import Lease
from pyslurm_lite.controller.standby import Role, my_index, stop_margin

TTL = 10


@pytest.fixture
def cfg(tmp_path):
    return config.parse(f"""ClusterName=t
SlurmctldHost=ctl1(127.0.0.1)
SlurmctldHost=ctl2(127.0.0.2)
SlurmctldTimeout={TTL}
StateSaveLocation={tmp_path}
NodeName=n1 CPUs=1 RealMemory=100
PartitionName=p Nodes=n1 Default=YES
""")


def in_control(cfg, index: int, steps: list) -> Role:
    role = Role(cfg, index, on_step_down=lambda: steps.append(role.controller.stop.is_set()))
    assert role.lease.acquire(1000.0)
    role.controller = types.SimpleNamespace(stop=threading.Event())
    role.renewed = 0.0
    return role


def test_unable_to_renew_it_stops_before_its_lease_could_expire(cfg, monkeypatch):
    steps: list = []
    role = in_control(cfg, 0, steps)

    def unreachable(now):
        raise sa.exc.OperationalError("UPDATE", {}, Exception("database is locked"))
    monkeypatch.setattr(role.lease, "renew", unreachable)
    last_safe = TTL - stop_margin(TTL)
    role.run_once(1000.0 + last_safe - 0.1, last_safe - 0.1)
    assert steps == []  # a passing database hiccup: retried
    role.run_once(1000.0 + last_safe + 0.1, last_safe + 0.1)
    assert steps == [True]  # stopped (scheduling, launches), still before the lease's expiry
    assert last_safe + 0.1 < TTL


def test_deposed_it_steps_down_and_leaves_the_lease_alone(cfg):
    steps: list = []
    role = in_control(cfg, 0, steps)
    other = Lease(cfg.db_url, 1, TTL)
    assert other.acquire(1000.0 + TTL + 1)
    role.run_once(1000.0 + TTL + 2, 1.0)
    assert steps == [True]
    assert role.lease.holder().index == 1 and role.lease.holder().epoch == other.epoch


def test_asked_to_hand_over_it_steps_down_and_releases_at_once(cfg):
    steps: list = []
    role = in_control(cfg, 0, steps)
    backup = Lease(cfg.db_url, 1, TTL)
    backup.request_takeover()
    role.run_once(1001.0, 1.0)
    assert steps == [True]
    assert backup.acquire(1001.5)  # no wait for the TTL


def test_a_backup_just_started_leaves_the_lease_to_the_primary(cfg):
    backup = Role(cfg, 1, on_step_down=lambda: None)
    backup.run_once(1000.0, backup.started + 1)
    assert backup.controller is None and backup.lease.holder() is None


def test_which_line_this_controller_is(cfg):
    assert my_index(cfg, 1) == 1
    with pytest.raises(config.ConfigError, match="has 2 SlurmctldHost"):
        my_index(cfg, 2)
    with pytest.raises(config.ConfigError, match="none of the SlurmctldHost"):
        my_index(cfg, None)  # this host is neither ctl1 nor ctl2
