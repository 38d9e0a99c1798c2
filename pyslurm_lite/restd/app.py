"""The HTTP application: slurmrestd's v0.0.42 routes, GET /openapi/v3, and H4's dashboard at "/".

    request -> auth.identify (X-SLURM-USER-TOKEN) -> Client(cfg, token=that JWT) -> controller
            -> v0042 converters -> envelope.body -> JSON

Each handler is thin: read the path, query and body, make one or two Client calls, convert.
The controller decides who may do what, from the token (this process runs as root and never
calls with its own identity: a request without a token is refused before any call). Errors of
any kind are answered in slurmrestd's shape (envelope.py). Starlette is imported here and only
here (with server.py), so the CLIs never pay for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import grp
import json
import os
import re
import signal as signals
import threading
import time
from collections import OrderedDict

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import ControllerUnreachable, SlurmError
from . import auth, envelope, openapi
from .envelope import (ESLURM_ACCESS_DENIED, ESLURM_INVALID_JOB_ID, ESLURM_REST_BAD_REQUEST,
                       ESLURM_REST_EMPTY_RESULT, ESLURM_REST_FAIL_PARSING,
                       ESLURM_REST_INVALID_QUERY, ESLURM_REST_UNKNOWN_URL, RestError, warning)
from .v0042 import OP, VERSION, job_desc, jobs, resources
from .v0042.common import epoch, number, unset

BASE = f"/slurm/{VERSION}"
MAX_BODY_BYTES = 4 << 20  # a job description with its script; larger bodies are refused unread
BODY_PATIENCE = 30.0  # seconds a request body may take to arrive (a slow sender holds an fd)
CLIENTS_KEPT = 64  # controller Clients (each its channel) kept for recent tokens, at most
PING_TIMEOUT = 5.0  # seconds for each controller to answer a ping


@dataclasses.dataclass
class Call:
    """One request, as a handler sees it."""

    cfg: object
    identity: auth.Identity
    client: object  # Client(cfg, token=identity.token)
    params: dict
    query: object  # starlette QueryParams
    at: object = None  # index -> a Client of that SlurmctldHost only (ping asks each)
    body: object = None  # parsed JSON, for POST
    source: str = ""  # the operationId: `source` of errors and warnings
    warnings: list = dataclasses.field(default_factory=list)


class _Clients:
    """Clients by (token, controller index), the most recent kept: a dashboard or a tool polling
    with one token reuses one channel instead of connecting per request. At most `kept`: an
    evicted Client is closed (its channels) once no request is using it any more."""

    def __init__(self, cfg, kept: int = CLIENTS_KEPT, factory=None):
        self.cfg = without_own_identity(cfg)
        self.kept, self._factory = kept, factory or self._client
        self._lock, self._entries = threading.Lock(), OrderedDict()

    def _client(self, token: str, index):
        from ..client import Client
        client = Client(self.cfg, token=token)
        if index is not None:
            client = client.at(index)
            client.timeout = PING_TIMEOUT
        return client

    @contextlib.contextmanager
    def lease(self, token: str, index: int | None = None):
        """The Client for this token (and controller), held for one request."""
        if not token:  # never a Client without a token: it would call as this process (root)
            raise RestError(401, envelope.ESLURM_REST_AUTH_FAIL, "no token", "")
        entry = self._acquire((token, index))
        try:
            yield entry.client
        finally:
            self._release(entry)

    def _acquire(self, key) -> "_Entry":
        with self._lock:
            entry = self._entries.pop(key, None) or _Entry(self._factory(*key))
            self._entries[key] = entry
            entry.users += 1
            evicted = []
            while len(self._entries) > self.kept:
                _, old = self._entries.popitem(last=False)
                old.retired = True
                if not old.users:
                    evicted.append(old)
        for old in evicted:
            _close(old.client)
        return entry

    def _release(self, entry: "_Entry") -> None:
        with self._lock:
            entry.users -= 1
            done = entry.retired and not entry.users
        if done:
            _close(entry.client)


@dataclasses.dataclass
class _Entry:
    client: object
    users: int = 0  # requests using it now: an evicted Client is closed when the last ends
    retired: bool = False


def _close(client) -> None:
    """Free an evicted Client's channels at once (not left to the garbage collector)."""
    client.close()


