"""The pure parts of the Prometheus endpoints: what the collectors make of jobs, nodes and
samples; the endpoint's bind error; the pass observer; the Grafana dashboard's form. The
endpoints themselves are scraped over HTTP in tests/e2e/test_metrics.py."""

from __future__ import annotations

import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from factories import model_job
from pyslurm_lite.config import Config
from pyslurm_lite.controller import metrics
from pyslurm_lite.controller.diag import Diag
from pyslurm_lite.errors import ConfigError
from pyslurm_lite.metrics_http import serve
from pyslurm_lite.model import (ForeignGpu, GpuDevice, GresRequest, JobState, Node, NodeConfig,
                                NodeState, Reason, UsageSample)
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

DASHBOARD = Path(__file__).resolve().parents[2] / "etc" / "grafana-dashboard.json"


def by_labels(family) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples}


@pytest.mark.parametrize("state, drain, alloc_cpus, expected", [
    (NodeState.IDLE, False, 0, "idle"),
    (NodeState.MIXED, False, 1, "mixed"),
    (NodeState.ALLOCATED, False, 2, "allocated"),
    (NodeState.DOWN, False, 0, "down"),
    (NodeState.IDLE, True, 0, "drained"),
    (NodeState.MIXED, True, 1, "draining"),
])
def test_node_state_words(state, drain, alloc_cpus, expected):
    node = Node(config=NodeConfig(name="node1", cpus=2), state=state, drain=drain,
                alloc_cpus=alloc_cpus)
    assert metrics.node_state(node) == expected


def test_node_families_per_node_with_foreign_gpus():
    busy = Node(config=NodeConfig(name="node2", cpus=4), state=NodeState.MIXED, alloc_cpus=1,
                alloc_gpus=[0], gpus=[GpuDevice(index=i) for i in range(2)],
                foreign_gpus=[ForeignGpu(index=1, pids=[4242])])
    idle = Node(config=NodeConfig(name="node1", cpus=2, gres=[GresRequest("gpu", "", 4)]),
                state=NodeState.IDLE)
    fams = {f.name: f for f in metrics.node_families([metrics.NodeRow.of(busy),
                                                       metrics.NodeRow.of(idle)])}
    assert by_labels(fams["pyslurm_lite_nodes"]) == {(("state", "idle"),): 1, (("state", "mixed"),): 1}
    assert by_labels(fams["pyslurm_lite_node_gpus_total"]) == {(("node", "node1"),): 4,
                                                               (("node", "node2"),): 2}
    assert by_labels(fams["pyslurm_lite_node_gpus_foreign"]) == {(("node", "node1"),): 0,
                                                                 (("node", "node2"),): 1}
    assert by_labels(fams["pyslurm_lite_node_cpus_allocated"])[(("node", "node2"),)] == 1


def _jobs():
    running = model_job(1, gpus=(0, 1), account="phys")
    idle = model_job(2, gpus=(2,), user="bob", account="bio")
    idle.admin_comment = "IdleGPU: GPUs under 5% for 20s"
    held = model_job(3, account="phys")
    held.state, held.reason, held.allocations = JobState.PENDING, Reason.HELD_USER, []
    done = model_job(4, account="phys")
    done.state = JobState.COMPLETED
    return [running, idle, held, done]


def _rows(jobs) -> list:
    return [metrics.JobRow.of(j) for j in jobs]


def test_job_families_count_states_reasons_gpus_and_idle_flags():
    fams = {f.name: f for f in metrics.job_families(_rows(_jobs()))}
    assert by_labels(fams["pyslurm_lite_jobs"]) == {
        (("account", "phys"), ("partition", "main"), ("state", "COMPLETED"), ("user", "alice")): 1,
        (("account", "phys"), ("partition", "main"), ("state", "PENDING"), ("user", "alice")): 1,
        (("account", "phys"), ("partition", "main"), ("state", "RUNNING"), ("user", "alice")): 1,
        (("account", "bio"), ("partition", "main"), ("state", "RUNNING"), ("user", "bob")): 1}
    assert by_labels(fams["pyslurm_lite_jobs_pending"]) == {(("reason", "JobHeldUser"),): 1}
    assert by_labels(fams["pyslurm_lite_user_gpus_allocated"]) == {
        (("account", "phys"), ("user", "alice")): 2, (("account", "bio"), ("user", "bob")): 1}
    assert fams["pyslurm_lite_jobs_gpu_idle"].samples[0].value == 1
    assert by_labels(fams["pyslurm_lite_job_gpu_idle"]) == {
        (("account", "bio"), ("job_id", "2"), ("user", "bob")): 1}


