"""standby.Role's loop on a real SQLite lease, time given: when a controller in control steps
down, and whether it hands the lease over. (Stepping down is recorded here instead of
re-executing the process; the controller in control is a stand-in holding only its stop flag.)
The standby's gRPC server, real, on loopback: who it lets ping it."""

from __future__ import annotations

import os
import socket
import threading
import time
import types

import grpc
import pytest
import sqlalchemy as sa

from pyslurm_lite import config
from pyslurm_lite._proto import controller_pb2 as pb, controller_pb2_grpc
from pyslurm_lite.controller.lease import Lease
from pyslurm_lite.controller.standby import Role, my_index, stop_margin
from pyslurm_lite.rpc import jwt, keys, tokens
from pyslurm_lite.rpc.common import AUTH_KEY

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
    role.renewed, role.holding = 0.0, True
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


def test_a_hanging_renewal_does_not_keep_it_in_control(cfg, monkeypatch):
    """The watchdog, on its own thread, steps down on time while the renewal still hangs (a
    database that stopped answering)."""
    steps: list = []
    role = in_control(cfg, 0, steps)
    hang = threading.Event()
    monkeypatch.setattr(role.lease, "renew", lambda now: hang.wait(30) and Lease.RENEWED)
    renewer = threading.Thread(target=role.run_once, args=(1001.0, 1.0))
    renewer.start()
    last_safe = TTL - stop_margin(TTL)
    role.watch_once(last_safe - 0.1)
    assert steps == []
    role.renewed = time.monotonic() - last_safe + 0.3  # the watchdog's own loop, in real time
    watchdog = threading.Thread(target=role.watch_forever, daemon=True)
    watchdog.start()
    deadline = time.monotonic() + 5
    while not steps and time.monotonic() < deadline:
        time.sleep(0.05)
    role.stop.set()
    assert steps == [True] and renewer.is_alive()
    hang.set()
    renewer.join()
    assert steps == [True]  # the late renewal changes nothing: it stepped down once


def test_taking_control_slowly_it_goes_on_renewing(tmp_path, monkeypatch):
    """A recovery longer than SlurmctldTimeout: the lease is renewed meanwhile, so no backup
    takes it over under the controller taking control."""
    short = config.parse(f"""ClusterName=t
SlurmctldHost=ctl1(127.0.0.1)
SlurmctldHost=ctl2(127.0.0.2)
SlurmctldTimeout=2
StateSaveLocation={tmp_path}
NodeName=n1 CPUs=1 RealMemory=100
PartitionName=p Nodes=n1 Default=YES
""")
    steps: list = []
    role = Role(short, 0, on_step_down=lambda: steps.append("down"))
    monkeypatch.setattr(role, "_start_controller", lambda: time.sleep(3.2))
    role.run_once(time.time(), time.monotonic())
    assert role.holding and steps == []
    assert role.lease.holder(time.time()).live
    assert not Lease(short.db_url, 1, 2).acquire(time.time())


# ---- the standby's server -----------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jwt_cfg(tmp_path):
    return config.parse(f"""ClusterName=t
SlurmctldHost=ctl1(127.0.0.1)
SlurmctldHost=ctl2(127.0.0.2)
SlurmctldPort={_free_port()}
SlurmctldTimeout={TTL}
StateSaveLocation={tmp_path}
AuthAltTypes=auth/jwt
NodeName=n1 CPUs=1 RealMemory=100
PartitionName=p Nodes=n1 Default=YES
""")


def test_a_standby_backup_answers_ping_to_a_jwt_and_to_its_own_audience_only(jwt_cfg):
    """The REST server pings with its caller's JWT; a u1 token made for the primary (or caught
    by whoever listened on the primary's port) is refused by the backup."""
    key = jwt.cluster_key(jwt_cfg, 0)  # the primary made it; the backup reads it
    role = Role(jwt_cfg, 1, on_step_down=lambda: None)
    role.serve_standby()
    cluster_key = keys.load_or_create(jwt_cfg.key_path).key_for(keys.CLUSTER)

    def u1(index):
        return tokens.make_user_token(cluster_key, keys.CLUSTER, "t",
                                      tokens.controller_audience(index), 0, 0, "h", 30)
    try:
        with grpc.insecure_channel(role.address) as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)

            def ping(token):
                return stub.Ping(pb.PingRequest(), metadata=((AUTH_KEY, token),), timeout=10)
            token, _ = jwt.make(key, "root", 600)
            got = ping(token)
            assert (got.index, got.active) == (1, False)
            assert ping(u1(1)).index == 1
            with pytest.raises(grpc.RpcError) as e:
                ping(u1(0))
            assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        role.shutdown()


def test_a_backup_never_makes_the_jwt_key(jwt_cfg):
    role = Role(jwt_cfg, 1, on_step_down=lambda: None)
    path = jwt.key_path(jwt_cfg)
    with pytest.raises(config.ConfigError, match=f"JWT key {path} does not exist.*copy {path} "
                                                 f"from the primary"):
        role._jwt_acceptor(wait=0)
    role.lease.close()
    assert not os.path.lexists(path)
