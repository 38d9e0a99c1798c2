"""The Unix socket where a local process gets a user token (Slurm's sack.socket).

Server: a daemon that holds a key (the agent, the controller, `pyslurm-lite authd` on a login
host) accepts a connection, asks the kernel who is on the other end (SO_PEERCRED: uid and gid of
the connecting process, which no LD_PRELOAD, fakeroot or lie in the client can change), and
answers a token signed for that uid and gid, good for a few seconds and one call.

    client -> server   TOKEN <audience>\\n
    server -> client   OK <token>\\n    or    ERR <message>\\n

Client: `fetch_token` tries the configured socket (AuthInfo=socket=, authd's), then any other
*.socket in the same directory (each daemon on a host serves its own: slurmctld.socket,
slurmd-NAME.socket). It uses `_socket` only, so a CLI pays no import for it.
"""

from __future__ import annotations

import os

import _socket

CONNECT_TIMEOUT = 5.0  # seconds
MAX_LINE = 4096  # bytes of a request or a reply


def socket_paths(configured: str):
    """The configured socket first, then (listed only if it is needed) the other daemons'
    sockets beside it."""
    yield configured
    directory = os.path.dirname(configured) or "."
    try:
        others = sorted(n for n in os.listdir(directory) if n.endswith(".socket"))
    except OSError:
        others = []
    yield from (p for p in (os.path.join(directory, n) for n in others) if p != configured)


def _ask(path: str, audience: str) -> str:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        sock.sendall(f"TOKEN {audience}\n".encode())
        reply = b""
        while not reply.endswith(b"\n") and len(reply) < MAX_LINE:
            chunk = sock.recv(MAX_LINE)
            if not chunk:
                break
            reply += chunk
    finally:
        sock.close()
    text = reply.decode("utf-8", errors="replace").strip()
    if text.startswith("OK "):
        return text[3:]
    raise PermissionError(text[4:] if text.startswith("ERR ") else f"bad answer from {path}")


def fetch_token(configured: str, audience: str) -> str:
    """A fresh user token from the first auth socket that answers; Unauthenticated (saying
    what to do) when none does."""
    from ..errors import Unauthenticated
    tried = []
    for path in socket_paths(configured):
        try:
            return _ask(path, audience)
        except FileNotFoundError:
            tried.append(f"no auth socket at {path}")
        except PermissionError as e:
            tried.append(f"{path}: {e}")
        except OSError as e:
            tried.append(f"{path}: {e.strerror or e}")
    raise Unauthenticated(f"cannot authenticate: {'; '.join(tried)}: is the agent (or "
                          f"`pyslurm-lite authd`) running on this host? (AuthInfo=socket= in slurm.conf)")


# ---- the server ---------------------------------------------------------------------------------
class AuthSocketServer:
    """Serves tokens on a Unix socket. issue(uid, gid, audience) -> token (or raises ValueError
    with a message for the client)."""

    def __init__(self, path: str, issue, audiences: frozenset[str]):
        self.path, self.issue, self.audiences = path, issue, audiences
        self._sock = None
        self._stop = False

    def start(self) -> None:
        import socket
        import stat
        import threading
        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o755, exist_ok=True)
        try:
            st = os.lstat(self.path)
            if not stat.S_ISSOCK(st.st_mode):
                raise OSError(f"{self.path} exists and is not a socket: not replacing it")
            os.unlink(self.path)  # a predecessor's (killed, or stopping): ours from now on
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(self.path)
        os.chmod(self.path, 0o666)  # anyone may ask; the kernel says who they are
        sock.listen(64)
        self._sock, self._inode = sock, os.stat(self.path).st_ino
        threading.Thread(target=self._serve, daemon=True, name="authsock").start()

    def _serve(self) -> None:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="authsock")
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                if self._stop:
                    return
                continue
            pool.submit(self._answer, conn)

    def _answer(self, conn) -> None:
        import socket
        import struct
        try:
            conn.settimeout(2.0)  # a client that says nothing holds a worker no longer
            pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                               struct.calcsize("3i")))
            line = b""
            while b"\n" not in line and len(line) < MAX_LINE:
                chunk = conn.recv(MAX_LINE)
                if not chunk:
                    break
                line += chunk
            words = line.decode("utf-8", errors="replace").split()
            if len(words) != 2 or words[0] != "TOKEN" or words[1] not in self.audiences:
                conn.sendall(b"ERR bad request: expected 'TOKEN <audience>'\n")
                return
            conn.sendall(f"OK {self.issue(uid, gid, words[1])}\n".encode())
        except ValueError as e:
            _send_quietly(conn, f"ERR {e}\n".encode())
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self._stop = True
        if self._sock is not None:
            self._sock.close()
            try:
                if os.stat(self.path).st_ino == self._inode:  # not a successor's socket
                    os.unlink(self.path)
            except OSError:
                pass


def _send_quietly(conn, data: bytes) -> None:
    try:
        conn.sendall(data)
    except OSError:
        pass