def test_a_flag_of_an_earlier_run_does_not_count_as_idle_now():
    from pyslurm_lite.controller.idle_gpu import flag_text
    job = model_job(5, gpus=(0,), account="phys")
    job.admin_comment = flag_text(1, 5, 20, 0.0, run=0)
    assert metrics.JobRow.of(job).idle  # flagged in this run (run 0)
    job.restart_count = 1  # requeued: the new run is watched afresh
    assert not metrics.JobRow.of(job).idle


def test_gpu_usage_comes_from_the_current_run_of_steps_holding_gpus():
    job = model_job(7, gpus=(0,), account="phys")
    job.restart_count = 1
    job.usage = [UsageSample(step="batch", node="node1", restart_count=1, gpus=1, gpu_util=42.0,
                             gpu_mem=3 << 20),
                 UsageSample(step="0", node="node1", restart_count=0, gpus=1, gpu_util=99.0),
                 UsageSample(step="1", node="node1", restart_count=1, gpus=0, rss=1 << 20)]
    util, mem = metrics.gpu_usage_families(_rows([job]))
    key = (("account", "phys"), ("job_id", "7"), ("node", "node1"), ("step", "batch"),
           ("user", "alice"))
    assert by_labels(util) == {key: 42.0}
    assert by_labels(mem) == {key: 3 << 20}


def test_diag_counters_become_prometheus_counters():
    d = Diag(jobs_submitted=5, jobs_started=4, jobs_completed=2, jobs_canceled=1, jobs_failed=1,
             cycles=10, event_cycles=7, backfilled_jobs=3)
    fams = {f.name: f for f in metrics.diag_families(d)}
    assert fams["pyslurm_lite_jobs_submitted"].type == "counter"
    assert by_labels(fams["pyslurm_lite_jobs_ended"]) == {
        (("outcome", "completed"),): 2, (("outcome", "cancelled"),): 1, (("outcome", "failed"),): 1}
    assert by_labels(fams["pyslurm_lite_sched_passes"]) == {(("kind", "event"),): 7,
                                                            (("kind", "full"),): 3}
    assert fams["pyslurm_lite_sched_backfilled_jobs"].samples[0].value == 3


def test_each_pass_reaches_the_observers_in_seconds():
    d, seen = Diag(), []
    d.pass_observers.append(lambda seconds, event: seen.append((seconds, event)))
    d.cycle(2500, 10, True)
    d.cycle(1_000_000, 10, False)
    assert seen == [(0.0025, True), (1.0, False)]


def test_a_metrics_port_in_use_is_a_configuration_error_naming_the_key():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"MetricsPort={port}: cannot serve /metrics on "
                                              rf"127\.0\.0\.1:{port}"):
            serve(CollectorRegistry(), "127.0.0.1", port, "MetricsPort")


def test_the_grafana_dashboard_is_valid_and_its_datasource_templated():
    dash = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in dash["panels"]:
        assert p["targets"], p["title"]
        for where in (p, *p["targets"]):
            assert where["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert all("pyslurm_lite_" in t["expr"] for t in p["targets"]), p["title"]


class WatchedLock:
    """The state's lock, counting its holds and saying whether it is held now."""

    def __init__(self):
        self.lock, self.held, self.holds = threading.RLock(), False, 0

    def __enter__(self):
        self.lock.acquire()
        self.held, self.holds = True, self.holds + 1

    def __exit__(self, *exc):
        self.held = False
        self.lock.release()


def _state(jobs, private_data=()):
    usage = {("phys", "alice"): {"cpu": 3.0, "gres/gpu": 1.0}, ("phys", ""): {"cpu": 3.0, "gres/gpu": 1.0},
             ("bio", "bob"): {"cpu": 2.0}, ("bio", ""): {"cpu": 2.0}, ("root", ""): {"cpu": 5.0, "gres/gpu": 1.0}}
    node = Node(config=NodeConfig(name="node1", cpus=4), state=NodeState.MIXED, alloc_cpus=1)
    return SimpleNamespace(lock=WatchedLock(), jobs={j.job_id: j for j in jobs}, nodes={"node1": node},
                           assoc_usage=usage, diag=Diag(), cfg=Config(private_data=list(private_data)))


def test_families_are_built_outside_the_lock_after_one_hold(monkeypatch):
    state = _state(_jobs())
    seen = []
    for name in ("job_families", "node_families", "gpu_usage_families", "usage_family"):
        real = getattr(metrics, name)
        monkeypatch.setattr(metrics, name, lambda *a, _real=real, _name=name, **k:
                            seen.append((_name, state.lock.held)) or _real(*a, **k))
    fams = metrics.StateCollector(state).collect()
    assert state.lock.holds == 1
    assert sorted(seen) == [("gpu_usage_families", False), ("job_families", False),
                            ("node_families", False), ("usage_family", False)]
    assert "pyslurm_lite_jobs" in {f.name for f in fams}


def test_a_scrape_flood_costs_one_build_per_cache_period():
    now = [100.0]
    state = _state(_jobs())
    collector = metrics.StateCollector(state, clock=lambda: now[0])
    first = collector.collect()
    state.jobs[99] = model_job(99, account="phys")  # a job submitted meanwhile
    for _ in range(50):
        assert collector.collect() is first
    now[0] += metrics.CACHE_SECONDS - 0.01
    assert collector.collect() is first
    assert state.lock.holds == 1
    now[0] += 0.01
    fams = {f.name: f for f in collector.collect()}
    assert state.lock.holds == 2
    assert sum(s.value for s in fams["pyslurm_lite_jobs"].samples) == len(state.jobs)


def test_concurrent_scrapes_share_one_build():
    state = _state(_jobs())
    collector = metrics.StateCollector(state)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: collector.collect(), range(32)))
    assert state.lock.holds == 1
    assert all(r is results[0] for r in results)


