"""Prometheus /metrics of a real local cluster: `cluster up` writes the ports, the controller and
the agents serve them, and the figures follow what the jobs do. Scraped over HTTP and parsed
with prometheus-client's own parser, as Prometheus would read them."""

from __future__ import annotations

import json
import os
import pwd
import re
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import configured_cluster, wait_final, wait_state
from pyslurm_lite import config as config_mod

DASHBOARD = Path(__file__).resolve().parents[2] / "etc" / "grafana-dashboard.json"
ME = pwd.getpwuid(os.geteuid()).pw_name


@pytest.fixture(scope="module")
def metered(tmp_path_factory):
    # samples every second, so per-job GPU figures reach the controller within the test, and
    # a GPU left idle for 2 s is flagged (flag only: IdleGPUAction stays none)
    yield from configured_cluster(tmp_path_factory, "metrics", (2, 2, 2000, 4),
                                  extra="JobAcctGatherFrequency=1\nIdleGPUThreshold=5\n"
                                        "IdleGPUTime=2\n")


def ports(cluster) -> tuple[int, dict[str, int]]:
    cfg = config_mod.load(str(cluster.conf))
    return cfg.metrics_port, {n: c.metrics_port for n, c in cfg.nodes.items()}


def scrape(port: int) -> list:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        return list(text_string_to_metric_families(r.read().decode()))


