"""sreport's window (Slurm's hourly rounding), its figures from constructed jobs and nodes
(cli/sreport_usage.py: the module docstring's worked example), and its print_fields output."""

from __future__ import annotations

from datetime import datetime

import pytest

from factories import model_job
from pyslurm_lite.cli import sreport as sr
from pyslurm_lite.cli import sreport_usage as su
from pyslurm_lite.model import GresRequest, JobState, Node, NodeConfig, NodeState

NOW = datetime(2026, 12, 1, 14, 40, 10).timestamp()


def at(*args) -> float:
    return datetime(*args).timestamp()


@pytest.mark.parametrize("start, end, want", [
    (0, 0, (at(2026, 11, 30), at(2026, 12, 1))),  # yesterday, whole
    (at(2026, 12, 1, 9, 29, 29), at(2026, 12, 1, 11, 29, 30), (at(2026, 12, 1, 9), at(2026, 12, 1, 12))),
    (at(2026, 12, 1, 9, 30), 0, (at(2026, 12, 1, 10), at(2026, 12, 1, 11))),  # end before start: an hour
    (at(2026, 12, 1, 13, 0), at(2026, 12, 2), (at(2026, 12, 1, 13), at(2026, 12, 1, 15))),  # end capped at now
    (at(2026, 12, 1, 14, 10), at(2026, 12, 1, 14, 20), (at(2026, 12, 1, 14), at(2026, 12, 1, 15))),
])
def test_report_window(start, end, want):
    assert su.report_window(start, end, NOW) == want


def node(name, cpus=2, gpus=0, drained_at=None):
    n = Node(config=NodeConfig(name=name, cpus=cpus, real_memory=1000,
                               gres=[GresRequest("gpu", "", gpus)] if gpus else []),
             state=NodeState.IDLE)
    if drained_at is not None:
        n.drain, n.reason_time = True, drained_at
    return n


def ran(job_id, start, end, cpus=1, gpus=(), user="alice", account="lab"):
    job = model_job(job_id, cpus=cpus, gpus=gpus, user=user, account=account)
    job.state, job.start_time, job.end_time = JobState.COMPLETED, start, end
    job.eligible_time = job.submit_time = start
    return job


def test_the_worked_example():
    window = (at(2026, 12, 1, 10), at(2026, 12, 1, 11))
    jobs = [ran(1, at(2026, 12, 1, 10, 30), at(2026, 12, 1, 10, 45))]
    nodes = [node("node1", cpus=1), node("node2", cpus=1, drained_at=at(2026, 12, 1, 10, 50))]
    u = su.utilization(jobs, nodes, window, NOW)["cpu"]
    assert (u.allocated, u.down, u.planned, u.idle, u.reported) == (900, 600, 0, 5700, 7200)


def test_jobs_are_clipped_to_the_window_and_waiting_is_planned():
    window = (at(2026, 12, 1, 10), at(2026, 12, 1, 11))
    before = ran(1, at(2026, 12, 1, 9), at(2026, 12, 1, 10, 10), cpus=2, gpus=(0,))
    running = ran(2, at(2026, 12, 1, 10, 50), 0.0)
    waiting = model_job(3, cpus=1)
    waiting.state, waiting.start_time, waiting.allocations = JobState.PENDING, 0.0, []
    waiting.eligible_time = waiting.submit_time = at(2026, 12, 1, 10, 40)
    util = su.utilization([before, running, waiting], [node("node1", cpus=4, gpus=2)], window,
                          at(2026, 12, 1, 12))
    assert util["cpu"].allocated == 2 * 600 + 600 and util["gres/gpu"].allocated == 600
    assert util["cpu"].planned == 1200 and util["cpu"].reported == 4 * 3600
    assert util["gres/gpu"].reported == 2 * 3600


