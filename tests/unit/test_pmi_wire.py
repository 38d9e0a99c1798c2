"""agent/pmi.py and pmi_wire.py: both PMI wire protocols, MPICH's process mapping, srun's fence
root, and one node's server driven over real socketpairs as a task's PMI library would."""

from __future__ import annotations

import socket
import threading

import pytest

from pyslurm_lite.agent import pmi
from pyslurm_lite.agent.pmi import (FenceRoot, PmiError, PmiServer, encode_pmi1, encode_pmi2,
                                    parse_pmi1, parse_pmi2, process_mapping, valid_mapping)


# ---- the wire -------------------------------------------------------------------------------
@pytest.mark.parametrize("line, want", [
    ("cmd=init pmi_version=1 pmi_subversion=1", {"cmd": "init", "pmi_version": "1",
                                                 "pmi_subversion": "1"}),
    ("cmd=put kvsname=7.0 key=P0-businesscard value=port=5;ifname=1.2.3.4",
     {"cmd": "put", "kvsname": "7.0", "key": "P0-businesscard", "value": "port=5;ifname=1.2.3.4"}),
    ("cmd=barrier_in", {"cmd": "barrier_in"}),
    ("cmd=get key=k value=", {"cmd": "get", "key": "k", "value": ""}),
])
def test_pmi1_parse(line, want):
    assert parse_pmi1(line) == want


@pytest.mark.parametrize("line", ["cmd=put key", "key=k value=v", "=x cmd=get", ""])
def test_pmi1_malformed(line):
    with pytest.raises(PmiError):
        parse_pmi1(line)


def test_pmi1_encode():
    assert encode_pmi1(("cmd", "get_result"), ("rc", 0), ("value", "v")) == \
        b"cmd=get_result rc=0 value=v\n"


@pytest.mark.parametrize("body, want", [
    ("cmd=fullinit;pmirank=3;threaded=FALSE;", {"cmd": "fullinit", "pmirank": "3",
                                                "threaded": "FALSE"}),
    ("cmd=kvs-put;key=k;value=a;;b;;;", {"cmd": "kvs-put", "key": "k", "value": "a;b;"}),
    ("cmd=kvs-get;key=k;value=x=y;", {"cmd": "kvs-get", "key": "k", "value": "x=y"}),
    ("cmd=kvs-fence", {"cmd": "kvs-fence"}),  # the last ';' may be missing
])
def test_pmi2_parse(body, want):
    assert parse_pmi2(body) == want


@pytest.mark.parametrize("body", ["key=k;", "cmd=x;=v;", "cmd=x;novalue;"])
def test_pmi2_malformed(body):
    with pytest.raises(PmiError):
        parse_pmi2(body)


def test_pmi2_encode_is_length_prefixed_and_escaped():
    frame = encode_pmi2(("cmd", "kvs-get-response"), ("rc", 0), ("value", "a;b"))
    body = b"cmd=kvs-get-response;rc=0;value=a;;b;"
    assert frame == f"{len(body):<6d}".encode() + body
    assert frame[:6] == b"37    "  # "%-6d", as Slurm's client_resp_send
    assert parse_pmi2(frame[6:].decode())["value"] == "a;b"


@pytest.mark.parametrize("nodes, want", [
    ([0, 0, 1, 1], "(vector,(0,2,2))"),  # -N2 -n4 block
    ([0, 1, 0, 1], "(vector,(0,2,1),(0,2,1))"),  # cyclic, as Slurm's srun writes it
    ([0, 0, 0, 1, 1], "(vector,(0,1,3),(1,1,2))"),  # uneven block
    ([0], "(vector,(0,1,1))"),
    ([0, 0, 1, 1, 0, 0, 1, 1], "(vector,(0,2,2),(0,2,2))"),  # plane=2
    ([0, 1, 2, 3], "(vector,(0,4,1))"),
])
def test_process_mapping(nodes, want):
    assert process_mapping(nodes) == want
    assert valid_mapping(want)


@pytest.mark.parametrize("text", ["", "(vector)", "(vector,(0,2,2)", "(vector,(0,2,x))",
                                  "(vector,(0,2,2)) ", "(vector" + ",(0,1,1)" * 200 + ")"])
def test_invalid_mapping(text):
    assert not valid_mapping(text)


# ---- srun's fence root ----------------------------------------------------------------------
def test_fence_root_answers_once_every_node_is_in():
    root = FenceRoot(["n1", "n2"], ntasks=4)
    assert root.report("n1", 1, {"a": "1"}) is None
    assert root.report("n2", 1, {"b": "2"}) == {"a": "1", "b": "2"}
    assert root.report("n2", 2, {}) is None  # the next fence starts afresh
    assert root.report("n1", 2, {"c": "3"}) == {"c": "3"}


@pytest.mark.parametrize("reports", [
    [("n1", 1, {}), ("n1", 1, {})],  # twice
    [("n9", 1, {})],  # not a node of the step
    [("n1", 1, {f"k{i}": "v" for i in range(pmi.step_pairs_limit(2) + 1)})],  # too many
])
def test_fence_root_refuses(reports):
    root = FenceRoot(["n1", "n2"], ntasks=2)
    with pytest.raises(PmiError):
        for node, seq, pairs in reports:
            root.report(node, seq, pairs)