# This process runs as root (inside the controller): were a call ever sent without the caller's
# token, the client would fetch one from the auth socket, as root. Its Clients get a socket
# path that cannot exist, so that mistake fails closed (401) instead of acting as root.
NO_AUTH_SOCKET = "/nonexistent/pyslurm-lite-restd/callers-token-only.socket"


def without_own_identity(cfg):
    return dataclasses.replace(cfg, auth_socket=NO_AUTH_SOCKET)


def make_app(cfg) -> Starlette:
    clients = _Clients(cfg)
    routes = [Route(BASE + path, _endpoint(cfg, clients, op, handler, found),
                    methods=[method]) for method, path, op, handler, found in _OPERATIONS]
    routes += [Route("/openapi/v3", _openapi, methods=["GET"]),
               Route("/openapi.json", _openapi, methods=["GET"]),
               Route("/openapi", _openapi, methods=["GET"]),
               Route("/slurm/{rest:path}", _unknown_url(cfg),
                     methods=["GET", "POST", "DELETE", "PUT", "PATCH"])]
    try:
        from .dashboard import routes as dashboard_routes
    except ModuleNotFoundError as e:  # no dashboard module: the API alone (a missing
        if e.name != f"{__package__}.dashboard":  # dependency of it is an error, not absence)
            raise
        dashboard_routes = None
    if dashboard_routes is not None:
        routes += dashboard_routes(cfg)
    return _TrailingSlash(Starlette(routes=routes))


class _TrailingSlash:
    """slurmrestd matches /slurm/v0.0.42/jobs and /slurm/v0.0.42/jobs/ alike (its published
    paths mix both): strip the slash rather than redirect, which a POST would not follow."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/slurm/") and path.endswith("/"):
            scope = dict(scope, path=path.rstrip("/"))
        await self.app(scope, receive, send)


# ---- plumbing ---------------------------------------------------------------------------------
def _endpoint(cfg, clients, op: str, handler, not_found: int):
    source = OP + op

    async def endpoint(request):
        client_addr = f"[{request.client.host}]:{request.client.port}" if request.client else ""
        user = ""
        try:
            # the token's shape first, the body next, a Client last: nothing is read or
            # connected for a request that could never be served
            identity = auth.identify(request.headers, source)
            user = identity.user
            body = await _json_body(request, source) if request.method == "POST" else None
            with contextlib.ExitStack() as leases:
                call = Call(cfg=cfg, identity=identity,
                            client=leases.enter_context(clients.lease(identity.token)),
                            params=dict(request.path_params), query=request.query_params,
                            body=body, source=source,
                            at=lambda i: leases.enter_context(clients.lease(identity.token, i)))
                payload = await run_in_threadpool(handler, call)
            return _json(200, envelope.body(payload, cfg.cluster_name, user, client_addr,
                                            call.warnings))
        except RestError as e:
            return _error(cfg, e, user, client_addr)
        except SlurmError as e:
            return _error(cfg, RestError.from_domain(e, source, not_found), user, client_addr)
    endpoint.__name__ = op
    return endpoint


async def _json_body(request, source: str):
    raw = await read_body(request, MAX_BODY_BYTES, source)
    try:
        return json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError) as e:
        raise RestError(400, ESLURM_REST_FAIL_PARSING, f"the request body is not JSON: {e}",
                        source) from None


async def read_body(request, limit: int, source: str) -> bytes:
    """The request's body, refused (413) as soon as it is known to exceed `limit` bytes: by its
    Content-Length before reading anything, else (chunked) once the running total passes it;
    408 when it takes over BODY_PATIENCE seconds. The answer to a refused body closes the
    connection (_error), so the rest of it is never read either."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise _too_large(limit, source)
    chunks, total = [], 0
    with anyio.move_on_after(BODY_PATIENCE) as patience:
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise _too_large(limit, source)
            chunks.append(chunk)
    if patience.cancelled_caught:
        raise RestError(408, ESLURM_REST_FAIL_PARSING, f"the request body took over "
                        f"{BODY_PATIENCE:g} seconds to arrive", source)
    return b"".join(chunks)


