"""The controller's Prometheus endpoint: HTTP /metrics on MetricsPort= (0: off), at the address
SlurmctldHost names.

Owns: the controller's metric registry, the gRPC interceptor that times RPCs by method, the
scheduling-pass histogram (fed by Diag's pass observers) and a collector that reads the live
state at scrape time. Must not: change state, or hold the state lock longer than one copy of
the figures it needs (a scrape must never stall a scheduling pass).

Everything is exposed by the official prometheus-client library, never written by hand:

  pyslurm_lite_jobs{state,partition,user,account}      jobs the controller holds (ended ones
                                                         until MinJobAge)
  pyslurm_lite_jobs_pending{reason}                     pending jobs by Slurm's reason
  pyslurm_lite_jobs_{submitted,started}_total,
  pyslurm_lite_jobs_ended_total{outcome}                sdiag's counters since start
  pyslurm_lite_sched_pass_duration_seconds{kind}        histogram, kind=event|full
  pyslurm_lite_sched_passes_total{kind}, pyslurm_lite_sched_backfilled_jobs_total, ...
  pyslurm_lite_rpc_duration_seconds{method}             histogram per gRPC method
  pyslurm_lite_nodes{state}, pyslurm_lite_node_{cpus,gpus}_{allocated,total}{node},
  pyslurm_lite_node_gpus_foreign{node}, pyslurm_lite_node_gpus_shared{node},
  pyslurm_lite_node_{shard,mps}_allocated{node}          gres/shard, gres/mps in use
  pyslurm_lite_user_gres_shares_allocated{user,account,gres}   a job's shards hold no gres/gpu
  pyslurm_lite_job_gpu_{utilization_percent,memory_used_bytes}{job_id,step,node,...}
                                                         from the agents' usage samples
  pyslurm_lite_jobs_gpu_idle, pyslurm_lite_job_gpu_idle{job_id,...}   IdleGPU flags
  pyslurm_lite_account_usage_tres_minutes{account,user,tres}          fair-share usage

The endpoint takes no authentication (Prometheus sends none): with PrivateData=jobs no family
names a user, an account or a job (jobs{state,partition}, GPUs and usage as totals, GPU use per
node). It binds where SlurmctldHost says, the address the controller serves gRPC on: the
cluster's network already reaches that one and nothing else.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections import Counter
from typing import NamedTuple

import grpc
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..metrics_http import serve
from ..model import Job, JobState, Node, Reason
from ..sched.sharing import whole_gpus
from .idle_gpu import flagged_this_run  # AdminComment says this run was flagged

log = logging.getLogger("pyslurm_lite.controller.metrics")

PREFIX = "pyslurm_lite"
# seconds: an event pass over a few jobs takes ~1 ms, a full pass over 10k pending ~1 s
SCHED_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                 5.0, 10.0)
# seconds: most RPCs answer within milliseconds; a submit commits to the database first
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class ControllerMetrics:
    """The registry and its instruments. `serve()` opens the endpoint; `rpc_timer()` is the
    interceptor to install first on the gRPC server, so refused calls are timed too."""

    def __init__(self, state):
        self.registry = CollectorRegistry()
        self.sched_pass = Histogram(
            f"{PREFIX}_sched_pass_duration_seconds",
            "Duration of scheduling passes (event: woken by a change, top of the queue; full: "
            "periodic, backfill deep in the queue)", ["kind"], buckets=SCHED_BUCKETS,
            registry=self.registry)
        for kind in ("event", "full"):  # both series exist before the first pass
            self.sched_pass.labels(kind=kind)
        self.rpc_latency = Histogram(
            f"{PREFIX}_rpc_duration_seconds", "Time the controller took to answer a gRPC call, "
            "by method (authentication included)", ["method"], buckets=RPC_BUCKETS,
            registry=self.registry)
        self.private_jobs = "jobs" in state.cfg.private_data
        self.registry.register(StateCollector(state, private=self.private_jobs))
        state.diag.pass_observers.append(self.observe_pass)
        self.httpd = None

    def observe_pass(self, seconds: float, event: bool) -> None:
        self.sched_pass.labels(kind="event" if event else "full").observe(seconds)

    def rpc_timer(self) -> "RpcTimer":
        return RpcTimer(self.rpc_latency)

    def serve(self, addr: str, port: int) -> int:
        """Listen on addr:port (a daemon thread); the port bound."""
        self.httpd = serve(self.registry, addr, port, "MetricsPort")
        if self.private_jobs:  # Prometheus has no user to check: the figures are aggregated
            log.info("MetricsPort=%d: PrivateData=jobs: /metrics names no user, account or job",
                     port)
        return self.httpd.server_address[1]

    def close(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


class RpcTimer(grpc.ServerInterceptor):
    """Times every unary call by method name (the controller serves no streams)."""

    def __init__(self, histogram: Histogram):
        self.histogram = histogram

    def intercept_service(self, continuation, details):
        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler
        observe = self.histogram.labels(method=details.method.rsplit("/", 1)[-1]).observe
        behavior = handler.unary_unary

        def timed(request, context):
            began = time.perf_counter()
            try:
                return behavior(request, context)
            finally:
                observe(time.perf_counter() - began)

        return grpc.unary_unary_rpc_method_handler(timed, handler.request_deserializer,
                                                   handler.response_serializer)


def node_state(node: Node) -> str:
    """sinfo's long state words for the node (drained vs draining by whether jobs remain)."""
    base = node.state.value.lower()
    if node.drain:
        return "draining" if node.alloc_cpus or node.alloc_gpus else "drained"
    return "allocated" if base == "allocated" else base