def test_top_users_per_association_or_grouped_and_sorted():
    window = (at(2026, 12, 1, 10), at(2026, 12, 1, 11))
    jobs = [ran(1, at(2026, 12, 1, 10), at(2026, 12, 1, 10, 10), user="bob", account="bio"),
            ran(2, at(2026, 12, 1, 10), at(2026, 12, 1, 10, 20), user="alice", account="phys"),
            ran(3, at(2026, 12, 1, 10), at(2026, 12, 1, 10, 15), user="bob", account="chem",
                gpus=(0,))]
    rows = su.sort_users(su.top_users(jobs, window, NOW), "cpu")
    assert [(r.user, r.accounts, r.seconds["cpu"]) for r in rows] == \
        [("alice", ["phys"], 1200), ("bob", ["chem"], 900), ("bob", ["bio"], 600)]
    grouped = su.sort_users(su.top_users(jobs, window, NOW, group=True), "gres/gpu")
    assert [(r.user, r.accounts, r.seconds["gres/gpu"]) for r in grouped] == \
        [("bob", ["bio", "chem"], 900), ("alice", ["phys"], 0)]


@pytest.mark.parametrize("fmt, value, total, want", [
    ("minutes", 5100, 7200, "85"), ("hours", 7200, 7200, "2"), ("seconds", 61, 1, "61"),
    ("percent", 900, 7200, "12.50%"), ("minper", 900, 7200, "15(12.50%)"),
])
def test_show_time(fmt, value, total, want):
    o = sr.Opts()
    sr.set_time_format(o, fmt)
    assert sr.show_time(value, total, o) == want


def test_columns_by_prefix_and_print_fields_layout():
    from pyslurm_lite.cli.sreport_reports import CLUSTER_TABLE
    o = sr.Opts()
    cols = sr.columns(["Cl", "al", "d", "planned", "i", "res", "rep"], CLUSTER_TABLE, o)
    assert [c.name for c in cols] == ["Cluster", "Allocated", "Down", "PLND Down", "Idle",
                                      "Planned", "Reported"]
    for c in cols[1:]:
        c.width = sr.usage_width(7200, o)
    assert sr.header_lines(cols, o) == [
        "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported ",  # cut, as Slurm's
        "--------- -------- -------- -------- -------- -------- -------- "]
    o.parsable = 2
    assert sr.header_lines(cols, o) == ["Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported"]
    o.parsable = 1
    assert sr.render(cols, ["c", "1", "2", "3", "4", "5", "6"], o) == "c|1|2|3|4|5|6|"
    assert sr.usage_width(123_456_789, sr.Opts()) == 9


@pytest.mark.parametrize("argv, code, err", [
    (["cluster", "AccountUtilizationByUser"], 1, "cluster AccountUtilizationByUser is not supported"),
    (["cluster", "ua"], 1, "cluster UA is not supported"),
    (["cluster", "us"], 1, "Not valid report us\nValid cluster reports are, "),
    (["user", "bottom"], 1, 'Not valid report bottom\nValid user reports are, "Top"\n'),
    (["cluster"], 1, "too few arguments for keyword:cluster\n"),
    (["bogus"], 1, "invalid keyword: bogus\n"),
    (["job", "sizes"], 1, "job reports are not supported by pyslurm-lite"),
    ([], 1, "the interactive mode is not supported"),
])
def test_reports_we_do_not_have_are_refused_as_sreport_words_it(argv, code, err, capsys):
    assert sr.dispatch(argv, sr.Opts()) == code
    assert err in capsys.readouterr().err


def test_options_anywhere_and_tres(monkeypatch):
    monkeypatch.delenv("SREPORT_TRES", raising=False)
    o, words = sr.parse_options(["cluster", "-P", "utilization", "-t", "hourper", "-T", "cpu,gres/gpu,bogus"])
    assert words == ["cluster", "utilization"] and o.parsable == 2
    assert (o.time_name, o.tres, o.tres_given) == ("Hours/Percentage of Total", ["cpu", "gres/gpu"], True)
    with pytest.raises(SystemExit):
        sr.parse_options(["-T", "bogus", "user", "top"])  # No valid TRES given