def _too_large(limit: int, source: str) -> RestError:
    return RestError(413, ESLURM_REST_FAIL_PARSING, f"request body over {limit} bytes", source)


def _json(status: int, doc: dict) -> Response:
    return JSONResponse(doc, status_code=status)


# answered before the request's body was read whole: the connection is closed after the answer
# (else the server would go on reading, and discarding, whatever the client still sends)
_BODY_UNREAD = (408, 413)


def _error(cfg, e: RestError, user: str, client_addr: str) -> Response:
    response = _json(e.status, envelope.body({}, cfg.cluster_name, user, client_addr,
                                             errors=[e.entry()]))
    if e.status in _BODY_UNREAD:
        response.headers["connection"] = "close"
    return response


async def _openapi(request) -> Response:
    return Response(openapi.served_document(), media_type="application/json")


def _unknown_url(cfg):
    async def unknown(request) -> Response:
        e = RestError(404, ESLURM_REST_UNKNOWN_URL, f"{request.method} {request.url.path}: no "
                      f"such endpoint (this server speaks {VERSION}; see /openapi/v3)",
                      request.url.path)
        return _error(cfg, e, "", "")
    return unknown


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _ignored_query(call: Call, *names: str) -> None:
    """slurmrestd's update_time and flags filter what is listed; we list everything and say so."""
    for name in names:
        if name in call.query:
            call.warnings.append(warning(f"query parameter '{name}' is not implemented by "
                                         "pyslurm-lite; everything is listed", call.source))


# ---- operations -------------------------------------------------------------------------------
def ping(call: Call) -> dict:
    """Every SlurmctldHost in order, as slurmrestd (slurm_ping on each): one that answers is UP,
    a backup in standby included; one that cannot be reached, or answers with an error, is DOWN
    (its error in `warnings`), not a failed request. A token refused by every controller that
    answered is the caller's problem: 401 (or whatever they said)."""
    count = len(call.cfg.controller_hosts) or 1
    names = [h[0] for h in call.cfg.controller_hosts] or [call.cfg.controller_host]
    pings, refusals, answered = [], [], False
    for index, name in enumerate(names):
        started, reply = time.monotonic(), None
        try:
            reply = call.at(index).ping()
            answered = True
        except ControllerUnreachable:
            pass
        except SlurmError as e:  # e.g. a standby that does not take this token: it is not in
            refusals.append(e)  # control, and says nothing about the token
            call.warnings.append(warning(f"{name}: {getattr(e, 'message', e)}", call.source))
        latency = int((time.monotonic() - started) * 1e6)
        pings.append(resources.ping(name, index, count, reply, latency))
    if refusals and not answered:
        raise refusals[0]
    return {"pings": pings}


def diag(call: Call) -> dict:
    return {"statistics": resources.statistics(call.client.diag())}


def list_jobs(call: Call) -> dict:
    _ignored_query(call, "update_time", "flags")
    # every job the controller holds, finished ones within MinJobAge too, as slurmctld's list
    found, now = call.client.jobs(include_finished=True, raw=False)
    return _jobs_resp(found, now)


def get_job(call: Call) -> dict:
    _ignored_query(call, "update_time", "flags")
    ids, tasks = _job_id(call)
    # finished jobs too: a tool polling a job it submitted sees it end, not vanish
    found, now = call.client.jobs(job_ids=ids, array_tasks=tasks, include_finished=True,
                                  raw=False)
    if not found:
        raise RestError(404, ESLURM_INVALID_JOB_ID, f"job {call.params['job_id']} not found",
                        call.source)
    return _jobs_resp(found, now)


def _jobs_resp(found, now: float) -> dict:
    return {"jobs": [jobs.job_info(j, _group_name) for j in found],
            "last_backfill": unset(), "last_update": epoch(now)}


