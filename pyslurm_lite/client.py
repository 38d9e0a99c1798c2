"""The Python client API: submit, list, cancel and inspect jobs; what every CLI uses.

    from pyslurm_lite.client import Client
    c = Client()                          # finds slurm.conf like the CLIs do
    jid = c.submit(JobSpec(script="#!/bin/sh\\necho hi\\n", work_dir="/tmp"))
    c.job(jid).state                      # 'PENDING' | 'RUNNING' | 'COMPLETED' ...
    c.cancel([jid])

Calls go to the controller over one of two transports, the same gRPC on the wire:
  grpcio  grpcio's generated stub; the default for a Python program;
  h2      h2client, unary calls on a plain socket, without importing grpcio (~100 ms saved at
          start): what the short-lived CLIs use (cli.common.run sets `default_transport`).
          Over h2, submit and submit_many encode their request and decode the reply with
          pbwire, so that sbatch never imports google.protobuf (~30 ms).
PYSLURM_LITE_TRANSPORT=grpcio|h2 overrides the default (to compare, or to fall back). Either
is imported on first use, so a CLI that fails early (bad option) never pays for it.
Listing methods return protobuf messages whose fields have the dataclasses' names (fast for
thousands of jobs); `raw=False` converts them to model dataclasses.
"""

from __future__ import annotations

import os
import pwd
import sys
import time

from .errors import NotFound, SlurmError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~5 ms of a CLI's start)
if TYPE_CHECKING:  # config and model are imported where used
    from .config import Config
    from .model import Job, JobSpec

DEFAULT_TIMEOUT = 30.0  # seconds for one call to the controller
TRANSPORT_ENV = "PYSLURM_LITE_TRANSPORT"
default_transport = "grpcio"  # for a Client that names none; see the module's docstring


