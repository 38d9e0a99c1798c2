"""What every daemon's main shares: record its pid, then run until SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
import threading


def wait_for_stop(pid_file: str | None) -> None:
    """Write pid_file (when given), then block until the process is asked to stop."""
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(f"{os.getpid()}\n")
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    done.wait()
