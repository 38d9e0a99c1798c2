"""An agent's Prometheus endpoint: HTTP /metrics on its NodeName line's MetricsPort= (0: off),
at the node's address.

Owns: a collector that reads the agent at scrape time — its GPUs (the GPU backend's sample()),
the per-step usage the accounting gatherer last took (acctgather.Gatherer.latest()), the steps
running, and the health of its link to the controller. Must not: sample anything itself beyond asking
the backend (the gatherer decides how often the cgroups are read), or block the agent.

  pyslurm_lite_agent_gpu_utilization_percent{node,gpu,type}
  pyslurm_lite_agent_gpu_memory_{used,total}_bytes{node,gpu,type}
  pyslurm_lite_agent_gpu_processes{node,gpu}
  pyslurm_lite_agent_step_cpu_seconds_total{node,job_id,step,mode}
  pyslurm_lite_agent_step_{rss,max_rss}_bytes{node,job_id,step}
  pyslurm_lite_agent_step_gpu_utilization_percent{node,job_id,step}
  pyslurm_lite_agent_step_gpu_memory_used_bytes{node,job_id,step}
      (with PrivateData=jobs the step families carry the node's totals, labelled {node} only)
  pyslurm_lite_agent_steps_running{node,kind}      kind=batch|srun
  pyslurm_lite_agent_controller_connected{node}    1 while registered with the controller
  pyslurm_lite_agent_health_check_ok{node}         0 while HealthCheckProgram complains
  pyslurm_lite_agent_undelivered_endings{node}     endings waiting for the controller
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..metrics_http import serve as serve_http

log = logging.getLogger("pyslurm_lite.agent.metrics")

PREFIX = "pyslurm_lite_agent"
MIB = 1024 * 1024


def start(agent):
    """Serve the agent's /metrics when its node has a MetricsPort; the HTTP server, or None."""
    node_cfg = agent.cfg.nodes[agent.node]
    if not node_cfg.metrics_port:
        return None
    registry = CollectorRegistry()
    registry.register(AgentCollector(agent))
    httpd = serve_http(registry, node_cfg.addr, node_cfg.metrics_port,
                       f"NodeName={agent.node} MetricsPort")
    log.info("metrics on http://%s:%d/metrics", node_cfg.addr, httpd.server_address[1])
    return httpd


def step_usage(agent) -> list:
    """The UsageSample of each running step, as the gatherer took it last (none under
    JobAcctGatherType=jobacct_gather/none: nothing is measured)."""
    return agent.acct.latest() if agent.acct is not None else []


class AgentCollector(Collector):
    def __init__(self, agent):
        self.agent = agent

    def describe(self):
        return []  # names are only known from a scrape; never collect() at registration

    def collect(self):
        a = self.agent
        try:
            samples = a.gpu_source.sample()  # asked at scrape time: what the GPUs do now
        except Exception as e:  # a driver hiccup must not fail the whole scrape
            log.warning("GPU sample failed: %s", e)
            samples = []
        yield from gpu_families(a.node, a.gpus, samples)
        yield from step_families(a.node, step_usage(a), "jobs" in a.cfg.private_data)
        yield from health_families(a)


def gpu_families(node: str, devices, samples):
    labels = ["node", "gpu", "type"]
    types = {g.index: g.type or "gpu" for g in devices}
    util = GaugeMetricFamily(f"{PREFIX}_gpu_utilization_percent", "GPU utilization (NVML's "
                             "utilization rate; 0 for a simulated GPU unless told otherwise)",
                             labels=labels)
    used = GaugeMetricFamily(f"{PREFIX}_gpu_memory_used_bytes", "GPU memory in use", labels=labels)
    procs = GaugeMetricFamily(f"{PREFIX}_gpu_processes", "Processes using the GPU",
                              labels=["node", "gpu"])
    for s in sorted(samples, key=lambda s: s.index):
        key = [node, str(s.index), types.get(s.index, "gpu")]
        util.add_metric(key, s.util)
        used.add_metric(key, s.memory_used)
        procs.add_metric([node, str(s.index)], len(s.pids))
    total = GaugeMetricFamily(f"{PREFIX}_gpu_memory_total_bytes", "GPU memory the device has "
                              "(0 for a simulated GPU)", labels=labels)
    for g in devices:
        total.add_metric([node, str(g.index), g.type or "gpu"], g.memory_mb * MIB)
    return [util, used, procs, total]


def step_families(node: str, usage, private: bool = False):
    """Per step, labelled by job id and step; with PrivateData=jobs (which hides other users'
    jobs, ids included) the node's totals instead: summed, GPU utilization the mean."""
    if private:
        usage = _node_total(usage)
    labels = ["node"] if private else ["node", "job_id", "step"]
    cpu = CounterMetricFamily(f"{PREFIX}_step_cpu_seconds", "CPU time of a job step on this "
                              "node", labels=[*labels, "mode"])
    rss = GaugeMetricFamily(f"{PREFIX}_step_rss_bytes", "Resident memory of a job step's "
                            "processes now", labels=labels)
    max_rss = GaugeMetricFamily(f"{PREFIX}_step_max_rss_bytes", "Peak resident memory of a job "
                                "step (sacct's MaxRSS)", labels=labels)
    util = GaugeMetricFamily(f"{PREFIX}_step_gpu_utilization_percent", "GPU utilization of a "
                             "job step, mean over its GPUs", labels=labels)
    gmem = GaugeMetricFamily(f"{PREFIX}_step_gpu_memory_used_bytes", "GPU memory a job step "
                             "uses, over its GPUs", labels=labels)
    for u in usage:
        key = [node] if private else [node, str(u.job_id), u.step]
        cpu.add_metric([*key, "user"], u.user_cpu)
        cpu.add_metric([*key, "system"], u.system_cpu)
        rss.add_metric(key, u.rss)
        max_rss.add_metric(key, u.max_rss)
        if u.gpus:
            util.add_metric(key, u.gpu_util)
            gmem.add_metric(key, u.gpu_mem)
    return [cpu, rss, max_rss, util, gmem]


def _node_total(usage) -> list:
    """Every step's figures as one sample of the node (none when no step runs)."""
    from ..model import UsageSample
    if not usage:
        return []
    on_gpus = [u for u in usage if u.gpus]
    return [UsageSample(step="", user_cpu=sum(u.user_cpu for u in usage),
                        system_cpu=sum(u.system_cpu for u in usage),
                        rss=sum(u.rss for u in usage), max_rss=sum(u.max_rss for u in usage),
                        gpus=sum(u.gpus for u in on_gpus),
                        gpu_util=sum(u.gpu_util for u in on_gpus) / len(on_gpus) if on_gpus else 0.0,
                        gpu_mem=sum(u.gpu_mem for u in on_gpus))]


def health_families(a):
    def gauge(name: str, doc: str, value: float, **extra: str):
        g = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=["node", *extra])
        g.add_metric([a.node, *extra.values()], value)
        return g

    steps = GaugeMetricFamily(f"{PREFIX}_steps_running", "Batch scripts and srun steps "
                              "running on this node", labels=["node", "kind"])
    steps.add_metric([a.node, "batch"], len(a.steps.running))
    steps.add_metric([a.node, "srun"], len(a.tasks.runs))
    return [steps,
            gauge("controller_connected", "1 while the agent is registered with the controller "
                  "(heartbeats flowing)", 1 if a.instance else 0),
            gauge("health_check_ok", "0 while HealthCheckProgram complains (the controller "
                  "drains the node)", 0 if a.health.error else 1),
            gauge("undelivered_endings", "Job endings not yet acknowledged by the controller",
                  len(a.pending))]
