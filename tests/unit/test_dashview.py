"""The dashboard's pure parts: queue order, paging and search; GPUs and their holders; failures;
a job's timeline and usage bars; the background cache; tokens pasted with SLURM_JWT=."""

from __future__ import annotations

import re
import threading
import time

import pytest

from pyslurm_lite._proto import controller_pb2 as cpb
from pyslurm_lite._proto import types_pb2 as pb
from pyslurm_lite.restd import dashcache, dashjob, dashview
from pyslurm_lite.restd.dashboard import claimed_user, clean_token

NOW = 1_800_000_000.0


def job(job_id, state="PENDING", priority=100, name="j", user="alice", **kw):
    return pb.Job(job_id=job_id, state=state, priority=priority,
                  spec=pb.JobSpec(name=name, user=user), submit_time=NOW - 100, **kw)


@pytest.mark.parametrize("query,expected", [
    ("", [3, 1, 2, 4]),            # running first, then priority high to low, then id
    ("PEND", [1, 2, 4]),
    ("bob", [2]),
    ("train", [3]),
    ("4", [4]),
    ("nothing-like-it", []),
])
def test_queue_order_and_search(query, expected):
    jobs = [job(1, priority=50), job(2, priority=50, user="bob"), job(3, "RUNNING", 1, "train"),
            job(4, priority=10)]
    q = dashview.queue(jobs, NOW, query)
    assert [r["id"] for r in q["rows"]] == expected
    assert q["counts"] == {"total": 4, "running": 1, "pending": 3, "other": 0,
                           "matching": len(expected)}


def test_queue_pages_cover_every_job_once():
    jobs = [job(i, priority=i) for i in range(1, 12)]
    seen = []
    for page in range(3):
        q = dashview.queue(jobs, NOW, page=page, limit=5)
        seen += [r["id"] for r in q["rows"]]
        assert q["pages"] == 3
    assert seen == list(range(11, 0, -1))
    assert dashview.queue(jobs, NOW, page=99, limit=5)["page"] == 2  # past the end: the last


def test_a_pending_rows_start_is_backfills_expected_start():
    row = dashview.queue_row(job(1, reason="Resources", expected_start=NOW + 3600), NOW)
    assert row["reason"] == "Resources" and row["start"] == dashview.when(NOW + 3600)
    assert dashview.queue_row(job(2), NOW)["start"] == "N/A"


def test_each_gpu_shows_its_holder_and_the_holders_utilization():
    node = pb.Node(config=pb.NodeConfig(name="n1", cpus=4, real_memory=1000,
                                        gres=[pb.GresRequest(name="gpu", count=4)]),
                   state="MIXED", responding=True, alloc_gpus=[1, 2],
                   gpu_faults=[pb.GpuFault(index=3, kind="xid", detail="XID 79")])
    running = job(7, "RUNNING", admin_comment="IdleGPU: flagged",
                  allocations=[pb.NodeAllocation(node="n1", cpus=1, gpus=[1, 2])],
                  usage=[pb.UsageSample(step="0", node="n1", gpus=2, gpu_util=40.0),
                         pb.UsageSample(step="1", node="n1", gpus=2, gpu_util=60.0)])
    [view] = dashview.node_views([node], [running, job(8)])
    states = [(g.index, g.state, g.job, g.util, g.idle_flag) for g in view.gpus]
    assert states == [(0, "idle", "", None, False), (1, "alloc", "7", 50.0, True),
                      (2, "alloc", "7", 50.0, True), (3, "fault", "", None, False)]
    assert view.state == "mixed" and view.gres_used.startswith("gpu:2(IDX:1-2)")


def test_failures_are_the_failed_states_latest_first():
    def run(i, state, end):
        return cpb.JobRun(job=job(i, state, end_time=end, exit_code=1), state=state)
    runs = [run(1, "FAILED", NOW - 50), run(2, "COMPLETED", NOW), run(3, "TIMEOUT", NOW - 10),
            run(4, "CANCELLED", NOW), run(5, "OUT_OF_MEMORY", NOW - 99), run(6, "NODE_FAIL", NOW - 1)]
    assert [r["id"] for r in dashview.failure_rows(runs)] == [6, 3, 1, 5]