class JobRow(NamedTuple):
    """What the families need of one job, copied under the lock (jobs change in place)."""
    job_id: int
    state: JobState
    partition: str
    user: str
    account: str
    reason: Reason  # squeue's %r, read of pending jobs only
    gpus: int  # held whole, when running (a GPU it has shards of is in `shares`)
    idle: bool  # flagged for idle GPUs, when running
    samples: tuple = ()  # (step, node, gpu_util, gpu_mem) of the current run's GPU steps
    shares: tuple = ()  # (shard|mps, count) held, when running

    @classmethod
    def of(cls, j: Job) -> "JobRow":
        if j.state is not JobState.RUNNING:  # most jobs: nothing but their labels to copy
            return cls(j.job_id, j.state, j.partition or j.spec.partition, j.spec.user,
                       j.spec.account, j.reason, 0, False)
        return cls(j.job_id, j.state, j.partition or j.spec.partition, j.spec.user,
                   j.spec.account, j.reason, sum(len(whole_gpus(a)) for a in j.allocations),
                   flagged_this_run(j),
                   tuple((u.step, u.node, u.gpu_util, u.gpu_mem) for u in j.usage
                         if u.gpus and u.restart_count == j.restart_count),
                   tuple((a.share_name, sum(a.shares)) for a in j.allocations if a.share_name))


CACHE_SECONDS = 2.0  # a scrape flood costs one build (and one hold of the lock) per period