def samples(families, name: str, **labels) -> list:
    """Samples named `name` (a family's own or its _total/_count/... sample name) whose labels
    include `labels`."""
    return [s for f in families for s in f.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


def total(families, name: str, **labels) -> float:
    return sum(s.value for s in samples(families, name, **labels))


def controller(cluster) -> list:
    return scrape(ports(cluster)[0])


def controller_when(cluster, ok) -> list | None:
    """A scrape of the controller in which ok(families) holds, within 15 s: the controller
    renders its families at most once every couple of seconds, so a change shows up later."""
    def attempt():
        fams = controller(cluster)
        return fams if ok(fams) else None
    return _until(attempt)


def agent(cluster, node: str) -> list:
    return scrape(ports(cluster)[1][node])


def test_cluster_up_writes_free_ports_keeps_the_conf_and_prints_the_urls(metered):
    ctl, nodes = ports(metered)
    assert ctl > 0 and set(nodes) == {"node1", "node2"} and all(nodes.values())
    assert len({ctl, *nodes.values()}) == 3, f"ports collide: {ctl} {nodes}"
    before = metered.conf.read_text()
    r = metered.up()  # everything runs: nothing restarts, the conf stays as it is
    assert r.returncode == 0, r.stderr
    assert metered.conf.read_text() == before
    for who, port in (("controller", ctl), *nodes.items()):
        assert f"{who} metrics: http://127.0.0.1:{port}/metrics" in r.stderr, r.stderr
    assert r.stdout.strip() == f"export PYSLURM_LITE_CONF={metered.conf}"  # eval $(cluster up)


def test_a_completed_job_moves_the_counters_and_the_histograms(metered, tmp_path):
    before = controller(metered)
    job = metered.sbatch("--wrap", "true", cwd=tmp_path)
    assert wait_final(metered, job) == "COMPLETED"
    after = controller_when(metered, lambda fams: total(fams, "pyslurm_lite_jobs_ended_total") >
                            total(before, "pyslurm_lite_jobs_ended_total"))
    assert after, "the ended job never reached /metrics"
    for name, labels in (("pyslurm_lite_jobs_ended_total", {"outcome": "completed"}),
                         ("pyslurm_lite_jobs_started_total", {}),
                         ("pyslurm_lite_jobs_submitted_total", {}),
                         ("pyslurm_lite_rpc_duration_seconds_count", {"method": "SubmitJob"})):
        assert total(after, name, **labels) >= total(before, name, **labels) + 1, name
    assert total(after, "pyslurm_lite_jobs", state="COMPLETED", user=ME, partition="main") >= 1
    assert total(after, "pyslurm_lite_sched_pass_duration_seconds_count") > \
        total(before, "pyslurm_lite_sched_pass_duration_seconds_count")
    assert total(after, "pyslurm_lite_sched_passes_total") > 0


def test_gpus_held_pending_reasons_and_the_agents_simulated_gpus(metered, tmp_path):
    gpu_job = metered.sbatch("-w", "node1", "--gres=gpu:2", "--wrap", "sleep 60", cwd=tmp_path)
    held = metered.sbatch("-H", "--wrap", "true", cwd=tmp_path)
    try:
        assert wait_state(metered, gpu_job, "RUNNING") == "RUNNING"
        ctl = controller_when(metered, lambda fams: total(fams, "pyslurm_lite_user_gpus_allocated",
                                                          user=ME))
        assert ctl, "the running job's GPUs never reached /metrics"
        assert total(ctl, "pyslurm_lite_node_gpus_allocated", node="node1") == 2
        assert total(ctl, "pyslurm_lite_node_gpus_allocated", node="node2") == 0
        assert total(ctl, "pyslurm_lite_node_gpus_total") == 8
        assert total(ctl, "pyslurm_lite_user_gpus_allocated", user=ME) == 2
        assert total(ctl, "pyslurm_lite_jobs_pending", reason="JobHeldUser") >= 1
        assert total(ctl, "pyslurm_lite_jobs", state="RUNNING", user=ME) >= 1
        assert total(ctl, "pyslurm_lite_nodes") == 2
        assert total(ctl, "pyslurm_lite_nodes", state="mixed") >= 1  # node1: 1 of 2 CPUs
        node1 = agent(metered, "node1")
        util = samples(node1, "pyslurm_lite_agent_gpu_utilization_percent", node="node1")
        assert sorted(s.labels["gpu"] for s in util) == ["0", "1", "2", "3"]
        assert all(s.value == 0 for s in util), util  # simulated GPUs report 0% unless told
        assert total(node1, "pyslurm_lite_agent_steps_running", kind="batch") == 1
        assert total(node1, "pyslurm_lite_agent_controller_connected") == 1
        assert total(agent(metered, "node2"), "pyslurm_lite_agent_steps_running", kind="batch") == 0
    finally:
        metered.run(["scancel", str(gpu_job), str(held)])
    wait_final(metered, gpu_job)


def _until(what, timeout: float = 15.0):
    """Poll what() until it returns something truthy; that, or the last falsy answer."""
    deadline, got = time.monotonic() + timeout, None
    while time.monotonic() < deadline and not got:
        got = what()
        if not got:
            time.sleep(0.5)
    return got


def test_a_job_on_a_simulated_gpu_shows_zero_utilization_and_is_flagged_idle(metered, tmp_path):
    job = metered.sbatch("--gres=gpu:1", "--wrap", "sleep 60", cwd=tmp_path)
    try:
        wait_state(metered, job, "RUNNING")
        util = _until(lambda: samples(controller(metered), "pyslurm_lite_job_gpu_utilization_percent",
                                      job_id=str(job), step="batch", user=ME))
        assert util and all(s.value == 0 for s in util), f"GPU samples of job {job}: {util}"
        node = util[0].labels["node"]
        step = samples(agent(metered, node), "pyslurm_lite_agent_step_gpu_utilization_percent",
                       job_id=str(job), step="batch")
        assert [s.value for s in step] == [0], step
        flagged = _until(lambda: samples(controller(metered), "pyslurm_lite_job_gpu_idle",
                                         job_id=str(job)))
        assert [s.value for s in flagged] == [1], f"job {job} not flagged idle: {flagged}"
        assert total(controller(metered), "pyslurm_lite_jobs_gpu_idle") >= 1
    finally:
        metered.run(["scancel", str(job)])
    wait_final(metered, job)


def test_every_metric_the_grafana_dashboard_queries_is_exposed(metered):
    dash = json.loads(DASHBOARD.read_text())
    queried = {name for p in dash["panels"] for t in p["targets"]
               for name in re.findall(r"\bpyslurm_lite_[a-z_]+", t["expr"])}
    exposed = {s.name for f in controller(metered) + agent(metered, "node1") for s in f.samples}
    exposed |= {f.name for f in controller(metered) + agent(metered, "node1")}
    missing = sorted(n for n in queried if n not in exposed)
    assert not missing, f"the dashboard queries metrics nobody exposes: {missing}"


def test_usage_is_published_per_account_and_user_after_jobs_ran(metered, tmp_path):
    job = metered.sbatch("--gres=gpu:1", "--wrap", "sleep 2", cwd=tmp_path)
    assert wait_final(metered, job) == "COMPLETED"
    usage = _until(lambda: [s for s in samples(controller(metered),
                                               "pyslurm_lite_account_usage_tres_minutes", user=ME)
                            if s.value > 0])
    assert usage, f"no usage charged to {ME}: " + str(samples(controller(metered),
                                                            "pyslurm_lite_account_usage_tres_minutes"))
    assert {s.labels["tres"] for s in usage} >= {"cpu", "gres/gpu", "billing"}, usage


def test_down_and_up_again_serves_the_same_ports(metered):
    ctl, nodes = ports(metered)
    assert metered.down().returncode == 0
    r = metered.up()
    assert r.returncode == 0, f"{r.stderr}\n{metered.log_tails()}"
    assert ports(metered) == (ctl, nodes)
    assert total(controller(metered), "pyslurm_lite_nodes") == 2
    for node in nodes:
        assert total(agent(metered, node), "pyslurm_lite_agent_controller_connected") == 1


@pytest.fixture(scope="module")
def private(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "metrics-private", (1, 1, 1000, 1),
                                  extra="PrivateData=jobs\n")


def test_private_data_jobs_keeps_users_accounts_and_jobs_off_the_endpoint(private, tmp_path):
    job = private.sbatch("-H", "--gres=gpu:1", "--wrap", "true", cwd=tmp_path)
    try:
        fams = controller_when(private, lambda f: total(f, "pyslurm_lite_jobs_pending",
                                                        reason="JobHeldUser"))
        assert fams, "the held job never reached /metrics"
        with urllib.request.urlopen(f"http://127.0.0.1:{ports(private)[0]}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert not re.search(r'\b(user|account|job_id)="', text), \
            [line for line in text.splitlines() if re.search(r'\b(user|account|job_id)="', line)]
        assert total(fams, "pyslurm_lite_jobs", state="PENDING", partition="main") == 1
    finally:
        private.run(["scancel", str(job)])