class Client:
    def __init__(self, cfg: Config | None = None, conf_path: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, transport: str | None = None,
                 token: str | None = None):
        if cfg is None:
            from . import config
            cfg = config.load_shared(conf_path)
        self.cfg = cfg
        self.timeout = timeout
        self.transport = transport or os.environ.get(TRANSPORT_ENV) or default_transport
        if self.transport not in _TRANSPORTS:
            raise SlurmError(f"unknown transport '{self.transport}'; valid: {', '.join(_TRANSPORTS)}")
        self._link = None
        self._only: int | None = None  # at(index): that SlurmctldHost= line only
        # a JWT (scontrol token; the REST server passes its caller's) sent instead of a fresh
        # token from this host's auth socket: the controller takes the caller from it
        self.token = token

    def close(self) -> None:
        """Close the connections this client opened (a long-lived server's evicted clients)."""
        if self._link is not None:
            self._link.close()
            self._link = None

    # ---- plumbing -----------------------------------------------------------------------------
    def _call(self, method: str, request):
        """Call a Controller method; domain errors come back as what the server raised."""
        return self._link_().call(method, request, self.timeout)

    @staticmethod
    def _pb():
        from ._proto import controller_pb2
        return controller_pb2

    # ---- jobs ---------------------------------------------------------------------------------
    def _link_(self):
        if self._link is None:
            self._link = _TRANSPORTS[self.transport](self.cfg, self._only)
            self._link.token = self.token
        return self._link

    def submit(self, spec: JobSpec) -> int:
        if not spec.user:
            spec.uid, spec.gid = os.getuid(), os.getgid()
            spec.user = _user_name(spec.uid)
        link = self._link_()
        if isinstance(link, _H2Link):  # encoded by pbwire: the CLI never imports google.protobuf
            reply = link.call_dict("SubmitJob", {"spec": spec}, self.timeout)
            _print_warnings(reply.get("warnings") or [])
            return reply["job_id"]
        from .rpc import wire
        from ._proto import types_pb2
        req = self._pb().SubmitJobRequest(spec=wire.to_msg(spec, types_pb2.JobSpec))
        reply = self._call("SubmitJob", req)
        _print_warnings(list(reply.warnings))
        return reply.job_id

    def submit_many(self, specs: list[JobSpec], batch: int = 500) -> list[int]:
        """Submit many specs, `batch` per call; each call is committed as a whole before it
        returns. Job ids come back in the specs' order."""
        for spec in specs:
            if not spec.user:
                spec.uid, spec.gid, spec.user = os.getuid(), os.getgid(), _user_name(os.getuid())
        link = self._link_()
        ids: list[int] = []
        if isinstance(link, _H2Link):
            for i in range(0, len(specs), batch):
                ids += link.call_dict("SubmitJobs", {"specs": specs[i:i + batch]},
                                      self.timeout)["job_ids"]
            return ids
        from .rpc import wire
        for i in range(0, len(specs), batch):
            req = self._pb().SubmitJobsRequest()
            for spec in specs[i:i + batch]:
                wire.fill_msg(req.specs.add(), spec)
            ids += self._call("SubmitJobs", req).job_ids
        return ids

    submit_async = submit_many  # the name the first benchmarks used

    def jobs(self, job_ids=(), states=(), users=(), partitions=(), names=(), nodes=(),
             include_finished: bool = False, raw: bool = True, array_tasks=()):
        """Jobs matching every filter given; array_tasks names single tasks ("12_3")."""
        pb = self._pb()
        flt = pb.JobFilter(job_ids=list(job_ids), states=list(states), users=list(users),
                           partitions=list(partitions), names=list(names), nodes=list(nodes),
                           include_finished=include_finished, array_tasks=list(array_tasks))
        reply = self._call("GetJobs", pb.GetJobsRequest(filter=flt))
        if raw:
            return list(reply.jobs), reply.now
        from .rpc import wire
        from .model import Job
        return [wire.from_msg(j, Job) for j in reply.jobs], reply.now

    def job_history(self, job_ids=(), array_tasks=(), users=(), accounts=(), partitions=(),
                    names=(), states=(), start: float = 0.0, end: float = 0.0,
                    duplicates: bool = False, any_eligibility: bool = False):
        """sacct's query of the database: ([JobRun messages (job, state)], the controller's now).
        start/end bound the window (0: unbounded / now); see controller/accounting.py."""
        req = self._pb().GetJobHistoryRequest(
            job_ids=list(job_ids), array_tasks=list(array_tasks), users=list(users),
            accounts=list(accounts), partitions=list(partitions), names=list(names),
            states=list(states), start=start, end=end, duplicates=duplicates,
            any_eligibility=any_eligibility)
        reply = self._call("GetJobHistory", req)
        return list(reply.runs), reply.now

    def job(self, job_id: int) -> Job:
        jobs, _ = self.jobs(job_ids=[job_id], raw=False)
        if not jobs:
            raise NotFound("Invalid job id specified")
        return jobs[0]

    def cancel(self, job_ids=(), signal: int = 0, batch_only: bool = False, full: bool = False,
               states=(), users=(), partitions=(), names=(), nodes=(), array_tasks=()):
        """Errors are (job id, or the task's name "12_3", message)."""
        pb = self._pb()
        flt = pb.JobFilter(job_ids=list(job_ids), states=list(states), users=list(users),
                           partitions=list(partitions), names=list(names), nodes=list(nodes),
                           array_tasks=list(array_tasks))
        reply = self._call("CancelJobs", pb.CancelJobsRequest(filter=flt, signal=signal,
                                                              batch_only=batch_only, full=full))
        return list(reply.job_ids), [(e.id_text or e.job_id, e.message) for e in reply.errors]

    def update_jobs(self, job_ids, action: str, array_tasks=(), changes=None):
        """hold, uhold, release, requeue, requeuehold; or "update" with `changes` (scontrol
        update's canonical field names -> values). Errors as cancel's."""
        req = self._pb().UpdateJobsRequest(job_ids=list(job_ids), action=action,
                                           array_tasks=list(array_tasks), changes=dict(changes or {}))
        reply = self._call("UpdateJobs", req)
        return list(reply.job_ids), [(e.id_text or e.job_id, e.message) for e in reply.errors]

    # ---- nodes and partitions -----------------------------------------------------------------
    def nodes(self, names=(), raw: bool = True):
        reply = self._call("GetNodes", self._pb().GetNodesRequest(names=list(names)))
        if raw:
            return list(reply.nodes), reply.now
        from .rpc import wire
        from .model import Node
        return [wire.from_msg(n, Node) for n in reply.nodes], reply.now

    def partitions(self, raw: bool = True):
        reply = self._call("GetPartitions", self._pb().GetPartitionsRequest())
        if raw:
            return list(reply.partitions), list(reply.nodes)
        from .rpc import wire
        from .model import Node, Partition
        return ([wire.from_msg(p, Partition) for p in reply.partitions],
                [wire.from_msg(n, Node) for n in reply.nodes])

    def update_nodes(self, names, state: str, reason: str = "") -> None:
        self._call("UpdateNodes", self._pb().UpdateNodesRequest(names=list(names), state=state, reason=reason))

    def ping(self):
        return self._call("Ping", self._pb().PingRequest())

    def takeover(self) -> str:
        """scontrol takeover, sent to the controller this client calls (see `at`)."""
        return self._call("Takeover", self._pb().TakeoverRequest()).message

    def at(self, index: int) -> "Client":
        """A client of one controller only, SlurmctldHost= line `index` (0: the primary),
        without failover: scontrol ping asks each in turn, takeover asks a backup. Its calls
        carry tokens for that controller's audience (tokens.controller_audience)."""
        if not 0 <= index < len(self.cfg.controller_targets):
            raise IndexError(f"no SlurmctldHost line {index}")
        one = Client(self.cfg, timeout=self.timeout, transport=self.transport, token=self.token)
        one._only = index
        return one

    # ---- reservations and fair share ----------------------------------------------------------
    def create_reservation(self, resv, node_count: int = 0, partition: str = "") -> str:
        from .rpc import wire
        from ._proto import types_pb2
        req = self._pb().CreateReservationRequest(
            reservation=wire.to_msg(resv, types_pb2.Reservation), node_count=node_count,
            partition=partition)
        return self._call("CreateReservation", req).name

    def delete_reservation(self, name: str) -> None:
        self._call("DeleteReservation", self._pb().DeleteReservationRequest(name=name))

    def reservations(self):
        """(reservations not yet over, the controller's clock)."""
        reply = self._call("GetReservations", self._pb().GetReservationsRequest())
        return list(reply.reservations), reply.now

    def diag(self):
        """sdiag's counters (a GetDiagReply)."""
        return self._call("GetDiag", self._pb().GetDiagRequest())

    def sacctmgr(self, verb: str, entity: str, names=(), where=None, settings=None,
                 dry_run: bool = False):
        """(records: list of {column: value}, lines sacctmgr prints)."""
        reply = self._call("Sacctmgr", self._pb().SacctmgrRequest(
            verb=verb, entity=entity, names=list(names), where=dict(where or {}),
            set=dict(settings or {}), dry_run=dry_run))
        return [dict(r.fields) for r in reply.records], list(reply.messages)

    def shares(self, users=()):
        return list(self._call("GetShares", self._pb().GetSharesRequest(users=list(users))).rows)