@contextlib.contextmanager
def gc_paused():
    """No automatic garbage collection for the copy: the 10k tuples it makes would set one off,
    and a full one walks the controller's whole heap while the lock is held (it runs after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class StateCollector(Collector):
    """Reads the controller's state at scrape time: one pass under the lock copying small
    tuples, the families built after it, and kept CACHE_SECONDS for the scrapes that follow.
    With private (PrivateData=jobs) no family names a user, an account or a job: /metrics
    takes no authentication, so it shows only what anyone may see under PrivateData=jobs."""

    def __init__(self, state, private: bool = False, clock=time.monotonic):
        self.state, self.private, self.clock = state, private, clock
        self.built_at, self.families = None, []
        self.building = threading.Lock()  # concurrent scrapes wait for one build, not make many

    def describe(self):
        return []  # names are only known from a scrape; never collect() at registration

    def forget(self) -> None:
        """The next scrape builds afresh (bench/bench_metrics.py times builds)."""
        self.built_at = None

    def collect(self):
        with self.building:
            now = self.clock()
            if self.built_at is None or now - self.built_at >= CACHE_SECONDS:
                self.families = []  # freed before the copy: less heap for a collection to walk
                self.families, self.built_at = self.build(), now
            return self.families

    def build(self) -> list:
        s = self.state
        with s.lock, gc_paused():
            jobs = [JobRow.of(j) for j in s.jobs.values()]
            nodes = [NodeRow.of(n) for n in s.nodes.values()]
            usage = s.assoc_usage  # replaced whole at each publish, never changed in place
        p = self.private
        return [*job_families(jobs, p), *node_families(nodes), *gpu_usage_families(jobs, p),
                usage_family(usage, p), *diag_families(s.diag)]


def job_families(jobs: list[JobRow], private: bool = False):
    """Jobs by state, pending ones by reason, GPUs held and idle-GPU flags; per user and
    account (and job) unless private."""
    who = [] if private else ["user", "account"]
    by_state = Counter((j.state.value, j.partition, *_who(j, private)) for j in jobs)
    g = GaugeMetricFamily(f"{PREFIX}_jobs", "Jobs the controller holds, by state (ended jobs "
                          "until MinJobAge)", labels=["state", "partition", *who])
    for key, n in sorted(by_state.items()):
        g.add_metric(list(key), n)
    yield g
    pending = Counter(j.reason.value for j in jobs if j.state is JobState.PENDING)
    g = GaugeMetricFamily(f"{PREFIX}_jobs_pending", "Pending jobs by reason (squeue's %r)",
                          labels=["reason"])
    for reason, n in sorted(pending.items()):
        g.add_metric([reason], n)
    yield g
    running = [j for j in jobs if j.state is JobState.RUNNING]
    gpus = Counter()
    for j in running:
        gpus[_who(j, private)] += j.gpus
    g = GaugeMetricFamily(f"{PREFIX}_user_gpus_allocated", "GPUs held by running jobs, per "
                          "user and account (all of them under PrivateData=jobs)", labels=who)
    for key, n in sorted(gpus.items()):
        g.add_metric(list(key), n)
    yield g
    yield _shares_family(running, private)
    idle = [j for j in running if j.idle]
    yield GaugeMetricFamily(f"{PREFIX}_jobs_gpu_idle", "Running jobs flagged for leaving their "
                            "GPUs idle (IdleGPU in AdminComment)", value=len(idle))
    if not private:
        g = GaugeMetricFamily(f"{PREFIX}_job_gpu_idle", "1 for each running job flagged for "
                              "idle GPUs", labels=["job_id", "user", "account"])
        for j in idle:
            g.add_metric([str(j.job_id), j.user, j.account], 1)
        yield g


def _shares_family(running: list[JobRow], private: bool) -> GaugeMetricFamily:
    shares: Counter = Counter()
    for j in running:
        for name, count in j.shares:
            shares[(*_who(j, private), f"gres/{name}")] += count
    g = GaugeMetricFamily(f"{PREFIX}_user_gres_shares_allocated", "gres/shard and gres/mps held "
                          "by running jobs (they hold no gres/gpu), per user and account (all "
                          "of them under PrivateData=jobs)",
                          labels=([] if private else ["user", "account"]) + ["gres"])
    for key, n in sorted(shares.items()):
        g.add_metric(list(key), n)
    return g


def _who(j: JobRow, private: bool) -> tuple:
    return () if private else (j.user, j.account)


def diag_families(d):
    """sdiag's counters as Prometheus counters (they restart with the controller, as sdiag's)."""
    def counter(name: str, doc: str, value: float):
        return CounterMetricFamily(f"{PREFIX}_{name}", doc, value=value)

    yield counter("jobs_submitted", "Jobs submitted since the controller started", d.jobs_submitted)
    yield counter("jobs_started", "Jobs started since the controller started", d.jobs_started)
    ended = CounterMetricFamily(f"{PREFIX}_jobs_ended", "Jobs that reached a final state, in "
                                "sdiag's buckets", labels=["outcome"])
    for outcome, n in (("completed", d.jobs_completed), ("cancelled", d.jobs_canceled),
                       ("failed", d.jobs_failed)):
        ended.add_metric([outcome], n)
    yield ended
    passes = CounterMetricFamily(f"{PREFIX}_sched_passes", "Scheduling passes", labels=["kind"])
    passes.add_metric(["event"], d.event_cycles)
    passes.add_metric(["full"], d.cycles - d.event_cycles)
    yield passes
    yield counter("sched_backfilled_jobs", "Jobs started by backfill ahead of a blocked job",
                  d.backfilled_jobs)
    yield counter("sched_preempted_jobs", "Jobs preempted", d.preempted_jobs)
    yield GaugeMetricFamily(f"{PREFIX}_sched_queue_length", "Jobs the last scheduling pass "
                            "looked at", value=d.last_queue_length)


class NodeRow(NamedTuple):
    name: str
    state: str
    cpus_allocated: int
    cpus_total: int
    gpus_allocated: int
    gpus_total: int
    gpus_foreign: int
    gpus_shared: int = 0
    shard_allocated: int = 0
    mps_allocated: int = 0

    @classmethod
    def of(cls, n: Node) -> "NodeRow":
        shared = {u.index for u in n.alloc_shares}
        return cls(n.name, node_state(n), n.alloc_cpus, n.config.cpus,
                   len(set(n.alloc_gpus) - shared), len(n.gpus) or n.config.gpu_count(),
                   len(n.foreign_gpus), len(shared),
                   sum(u.count for u in n.alloc_shares if u.name == "shard"),
                   sum(u.count for u in n.alloc_shares if u.name == "mps"))


NODE_GAUGES = (  # field of NodeRow, help text
    ("cpus_allocated", "CPUs held by jobs"), ("cpus_total", "CPUs the node has"),
    ("gpus_allocated", "GPUs held whole by jobs"), ("gpus_total", "GPUs the node has"),
    ("gpus_foreign", "GPUs busy with processes no job started (kept out of scheduling "
                     "unless ForeignGpuAction=report)"),
    ("gpus_shared", "GPUs whose gres/shard or gres/mps jobs hold"),
    ("shard_allocated", "gres/shard held by jobs"), ("mps_allocated", "gres/mps held by jobs"))


def node_families(nodes: list[NodeRow]):
    states = Counter(row.state for row in nodes)
    g = GaugeMetricFamily(f"{PREFIX}_nodes", "Nodes by state (sinfo's words)", labels=["state"])
    for state, n in sorted(states.items()):
        g.add_metric([state], n)
    yield g
    for field, doc in NODE_GAUGES:
        g = GaugeMetricFamily(f"{PREFIX}_node_{field}", doc, labels=["node"])
        for row in sorted(nodes):
            g.add_metric([row.name], getattr(row, field))
        yield g


def gpu_usage_families(jobs: list[JobRow], private: bool = False):
    """The latest sample the agents sent of each running step holding GPUs, per node; private:
    per node only (utilization: the mean over those steps' GPUs, memory: their sum)."""
    labels = ["node"] if private else ["job_id", "step", "node", "user", "account"]
    util = GaugeMetricFamily(f"{PREFIX}_job_gpu_utilization_percent", "GPU utilization of a "
                             "job step on a node, mean over its GPUs", labels=labels)
    mem = GaugeMetricFamily(f"{PREFIX}_job_gpu_memory_used_bytes", "GPU memory used by a job "
                            "step on a node, over its GPUs", labels=labels)
    per_node: dict[str, list] = {}
    for j in jobs:
        for step, node, gpu_util, gpu_mem in j.samples:
            if private:
                per_node.setdefault(node, []).append((gpu_util, gpu_mem))
                continue
            key = [str(j.job_id), step, node, j.user, j.account]
            util.add_metric(key, gpu_util)
            mem.add_metric(key, gpu_mem)
    for node, figures in sorted(per_node.items()):
        util.add_metric([node], sum(u for u, _ in figures) / len(figures))
        mem.add_metric([node], sum(m for _, m in figures))
    yield util
    yield mem


def usage_family(usage: dict, private: bool = False) -> GaugeMetricFamily:
    """Fair share's usage per association; private: the cluster's total per TRES."""
    g = GaugeMetricFamily(f"{PREFIX}_account_usage_tres_minutes", "Decayed usage charged to "
                          "each association (fair share's RawUsage), in TRES-minutes; user \"\" "
                          "is the account's total over everything under it (the cluster's total "
                          "per TRES alone under PrivateData=jobs)",
                          labels=["tres"] if private else ["account", "user", "tres"])
    totals: Counter = Counter()
    for (account, user), by_tres in sorted(usage.items()):
        for tres, minutes in sorted(by_tres.items()):
            if not private:
                g.add_metric([account, user, tres], minutes)
            elif user:  # user rows only: the account rows sum them again
                totals[tres] += minutes
    for tres, minutes in sorted(totals.items()):
        g.add_metric([tres], minutes)
    return g
