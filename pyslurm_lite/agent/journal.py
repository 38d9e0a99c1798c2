"""Job endings the controller has not acknowledged yet, kept on disk.

An ending is written here before it is reported, so neither a controller restart nor an agent
crash loses it: a restarted agent delivers the endings its predecessor could not.

One append-only file, a JSON line per ending: recording one is a single write(), which a crash
of the agent cannot tear (a torn last line, after a power cut, is skipped). The file is emptied
once every ending in it has been acknowledged. An ending acknowledged just before a crash may
be delivered again by the next agent; that is harmless, because the controller applies each
ending at most once (it ignores an ending for a run it already closed).
"""

from __future__ import annotations

import json
import os
import threading

LOG = "endings.log"


class EndingsJournal:
    def __init__(self, directory: str):
        self.dir = directory
        os.makedirs(directory, mode=0o700, exist_ok=True)
        self._lock = threading.Lock()
        # the endings in the file not acknowledged yet, by identity (an agent may also report
        # things it never recorded, which must not count)
        self._owed: dict[int, dict] = {}
        self._fd = os.open(os.path.join(directory, LOG), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def record(self, event: dict) -> None:
        line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            self._owed[id(event)] = event

    def delivered(self, events: list[dict]) -> None:
        """These events were acknowledged (those recorded or loaded here count)."""
        with self._lock:
            for event in events:
                self._owed.pop(id(event), None)
            if not self._owed:  # nothing in the file is still owed: start it afresh
                os.ftruncate(self._fd, 0)

    def load(self) -> list[dict]:
        """What a previous agent here recorded and could not deliver (at start, before any
        record)."""
        with open(os.path.join(self.dir, LOG), "rb") as f:
            lines = f.read().splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass  # a line torn by a power cut: its job is reconciled at registration
        with self._lock:
            self._owed = {id(e): e for e in out}
        return out
