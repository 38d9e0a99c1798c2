"""The servers' side of authentication: every call is checked before its servicer runs.

A daemon builds an `Authenticator` with one rule per method (user token, daemon token from some
sender, or open — a method that checks a credential inside its request), and installs it as a
gRPC server interceptor. A call whose proof fails is answered UNAUTHENTICATED with a message that
says what is wrong, and no servicer sees it. A servicer reads who is calling with `principal()`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import grpc

from ..errors import SlurmError
from . import tokens
from .common import AUTH_KEY

log = logging.getLogger("pyslurm_lite.rpc.authn")

USER, DAEMON, OPEN = "user", "daemon", "open"


@dataclass(frozen=True)
class Principal:
    """Who made the call in flight: a user (uid/gid from a token) or a daemon (its scope)."""

    kind: str
    user: tokens.UserIdentity | None = None
    daemon: str = ""  # node:NAME or slurmctld


_current = threading.local()


def principal() -> Principal | None:
    """The authenticated caller of the call this thread is serving."""
    return getattr(_current, "principal", None)


class Authenticator(grpc.ServerInterceptor):
    """rules: method name -> USER | DAEMON | OPEN (a method not listed is refused).
    check_user(token) -> UserIdentity; check_daemon(token, method) -> sender scope; both raise
    tokens.AuthError."""

    def __init__(self, rules: dict[str, str], check_user, check_daemon):
        self.rules, self.check_user, self.check_daemon = rules, check_user, check_daemon

    def authenticate(self, method: str, metadata) -> Principal:
        rule = self.rules.get(method)
        token = ""
        for k, v in metadata or ():
            if k == AUTH_KEY:
                token = v
        if rule == OPEN:
            return Principal(OPEN)
        if rule == USER:
            return Principal(USER, user=self.check_user(token))
        if rule == DAEMON:
            return Principal(DAEMON, daemon=self.check_daemon(token, method))
        raise tokens.AuthError(f"unknown method {method}")

    def intercept_service(self, continuation, details):
        handler = continuation(details)
        if handler is None:
            return None
        method = details.method.rsplit("/", 1)[-1]
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap(method, handler.unary_unary), handler.request_deserializer,
                handler.response_serializer)
        if handler.stream_stream is not None:
            return grpc.stream_stream_rpc_method_handler(
                self._wrap_stream(method, handler.stream_stream), handler.request_deserializer,
                handler.response_serializer)
        return handler  # no other kinds are served

    def _admit(self, method: str, context) -> Principal | None:
        try:
            return self.authenticate(method, context.invocation_metadata())
        except SlurmError as e:
            log.warning("refused %s from %s: %s", method, context.peer(), e.message)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, e.message)
        except Exception:  # a malformed token must never become an INTERNAL with a traceback
            log.exception("authentication of %s failed", method)
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "authentication failed")
        return None

    def _wrap(self, method: str, behavior):
        def wrapped(request, context):
            who = self._admit(method, context)
            _current.principal = who
            try:
                return behavior(request, context)
            finally:
                _current.principal = None
        return wrapped

    def _wrap_stream(self, method: str, behavior):
        def wrapped(request_iterator, context):
            self._admit(method, context)
            yield from behavior(request_iterator, context)
        return wrapped
