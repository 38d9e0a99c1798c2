"""A unary gRPC client over cleartext HTTP/2 (h2c with prior knowledge), on a plain socket.

Owns: one connection to one gRPC server and unary calls over it, one at a time: HTTP/2 framing
(RFC 9113), flow control, the gRPC wire format (length-prefixed messages, grpc-status and
grpc-message trailers, grpc-timeout). Must not: import grpc. It exists so that the short-lived
CLIs (sbatch, squeue, ...) skip grpcio's import (~100 ms); daemons, srun and salloc keep
grpcio, and so does pyslurm_lite.client unless told otherwise.

One call on a new connection (client -> server, then server -> client):
    PRI * HTTP/2.0 ... (the preface)      SETTINGS no push, 2 GiB stream windows, 16 MiB frames
    WINDOW_UPDATE 0 (+2 GiB)              HEADERS 1 :path /pyslurm_lite.v1.Controller/SubmitJob
    DATA 1 END_STREAM [0][length:4][request]            (all of it in one write)
                                          SETTINGS (acked), WINDOW_UPDATE, PING (answered)
    HEADERS 1 :status 200 content-type    DATA 1 [0][length:4][reply] (in as many frames)
    HEADERS 1 END_STREAM grpc-status: 0   (the trailers; an error comes as trailers only)
Our windows are opened wide at the start, so a multi-MB reply (squeue of thousands of jobs)
streams in without waiting on WINDOW_UPDATEs; the server's windows are honoured when sending.
A call that fails raises RpcFailure(code, message) with gRPC's status numbers (rpc/common.py).
"""

from __future__ import annotations

import struct
import time

import _socket  # socket.py's C core: socket.py itself costs a CLI ~5 ms at start (its enums)

from . import hpack_lite
from .common import (CANCELLED, DEADLINE_EXCEEDED, INTERNAL, PERMISSION_DENIED,
                        RESOURCE_EXHAUSTED, UNAUTHENTICATED, UNAVAILABLE, UNIMPLEMENTED, UNKNOWN)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, \
    CONTINUATION = range(10)  # frame types
END_STREAM = ACK = 0x1  # frame flags
END_HEADERS, PADDED, PRIORITY_FLAG = 0x4, 0x8, 0x20
ENABLE_PUSH, INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE = 2, 4, 5  # settings
REFUSED_STREAM = 0x7  # an HTTP/2 error code: the stream was not processed at all

DEFAULT_WINDOW = 65535  # bytes, HTTP/2's initial flow-control window
DEFAULT_FRAME = 16384  # bytes, HTTP/2's initial SETTINGS_MAX_FRAME_SIZE
MAX_WINDOW = 2**31 - 1  # bytes, the largest flow-control window
OUR_MAX_FRAME = 2**24 - 1  # bytes: the largest frame we accept (fewer frames for big replies)
READ_SIZE = 256 * 1024  # bytes asked of the socket at a time
SETTINGS_ACK_S = 5.0  # seconds a SETTINGS or PING acknowledgement may take outside a call
USER_AGENT = "pyslurm-lite-h2client/1"
_HEAD = struct.Struct(">IBI")  # length (24 bits) and type (8) in one word, flags, stream id

# RST_STREAM error code -> gRPC status (gRPC's PROTOCOL-HTTP2 mapping; others are INTERNAL)
_STATUS_OF_H2_ERROR = {0x7: UNAVAILABLE, 0x8: CANCELLED, 0xB: RESOURCE_EXHAUSTED,
                       0xC: PERMISSION_DENIED}
# HTTP status of a reply without grpc-status -> gRPC status (gRPC's http-grpc-status-mapping)
_STATUS_OF_HTTP = {"400": INTERNAL, "401": UNAUTHENTICATED, "403": PERMISSION_DENIED,
                   "404": UNIMPLEMENTED, "429": UNAVAILABLE, "502": UNAVAILABLE,
                   "503": UNAVAILABLE, "504": UNAVAILABLE}