# ---- one node's server, over real sockets ---------------------------------------------------
class Task:
    """A task's end of PMI_FD, speaking PMI-1 or PMI-2 as MPICH's client libraries do."""

    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self.sock.settimeout(5)
        self.file = self.sock.makefile("rb")

    def init(self, version: int) -> dict:
        sub = 1 if version == 1 else 0
        self.sock.sendall(f"cmd=init pmi_version={version} pmi_subversion={sub}\n".encode())
        return parse_pmi1(self.file.readline().decode())

    def cmd1(self, line: str) -> dict:
        self.sock.sendall(line.encode() + b"\n")
        return parse_pmi1(self.file.readline().decode())

    def send2(self, *pairs) -> None:
        self.sock.sendall(encode_pmi2(*pairs))

    def read2(self) -> dict:
        length = int(self.file.read(6).decode())
        return parse_pmi2(self.file.read(length).decode())

    def cmd2(self, *pairs) -> dict:
        self.send2(*pairs)
        return self.read2()

    def eof(self) -> bool:
        return self.file.read(1) == b""


@pytest.fixture
def node():
    """A server for ranks 2 and 3 of a 4-task step; srun's part played by the test."""
    ups, aborts = [], []
    server = PmiServer(7, 0, [2, 3], 4, "(vector,(0,2,2))",
                       lambda seq, pairs: ups.append((seq, dict(pairs))),
                       lambda rank, code, msg: aborts.append((rank, code, msg)))
    envs = {r: server.environment(r) for r in (2, 3)}
    tasks = {r: Task(int(envs[r]["PMI_FD"])) for r in (2, 3)}
    for r in (2, 3):
        server.task_fds[r] = -1  # the test's Task owns that end now
    server.start()
    yield server, tasks, envs, ups, aborts
    server.stop()


def test_environment_is_slurms(node):
    _, _, envs, _, _ = node
    assert {k: v for k, v in envs[3].items() if k != "PMI_FD"} == \
        {"PMI_JOBID": "7.0", "PMI_RANK": "3", "PMI_SIZE": "4"}


def test_pmi1_put_fence_get(node):
    server, tasks, _, ups, _ = node
    t2, t3 = tasks[2], tasks[3]
    assert t2.init(1) == {"cmd": "response_to_init", "rc": "0", "pmi_version": "1",
                          "pmi_subversion": "1"}
    assert t2.cmd1("cmd=get_maxes")["vallen_max"] == "1024"
    assert t2.cmd1("cmd=get_my_kvsname")["kvsname"] == "7.0"
    assert t2.cmd1("cmd=get_universe_size")["size"] == "4"
    assert t2.cmd1("cmd=get kvsname=7.0 key=PMI_process_mapping")["value"] == "(vector,(0,2,2))"
    assert t2.cmd1("cmd=put kvsname=7.0 key=k2 value=v2")["rc"] == "0"
    assert t2.cmd1("cmd=put kvsname=7.0 key=big value=" + "x" * 1025)["rc"] == "1"
    assert t2.cmd1("cmd=get kvsname=7.0 key=k2")["rc"] == "1"  # not before the fence
    t3.init(1)
    t3.cmd1("cmd=put kvsname=7.0 key=k3 value=v3")
    t2.sock.sendall(b"cmd=barrier_in\n")
    t3.sock.sendall(b"cmd=barrier_in\n")
    _wait(lambda: ups)
    assert ups == [(1, {"k2": "v2", "k3": "v3"})]
    server.fence_done(1, {"k2": "v2", "k3": "v3", "k0": "v0"})  # the other node's too
    assert parse_pmi1(t2.file.readline().decode()) == {"cmd": "barrier_out", "rc": "0"}
    assert parse_pmi1(t3.file.readline().decode())["cmd"] == "barrier_out"
    assert t3.cmd1("cmd=get kvsname=7.0 key=k0") == {"cmd": "get_result", "rc": "0",
                                                     "value": "v0"}
    assert t2.cmd1("cmd=finalize") == {"cmd": "finalize_ack", "rc": "0"}
    assert t2.eof()


