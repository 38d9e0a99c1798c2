"""What every daemon's main shares: record its pid, then run until SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
import threading


def write_pid_file(pid_file: str) -> None:
    """Written whole or not at all (a rename): `cluster up` polls this file while the daemon
    starts, and a truncated one, read between open and write, looked like a dead daemon."""
    tmp = f"{pid_file}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(f"{os.getpid()}\n")
    os.replace(tmp, pid_file)


def wait_for_stop(pid_file: str | None) -> None:
    """Write pid_file (when given), then block until the process is asked to stop."""
    if pid_file:
        write_pid_file(pid_file)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
