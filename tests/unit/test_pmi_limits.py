"""agent/pmi.py's bounds against a hostile step (the agent is root; srun and the tasks are the
user's): srun's fence answers, the server's file descriptors, and a task that spins."""

from __future__ import annotations

import os
import resource
import time

import pytest

from pyslurm_lite.agent import pmi
from pyslurm_lite.agent.pmi import PmiServer, Throttle

from test_pmi_wire import Task, _wait


@pytest.fixture
def node():
    """A server for ranks 2 and 3 of a 4-task step (as test_pmi_wire's); srun's part played by
    the test."""
    ups, aborts = [], []
    server = PmiServer(7, 0, [2, 3], 4, "(vector,(0,2,2))",
                       lambda seq, pairs: ups.append((seq, dict(pairs))),
                       lambda rank, code, msg: aborts.append((rank, code, msg)))
    tasks = {r: Task(int(server.environment(r)["PMI_FD"])) for r in (2, 3)}
    for r in (2, 3):
        server.task_fds[r] = -1  # the test's Task owns that end now
    server.start()
    yield server, tasks, None, ups, aborts
    server.stop()


def _open_fds() -> set[str]:
    """The sockets, pipes and epolls this process holds (what a PMI server opens)."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
        if target.startswith(("socket:", "pipe:", "anon_inode:")):  # anon: the epoll
            held.add(target)
    return held


def _fence(server, tasks, ups) -> int:
    """Both tasks enter the next fence; the seq srun is to answer."""
    before = len(ups)
    for t in tasks.values():
        t.sock.sendall(b"cmd=barrier_in\n")
    _wait(lambda: len(ups) > before)
    return ups[-1][0]


def _inited(tasks):
    for t in tasks.values():
        t.init(1)
    return tasks


# ---- srun's answer to a fence -----------------------------------------------------------------
def test_a_fence_answer_nothing_awaits_ends_the_step(node):
    server, tasks, _, _, aborts = node
    server.fence_done(1, {"k": "v"})  # no task has entered fence 1
    assert aborts and "no fence 1 pending" in aborts[0][2]
    assert "k" not in server.kvs


def test_an_answer_to_another_fence_ends_the_step(node):
    server, tasks, _, ups, aborts = node
    seq = _fence(server, _inited(tasks), ups)
    server.fence_done(seq + 1, {"k": "v"})
    assert aborts and f"no fence {seq + 1} pending" in aborts[0][2]
    assert "k" not in server.kvs


@pytest.mark.parametrize("pairs, why", [
    ({"k" * 65: "v"}, "key length must be 1 to 64"),
    ({"": "v"}, "key length must be 1 to 64"),
    ({"k": "v" * 1025}, "value longer than 1024"),
])
def test_a_pair_no_put_would_take_ends_the_step(node, pairs, why):
    server, tasks, _, ups, aborts = node
    seq = _fence(server, _inited(tasks), ups)
    server.fence_done(seq, dict(pairs, good="v"))
    assert aborts and why in aborts[0][2]
    assert "good" not in server.kvs  # nothing of a refused answer is kept
    assert tasks[2].cmd1("cmd=get kvsname=7.0 key=good")["rc"] == "1"  # and no task went on


def test_the_kvs_is_bounded_across_fences(node, monkeypatch):
    """Each answer within the limit, but the KVS they add up to past it: refused."""
    server, tasks, _, ups, aborts = node
    monkeypatch.setattr(pmi, "PAIRS_BASE", 0)
    limit = pmi.step_pairs_limit(4)  # 256; PMI_process_mapping is one of them
    _inited(tasks)
    seq = _fence(server, tasks, ups)
    server.fence_done(seq, {f"a{i}": "v" for i in range(limit - 10)})
    assert aborts == [] and len(server.kvs) == limit - 9
    for t in tasks.values():
        assert t.file.readline().startswith(b"cmd=barrier_out")
    seq = _fence(server, tasks, ups)
    server.fence_done(seq, {f"a{i}": "w" for i in range(9)})  # keys it holds: no growth
    assert aborts == [] and server.kvs["a0"] == "w"
    for t in tasks.values():
        t.file.readline()
    seq = _fence(server, tasks, ups)
    server.fence_done(seq, {f"b{i}": "v" for i in range(10)})
    assert aborts and f"would hold more than {limit} pairs" in aborts[0][2]
    assert "b0" not in server.kvs


# ---- file descriptors ---------------------------------------------------------------------------
@pytest.mark.parametrize("room", [1, 2, 3, 12])  # out at the selector, the pipe, a rank
def test_a_constructor_out_of_descriptors_closes_what_it_opened(room):
    before = _open_fds()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = max(int(f) for f in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + room, hard))
    try:
        with pytest.raises(OSError) as e:
            PmiServer(7, 0, list(range(200)), 200, "", lambda *a: None, lambda *a: None)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert "Too many open files" in str(e.value)
    assert not _open_fds() - before  # (earlier tests' servers may close theirs meanwhile)


def test_a_rank_twice_is_refused_before_anything_is_opened():
    before = _open_fds()
    with pytest.raises(ValueError, match="a rank twice"):
        PmiServer(7, 0, [0, 1, 1], 3, "", lambda *a: None, lambda *a: None)
    assert not _open_fds() - before


# ---- a task that spins ------------------------------------------------------------------------
class FakeClock:
    def __init__(self):
        self.now, self.slept = 100.0, 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.mark.parametrize("rate, burst, messages, idle, slept", [
    (10, 5, 5, 0.0, 0.0),     # a burst goes through at once
    (10, 5, 25, 0.0, 2.0),    # then 10 a second
    (10, 5, 25, 0.05, 1.95),  # idle time refills the bucket...
    (10, 5, 25, 60.0, 1.9),   # ...up to the burst
])
def test_throttle(rate, burst, messages, idle, slept):
    clock = FakeClock()
    throttle = Throttle(rate, burst, clock, clock.sleep)
    throttle.take()
    clock.now += idle
    for _ in range(messages - 1):
        throttle.take()
    assert clock.slept == pytest.approx(slept, abs=1e-6)


def test_a_task_that_spins_is_slowed(monkeypatch):
    monkeypatch.setattr(pmi, "RATE_PER_TASK", 100)  # 100 messages a second for 1 task
    server = PmiServer(7, 0, [0], 1, "(vector,(0,1,1))", lambda *a: None, lambda *a: None)
    task = Task(int(server.environment(0)["PMI_FD"]))
    server.task_fds[0] = -1
    server.start()
    try:
        task.init(1)
        began = time.monotonic()
        for _ in range(150):  # 99 tokens left after init: ~0.5 s of waiting
            assert task.cmd1("cmd=get_maxes")["rc"] == "0"
        assert time.monotonic() - began >= 0.45
    finally:
        server.stop()
