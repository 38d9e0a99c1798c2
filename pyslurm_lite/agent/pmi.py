"""Slurm's mpi/pmi2 plugin on this node: the PMI server a step's tasks wire up through.

Owns: one socketpair per task (its end is PMI_FD), the commands of both PMI protocols Slurm's
plugin serves on it (their wire is pmi_wire.py's; the init line picks one per connection), this
node's share of the step's key-value space (KVS) and its side of each fence.
Not owned: the fence across nodes (srun is its root, FenceRoot below: each node's new pairs go
up its LaunchStep stream, the union of all of them comes back down every stream), and killing
the step (the caller's on_abort). Spawn, name publishing and job-connect are not offered.

A fence, worked through for `srun -N2 -n4 --mpi=pmi2` (ranks 0,1 here; 2,3 on the other node):
  rank 0: put k0=a; barrier_in      -> held: 1 of the 2 tasks here are in
  rank 1: put k1=b; barrier_in      -> all in: send_up(1, {k0: a, k1: b})
  srun:   fence 1 from both nodes   -> fence_done(1, {k0: a, k1: b, k2: .., k3: ..}) to each
  here:   the union is stored; ranks 0 and 1 get barrier_out and may get any key

This runs inside the agent, as root, for the user's tasks: every message, key and value is
bounded, a task's rank is the one it was started with (whatever it claims), and a task that
breaks the protocol loses its PMI connection (a log line), never the agent. srun is the user's
too: its answer to a fence is checked as puts are, and the step's layout (ranks, size) comes
from the launch credential, never from srun. A task that spins is slowed (Throttle).
"""

from __future__ import annotations

import logging
import os
import re
import selectors
import socket
import threading
import time

from .pmi_wire import (MAX_KEY, MAX_KVSNAME, MAX_MESSAGE, MAX_VALUE, Conn, PmiError, check_pair,
                       encode_pmi1, encode_pmi2, parse_pmi1, parse_pmi2, process_mapping,
                       valid_mapping)

log = logging.getLogger("pyslurm_lite.agent.pmi")

# the wire's names too: the agent and srun need only this module
__all__ = ["FenceRoot", "PmiServer", "PmiError", "TYPES", "MAX_PUTS_PER_TASK", "MAX_MESSAGE",
           "step_pairs_limit", "encode_pmi1", "encode_pmi2", "parse_pmi1", "parse_pmi2",
           "process_mapping", "valid_mapping"]

MAX_PUTS_PER_TASK = 4096  # pairs one task may put between two fences
# pairs a step's KVS may hold in all (MPICH puts a few per rank: its business card, shm keys)
PAIRS_PER_TASK, PAIRS_BASE = 64, 4096


def step_pairs_limit(ntasks: int) -> int:
    """The most pairs one step's KVS holds: ~75 MB at most per 1000 tasks, on each node."""
    return PAIRS_BASE + PAIRS_PER_TASK * max(ntasks, 1)


SEND_TIMEOUT = 10.0  # seconds a reply may wait on a task that does not read its PMI socket
# messages a second one step's server handles (per task here, and in all): a task that spins
# (get_maxes in a loop) slows its own step's PMI, never the agent's other work
RATE_PER_TASK, MAX_RATE = 1000, 20000
TYPES = ("none", "pmi2")  # srun --mpi=list: what this build offers (Slurm's order)


