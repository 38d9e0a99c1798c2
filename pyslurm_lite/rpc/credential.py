"""Launch credentials: the controller's signed word of everything an agent acts on when it
starts a batch script or a step's tasks (Slurm's job credential, cred_expire).

    c1.<claims, base64url JSON>.<node>=<mac>,<node>=<mac>...

The claims name the job, step (an int, or "batch") and restart count, the identity the processes
get (uid, gid, supplementary groups, user name), the nodes, each node's allocation (CPUs, memory
in MiB, GPU indices), for a step its task layout (each node's global task ids, as Slurm's
credential carries the step's layout: srun's own word on it is the user's), when it was issued
and until when it holds. Each node gets its own MAC, made with that node's key (keys.py), so one
node cannot forge a credential for another. An agent checks its MAC and the expiry, takes
identity, limits and a step's layout from the claims alone (check_layout), launches a
credential at most once (Replays) and never for a job it knows has ended (Revocations).
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field

from ..errors import PermissionDenied

BATCH = "batch"


class CredentialError(PermissionDenied):
    """The credential does not allow this launch (message says why)."""


@dataclass
class NodeShare:
    cpus: int = 0
    mem: int = 0  # MiB
    gpus: list[int] = field(default_factory=list)  # the step's GPUs (a batch script: the job's)
    job_gpus: list[int] | None = None  # the job's, which its cgroup is fenced to (None: gpus)

    @property
    def fence_gpus(self) -> list[int]:
        return self.gpus if self.job_gpus is None else self.job_gpus


@dataclass
class Claims:
    job_id: int
    step: int | str  # a step id, or BATCH
    restart_count: int
    uid: int
    gid: int
    groups: list[int]
    user: str
    nodes: list[str]
    alloc: dict[str, NodeShare]
    issued: float = 0.0
    expiry: float = 0.0
    nonce: str = ""
    tasks: dict[str, list[int]] | None = None  # a step's: node -> its global task ids

    @property
    def key(self) -> tuple:
        """What a replay is: the same launch of the same run."""
        return (self.job_id, self.step, self.restart_count, self.nonce)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, body: str, node: str) -> str:
    return hmac.digest(key, f"{node}\0{body}".encode(), "sha256").hex()  # one-shot: a launch's cost


def sign(key_for_node, claims: Claims, lifetime: float, now: float | None = None) -> str:
    """The credential for claims, good for `lifetime` seconds; key_for_node(name) -> bytes."""
    now = time.time() if now is None else now
    claims.issued, claims.expiry = now, now + lifetime
    claims.nonce = claims.nonce or secrets.token_hex(8)
    body = _b64(json.dumps({
        "job": claims.job_id, "step": claims.step, "restart": claims.restart_count,
        "uid": claims.uid, "gid": claims.gid, "groups": claims.groups, "user": claims.user,
        "nodes": claims.nodes, "issued": claims.issued, "expiry": claims.expiry, "nonce": claims.nonce,
        "alloc": {n: [s.cpus, s.mem, s.gpus, s.fence_gpus] for n, s in claims.alloc.items()},
        **({"tasks": {n: _runs(ids) for n, ids in claims.tasks.items()}}
           if claims.tasks is not None else {}),
    }, separators=(",", ":")).encode())
    macs = ",".join(f"{n}={_mac(key_for_node(n), body, n)}" for n in claims.nodes)
    return f"c1.{body}.{macs}"


def sign_job(key_for_node, job, step, nodes: list[str], lifetime: float,
             step_gpus: dict[str, list[int]] | None = None,
             tasks: dict[str, list[int]] | None = None) -> str:
    """The credential for launching `step` (a step id, or BATCH) of job on nodes: the job's
    identity, and its allocation on each of those nodes (what the job's cgroup is made from);
    step_gpus: the GPUs a step's tasks get on each node, out of the job's; tasks: a step's
    global task ids on each node."""
    step_gpus = step_gpus or {}
    claims = Claims(
        job_id=job.job_id, step=step, restart_count=job.restart_count, uid=job.spec.uid,
        gid=job.spec.gid, groups=list(job.spec.groups), user=job.spec.user, nodes=list(nodes),
        alloc={a.node: NodeShare(a.cpus, a.mem, list(step_gpus.get(a.node, a.gpus)), list(a.gpus))
               for a in job.allocations if a.node in nodes},
        tasks=None if tasks is None else {n: list(tasks.get(n, [])) for n in nodes})
    return sign(key_for_node, claims, lifetime)


def _runs(ids: list[int]) -> list[list[int]]:
    """Task ids as runs [first, count, stride], so the credential stays small whatever the
    distribution: block [0,1,2,3] -> [[0,4,1]]; cyclic over 3 nodes [1,4,7] -> [[1,3,3]]."""
    runs: list[list[int]] = []
    for t in ids:
        last = runs[-1] if runs else None
        if last and last[1] == 1 and t != last[0]:
            last[1], last[2] = 2, t - last[0]
        elif last and last[1] > 1 and t == last[0] + last[1] * last[2]:
            last[1] += 1
        else:
            runs.append([t, 1, 0])
    return runs


def _ids(runs: list) -> list[int]:
    return [int(first) + i * int(stride) for first, count, stride in runs
            for i in range(int(count))]


def check_layout(claims: Claims, node: str, step_nodes: list[str], tasks_per_node: list[int],
                 task_ids: list[int]) -> None:
    """A step launch's layout (its nodes, each one's task count, this node's task ids: what
    PMI_SIZE, PMI_RANK, SLURM_NTASKS and the PMI server's size come from) must be the one the
    controller signed; CredentialError otherwise."""
    if claims.tasks is None:
        raise CredentialError(f"the launch credential of step {claims.job_id}.{claims.step} "
                              f"does not sign its task layout")
    signed_counts = [len(claims.tasks.get(n, ())) for n in claims.nodes]
    if list(step_nodes) != claims.nodes or list(tasks_per_node) != signed_counts or \
            list(task_ids) != claims.tasks.get(node):
        raise CredentialError(f"the task layout of step {claims.job_id}.{claims.step} is not "
                              f"the one its launch credential signs")


def _share(a: list) -> NodeShare:
    gpus, fence = [int(g) for g in a[2]], [int(g) for g in a[3]]
    return NodeShare(int(a[0]), int(a[1]), gpus, None if fence == gpus else fence)


def verify(credential: str, key: bytes, node: str, now: float | None = None) -> Claims:
    """The claims of a credential, checked for this node (its MAC, made with `key`) and time;
    CredentialError otherwise."""
    try:
        version, body, macs = credential.split(".", 2)
        mine = dict(m.split("=", 1) for m in macs.split(",")).get(node, "")
    except ValueError:
        raise CredentialError("malformed launch credential") from None
    if version != "c1" or not mine or not hmac.compare_digest(mine, _mac(key, body, node)):
        raise CredentialError(f"invalid launch credential for {node}")
    try:
        c = json.loads(_unb64(body))
        claims = Claims(
            job_id=int(c["job"]), step=c["step"], restart_count=int(c["restart"]), uid=int(c["uid"]),
            gid=int(c["gid"]), groups=[int(g) for g in c["groups"]], user=str(c["user"]),
            nodes=[str(n) for n in c["nodes"]], issued=float(c["issued"]), expiry=float(c["expiry"]),
            nonce=str(c["nonce"]),
            alloc={n: _share(a) for n, a in c["alloc"].items()},
            tasks={str(n): _ids(r) for n, r in c["tasks"].items()} if "tasks" in c else None)
    except (ValueError, KeyError, TypeError, IndexError):
        raise CredentialError("malformed launch credential claims") from None
    now = time.time() if now is None else now
    if now > claims.expiry:
        raise CredentialError(f"expired launch credential (job {claims.job_id}, "
                              f"{now - claims.expiry:.0f} s ago)")
    if node not in claims.nodes or node not in claims.alloc:
        raise CredentialError(f"the launch credential does not cover {node}")
    return claims


class Replays:
    """Credentials already launched here, remembered until they expire: a captured credential
    cannot start the same step again."""

    PURGE_EVERY = 10.0  # seconds between sweeps of expired entries (not one sweep per launch)

    def __init__(self):
        self._seen: dict[tuple, float] = {}
        self._lock = threading.Lock()
        self._next_purge = 0.0

    def admit(self, claims: Claims, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._lock:
            if now >= self._next_purge:
                self._seen = {k: e for k, e in self._seen.items() if e >= now}
                self._next_purge = now + self.PURGE_EVERY
            if claims.key in self._seen:
                raise CredentialError(f"launch credential already used (job {claims.job_id}, "
                                      f"step {claims.step})")
            self._seen[claims.key] = claims.expiry

    def seen(self, claims: Claims) -> bool:
        with self._lock:
            return claims.key in self._seen


class Revocations:
    """Jobs that ended on this node (by run): no credential may launch anything for them again,
    however long it still holds. Remembered longer than any credential lives."""

    KEEP = 3600.0  # seconds; far beyond cred_expire

    def __init__(self):
        self._ended: dict[int, tuple[int, float]] = {}  # job id -> (restart count, when)
        self._lock = threading.Lock()
        self._next_purge = 0.0

    def revoke(self, job_id: int, restart_count: int, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._lock:
            known = self._ended.get(job_id)
            if known is None or known[0] <= restart_count:
                self._ended[job_id] = (restart_count, now)
            if now >= self._next_purge:  # a sweep a minute, not one per ending
                self._ended = {j: v for j, v in self._ended.items() if now - v[1] < self.KEEP}
                self._next_purge = now + 60.0

    def check(self, claims: Claims) -> None:
        with self._lock:
            known = self._ended.get(claims.job_id)
        if known is not None and claims.restart_count <= known[0]:
            raise CredentialError(f"job {claims.job_id} has ended here: its credentials are revoked")
