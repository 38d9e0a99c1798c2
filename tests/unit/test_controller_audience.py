"""R1 H3: a user token names one controller of a pair (tokens.controller_audience), every
auth socket hands out tokens for each of them, each controller accepts its own only; a pair
without TLS is warned about; agents leave a controller that has not taken their registration,
whatever it answered."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import types

import grpc
import pytest

from pyslurm_lite.agent.daemon import Agent
from pyslurm_lite.controller import daemon as ctl_daemon
from pyslurm_lite.controller.daemon import Controller
from pyslurm_lite.rpc import keys, tokens
from pyslurm_lite.rpc.authsock import fetch_token
from pyslurm_lite.rpc.common import AUTH_KEY

PAIR = [("head1", "127.0.0.1", 0), ("head2", "127.0.0.2", 0)]


@pytest.fixture
def run_dir():
    """Short and world-traversable: AF_UNIX paths are short, and the key file's checks."""
    d = tempfile.mkdtemp(prefix="plt-aud-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _cfg(run_dir: str, hosts=PAIR, **kw):
    return types.SimpleNamespace(cluster_name="test", nodes={}, auth_alt_types=[], controller_hosts=hosts,
                                 auth_socket=os.path.join(run_dir, "sack.socket"), token_ttl=10,
                                 key_path=os.path.join(run_dir, "slurm.key"), **kw)


def _controller(cfg, index: int) -> Controller:
    ctl = object.__new__(Controller)  # only its authenticator and auth socket: no store
    ctl.cfg, ctl.index = cfg, index
    return ctl


def test_the_audience_names_the_slurmctldhost_line_and_the_primary_keeps_slurmctld():
    assert [tokens.controller_audience(i) for i in range(3)] == ["slurmctld", "slurmctld/1",
                                                                 "slurmctld/2"]
    assert tokens.CONTROLLER == "slurmctld"  # a lone controller's tokens are unchanged


@pytest.mark.parametrize("index", [0, 1])
def test_a_controller_accepts_tokens_for_itself_only(run_dir, index):
    """A token a listener on the primary's port collected is refused by the backup."""
    cfg = _cfg(run_dir)
    ring = keys.load_or_create(cfg.key_path)
    auth = _controller(cfg, index).authenticator(ring)

    def token(audience):
        return [(AUTH_KEY, tokens.make_user_token(ring.key_for(keys.CLUSTER), keys.CLUSTER, "test",
                                                  audience, 1000, 1000, "h", 10))]
    mine, other = tokens.controller_audience(index), tokens.controller_audience(1 - index)
    assert auth.authenticate("GetJobs", token(mine)).user.uid == 1000
    with pytest.raises(tokens.AuthError, match=f"authentication token for {other}, not {mine}"):
        auth.authenticate("GetJobs", token(other))


def test_every_auth_socket_hands_out_tokens_for_each_controller(run_dir):
    """The controller's own socket, an agent's and a login host's (authd)."""
    from pyslurm_lite.rpc import authd
    cfg = _cfg(run_dir)
    ring = keys.load_or_create(cfg.key_path)
    agent = object.__new__(Agent)
    agent.cfg, agent.node, agent.scope, agent.key = cfg, "node1", "node:node1", b"n" * 32
    for server in (_controller(cfg, 0).auth_socket(ring), agent.auth_socket(),
                   authd.server(cfg, "login1")):
        server.start()
        try:
            for audience in ("slurmctld", "slurmctld/1"):
                assert fetch_token(server.path, audience).split("|")[3] == audience
            with pytest.raises(tokens.AuthError):
                fetch_token(server.path, "slurmctld/2")  # no third controller
        finally:
            server.close()


@pytest.mark.parametrize("ports, tls_ca, warned", [
    ((6817, 6817), "", True),
    ((6817, 6817), "/etc/ca.pem", False),
    ((817, 817), "", False),  # only root listens there
    ((817, 6817), "", True),
])
def test_a_pair_in_clear_is_warned_about(run_dir, caplog, ports, tls_ca, warned):
    cfg = _cfg(run_dir, tls_ca=tls_ca,
               controller_targets=[f"127.0.0.{i + 1}:{p}" for i, p in enumerate(ports)])
    with caplog.at_level(logging.WARNING, logger="pyslurm_lite.controller"):
        assert ctl_daemon.warn_pair_in_clear(cfg) is warned
    assert ("2 SlurmctldHost lines without TLSParameters" in caplog.text) is warned


U, D, P = grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize("registered, code, moves", [
    (False, U, True),  # down, or in standby
    (False, P, True),  # refused our registration: not one in control (or not a controller)
    (False, D, True),  # never answered
    (True, U, True),
    (True, P, False),  # took our registration: register there again first
    (True, D, False),
])
def test_an_agent_leaves_a_controller_that_has_not_taken_its_registration(registered, code, moves):
    agent = object.__new__(Agent)
    agent.stubs = ["primary", "backup"]
    agent.stub, agent.instance = "primary", "i1" if registered else ""
    agent._call_failed(code, "no")
    assert agent.stub == ("backup" if moves else "primary") and agent.instance == ""


@pytest.mark.parametrize("index", [0, 1])
def test_an_agents_daemon_token_is_good_at_the_controller_it_was_made_for_only(run_dir, index):
    """A daemon token a listener on one controller's port collected is refused by the other."""
    cfg = _cfg(run_dir)
    cfg.nodes = {"node1": object()}
    ring = keys.load_or_create(cfg.key_path)
    auth = _controller(cfg, index).authenticator(ring)
    node_key = ring.key_for("node:node1")

    def token(for_index):
        method = tokens.daemon_method("ReportJobEvents", for_index)
        return [(AUTH_KEY, tokens.make_daemon_token(node_key, "node:node1", method))]
    assert auth.authenticate("ReportJobEvents", token(index)).daemon == "node:node1"
    with pytest.raises(tokens.AuthError, match="daemon token of node:node1 for"):
        auth.authenticate("ReportJobEvents", token(1 - index))


def test_the_in_process_rest_server_calls_its_own_controller_only(run_dir):
    """Callers' JWTs name no controller: the REST server inside a controller of a pair never
    sends one to the other's port (a dead one a local user may listen on)."""
    from pyslurm_lite import config
    cfg = config.parse("ClusterName=c\nSlurmctldHost=head1(127.0.0.1)\nSlurmctldHost=head2(127.0.0.2)\n"
                       "SlurmctldPort=7000\n")
    for index, target in ((0, "127.0.0.1:7000"), (1, "127.0.0.2:7000")):
        assert ctl_daemon.own_controller_only(cfg, index).controller_targets == [target]
    lone = config.parse("ClusterName=c\nSlurmctldHost=head1(127.0.0.1)\n")
    assert ctl_daemon.own_controller_only(lone, 0) is lone