def _job_id(call: Call) -> tuple[list[int], list[str]]:
    """"12" -> ([12], []); "12_3" (an array task) -> ([], ["12_3"])."""
    text = call.params["job_id"]
    m = re.fullmatch(r"([0-9]{1,9})(?:_([0-9]{1,9}))?", text)
    if not m:
        raise RestError(400, ESLURM_REST_INVALID_QUERY, f"invalid job id '{text}' (want N or "
                        "N_T)", call.source)
    return ([], [text]) if m.group(2) else ([int(text)], [])


def submit(call: Call) -> dict:
    from ..rpc import wire
    from .._proto import types_pb2
    desc, script = job_desc.submit_request(call.body, call.source)
    uid, gid = auth.job_owner(call.identity, call.source)
    spec, warned = job_desc.to_spec(desc, script, uid, gid, call.identity.user,
                                    os.uname().nodename, call.source)
    call.warnings += warned
    # SubmitJob itself rather than Client.submit, which prints the controller's warnings on
    # this process's stderr: here they belong in the answer
    pb = call.client._pb()
    reply = call.client._call("SubmitJob", pb.SubmitJobRequest(
        spec=wire.to_msg(spec, types_pb2.JobSpec)))
    call.warnings += [warning(w, call.source) for w in reply.warnings]
    return {"job_id": reply.job_id, "step_id": "batch",
            "job_submit_user_msg": "\n".join(reply.warnings)}


def cancel(call: Call) -> dict:
    ids, tasks = _job_id(call)
    signum = _signal(call.query.get("signal"), call.source)
    flags = [f for f in (call.query.get("flags") or "").split(",") if f]
    for unknown in sorted(set(flags) - {"BATCH_JOB", "FULL_JOB"}):
        call.warnings.append(warning(f"kill flag '{unknown}' is not implemented by "
                                     "pyslurm-lite; it was not applied", call.source))
    done, errors = call.client.cancel(job_ids=ids, array_tasks=tasks, signal=signum,
                                      batch_only="BATCH_JOB" in flags, full="FULL_JOB" in flags)
    _raise_job_errors(errors, call.source)
    if not done:
        raise RestError(404, ESLURM_INVALID_JOB_ID, "Invalid job id specified", call.source)
    return {"status": [{"error": {"string": "No error", "code": 0, "message": ""},
                        "step_id": "", "job_id": number(int(str(j).split("_")[0])),
                        "federation": {"sibling": ""}} for j in done]}


def _signal(value, source: str) -> int:
    """?signal=9, KILL or SIGKILL; absent: cancel (0)."""
    if not value:
        return 0
    if value.isdigit() and 0 < int(value) < signals.NSIG:
        return int(value)
    try:
        return signals.Signals["SIG" + value.upper().removeprefix("SIG")].value
    except KeyError:
        raise RestError(400, ESLURM_REST_INVALID_QUERY, f"invalid signal '{value}'",
                        source) from None


def update(call: Call) -> dict:
    ids, tasks = _job_id(call)
    changes, action, warned = job_desc.to_changes(call.body, call.source)
    call.warnings += warned
    if not changes and not action:
        raise RestError(400, ESLURM_REST_FAIL_PARSING, "nothing to update: the job "
                        "description names no field pyslurm-lite can change", call.source)
    if changes:
        _, errors = call.client.update_jobs(ids, "update", array_tasks=tasks, changes=changes)
        _raise_job_errors(errors, call.source)
    if action:  # hold or release, as scontrol's own verbs
        _, errors = call.client.update_jobs(ids, action, array_tasks=tasks)
        _raise_job_errors(errors, call.source)
    return {"results": [{"job_id": ids[0] if ids else int(tasks[0].split("_")[0]),
                         "step_id": "", "error": "", "error_code": 0, "why": ""}]}


# the controller's per-job messages are Slurm's strerror texts: their numbers and statuses
_JOB_ERRORS = {"Access/permission denied": (403, ESLURM_ACCESS_DENIED),
               "Invalid job id specified": (404, ESLURM_INVALID_JOB_ID)}


def _raise_job_errors(errors, source: str) -> None:
    if errors:
        job, message = errors[0]
        status, number_ = _JOB_ERRORS.get(message, (400, ESLURM_REST_BAD_REQUEST))
        raise RestError(status, number_, f"job {job}: {message}", source)