def _unreachable(target: str) -> str:
    return f"Unable to contact slurm controller (connect failure) at {target}"


def _metadata(link, k: int) -> tuple:
    """The caller's identity for one call to the link's k-th controller: the given JWT, or a
    fresh token from the auth socket for that controller's audience only (a token a dead
    controller's port received is no use at the live one)."""
    from .rpc.common import AUTH_KEY, controller_audience, user_metadata
    if link.token is not None:  # even "": the controller refuses it, never falls back to us
        return ((AUTH_KEY, link.token),)
    if link.indices[k] == 0:  # the primary's audience is user_metadata's own
        return user_metadata(link.auth_socket)
    return user_metadata(link.auth_socket, controller_audience(link.indices[k]))


STANDBY = "Controller is in standby mode"  # what a controller not in control answers
FAILOVER_PAUSE = 0.5  # seconds between rounds over every controller while none is in control
STANDBY_EXTRA = 5.0  # seconds beyond Slurm's 1.5 x SlurmctldTimeout: our backup's start-up
# Calls that change nothing: sent on to the next controller even after a connection dropped
# mid-call. Any other call (SubmitJob, SubmitJobs, CreateStep, IssueToken, CreateReservation,
# every write) may have been committed before the drop: it goes on only when it provably never
# reached a controller in control (a connect failure, or a standby's refusal), as Slurm's
# commands resend only then; else the caller gets "Unable to contact slurm controller" (a job
# submitted twice would run twice).
RESENDABLE = frozenset({"Ping", "GetJobs", "GetJobHistory", "GetNodes", "GetPartitions",
                        "GetShares", "GetDiag", "GetReservations"})
