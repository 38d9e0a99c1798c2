"""The PMI wire, as Slurm's mpi/pmi2 plugin and MPICH's client libraries speak it over PMI_FD
(pmi.py serves it): parsing and encoding both protocols, a connection's framing, and MPICH's
process mapping. Pure: no sockets are opened here, nothing is trusted.

  PMI-1 (MPICH's simple PMI): one line of space-separated pairs, "cmd=put kvsname=7.0 key=k
  value=v\n"; a value holds no space.
  PMI-2: a 6-character length ("%-6d"), then ';'-separated pairs, "31    cmd=kvs-put;key=k;
  value=v;"; ';;' is a ';' inside a value.
Both begin with the PMI-1 line "cmd=init pmi_version=V pmi_subversion=S\n".
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field

# Slurm's (and MPICH's hydra's) limits, announced to PMI-1 clients by get_maxes
MAX_KVSNAME = 256  # characters
MAX_KEY = 64  # characters
MAX_VALUE = 1024  # characters
MAX_MESSAGE = 8192  # bytes of one PMI-1 line or PMI-2 frame (a put is ~1.4 KB at most)
PMI2_LEN = 6  # characters of a PMI-2 frame's length prefix
MAPPING = re.compile(r"\(vector(,\(\d{1,9},\d{1,9},\d{1,9}\)){1,4096}\)")


class PmiError(Exception):
    """A message that is not PMI: its connection is closed."""


def parse_pmi1(line: str) -> dict[str, str]:
    """'cmd=put kvsname=7.0 key=k value=v' -> {'cmd': 'put', ...}; a value may hold '='."""
    pairs = {}
    for token in line.split():
        key, eq, value = token.partition("=")
        if not eq or not key:
            raise PmiError(f"not a key=value pair: {token[:40]!r}")
        pairs[key] = value
    if "cmd" not in pairs:
        raise PmiError("no cmd")
    return pairs


def encode_pmi1(*pairs: tuple[str, object]) -> bytes:
    return (" ".join(f"{k}={v}" for k, v in pairs) + "\n").encode()


def parse_pmi2(body: str) -> dict[str, str]:
    """'cmd=kvs-put;key=k;value=a;;b;' -> {'cmd': 'kvs-put', 'key': 'k', 'value': 'a;b'}
    (';;' is a ';' inside a value)."""
    pairs, i, n = {}, 0, len(body)
    while i < n:
        eq = body.find("=", i)
        if eq <= i:
            raise PmiError(f"not a key=value pair at {body[i:i + 40]!r}")
        key, j, value = body[i:eq], eq + 1, []
        while j < n:
            if body[j] == ";":
                if j + 1 < n and body[j + 1] == ";":
                    value.append(";")
                    j += 2
                    continue
                break
            value.append(body[j])
            j += 1
        pairs[key] = "".join(value)
        i = j + 1
    if "cmd" not in pairs:
        raise PmiError("no cmd")
    return pairs


def encode_pmi2(*pairs: tuple[str, object]) -> bytes:
    body = "".join(f"{k}={str(v).replace(';', ';;')};" for k, v in pairs).encode()
    return f"{len(body):<{PMI2_LEN}d}".encode() + body


def process_mapping(node_of_rank: list[int]) -> str:
    """MPICH's PMI_process_mapping for where each rank runs, as Slurm's srun writes it:
    (vector,(first node, node count, ranks per node)...), runs of equal blocks on consecutive
    nodes in one triple. Block 2x2: [0,0,1,1] -> '(vector,(0,2,2))'; cyclic: [0,1,0,1] ->
    '(vector,(0,2,1),(0,2,1))'."""
    blocks: list[list[int]] = []  # [node, ranks]: consecutive ranks on one node
    for node in node_of_rank:
        if blocks and blocks[-1][0] == node:
            blocks[-1][1] += 1
        else:
            blocks.append([node, 1])
    triples: list[list[int]] = []  # [first node, node count, block]
    for node, size in blocks:
        last = triples[-1] if triples else None
        if last and last[2] == size and last[0] + last[1] == node:
            last[1] += 1
        else:
            triples.append([node, 1, size])
    return "(vector" + "".join(f",({a},{b},{c})" for a, b, c in triples) + ")"


def valid_mapping(text: str) -> bool:
    return len(text) <= MAX_VALUE and MAPPING.fullmatch(text) is not None


def check_pair(key: str, value: str) -> str:
    """Why a put is refused ('' when it is not)."""
    if not key or len(key) > MAX_KEY:
        return f"key length must be 1 to {MAX_KEY}"
    if len(value) > MAX_VALUE:
        return f"value longer than {MAX_VALUE}"
    return ""


@dataclass
class Conn:
    rank: int
    sock: socket.socket
    buf: bytearray = field(default_factory=bytearray)
    version: int = 0  # 0 until init; then 1 (PMI-1 lines) or 2 (PMI-2 frames)
    finalized: bool = False
    puts: int = 0  # pairs put since the last fence

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def next_message(self) -> str | None:
        """The next whole message in buf (None: wait for more)."""
        if self.version == 2:
            if len(self.buf) < PMI2_LEN:
                return None
            head = self.buf[:PMI2_LEN].decode("ascii", "replace").strip()
            if not head.isdigit() or int(head) > MAX_MESSAGE:
                raise PmiError(f"bad PMI-2 length {head[:PMI2_LEN]!r}")
            end = PMI2_LEN + int(head)
            if len(self.buf) < end:
                return None
            msg = bytes(self.buf[PMI2_LEN:end])
        else:
            end = self.buf.find(b"\n") + 1
            if end == 0:
                if len(self.buf) > MAX_MESSAGE:
                    raise PmiError("line too long")
                return None
            msg = bytes(self.buf[:end - 1])
        del self.buf[:end]
        try:
            return msg.decode()
        except UnicodeDecodeError:
            raise PmiError("not text") from None