def list_nodes(call: Call) -> dict:
    _ignored_query(call, "update_time", "flags")
    return _nodes_resp(call, [])


def get_node(call: Call) -> dict:
    _ignored_query(call, "update_time", "flags")
    return _nodes_resp(call, [call.params["node_name"]])


def _nodes_resp(call: Call, names: list[str]) -> dict:
    parts, all_nodes = call.client.partitions(raw=False)
    wanted = [n for n in all_nodes if not names or n.config.name in names]
    if names and not wanted:
        raise RestError(404, ESLURM_REST_EMPTY_RESULT, f"node {names[0]} not found", call.source)
    member = {n.config.name: [p.name for p in parts if n.config.name in p.nodes]
              for n in wanted}
    return {"nodes": [resources.node(n, member[n.config.name]) for n in wanted],
            "last_update": epoch(time.time())}


def list_partitions(call: Call) -> dict:
    _ignored_query(call, "update_time", "flags")
    return _partitions_resp(call, "")


def get_partition(call: Call) -> dict:
    _ignored_query(call, "update_time", "flags")
    return _partitions_resp(call, call.params["partition_name"])


def _partitions_resp(call: Call, name: str) -> dict:
    parts, nodes = call.client.partitions(raw=False)
    cpus = {n.config.name: n.config.cpus for n in nodes}
    wanted = [p for p in parts if not name or p.name == name]
    if name and not wanted:
        raise RestError(404, envelope.ESLURM_INVALID_PARTITION_NAME,
                        f"partition {name} not found", call.source)
    return {"partitions": [resources.partition(p, sum(cpus.get(n, 0) for n in p.nodes))
                           for p in wanted],
            "last_update": epoch(time.time())}


def list_reservations(call: Call) -> dict:
    _ignored_query(call, "update_time")
    return _reservations_resp(call, "")


def get_reservation(call: Call) -> dict:
    _ignored_query(call, "update_time")
    return _reservations_resp(call, call.params["reservation_name"])


def _reservations_resp(call: Call, name: str) -> dict:
    from ..model import Reservation
    from ..rpc import wire
    found, now = call.client.reservations()
    resvs = [wire.from_msg(r, Reservation) for r in found]
    wanted = [r for r in resvs if not name or r.name == name]
    if name and not wanted:
        raise RestError(404, ESLURM_REST_EMPTY_RESULT, f"reservation {name} not found",
                        call.source)
    return {"reservations": [resources.reservation(r) for r in wanted],
            "last_update": epoch(now)}


# (method, path under BASE, operationId without its prefix, handler, number for "not found")
_OPERATIONS = (
    ("GET", "/ping", "get_ping", ping, ESLURM_REST_EMPTY_RESULT),
    ("GET", "/diag", "get_diag", diag, ESLURM_REST_EMPTY_RESULT),
    ("GET", "/jobs", "get_jobs", list_jobs, ESLURM_INVALID_JOB_ID),
    ("POST", "/job/submit", "post_job_submit", submit, ESLURM_INVALID_JOB_ID),
    ("GET", "/job/{job_id}", "get_job", get_job, ESLURM_INVALID_JOB_ID),
    ("POST", "/job/{job_id}", "post_job", update, ESLURM_INVALID_JOB_ID),
    ("DELETE", "/job/{job_id}", "delete_job", cancel, ESLURM_INVALID_JOB_ID),
    ("GET", "/nodes", "get_nodes", list_nodes, ESLURM_REST_EMPTY_RESULT),
    ("GET", "/node/{node_name}", "get_node", get_node, ESLURM_REST_EMPTY_RESULT),
    ("GET", "/partitions", "get_partitions", list_partitions, ESLURM_REST_EMPTY_RESULT),
    ("GET", "/partition/{partition_name}", "get_partition", get_partition,
     ESLURM_REST_EMPTY_RESULT),
    ("GET", "/reservations", "get_reservations", list_reservations, ESLURM_REST_EMPTY_RESULT),
    ("GET", "/reservation/{reservation_name}", "get_reservation", get_reservation,
     ESLURM_REST_EMPTY_RESULT),
)