def _exposition(private_data) -> str:
    idle_on_node1 = _jobs()
    idle_on_node1[0].usage = [UsageSample(step="batch", node="node1", gpus=2, gpu_util=30.0, gpu_mem=100),
                              UsageSample(step="0", node="node1", gpus=1, gpu_util=60.0, gpu_mem=50)]
    m = metrics.ControllerMetrics(_state(idle_on_node1, private_data))
    return generate_latest(m.registry).decode()


def test_private_data_jobs_leaves_users_accounts_and_jobs_out_of_the_endpoint():
    text = _exposition(["jobs"])
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for word in ("alice", "bob", "phys", "bio", "job_id", "user=", "account="):
        assert word not in text, word
    assert by_labels(fams["pyslurm_lite_jobs"]) == {
        (("partition", "main"), ("state", "RUNNING")): 2, (("partition", "main"), ("state", "PENDING")): 1,
        (("partition", "main"), ("state", "COMPLETED")): 1}
    assert by_labels(fams["pyslurm_lite_user_gpus_allocated"]) == {(): 3}
    assert "pyslurm_lite_job_gpu_idle" not in fams
    assert by_labels(fams["pyslurm_lite_jobs_gpu_idle"]) == {(): 1}
    assert by_labels(fams["pyslurm_lite_job_gpu_utilization_percent"]) == {(("node", "node1"),): 45.0}
    assert by_labels(fams["pyslurm_lite_job_gpu_memory_used_bytes"]) == {(("node", "node1"),): 150}
    assert by_labels(fams["pyslurm_lite_account_usage_tres_minutes"]) == {
        (("tres", "cpu"),): 5.0, (("tres", "gres/gpu"),): 1.0}


def test_without_private_data_the_endpoint_names_users_accounts_and_jobs():
    fams = {f.name: f for f in text_string_to_metric_families(_exposition([]))}
    assert by_labels(fams["pyslurm_lite_user_gpus_allocated"]) == {
        (("account", "phys"), ("user", "alice")): 2, (("account", "bio"), ("user", "bob")): 1}
    assert len(fams["pyslurm_lite_job_gpu_utilization_percent"].samples) == 2
    assert by_labels(fams["pyslurm_lite_account_usage_tres_minutes"])[
        (("account", "bio"), ("tres", "cpu"), ("user", "bob"))] == 2.0


def test_the_endpoint_serves_on_the_address_given():
    m = metrics.ControllerMetrics(_state([]))
    try:
        port = m.serve("127.0.0.1", 0)
        assert port > 0
    finally:
        m.close()


def test_agent_steps_are_node_totals_without_job_ids_under_private_data():
    from pyslurm_lite.agent.metrics import step_families
    usage = [UsageSample(step="batch", job_id=7, user_cpu=2.0, rss=100, max_rss=150, gpus=1,
                         gpu_util=40.0, gpu_mem=10),
             UsageSample(step="0", job_id=8, user_cpu=3.0, rss=50, max_rss=60, gpus=1,
                         gpu_util=60.0, gpu_mem=5)]
    fams = {f.name: f for f in step_families("node1", usage)}
    assert by_labels(fams["pyslurm_lite_agent_step_rss_bytes"]) == {
        (("job_id", "7"), ("node", "node1"), ("step", "batch")): 100,
        (("job_id", "8"), ("node", "node1"), ("step", "0")): 50}
    private = {f.name: f for f in step_families("node1", usage, private=True)}
    assert by_labels(private["pyslurm_lite_agent_step_rss_bytes"]) == {(("node", "node1"),): 150}
    assert by_labels(private["pyslurm_lite_agent_step_gpu_utilization_percent"]) == {
        (("node", "node1"),): 50.0}
    assert all("job_id" not in s.labels for f in private.values() for s in f.samples)
    assert step_families("node1", [], private=True)[1].samples == []
