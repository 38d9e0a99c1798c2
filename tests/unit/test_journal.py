"""The agent's endings journal: what is recorded survives until acknowledged, a restart delivers
it again, and only acknowledging everything recorded empties the file."""

from __future__ import annotations

import os

from pyslurm_lite.agent.journal import LOG, EndingsJournal


def _ending(job_id: int) -> dict:
    return {"job_id": job_id, "restart_count": 0, "kind": "ended", "exit_code": 0}


def test_unacknowledged_endings_survive_a_restart(tmp_path):
    journal = EndingsJournal(str(tmp_path))
    first, second, third = _ending(1), _ending(2), _ending(3)
    for e in (first, second, third):
        journal.record(e)
    journal.delivered([first])  # the others are still owed: nothing may be dropped
    again = EndingsJournal(str(tmp_path)).load()
    assert [e["job_id"] for e in again] == [1, 2, 3]  # 1 again is harmless: applied at most once


def test_acknowledging_everything_empties_the_file(tmp_path):
    journal = EndingsJournal(str(tmp_path))
    endings = [_ending(i) for i in range(5)]
    for e in endings:
        journal.record(e)
    journal.delivered(endings)
    assert os.path.getsize(tmp_path / LOG) == 0
    assert EndingsJournal(str(tmp_path)).load() == []


def test_an_event_never_recorded_does_not_count_as_one_that_was(tmp_path):
    journal = EndingsJournal(str(tmp_path))
    owed = _ending(7)
    journal.record(owed)
    lost = {"job_id": 8, "kind": "lost"}  # reported without being recorded (agent start)
    journal.delivered([lost])
    assert [e["job_id"] for e in EndingsJournal(str(tmp_path)).load()] == [7]


def test_loaded_endings_are_owed_until_delivered_and_a_torn_line_is_skipped(tmp_path):
    EndingsJournal(str(tmp_path)).record(_ending(4))
    with open(tmp_path / LOG, "ab") as f:
        f.write(b'{"job_id": 5, "rest')  # a power cut in the middle of a write
    journal = EndingsJournal(str(tmp_path))
    loaded = journal.load()
    assert [e["job_id"] for e in loaded] == [4]
    journal.record(_ending(6))
    journal.delivered(loaded)  # 6 is still owed
    assert os.path.getsize(tmp_path / LOG) > 0