# grpcio's details when its channel found no connection: the call never left this process
GRPC_UNSENT = ("failed to connect to all addresses", "DNS resolution failed")


class _Failover:
    """The controllers a link calls, the primary first (SlurmctldHost= order). A call goes to
    the one that answered last; when it cannot be reached, or says it is in standby, the next
    is tried (a call not RESENDABLE only when it never reached this one). With backups configured, rounds repeat (within the call's timeout) while none is
    in control: up to 1.5 x SlurmctldTimeout (+ STANDBY_EXTRA) once one said "standby" (a
    backup is about to take over), else SlurmctldTimeout (as Slurm's commands wait for a
    controller to return)."""

    token = None

    def _setup(self, cfg, connect, only: int | None = None) -> None:
        targets = list(getattr(cfg, "controller_targets", None) or [cfg.controller_target])
        self.indices = list(range(len(targets))) if only is None else [only]  # SlurmctldHost lines
        self.targets = [targets[i] for i in self.indices]
        self.target = self.targets[0]
        self._connect, self._conns = connect, {}
        self._current = 0
        self._patience = float(getattr(cfg, "slurmctld_timeout", 120))

    def _conn(self, i: int):
        if i not in self._conns:
            self._conns[i] = self._connect(self.targets[i])
        return self._conns[i]

    def _failover(self, attempt, timeout: float, method: str):
        """attempt(conn, seconds left, k) -> reply from the k-th controller, or raises; returns
        the first reply, re-raises the last refusal when no controller took the call in time,
        or at once when a call not RESENDABLE may have reached one."""
        began = time.monotonic()
        standby, n = False, len(self.targets)
        while True:
            for k in range(n):
                i = (self._current + k) % n
                left = timeout - (time.monotonic() - began)
                try:
                    reply = attempt(self._conn(i), max(left, 0.001), i)
                except _Refused as e:
                    if not (e.standby or e.unsent or method in RESENDABLE):
                        raise e.error from None
                    standby = standby or e.standby
                    last = e
                    continue
                self._current, self.target = i, self.targets[i]
                return reply
            waited = time.monotonic() - began
            window = self._patience * 1.5 + STANDBY_EXTRA if standby else self._patience
            if n == 1 or waited + FAILOVER_PAUSE >= min(timeout, window):
                raise last.error
            time.sleep(FAILOVER_PAUSE)


class _Refused(Exception):
    """One controller did not take the call (unreachable, or in standby): try the next. unsent:
    it provably never reached the controller (no connection was made, or the server refused
    the stream unseen)."""

    def __init__(self, error: Exception, standby: bool, unsent: bool):
        self.error, self.standby, self.unsent = error, standby, unsent


def _unreachable_of(link) -> str:
    return _unreachable(", ".join(link.targets))


class _GrpcioLink(_Failover):
    """Calls through grpcio's generated stub."""

    def __init__(self, cfg, only: int | None = None):
        from ._proto import controller_pb2_grpc
        from .rpc.grpcutil import client_channel
        self.auth_socket = cfg.auth_socket
        self._channels = []

        def connect(target):
            self._channels.append(client_channel(target, cfg))
            return controller_pb2_grpc.ControllerStub(self._channels[-1])
        self._setup(cfg, connect, only)

    def close(self) -> None:
        for channel in self._channels:
            channel.close()

    def call(self, method: str, request, timeout: float):
        import grpc

        from .rpc.grpcutil import raise_domain

        def attempt(stub, left, k):
            try:
                return getattr(stub, method)(request, timeout=left, metadata=_metadata(self, k))
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    details = e.details() or ""
                    raise _Refused(e, details == STANDBY, details.startswith(GRPC_UNSENT)) from None
                raise
        try:
            return self._failover(attempt, timeout, method)
        except grpc.RpcError as e:
            raise_domain(e, _unreachable_of(self))