class Throttle:
    """A token bucket: take() returns at once while `burst` messages in a row have not been
    spent, then sleeps so that no more than `rate` a second go through."""

    def __init__(self, rate: float, burst: float, clock=time.monotonic, sleep=time.sleep):
        self.rate, self.burst, self.clock, self.sleep = rate, burst, clock, sleep
        self.tokens, self.last = burst, clock()

    def take(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1:
            wait = (1 - self.tokens) / self.rate
            self.sleep(wait)
            self.tokens, self.last = 1.0, now + wait
        self.tokens -= 1


# ---- the step's server on this node ---------------------------------------------------------
class PmiServer:
    """One step's PMI server here. ranks: the global ranks of the tasks on this node, in local
    order; send_up(seq, pairs) hands this node's new pairs of fence seq to srun; on_abort(rank,
    exit_code or None, message) ends the step (abort, or a task gone without finalize)."""

    def __init__(self, job_id: int, step_id: int, ranks: list[int], size: int, mapping: str,
                 send_up, on_abort, clock=time.monotonic, sleep=time.sleep):
        if len(set(ranks)) != len(ranks):  # one connection, one PMI_FD per rank
            raise ValueError(f"step {job_id}.{step_id}: a rank twice among {len(ranks)} tasks")
        self.jobid = f"{job_id}.{step_id}"
        self.ranks, self.size, self.mapping = list(ranks), size, mapping
        self.send_up, self.on_abort = send_up, on_abort
        self.lock = threading.Lock()
        self.kvs: dict[str, str] = {"PMI_process_mapping": mapping}  # after the last fence
        self.pending: dict[str, str] = {}  # put here since the last fence
        self.node_attrs: dict[str, str] = {}
        self.attr_waiters: list[tuple[Conn, str]] = []  # info-getnodeattr wait=TRUE
        self.seq = 1  # the fence being gathered
        self.in_fence: list[Conn] = []
        self.conns: dict[int, Conn] = {}  # by the server end's fd
        self.task_fds: dict[int, int] = {}  # rank -> the task's end (PMI_FD)
        self.aborted = False
        rate = min(RATE_PER_TASK * max(len(ranks), 1), MAX_RATE)
        self.throttle = Throttle(rate, rate, clock, sleep)
        self._running = False
        self._abort_lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._wake_r = self._wake_w = -1
        try:
            self._wake_r, self._wake_w = os.pipe()
            self._sel.register(self._wake_r, selectors.EVENT_READ, None)
            for rank in self.ranks:
                self._connect(rank)
        except BaseException:  # EMFILE part way: what was opened goes, the agent keeps its fds
            self._discard()
            raise

    def _connect(self, rank: int) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        conn = Conn(rank, mine)
        self.conns[mine.fileno()] = conn
        self.task_fds[rank] = theirs.detach()
        mine.settimeout(SEND_TIMEOUT)
        self._sel.register(mine, selectors.EVENT_READ, conn)

    def _discard(self) -> None:
        """A constructor that failed: every descriptor it opened is closed."""
        for rank in list(self.task_fds):
            self.started(rank)
        for conn in list(self.conns.values()):
            conn.sock.close()
        self.conns.clear()
        self._sel.close()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_w = -1

    def environment(self, rank: int) -> dict[str, str]:
        """What Slurm's mpi/pmi2 puts in a task's environment (p_mpi_hook_slurmstepd_task)."""
        return {"PMI_FD": str(self.task_fds[rank]), "PMI_JOBID": self.jobid,
                "PMI_RANK": str(rank), "PMI_SIZE": str(self.size)}

    def started(self, rank: int) -> None:
        """The task holds its end now: the agent's copy goes."""
        fd = self.task_fds.get(rank, -1)
        if fd >= 0:
            os.close(fd)
            self.task_fds[rank] = -1

    def start(self) -> None:
        for rank in list(self.task_fds):
            self.started(rank)  # tasks that never started: their connection sees end-of-file
        self._running = True
        threading.Thread(target=self._loop, daemon=True, name=f"pmi-{self.jobid}").start()

    def stop(self) -> None:
        """The step is over here: the loop ends (if it has not: every task gone). Once only."""
        if self._wake_w < 0:
            return
        try:
            os.write(self._wake_w, b"x")
        except OSError:  # the loop has ended and closed its end
            pass
        os.close(self._wake_w)
        self._wake_w = -1
        for rank in list(self.task_fds):
            self.started(rank)
        if not self._running:  # a launch that failed before start(): nothing else closes these
            self._shut()

    # ---- the loop ---------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while self.conns:
                for key, _ in self._sel.select():
                    if key.data is None:
                        return
                    self._readable(key.data)
        except Exception:  # a bug here ends this step's PMI, never the agent
            log.exception("step %s: PMI server failed", self.jobid)
        finally:
            self._shut()

    def _shut(self) -> None:
        for conn in list(self.conns.values()):
            self._close(conn)
        self._sel.close()
        os.close(self._wake_r)

    def _readable(self, conn: Conn) -> None:
        try:
            data = conn.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._gone(conn)
            return
        conn.buf += data
        try:
            while (msg := conn.next_message()) is not None:
                self.throttle.take()
                with self.lock:
                    self._handle(conn, msg)
                if conn.sock.fileno() < 0:
                    return
        except (PmiError, OSError) as e:
            log.warning("step %s: rank %s: PMI connection closed: %s", self.jobid, conn.rank, e)
            self._close(conn)
            self._abort(conn.rank, None, f"PMI protocol error: {e}")

    def _gone(self, conn: Conn) -> None:
        """End-of-file: a task that began PMI and did not finalize cannot finish the step's
        fences; as Slurm, the step ends rather than hangs."""
        self._close(conn)
        if conn.version and not conn.finalized:
            self._abort(conn.rank, None, "exited without calling PMI finalize")

    def _close(self, conn: Conn) -> None:
        if conn.sock.fileno() >= 0:
            self.conns.pop(conn.sock.fileno(), None)
            try:
                self._sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            conn.sock.close()

    def _abort(self, rank: int, code: int | None, message: str) -> None:
        with self._abort_lock:  # not self.lock: commands call this while holding that
            if self.aborted:
                return
            self.aborted = True
        log.info("step %s: rank %s aborts the step: %s", self.jobid, rank, message)
        self.on_abort(rank, code, message)

    # ---- commands ---------------------------------------------------------------------------
    def _handle(self, conn: Conn, msg: str) -> None:
        if not conn.version:
            self._init(conn, msg)
            return
        pairs = parse_pmi1(msg) if conn.version == 1 else parse_pmi2(msg)
        table = PMI1 if conn.version == 1 else PMI2
        handler = table.get(pairs["cmd"])
        if handler is None:
            raise PmiError(f"unknown PMI-{conn.version} command {pairs['cmd'][:40]!r}")
        handler(self, conn, pairs)

    def _init(self, conn: Conn, msg: str) -> None:
        m = re.fullmatch(r"cmd=init pmi_version=(\d+) pmi_subversion=(\d+)\s*", msg)
        if m is None:
            raise PmiError(f"expected init, got {msg[:40]!r}")
        version, sub = int(m.group(1)), int(m.group(2))
        rc = 0 if version in (1, 2) else 1
        version, sub = (1, 1) if version == 1 else (2, 0)
        conn.send(encode_pmi1(("cmd", "response_to_init"), ("rc", rc), ("pmi_version", version),
                              ("pmi_subversion", sub)))
        if rc:
            raise PmiError(f"unsupported PMI version {m.group(1)}.{m.group(2)}")
        conn.version = version

    def put(self, conn: Conn, key: str, value: str) -> str:
        why = check_pair(key, value)
        if not why and conn.puts >= MAX_PUTS_PER_TASK:
            why = f"more than {MAX_PUTS_PER_TASK} puts before a fence"
        if not why and key not in self.kvs and key not in self.pending and \
                len(self.kvs) + len(self.pending) >= step_pairs_limit(self.size):
            why = f"the step's KVS holds {step_pairs_limit(self.size)} pairs at most"
        if why:
            return why
        conn.puts += 1
        self.pending[key] = value
        return ""

    def enter_fence(self, conn: Conn) -> None:
        """barrier_in / kvs-fence: once every task here is in, this node's pairs go up."""
        if conn in self.in_fence:
            raise PmiError("entered the same fence twice")
        self.in_fence.append(conn)
        if len(self.in_fence) == len(self.ranks):
            pairs, self.pending = self.pending, {}
            self.send_up(self.seq, pairs)

    def fence_done(self, seq: int, pairs: dict[str, str]) -> None:
        """srun's union of every node's pairs for fence seq: stored, then the tasks go on.
        srun is the user's: an answer no fence here awaits, a pair no put would take, or a KVS
        grown past the step's limit ends the step instead (a log line says which)."""
        with self.lock:
            why = self._refuse_union(seq, pairs)
            if why:
                log.warning("step %s: srun's answer to fence %s refused: %s", self.jobid, seq, why)
                self._abort(self.ranks[0] if self.ranks else -1, None,
                            f"fence {seq} refused: {why}")
                return
            self.kvs.update(pairs)
            waiting, self.in_fence = self.in_fence, []
            self.seq += 1
            for conn in waiting:
                conn.puts = 0
                if conn.sock.fileno() < 0:
                    continue
                try:
                    conn.send(encode_pmi1(("cmd", "barrier_out"), ("rc", 0)) if conn.version == 1
                              else encode_pmi2(("cmd", "kvs-fence-response"), ("rc", 0)))
                except OSError as e:
                    log.warning("step %s: rank %s: fence reply failed: %s", self.jobid,
                                conn.rank, e)

    def _refuse_union(self, seq: int, pairs: dict[str, str]) -> str:
        """Why srun's union for fence seq cannot be taken ('' when it can)."""
        limit = step_pairs_limit(self.size)
        if len(pairs) > limit:  # first: what the checks below cost is bounded too
            return f"more pairs than a step may hold ({limit})"
        if seq != self.seq or len(self.in_fence) != len(self.ranks):
            return f"no fence {seq} pending here (at fence {self.seq}, " \
                   f"{len(self.in_fence)} of {len(self.ranks)} tasks in)"
        for key, value in pairs.items():
            if not isinstance(key, str) or not isinstance(value, str):
                return "a pair that is not text"
            bad = check_pair(key, value)
            if bad:
                return f"pair {key[:MAX_KEY]!r}: {bad}"
        if len(self.kvs) + sum(key not in self.kvs for key in pairs) > limit:
            return f"the step's KVS would hold more than {limit} pairs"
        return ""

    def put_node_attr(self, key: str, value: str) -> None:
        self.node_attrs[key] = value
        still = []
        for conn, wanted in self.attr_waiters:
            if wanted == key and conn.sock.fileno() >= 0:
                conn.send(_nodeattr_reply(value))
            elif conn.sock.fileno() >= 0:
                still.append((conn, wanted))
        self.attr_waiters = still

    def job_attr(self, key: str) -> str | None:
        return {"PMI_process_mapping": self.mapping, "universeSize": str(self.size)}.get(key)


def _nodeattr_reply(value: str | None) -> bytes:
    found = (("found", "TRUE"), ("value", value)) if value is not None else (("found", "FALSE"),)
    return encode_pmi2(("cmd", "info-getnodeattr-response"), ("rc", 0), *found)


def _abort_code(text: str) -> int:
    try:
        return int(text) & 0xFF
    except ValueError:
        return 1


def _finalize(server: PmiServer, conn: Conn, reply: bytes) -> None:
    conn.send(reply)
    conn.finalized = True
    server._close(conn)


# PMI-1 (pmi1.c's table): each handler answers on conn
PMI1 = {
    "get_maxes": lambda s, c, p: c.send(encode_pmi1(
        ("cmd", "maxes"), ("rc", 0), ("kvsname_max", MAX_KVSNAME), ("keylen_max", MAX_KEY),
        ("vallen_max", MAX_VALUE))),
    "get_universe_size": lambda s, c, p: c.send(encode_pmi1(
        ("cmd", "universe_size"), ("rc", 0), ("size", s.size))),
    "get_appnum": lambda s, c, p: c.send(encode_pmi1(("cmd", "appnum"), ("rc", 0), ("appnum", -1))),
    "get_my_kvsname": lambda s, c, p: c.send(encode_pmi1(
        ("cmd", "my_kvsname"), ("rc", 0), ("kvsname", s.jobid))),
    "put": lambda s, c, p: c.send(encode_pmi1(
        ("cmd", "put_result"), ("rc", 1 if s.put(c, p.get("key", ""), p.get("value", "")) else 0))),
    "get": lambda s, c, p: c.send(
        encode_pmi1(("cmd", "get_result"), ("rc", 0), ("value", s.kvs[p.get("key")]))
        if p.get("key") in s.kvs else encode_pmi1(("cmd", "get_result"), ("rc", 1))),
    "barrier_in": lambda s, c, p: s.enter_fence(c),
    "finalize": lambda s, c, p: _finalize(s, c, encode_pmi1(("cmd", "finalize_ack"), ("rc", 0))),
    "abort": lambda s, c, p: s._abort(c.rank, _abort_code(p.get("exitcode", "1")),
                                            "PMI abort"),
    "publish_name": lambda s, c, p: c.send(encode_pmi1(("cmd", "publish_result"),
                                                       ("info", "fail"))),
    "unpublish_name": lambda s, c, p: c.send(encode_pmi1(("cmd", "unpublish_result"),
                                                         ("info", "fail"))),
    "lookup_name": lambda s, c, p: c.send(encode_pmi1(("cmd", "lookup_result"), ("info", "fail"))),
}


def _pmi2_put(s: PmiServer, c: Conn, p: dict) -> None:
    why = s.put(c, p.get("key", ""), p.get("value", ""))
    c.send(encode_pmi2(("cmd", "kvs-put-response"), ("rc", 4 if why else 0),  # PMI2_ERR_INVALID_KEY
                       *((("errmsg", why),) if why else ())))


def _pmi2_get(s: PmiServer, c: Conn, p: dict) -> None:
    value = s.kvs.get(p.get("key", ""))
    found = (("found", "TRUE"), ("value", value)) if value is not None else (("found", "FALSE"),)
    c.send(encode_pmi2(("cmd", "kvs-get-response"), ("rc", 0), *found))


def _pmi2_getnodeattr(s: PmiServer, c: Conn, p: dict) -> None:
    key = p.get("key", "")
    value = s.node_attrs.get(key)
    if value is None and p.get("wait") == "TRUE" and len(s.attr_waiters) < 16 * len(s.ranks):
        s.attr_waiters.append((c, key))
        return
    c.send(_nodeattr_reply(value))


def _pmi2_putnodeattr(s: PmiServer, c: Conn, p: dict) -> None:
    key, value = p.get("key", ""), p.get("value", "")
    why = check_pair(key, value) or (
        "too many node attributes" if len(s.node_attrs) >= MAX_PUTS_PER_TASK else "")
    if not why:
        s.put_node_attr(key, value)
    c.send(encode_pmi2(("cmd", "info-putnodeattr-response"), ("rc", 4 if why else 0)))


def _pmi2_getjobattr(s: PmiServer, c: Conn, p: dict) -> None:
    value = s.job_attr(p.get("key", ""))
    found = (("found", "TRUE"), ("value", value)) if value is not None else (("found", "FALSE"),)
    c.send(encode_pmi2(("cmd", "info-getjobattr-response"), ("rc", 0), *found))


def _pmi2_abort(s: PmiServer, c: Conn, p: dict) -> None:
    if p.get("isworld", "FALSE").upper() == "TRUE":  # as Slurm: only a world abort kills
        s._abort(c.rank, 1, "PMI abort" + (f": {p['msg'][:200]}" if p.get("msg") else ""))


# PMI-2 (pmi2.c's table). fullinit answers with the rank the task was started as, whatever
# pmirank it sends.
PMI2 = {
    "fullinit": lambda s, c, p: c.send(encode_pmi2(
        ("cmd", "fullinit-response"), ("rc", 0), ("pmi-version", 2), ("pmi-subversion", 0),
        ("rank", c.rank), ("size", s.size), ("appnum", -1), ("debugged", "FALSE"),
        ("pmiverbose", "FALSE"))),
    "job-getid": lambda s, c, p: c.send(encode_pmi2(
        ("cmd", "job-getid-response"), ("rc", 0), ("jobid", s.jobid))),
    "kvs-put": _pmi2_put,
    "kvs-get": _pmi2_get,
    "kvs-fence": lambda s, c, p: s.enter_fence(c),
    "info-getnodeattr": _pmi2_getnodeattr,
    "info-putnodeattr": _pmi2_putnodeattr,
    "info-getjobattr": _pmi2_getjobattr,
    "finalize": lambda s, c, p: _finalize(s, c, encode_pmi2(("cmd", "finalize-response"),
                                                            ("rc", 0))),
    "abort": _pmi2_abort,
    "name-publish": lambda s, c, p: c.send(encode_pmi2(("cmd", "name-publish-response"),
                                                       ("rc", 1))),
    "name-unpublish": lambda s, c, p: c.send(encode_pmi2(("cmd", "name-unpublish-response"),
                                                         ("rc", 1))),
    "name-lookup": lambda s, c, p: c.send(encode_pmi2(("cmd", "name-lookup-response"), ("rc", 1))),
}


# ---- srun's side: the root of every fence ---------------------------------------------------
class FenceRoot:
    """srun's part: each node reports fence seq with its pairs; when every node of the step
    has, the union goes back to all of them. Bounded as each node's KVS is (step_pairs_limit)."""

    def __init__(self, nodes: list[str], ntasks: int):
        self.nodes = set(nodes)
        self.limit = step_pairs_limit(ntasks)
        self.reported: dict[int, dict[str, dict[str, str]]] = {}  # seq -> node -> pairs

    def report(self, node: str, seq: int, pairs: dict[str, str]) -> dict[str, str] | None:
        """The union for seq once node completes it; None while other nodes are missing."""
        if node not in self.nodes:
            raise PmiError(f"fence from {node}, not a node of the step")
        got = self.reported.setdefault(seq, {})
        if node in got:
            raise PmiError(f"{node} reported fence {seq} twice")
        got[node] = dict(pairs)
        if sum(len(p) for p in got.values()) > self.limit:
            raise PmiError(f"fence {seq}: more than {self.limit} pairs")
        if set(got) != self.nodes:
            return None
        del self.reported[seq]
        union: dict[str, str] = {}
        for node_name in sorted(got):
            union.update(got[node_name])
        return union