class RpcFailure(Exception):
    """A call that did not return a reply: gRPC status `code` (a number) and its message."""

    def __init__(self, code: int, message: str):
        super().__init__(f"status {code}: {message}")
        self.code, self.message = code, message


class _Unprocessed(RpcFailure):
    """The server refused the stream before its application saw it: safe to send again."""


def frame(ftype: int, flags: int, stream: int, payload=b"") -> bytes:
    return _HEAD.pack(len(payload) << 8 | ftype, flags, stream) + payload


def grpc_timeout(seconds: float) -> str:
    """The grpc-timeout header value: at most 8 digits and a unit."""
    ms = max(int(seconds * 1000), 1)
    return f"{ms}m" if ms < 10**8 else f"{min(int(seconds), 10**8 - 1)}S"


def percent_decode(text: str) -> str:
    """grpc-message is UTF-8 with bytes outside printable ASCII (and %) percent-encoded."""
    if "%" not in text:
        return text
    raw, i = bytearray(), 0
    while i < len(text):
        pair = text[i + 1:i + 3]
        if text[i] == "%" and len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair):
            raw.append(int(pair, 16))
            i += 3
        else:
            raw += text[i].encode("utf-8")
            i += 1
    return raw.decode("utf-8", errors="replace")


class Channel:
    """Unary calls to one gRPC server at host:port. The connection is opened at the first call
    and kept for the next ones; one call at a time (not thread-safe)."""

    def __init__(self, target: str, ssl_context=None):
        host, _, port = target.rpartition(":")
        self.host, self.port, self.authority = host.strip("[]"), int(port), target
        self.ssl_context = ssl_context  # TLS (rpc/tls.py) when set, else cleartext h2c
        self._conn: _Connection | None = None

    def unary(self, path: str, request: bytes, metadata=(), timeout: float = 30.0) -> bytes:
        """Send one serialized request to path (/package.Service/Method); the reply's bytes.
        A call the server refused without processing it (GOAWAY, REFUSED_STREAM) is sent
        once more on a new connection, as grpcio does."""
        deadline = time.monotonic() + timeout
        for attempt in (1, 2):
            if self._conn is not None and not self._conn.reusable():
                self.close()
            if self._conn is None:
                self._conn = _Connection(self.host, self.port, deadline, self.ssl_context)
            try:
                return self._conn.unary(self.authority, path, request, metadata, deadline)
            except _Unprocessed:
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("not reached")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def connect(host: str, port: int, timeout: float):
    """A TCP connection to the first address of host that answers (socket.create_connection,
    without socket.py), with TCP_NODELAY: a call is written at once, in one piece."""
    # an ASCII name as bytes: for a str, getaddrinfo imports the idna codec (2 ms)
    name = host.encode() if host.isascii() else host
    error: OSError = OSError(f"no address for {host}")
    for family, kind, proto, _, address in _socket.getaddrinfo(name, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as e:
            sock.close()
            error = e
            continue
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        return sock
    raise error


class _WantRead(Exception):
    """Stands for ssl.SSLWantReadError until a TLS connection imports ssl."""


def _tls(raw, ctx, host: str):
    """The TCP connection wrapped in TLS, the server checked against the CA, h2 agreed."""
    global _WantRead
    import socket
    import ssl
    _WantRead = ssl.SSLWantReadError
    sock = ctx.wrap_socket(socket.socket(fileno=raw.detach()), server_hostname=host)
    if sock.selected_alpn_protocol() != "h2":
        sock.close()
        raise OSError(f"the server at {host} did not agree to HTTP/2 over TLS")
    return sock


class _Connection:
    """One HTTP/2 connection, client side: frames in and out, the peer's settings, windows."""

    def __init__(self, host: str, port: int, deadline: float, ssl_context=None):
        self.scheme = "https" if ssl_context else "http"
        try:
            self.sock = connect(host, port, _remaining(deadline))
            if ssl_context is not None:
                self.sock = _tls(self.sock, ssl_context, host)
        except TimeoutError:
            raise RpcFailure(DEADLINE_EXCEEDED, f"timed out connecting to {host}:{port}") from None
        except OSError as e:
            raise RpcFailure(UNAVAILABLE, f"failed to connect to {host}:{port}: "
                                          f"{e.strerror or e}") from None
        self.open = True
        self.buf, self.pos = b"", 0  # bytes read from the socket, and how far they are used
        self.out = bytearray(PREFACE)  # frames waiting for the next write
        self.out += frame(SETTINGS, 0, 0, struct.pack(">HIHIHI", ENABLE_PUSH, 0, INITIAL_WINDOW_SIZE,
                                                      MAX_WINDOW, MAX_FRAME_SIZE, OUR_MAX_FRAME))
        self.out += frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", MAX_WINDOW - DEFAULT_WINDOW))
        self.unacked = 0  # bytes of DATA received since we last widened the connection window
        self.decoder = hpack_lite.Decoder()
        self.next_stream = 1
        self.send_window = DEFAULT_WINDOW  # the connection's, for what we send
        self.stream_window = DEFAULT_WINDOW  # the stream in flight's, for what we send
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_max_frame = DEFAULT_FRAME
        self.goaway_last: int | None = None  # the last stream id the server will process

    def close(self) -> None:
        self.open = False
        self.sock.close()

    def reusable(self) -> bool:
        """Still good for a new call? Reads what the server sent since the last one (a GOAWAY,
        a PING, the connection closing) without waiting."""
        if not self.open or self.goaway_last is not None or self.next_stream > 2**31 - 1:
            return False
        try:
            self.sock.settimeout(0)
            while True:
                chunk = self.sock.recv(READ_SIZE)
                if not chunk:
                    return False
                self.buf = self.buf[self.pos:] + chunk
                self.pos = 0
        except (BlockingIOError, _WantRead):
            pass
        except OSError:
            return False
        try:
            while self._has_frame():
                self._handle(self._read_frame(time.monotonic() + SETTINGS_ACK_S), 0)
            self._flush(time.monotonic() + SETTINGS_ACK_S)
        except (OSError, RpcFailure):
            return False
        return self.goaway_last is None

    # ---- one call ---------------------------------------------------------------------------
    def unary(self, authority: str, path: str, request: bytes, metadata, deadline: float) -> bytes:
        sid = self.next_stream
        self.next_stream += 2
        self.stream_window = self.peer_initial_window
        reply = _Reply(self, sid)
        try:
            headers = [(":method", "POST"), (":scheme", self.scheme), (":path", path),
                       (":authority", authority), ("content-type", "application/grpc"),
                       ("te", "trailers"), ("user-agent", USER_AGENT),
                       ("grpc-accept-encoding", "identity"),
                       ("grpc-timeout", grpc_timeout(_remaining(deadline))), *metadata]
            self._queue_headers(sid, hpack_lite.encode(headers))
            if not self._send_body(reply, struct.pack(">BI", 0, len(request)) + request, deadline):
                self.close()  # answered before it read all we had: our half of the stream is open
            while not reply.ended:
                self._dispatch(self._read_frame(deadline), reply, deadline)
            return reply.message()
        except TimeoutError:
            self.close()
            raise RpcFailure(DEADLINE_EXCEEDED, "Deadline Exceeded") from None
        except OSError as e:
            self.close()
            raise RpcFailure(UNAVAILABLE, f"connection to the server lost: {e.strerror or e}") from None
        except hpack_lite.HpackError as e:
            self.close()
            raise RpcFailure(INTERNAL, f"bad header block from the server: {e}") from None

    def _queue_headers(self, sid: int, block: bytes) -> None:
        size = self.peer_max_frame
        pieces = [block[i:i + size] for i in range(0, len(block), size)]
        for i, piece in enumerate(pieces):
            flags = END_HEADERS if i == len(pieces) - 1 else 0
            self.out += frame(HEADERS if i == 0 else CONTINUATION, flags, sid, piece)

    def _send_body(self, reply: _Reply, body: bytes, deadline: float) -> bool:
        """The request in DATA frames, END_STREAM on the last, within the server's windows;
        what the server sends meanwhile is handled. False if it answered before all was sent."""
        view, sent = memoryview(body), 0
        while sent < len(body):
            room = min(self.send_window, self.stream_window, self.peer_max_frame, len(body) - sent)
            if room <= 0:
                self._flush(deadline)
                self._dispatch(self._read_frame(deadline), reply, deadline)  # a WINDOW_UPDATE?
                if reply.ended:
                    return False
                continue
            last = sent + room == len(body)
            self.out += frame(DATA, END_STREAM if last else 0, reply.sid, view[sent:sent + room])
            self.send_window -= room
            self.stream_window -= room
            sent += room
        self._flush(deadline)
        return True

    def _flush(self, deadline: float) -> None:
        if self.out:
            self.sock.settimeout(_remaining(deadline))
            self.sock.sendall(self.out)
            self.out = bytearray()

    # ---- frames in --------------------------------------------------------------------------
    def _has_frame(self) -> bool:
        avail = len(self.buf) - self.pos
        return avail >= 9 and avail >= 9 + int.from_bytes(self.buf[self.pos:self.pos + 3], "big")

    def _read_frame(self, deadline: float) -> tuple[int, int, int, bytes]:
        """(type, flags, stream id, payload) of the next frame, waiting at most until deadline."""
        length_type, flags, stream = _HEAD.unpack(self._read(9, deadline))
        length = length_type >> 8
        if length > OUR_MAX_FRAME:
            self.close()
            raise RpcFailure(INTERNAL, f"a frame of {length} bytes, above our maximum")
        return length_type & 0xFF, flags, stream & 0x7FFFFFFF, self._read(length, deadline)

    def _read(self, n: int, deadline: float):
        if len(self.buf) - self.pos >= n:
            self.pos += n
            return self.buf[self.pos - n:self.pos]
        got = bytearray(self.buf[self.pos:])
        while len(got) < n:
            self.sock.settimeout(_remaining(deadline))
            chunk = self.sock.recv(max(READ_SIZE, n - len(got)))
            if not chunk:
                self.close()
                cls = _Unprocessed if self._unseen() else RpcFailure
                raise cls(UNAVAILABLE, "connection closed by the server")
            got += chunk
        self.buf, self.pos = bytes(got[n:]), 0
        del got[n:]
        return got

    def _unseen(self) -> bool:
        """Has the server said (GOAWAY) that it will not process the stream in flight?"""
        return self.goaway_last is not None and self.goaway_last < self.next_stream - 2

    def _dispatch(self, frame_, reply: _Reply, deadline: float) -> None:
        if frame_[2] == reply.sid and frame_[2]:
            reply.take(frame_)
        else:
            self._handle(frame_, reply.sid)
        self._flush(deadline)  # acknowledgements, window updates

    def _handle(self, frame_, sid: int) -> None:
        """A frame for the connection (stream 0), or for a stream other than the call's."""
        ftype, flags, stream, payload = frame_
        if ftype == SETTINGS and not flags & ACK:
            self._apply_settings(payload, sid)
            self.out += frame(SETTINGS, ACK, 0)
        elif ftype == PING and not flags & ACK:
            self.out += frame(PING, ACK, 0, payload[:8])
        elif ftype == WINDOW_UPDATE and len(payload) == 4:
            increment = int.from_bytes(payload, "big") & 0x7FFFFFFF
            if stream == 0:
                self.send_window += increment
            elif stream == sid:
                self.stream_window += increment
        elif ftype == GOAWAY and len(payload) >= 8:
            last, code = struct.unpack(">II", payload[:8])
            self.goaway_last = last & 0x7FFFFFFF
            if sid and self._unseen():
                self.close()
                raise _Unprocessed(UNAVAILABLE, f"the server is going away (HTTP/2 error {code}): "
                                                f"{bytes(payload[8:]).decode('utf-8', 'replace')}")
        elif ftype == PUSH_PROMISE:
            self.close()
            raise RpcFailure(INTERNAL, "a server push, which we disabled")
        # PRIORITY, acknowledgements, frames of ended streams, unknown types: nothing to do

    def _apply_settings(self, payload, sid: int) -> None:
        for i in range(0, len(payload) - 5, 6):
            key, value = struct.unpack(">HI", payload[i:i + 6])
            if key == INITIAL_WINDOW_SIZE:  # applies to open streams too, as a difference
                if sid:
                    self.stream_window += value - self.peer_initial_window
                self.peer_initial_window = value
            elif key == MAX_FRAME_SIZE:
                self.peer_max_frame = value
            # HEADER_TABLE_SIZE bounds the server's decoding table: our encoder never adds to it

    def received(self, n: int) -> None:
        """Count n bytes of DATA; widen the connection window again before it runs out."""
        self.unacked += n
        if self.unacked > MAX_WINDOW // 2:
            self.out += frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", self.unacked))
            self.unacked = 0


class _Reply:
    """What comes back on a call's stream: headers, the body, trailers."""

    def __init__(self, conn: _Connection, sid: int):
        self.conn, self.sid = conn, sid
        self.headers: dict[str, str] | None = None
        self.trailers: dict[str, str] = {}
        self.body = bytearray()
        self.block = bytearray()  # a header block still waiting for CONTINUATION frames
        self.block_ends_stream = False
        self.ended = False

    def take(self, frame_) -> None:
        ftype, flags, _, payload = frame_
        if ftype == DATA:
            self.conn.received(len(payload))
            self.body += _unpad(payload, flags)
            self.ended = bool(flags & END_STREAM)
        elif ftype == HEADERS:
            payload = _unpad(payload, flags)
            self.block_ends_stream = bool(flags & END_STREAM)
            self._header_piece(payload[5:] if flags & PRIORITY_FLAG else payload, flags)
        elif ftype == CONTINUATION:
            self._header_piece(payload, flags)
        elif ftype == RST_STREAM:
            code = int.from_bytes(payload[:4], "big") if len(payload) >= 4 else 0x2
            cls = _Unprocessed if code == REFUSED_STREAM else RpcFailure
            raise cls(_STATUS_OF_H2_ERROR.get(code, INTERNAL),
                      f"stream reset by the server (HTTP/2 error {code})")
        else:
            self.conn._handle(frame_, self.sid)

    def _header_piece(self, piece, flags: int) -> None:
        self.block += piece
        if not flags & END_HEADERS:
            return
        fields = dict(self.conn.decoder.decode(bytes(self.block)))
        self.block.clear()
        if self.headers is None:
            self.headers = fields
            if self.block_ends_stream:  # a reply of trailers only (how errors come)
                self.trailers = fields
        else:
            self.trailers = fields
        self.ended = self.block_ends_stream

    def message(self) -> bytes:
        """The reply message's bytes, or RpcFailure for a status other than OK."""
        status = self.trailers.get("grpc-status")
        if status is None:
            http = (self.headers or {}).get(":status", "missing")
            raise RpcFailure(_STATUS_OF_HTTP.get(http, UNKNOWN),
                             f"a reply without grpc-status (HTTP status {http})")
        if status != "0":
            code = int(status) if status.isdigit() else UNKNOWN
            raise RpcFailure(code, percent_decode(self.trailers.get("grpc-message", "")))
        body = self.body
        if len(body) < 5:
            raise RpcFailure(INTERNAL, "no message in the reply of a unary call")
        compressed, length = struct.unpack(">BI", body[:5])
        if compressed:
            raise RpcFailure(INTERNAL, "a compressed reply, which we did not offer to accept")
        if len(body) != 5 + length:
            raise RpcFailure(INTERNAL, f"a reply of {len(body) - 5} bytes for a message of {length}")
        return memoryview(body)[5:]


def _unpad(payload, flags: int):
    if not flags & PADDED:
        return payload
    if not payload or payload[0] >= len(payload):
        raise RpcFailure(INTERNAL, "bad padding in a frame")
    return payload[1:len(payload) - payload[0]]


def _remaining(deadline: float) -> float:
    """Seconds until deadline; TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left