class _H2Link(_Failover):
    """Calls through h2client: the same requests and metadata, without importing grpcio."""

    def __init__(self, cfg, only: int | None = None):
        from .rpc.h2client import Channel
        self.auth_socket = cfg.auth_socket
        ssl_context = None
        if getattr(cfg, "tls_ca", ""):
            from .rpc.tls import ssl_context as make_context
            ssl_context = make_context(cfg)
        self._setup(cfg, lambda target: Channel(target, ssl_context), only)
        self.channel = self._conn(0)  # the primary's, opened lazily by its first call

    def close(self) -> None:
        for channel in self._conns.values():
            channel.close()

    def _unary(self, path: str, body: bytes, timeout: float) -> bytes:
        """One call's raw reply, from whichever controller takes it; RpcFailure otherwise."""
        from .rpc.common import UNAVAILABLE
        from .rpc.h2client import RpcFailure, _Unprocessed

        def attempt(channel, left, k):
            try:
                return channel.unary(path, body, _metadata(self, k), left)
            except RpcFailure as e:
                if e.code == UNAVAILABLE:
                    # no connection (h2client's _Connection says so), or refused unseen (GOAWAY)
                    unsent = isinstance(e, _Unprocessed) or e.message.startswith("failed to connect to ")
                    raise _Refused(e, e.message == STANDBY, unsent) from None
                raise
        return self._failover(attempt, timeout, path.rsplit("/", 1)[-1])

    def call(self, method: str, request, timeout: float):
        from google.protobuf.message import DecodeError
        from google.protobuf.message_factory import GetMessageClass

        from ._proto import controller_pb2
        from .rpc.h2client import RpcFailure
        from .rpc.common import INTERNAL, domain_error
        desc = controller_pb2.DESCRIPTOR.services_by_name["Controller"].methods_by_name[method]
        path = f"/{desc.containing_service.full_name}/{desc.name}"
        try:
            raw = self._unary(path, request.SerializeToString(), timeout)
            reply = GetMessageClass(desc.output_type)()
            reply.ParseFromString(raw)
        except RpcFailure as e:
            raise domain_error(e.code, e.message, _unreachable_of(self)) from None
        except DecodeError as e:
            raise domain_error(INTERNAL, f"cannot parse the reply to {method}: {e}") from None
        return reply

    def call_dict(self, method: str, request, timeout: float) -> dict:
        """Call a Controller method with pbwire: request (a dict or dataclass of the method's
        request type) encoded and the reply decoded without google.protobuf; the reply as a
        dict (pbwire.decode)."""
        from .rpc import pbwire
        from .rpc.h2client import RpcFailure
        from .rpc.common import INTERNAL, domain_error
        path = pbwire.method_path("Controller", method)
        body = pbwire.encode(pbwire.request_type("Controller", method), request)
        try:
            raw = self._unary(path, body, timeout)
        except RpcFailure as e:
            raise domain_error(e.code, e.message, _unreachable_of(self)) from None
        try:
            return pbwire.decode(pbwire.reply_type("Controller", method), raw)
        except ValueError as e:
            raise domain_error(INTERNAL, f"cannot parse the reply to {method}: {e}") from None


_TRANSPORTS = {"grpcio": _GrpcioLink, "h2": _H2Link}


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _print_warnings(warnings: list[str]) -> None:
    """What the controller changed in a submitted job (a --priority it dropped), printed as
    Slurm's commands print a job_submit_user_msg: by the command, on stderr."""
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "slurm"
    for text in warnings:
        sys.stderr.write(f"{prog}: warning: {text}\n")
