"""`pyslurm-lite authd`: a login host's auth socket, with no agent (Slurm's sackd).

It holds this host's key (host:NAME, from `pyslurm-lite keygen`) or the cluster key, and serves
user tokens on AuthInfo=socket= for the processes of this host, as the agent does on a node.
"""

from __future__ import annotations

import logging
import os

from .. import config as config_mod
from ..errors import ConfigError
from . import keys, tokens
from .authsock import AuthSocketServer

from ..service import wait_for_stop

log = logging.getLogger("pyslurm_lite.authd")


def server(cfg, host: str) -> AuthSocketServer:
    ring = keys.load(cfg.key_path)
    scope = f"host:{host}"
    if not ring.can_sign_for(scope):
        raise ConfigError(f"{cfg.key_path} holds the key of {ring.scope}, not of {scope}")
    key = ring.key_for(scope)

    def issue(uid: int, gid: int, audience: str) -> str:
        return tokens.make_user_token(key, scope, cfg.cluster_name, audience, uid, gid, host,
                                      cfg.token_ttl)

    return AuthSocketServer(cfg.auth_socket, issue, tokens.controller_audiences(cfg))


def main(conf_path: str | None, host: str | None, pid_file: str | None) -> None:
    cfg = config_mod.load(conf_path)
    srv = server(cfg, host or os.uname().nodename)
    srv.start()
    log.info("authd serving user tokens on %s", cfg.auth_socket)
    wait_for_stop(pid_file)
    srv.close()