def test_pmi2_put_fence_get_and_attrs(node):
    server, tasks, _, ups, aborts = node
    t2, t3 = tasks[2], tasks[3]
    assert t2.init(2)["pmi_version"] == "2"
    # a claimed rank is not believed: the answer is the rank the task was started as
    init = t2.cmd2(("cmd", "fullinit"), ("pmirank", 0), ("threaded", "FALSE"))
    assert (init["rc"], init["rank"], init["size"]) == ("0", "2", "4")
    assert t2.cmd2(("cmd", "job-getid"))["jobid"] == "7.0"
    assert t2.cmd2(("cmd", "info-getjobattr"), ("key", "PMI_process_mapping")) == {
        "cmd": "info-getjobattr-response", "rc": "0", "found": "TRUE", "value": "(vector,(0,2,2))"}
    assert t2.cmd2(("cmd", "kvs-put"), ("key", "k;2"), ("value", "a;b"))["rc"] == "0"
    assert t2.cmd2(("cmd", "kvs-put"), ("key", "k" * 65), ("value", "v"))["rc"] != "0"
    t3.init(2)
    t3.cmd2(("cmd", "fullinit"), ("pmirank", 3), ("threaded", "FALSE"))
    t3.send2(("cmd", "info-getnodeattr"), ("key", "shm"), ("wait", "TRUE"))  # held until put
    assert t2.cmd2(("cmd", "info-putnodeattr"), ("key", "shm"), ("value", "seg1"))["rc"] == "0"
    assert t3.read2() == {"cmd": "info-getnodeattr-response", "rc": "0", "found": "TRUE",
                          "value": "seg1"}
    t2.send2(("cmd", "kvs-fence"))
    t3.send2(("cmd", "kvs-fence"))
    _wait(lambda: ups)
    assert ups == [(1, {"k;2": "a;b"})]
    server.fence_done(1, {"k;2": "a;b"})
    assert t2.read2() == {"cmd": "kvs-fence-response", "rc": "0"}
    assert t3.read2()["cmd"] == "kvs-fence-response"
    assert t3.cmd2(("cmd", "kvs-get"), ("jobid", "7.0"), ("srcid", -1), ("key", "k;2"))[
        "value"] == "a;b"
    assert t3.cmd2(("cmd", "kvs-get"), ("key", "none"))["found"] == "FALSE"
    assert t2.cmd2(("cmd", "finalize"))["cmd"] == "finalize-response"
    assert t3.cmd2(("cmd", "finalize"))["cmd"] == "finalize-response"
    assert aborts == []


@pytest.mark.parametrize("send, reason", [
    (b"cmd=init pmi_version=1 pmi_subversion=1\n\x00garbage without pairs\n", "protocol error"),
    (b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=bogus\n", "protocol error"),
    (b"cmd=init pmi_version=1 pmi_subversion=1\n" + b"x" * (pmi.MAX_MESSAGE + 10),
     "protocol error"),
    (b"cmd=init pmi_version=2 pmi_subversion=0\n999999cmd=kvs-fence;", "protocol error"),
    (b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=abort exitcode=7\n", "PMI abort"),
    (b"cmd=init pmi_version=1 pmi_subversion=1\n", "without calling PMI finalize"),  # then EOF
])
def test_bad_task_loses_pmi_and_ends_the_step(node, send, reason):
    server, tasks, _, _, aborts = node
    t2 = tasks[2]
    t2.sock.sendall(send)
    t2.sock.shutdown(socket.SHUT_WR)
    _wait(lambda: aborts)
    rank, code, message = aborts[0]
    assert rank == 2 and reason in message
    assert code == (7 if "abort" in reason else None)
    # the server still serves the other task
    assert tasks[3].init(1)["rc"] == "0"
    assert tasks[3].cmd1("cmd=get_appnum")["appnum"] == "-1"


def test_task_that_never_speaks_pmi_is_no_abort(node):
    _, tasks, _, _, aborts = node
    tasks[2].sock.close()
    assert tasks[3].init(1)["rc"] == "0"  # a round trip: the close has been seen
    assert aborts == []


def _wait(cond, timeout: float = 5.0) -> None:
    done = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if cond():
            return
        done.wait(0.01)
    raise AssertionError("timed out")


def test_a_step_kvs_is_bounded(node, monkeypatch):
    server, tasks, _, ups, aborts = node
    monkeypatch.setattr(pmi, "PAIRS_BASE", 3)  # 3 + 64 * 4 pairs for this 4-task step
    t2 = tasks[2]
    t2.init(1)
    limit = pmi.step_pairs_limit(4) - 1  # PMI_process_mapping is one
    for i in range(limit):
        assert t2.cmd1(f"cmd=put kvsname=7.0 key=k{i} value=v")["rc"] == "0"
    assert t2.cmd1("cmd=put kvsname=7.0 key=one-more value=v")["rc"] == "1"
    assert t2.cmd1("cmd=put kvsname=7.0 key=k0 value=again")["rc"] == "0"  # a key put before
    server.fence_done(1, {f"x{i}": "v" for i in range(pmi.step_pairs_limit(4) + 1)})
    assert aborts and "more pairs than a step may hold" in aborts[0][2]


# ---- slurm.conf MpiDefault ----------------------------------------------------------------------
@pytest.mark.parametrize("line, want", [("", "none"), ("MpiDefault=pmi2", "pmi2"),
                                        ("MpiDefault=none", "none")])
def test_mpi_default(line, want):
    from pyslurm_lite import config
    cfg = config.parse(f"{line}\nNodeName=n1\nPartitionName=p Nodes=ALL\n", "/etc/slurm.conf")
    assert cfg.mpi_default == want


def test_mpi_default_without_a_plugin_is_refused():
    from pyslurm_lite import config
    from pyslurm_lite.errors import ConfigError
    with pytest.raises(ConfigError, match="MpiDefault=pmix; valid: none, pmi2"):
        config.parse("MpiDefault=pmix\nNodeName=n1\nPartitionName=p Nodes=ALL\n", "/etc/slurm.conf")
