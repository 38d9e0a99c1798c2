"""Figures too slow to fetch on every page view, kept per caller and refreshed in the background.

Why: the dashboard's "recent failures" come from the controller's job history (the database);
with 5,000 jobs queued that query takes over a second on a 2-core box, while the page must render
in well under one and the live update runs every 2 s. A failure a minute old is still news, so
the page shows the latest answer (or "being gathered" the first time) and a thread asks again
once it is older than the TTL. Keys are the caller's token: what one caller may see (PrivateData)
is never shown to another. Errors are kept as the answer, so a refusal is shown, not retried in
a loop.
"""

from __future__ import annotations

import threading
import time

TTL = 30.0  # seconds an answer is shown before it is asked for again
KEPT = 64   # callers remembered


class Background:
    def __init__(self, ttl: float = TTL, clock=time.monotonic):
        self.ttl, self.clock = ttl, clock
        self._answers: dict[str, tuple[float, object]] = {}  # key -> (when fetched, value)
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def get(self, key: str, fetch):
        """The latest answer for key (None: none yet); starts fetch() in a thread when there is
        none or it is older than the TTL, at most one at a time per key."""
        with self._lock:
            when, value = self._answers.get(key, (None, None))
            stale = when is None or self.clock() - when >= self.ttl
            start = stale and key not in self._running
            if start:
                self._running.add(key)
        if start:
            threading.Thread(target=self._refresh, args=(key, fetch), daemon=True,
                             name="dashboard-refresh").start()
        return value

    def _refresh(self, key: str, fetch) -> None:
        try:
            value = fetch()
        except Exception as e:  # a loop boundary: the error becomes the shown answer
            value = e
        with self._lock:
            self._running.discard(key)
            self._answers[key] = (self.clock(), value)
            while len(self._answers) > KEPT:
                self._answers.pop(next(iter(self._answers)))