def test_the_timeline_has_requeued_runs_in_order():
    j = job(9, "COMPLETED", eligible_time=NOW - 90, start_time=NOW - 40, end_time=NOW - 5,
            restart_count=1)
    earlier = cpb.JobRun(job=job(9, "REQUEUED", start_time=NOW - 80, end_time=NOW - 60),
                         state="REQUEUED")
    kinds = [e["kind"] for e in dashjob.timeline(j, [earlier, cpb.JobRun(job=j, state="COMPLETED")])]
    assert kinds == ["submit", "eligible", "start", "requeue", "start", "end"]


def test_usage_bars_escape_labels_and_scale_to_the_largest():
    j = job(5, "RUNNING", usage=[pb.UsageSample(step="0", node="<b>n1", user_cpu=10, max_rss=2**20),
                                 pb.UsageSample(step="1", node="n2", user_cpu=5, max_rss=2**21)])
    charts = dict(dashjob.usage_charts(j))
    assert set(charts) == {"CPU time (user+system)", "Peak memory (MaxRSS)"}  # no GPU samples
    svg = charts["CPU time (user+system)"]
    assert "<b>" not in svg and "&lt;b&gt;n1" in svg
    widths = [int(w) for w in re.findall(r'<rect [^>]*width="(\d+)"', svg)]
    assert widths == [dashjob.BAR_WIDTH, dashjob.BAR_WIDTH // 2]


@pytest.mark.parametrize("pasted,token", [
    ("SLURM_JWT=abc.def.ghi\n", "abc.def.ghi"), ("  abc.def.ghi ", "abc.def.ghi"), ("", "")])
def test_a_pasted_token_is_taken_with_or_without_its_variable_name(pasted, token):
    assert clean_token(pasted) == token


def test_the_claimed_user_is_read_without_the_key_and_garbage_names_nobody():
    import jwt
    assert claimed_user(jwt.encode({"sun": "alice"}, b"k" * 32, algorithm="HS256")) == "alice"
    assert claimed_user("not a token") == ""


def test_background_answers_once_then_refreshes_after_the_ttl():
    clock = [0.0]
    cache = dashcache.Background(ttl=30, clock=lambda: clock[0])
    calls, done = [], threading.Event()

    def fetch():
        calls.append(1)
        done.set()
        return len(calls)

    assert cache.get("t", fetch) is None  # none yet: gathering
    assert done.wait(5)
    deadline = time.monotonic() + 5
    while cache.get("t", fetch) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cache.get("t", fetch) == 1 and len(calls) == 1  # fresh: not asked again
    clock[0] = 31.0
    done.clear()
    assert cache.get("t", fetch) == 1  # stale: the old answer while a new one is fetched
    assert done.wait(5)
    assert cache.get("other", lambda: 0) is None  # per caller


def test_background_keeps_an_error_as_the_answer():
    cache = dashcache.Background(ttl=30)
    cache.get("t", lambda: 1 / 0)
    deadline = time.monotonic() + 5
    while cache.get("t", lambda: 1 / 0) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert isinstance(cache.get("t", lambda: 1), ZeroDivisionError)


@pytest.mark.parametrize("spec,gpus", [
    (pb.JobSpec(gpus=3), 3),
    (pb.JobSpec(gpus_per_node=2, num_nodes=2), 4),
    (pb.JobSpec(gres=[pb.GresRequest(name="gpu", count=4)]), 4),
    (pb.JobSpec(gres=[pb.GresRequest(name="shard", count=2)]), 0),
])
def test_the_gpus_a_pending_job_asks_for(spec, gpus):
    assert dashview.gpus_asked(spec) == gpus


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("row,cells", [
    # root: no RawShares (-1), no FairShare, no LevelFS: blank cells as sshare prints them
    (dict(account="root", raw_shares=-1, norm_shares=1.0, effective_usage=1.0, fairshare=NAN,
          level_fs=NAN), ("", "1.000000", "1.000000", "", "")),
    (dict(account="physics", parent="root", raw_shares=3, norm_shares=0.75, effective_usage=0.0,
          fairshare=NAN, level_fs=INF), ("3", "0.750000", "0.000000", "", "inf")),
    (dict(account="bio", parent="root", raw_shares=1, norm_shares=0.25, effective_usage=0.5,
          fairshare=0.5, level_fs=0.5), ("1", "0.250000", "0.500000", "0.500000", "0.500000")),
])
def test_share_rows_leave_blank_what_sshare_leaves_blank(row, cells):
    [got] = dashview.share_rows([pb.ShareRow(**row)])
    assert (got["raw_shares"], got["norm_shares"], got["effective_usage"], got["fairshare"],
            got["level_fs"]) == cells
    assert "nan" not in " ".join(str(v) for v in got.values()).lower()


# ---- who may call: the header only, sizes checked before reading (no controller needed: every
# case here is refused before the dashboard would ask one) ---------------------------------------
@pytest.fixture(scope="module")
def web():
    from starlette.testclient import TestClient

    from pyslurm_lite import config
    from pyslurm_lite.restd import dashboard
    cfg = config.parse("ClusterName=unit\nSlurmctldHost=c(127.0.0.1:1)\n")
    return TestClient(dashboard.app(cfg))


def test_a_navigation_without_the_header_gets_a_shell_with_no_data(web):
    r = web.get("/", headers={"Cookie": "slurm_jwt=abc.def.ghi"})  # the first release's cookie
    assert r.status_code == 200 and 'id="shell"' in r.text and "<table" not in r.text
    assert "dashboard.js" in r.text and "X-SLURM-USER-TOKEN" in r.headers["Vary"]
    assert 'slurm_jwt=""' in r.headers["set-cookie"] and "Max-Age=0" in r.headers["set-cookie"]
    assert web.get("/job/7").status_code == 200 and 'id="shell"' in web.get("/job/7").text


@pytest.mark.parametrize("method,path", [
    ("GET", "/dashboard/live"), ("POST", "/job/7/action"), ("POST", "/node/n1/action")])
def test_a_cookie_alone_is_no_identity(web, method, path):
    r = web.request(method, path, headers={"Cookie": "slurm_jwt=abc.def.ghi"},
                    data={"action": "cancel"} if method == "POST" else None)
    assert r.status_code == 401, r.text[:200]


def test_the_login_form_never_posts_the_token_and_there_is_no_login_post(web):
    page = web.get("/login").text
    assert 'id="login-form" method="dialog"' in page and 'action="/login"' not in page
    assert web.post("/login", data={"token": "abc"}).status_code == 405
    assert web.post("/logout").status_code in (404, 405)  # logging out is the script's alone


def test_a_form_over_the_limit_is_refused_before_it_is_read(web):
    from pyslurm_lite.restd.dashboard import MAX_FORM
    h = {"X-SLURM-USER-TOKEN": "abc.def.ghi", "Content-Type": "application/x-www-form-urlencoded"}
    r = web.post("/job/7/action", headers=dict(h, **{"Content-Length": str(10**9)}), content=b"")
    assert r.status_code == 413

    def chunks():  # no Content-Length: the running total stops it
        for _ in range(MAX_FORM // 1000 + 2):
            yield b"a" * 1000
    r = web.post("/job/7/action", headers=h, content=chunks())
    assert r.status_code == 413
    r = web.post("/job/7/action", headers=dict(h, **{"Content-Type": "text/plain"}), content=b"x")
    assert r.status_code == 415


def test_a_post_from_another_origin_is_refused(web):
    r = web.post("/job/7/action", data={"action": "cancel"},
                 headers={"X-SLURM-USER-TOKEN": "abc.def.ghi", "Origin": "http://evil.example"})
    assert r.status_code == 403


def test_the_dashboards_clients_never_call_with_this_processs_own_identity():
    """L1 of R1: a Client without the caller's token would take one from the auth socket, as
    this (root) process; the dashboard's Clients get a socket path that cannot exist."""
    from pyslurm_lite import config
    from pyslurm_lite.restd.app import NO_AUTH_SOCKET
    from pyslurm_lite.restd.dashboard import Dashboard
    cfg = config.parse("ClusterName=unit\nSlurmctldHost=c(127.0.0.1:1)\n")
    assert Dashboard(cfg).client("abc.def.ghi").cfg.auth_socket == NO_AUTH_SOCKET
