"""controller/accounting.py: sacct's time window and state filter, runs of requeued jobs, and
PrivateData=jobs, over a real Store (a temporary SQLite file)."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite.controller import accounting
from pyslurm_lite.controller.accounting import HistoryQuery, JobRun, in_window
from pyslurm_lite.controller.auth import Caller
from pyslurm_lite.controller.store import Store
from pyslurm_lite.model import JobState


def run(state="COMPLETED", eligible=100.0, start=110.0, end=120.0, held=False) -> JobRun:
    job = model_job(1)
    job.state = JobState(state) if state != "REQUEUED" else JobState.RUNNING
    job.eligible_time, job.start_time, job.end_time, job.held = eligible, start, end, held
    return JobRun(job, state)


# The module docstring's example, then the edges: (run, states, S, E, listed)
CASES = [
    (run(), [], 112, 115, True),  # eligible before E, not ended before S
    (run(), ["COMPLETED"], 112, 115, False),  # ended after the window
    (run(), ["RUNNING"], 112, 115, True),  # it ran during the window
    (run(), ["COMPLETED"], 112, 120, True),
    (run(), [], 121, 130, False),  # ended before the window
    (run(), [], 50, 100, False),  # not eligible before E
    (run("RUNNING", end=0.0), [], 200, 300, True),  # still running
    (run("RUNNING", end=0.0), ["RUNNING"], 200, 300, True),
    (run("PENDING", start=0.0, end=0.0), ["PENDING"], 200, 300, True),
    (run("PENDING", start=0.0, end=0.0), ["RUNNING"], 200, 300, False),
    (run(), ["PENDING"], 105, 108, True),  # it waited then
    (run(), ["PENDING"], 111, 115, False),  # it had started
    (run("CANCELLED", start=0.0, end=130.0), ["PENDING"], 120, 125, True),  # cancelled pending
    (run("PENDING", start=0.0, end=0.0, held=True), [], 0, 300, False),  # never eligible
    (run("REQUEUED"), ["REQUEUED"], 100, 130, True),
    (run("REQUEUED"), ["COMPLETED"], 100, 130, False),
]


@pytest.mark.parametrize("r, states, start, end, listed", CASES)
def test_window(r, states, start, end, listed):
    assert in_window(r, states, start, end) is listed


def test_a_held_job_is_listed_when_named():
    assert in_window(run("PENDING", start=0.0, end=0.0, held=True), [], 0, 300, any_eligibility=True)


@pytest.fixture
def store(tmp_path):
    s = Store(f"sqlite:///{tmp_path / 'state.db'}", clock=lambda: 150.0)
    yield s
    s.close()


def put(store, job):
    store.insert_jobs([job], [("", {})])


def test_history_lists_every_run_with_duplicates(store):
    job = model_job(5)
    job.eligible_time, job.submit_time, job.start_time = 100.0, 100.0, 110.0
    put(store, job)
    job.state, job.restart_count, job.start_time, job.eligible_time = JobState.PENDING, 1, 0.0, 150.0
    store.save_jobs([job])
    job.state, job.start_time, job.end_time = JobState.COMPLETED, 160.0, 170.0
    store.save_jobs([job])
    q = HistoryQuery(job_ids=[5], duplicates=True)
    runs = accounting.job_history(store, q, now=200.0, max_array_size=1001)
    assert [(r.state, r.job.start_time, r.job.end_time) for r in runs] == \
        [("REQUEUED", 110.0, 150.0), ("COMPLETED", 160.0, 170.0)]
    q.duplicates = False
    assert [r.state for r in accounting.job_history(store, q, 200.0, 1001)] == ["COMPLETED"]


def test_history_finds_array_tasks_by_array_id_and_by_task(store):
    tasks = []
    for i in range(3):
        t = model_job(10 + i)
        t.array_job_id, t.array_task_id, t.eligible_time, t.submit_time = 10, i, 100.0, 100.0
        tasks.append(t)
    store.insert_jobs(tasks, [("", {})] * 3)
    other = model_job(13)
    other.eligible_time = other.submit_time = 100.0
    put(store, other)
    ids = lambda q: [r.job.job_id for r in accounting.job_history(store, q, 200.0, 1001)]  # noqa: E731
    assert ids(HistoryQuery(job_ids=[10])) == [10, 11, 12]
    assert ids(HistoryQuery(array_tasks=[(10, 1)])) == [11]
    assert ids(HistoryQuery(job_ids=[11])) == [11]


def test_private_data_hides_other_users_jobs():
    mine, theirs = run(), run()
    mine.job.spec.uid, theirs.job.spec.uid = 1000, 1001
    user = Caller(uid=1000, user="alice")
    assert accounting.visible([mine, theirs], user, private=False) == [mine, theirs]
    assert accounting.visible([mine, theirs], user, private=True) == [mine]
    root = Caller(uid=0, user="root", operator=True)
    assert accounting.visible([mine, theirs], root, private=True) == [mine, theirs]


@pytest.mark.parametrize("q", [
    HistoryQuery(job_ids=[2**63 - 1]), HistoryQuery(job_ids=[-1]),
    HistoryQuery(array_tasks=[(2**40, 1)]), HistoryQuery(start=float("nan")),
    HistoryQuery(end=float("inf")), HistoryQuery(start=-5.0),
])
def test_requests_no_job_can_match_are_refused(store, q):
    from pyslurm_lite.errors import InvalidRequest
    with pytest.raises(InvalidRequest):
        accounting.job_history(store, q, 200.0, 1001)
