"""Job endings the controller has not acknowledged yet, kept on disk.

An ending is written here before it is reported and removed once the controller acknowledges
it, so neither a controller restart nor an agent crash loses it: a restarted agent delivers the
endings its predecessor could not, and the controller applies each at most once (it ignores an
ending for a run it already closed).
"""

from __future__ import annotations

import json
import os


class EndingsJournal:
    def __init__(self, directory: str):
        self.dir = directory
        os.makedirs(directory, mode=0o700, exist_ok=True)

    @staticmethod
    def _name(event: dict) -> str:
        return f"{event['job_id']}.{event.get('restart_count', 0)}.json"

    def record(self, event: dict) -> None:
        path = os.path.join(self.dir, self._name(event))
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(event, f)
        os.replace(tmp, path)  # whole or absent, never torn

    def delivered(self, events: list[dict]) -> None:
        for event in events:
            try:
                os.unlink(os.path.join(self.dir, self._name(event)))
            except FileNotFoundError:
                pass

    def load(self) -> list[dict]:
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".json"):
                try:
                    with open(os.path.join(self.dir, name)) as f:
                        out.append(json.load(f))
                except (OSError, ValueError):
                    os.unlink(os.path.join(self.dir, name))  # a torn write cannot happen; junk can
        return out
