"""A slurm.conf as the replay's cluster: node and partition views, the scheduler's configuration,
which recorded jobs this cluster can take at all, priorities, and what of the conf the replay
does not model (each named in one warning line, never dropped unsaid).

Built from pyslurm_lite.config's Config with the controller's own pure helpers (the scheduler
configuration from SchedulerType/SchedulerParameters, fair share, billing, the multifactor
arithmetic), so a replay schedules as the daemon would with that file.

What the replay does not have: slurm.conf holds no advance reservations (scontrol creates them)
and no account tree (sacctmgr's database): fair share ranks users as equals under root, as the
controller does before any account is made; preemption, licenses, group-based partition access
and association limits are named in warnings and left out.

Worked example (the unit test's conf): n1 and n2 with 4 CPUs and 8000 MiB in `cpu`, g1 with 4
CPUs, 16000 MiB and 2 GPUs in `gpu` (PriorityTier 2). A record asking 2 nodes x 2 CPUs in
`cpu` is admitted; 3 GPUs in `gpu` is not (g1 holds 2): "asks more than any node of gpu holds".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..config import Config
from ..model import UNLIMITED, parse_constraint
from ..sched import NodeView, PartitionView, SchedConfig
from ..sched import priority as prio
from ..sched.policy import POLICIES as SCHED_POLICIES
from .sacct import History, Record

# conf: SchedulerType and sched_policy as the file says; the others override them
POLICIES = ("conf", "fcfs", "easy", "conservative", *(p for p in SCHED_POLICIES if p != "easy"))
SECONDS_PER_MINUTE = 60


@dataclass
class Cluster:
    cfg: Config
    nodes: dict[str, NodeView]  # every node idle, by name
    partitions: dict[str, PartitionView]
    config: SchedConfig
    warnings: list[str] = field(default_factory=list)

    @property
    def cpus(self) -> int:
        return sum(n.cpus for n in self.nodes.values())


def load(cfg: Config, policy: str) -> Cluster:
    nodes = {name: _node_view(cfg, name) for name in cfg.nodes}
    parts = {p.name: PartitionView(p.name, tuple(p.nodes), p.state in ("UP", "DRAIN"),
                                   p.priority_tier, p.preempt_mode, p.grace_time)
             for p in cfg.partitions.values()}
    return Cluster(cfg, nodes, parts, sched_config(cfg, policy), unmodelled(cfg))


def _node_view(cfg: Config, name: str) -> NodeView:
    nc = cfg.nodes[name]
    gpus = []
    for g in nc.gres:  # indices as the controller numbers configured GPUs (state.node_gpus)
        if g.name == "gpu":
            gpus += [(len(gpus) + i, g.type) for i in range(g.count)]
    return NodeView(name=name, cpus=nc.cpus, mem=nc.real_memory, gpus=tuple(gpus),
                    free_cpus=nc.cpus, free_mem=nc.real_memory,
                    free_gpus=tuple(i for i, _ in gpus), available=True,
                    features=tuple(nc.features), weight=nc.weight,
                    switches=cfg.topology.path(name) if cfg.topology else ())


def sched_config(cfg: Config, policy: str) -> SchedConfig:
    """The daemon's SchedConfig for this file; `policy` other than conf overrides SchedulerType
    (fcfs: sched/builtin, easy: sched/backfill, conservative: bf_conservative). Preemption is
    off: the replay does not model it (unmodelled() says so)."""
    from ..controller.daemon import sched_config as daemon_config  # the one reading of the keys

    config = daemon_config(cfg)
    if policy == "fcfs":
        config = replace(config, backfill=False, conservative=False, policy=None)
    elif policy == "easy":
        config = replace(config, backfill=True, conservative=False, policy=None)
    elif policy in SCHED_POLICIES:  # sched_policy=NAME
        config = replace(config, backfill=True, conservative=False, policy=SCHED_POLICIES[policy])
    elif policy == "conservative":
        config = replace(config, backfill=True, conservative=True, policy=None)
    return replace(config, preempt_type="preempt/none", preempt_mode="OFF")


def unmodelled(cfg: Config) -> list[str]:
    """One line for each thing of the conf the replay leaves out."""
    out = [f"{item}: not implemented by pyslurm-lite, not modelled" for item in cfg.ignored]
    if cfg.preempt_type != "preempt/none" and cfg.preempt_mode != "OFF":
        out.append(f"PreemptType={cfg.preempt_type}: preemption is not modelled (no job is preempted)")
    for p in cfg.partitions.values():
        if p.allow_groups:
            out.append(f"partition {p.name} AllowGroups={','.join(p.allow_groups)}: not modelled "
                       "(sacct records no group)")
    if {"limits", "safe"} & set(cfg.accounting_storage_enforce):
        out.append("AccountingStorageEnforce=limits: association limits live in the accounting "
                   "database, not slurm.conf: not modelled")
    if cfg.priority_type == "priority/multifactor":
        out.append("priority/multifactor: fair share ranks users as equals under root (the "
                   "account tree and its shares are in the accounting database); nice not recorded")
    return out


def history_warnings(history: History, cfg: Config) -> list[str]:
    """What the recorded jobs carry that the replay cannot honour."""
    out = ["sacct records no dependencies, --begin, --exclusive, holds or requeues: every job "
           "is eligible at its Submit time and runs once"]
    if history.het_components:
        out.append(f"{history.het_components} heterogeneous job components are replayed as "
                   "independent jobs (not started together)")
    unknown = sorted({r.qos for r in history.records if r.qos and r.qos not in cfg.qos})
    if unknown:
        out.append(f"QOS {', '.join(unknown)} not declared in the conf (QOSName lines): their "
                   "jobs are replayed without QOS limits or priority")
    return out


def partition_of(record: Record, cfg: Config) -> str | None:
    """The partition it ran in ("a,b": the first the conf has; none: the default)."""
    if not record.partition:
        part = cfg.default_partition()
        return part.name if part else None
    return next((p for p in record.partition.split(",") if p in cfg.partitions), None)


def limit_of(record: Record, cfg: Config, partition: str) -> int:
    """Its time limit in minutes (-1 unlimited): Partition_Limit takes the partition's."""
    if record.limit is not None:
        return record.limit
    part = cfg.partitions[partition]
    return part.default_time if part.default_time != UNLIMITED else part.max_time


def refusal(record: Record, cluster: Cluster, partition: str | None, limit: int) -> str | None:
    """Why this cluster could never run the job (it is then skipped), else None."""
    cfg = cluster.cfg
    if partition is None:
        return f"partition {record.partition or '(default)'} not in the conf"
    part = cfg.partitions[partition]
    if part.state not in ("UP", "DRAIN"):
        return f"partition {partition} is {part.state}"
    if part.allow_accounts and record.account not in part.allow_accounts:
        return f"partition {partition} does not allow account {record.account or '(none)'}"
    if part.max_time != UNLIMITED and (limit < 0 or limit > part.max_time):
        return f"time limit over partition {partition}'s MaxTime"
    qos = cfg.qos.get(record.qos)
    if qos is not None and qos.max_wall != UNLIMITED and (limit < 0 or limit > qos.max_wall):
        return f"time limit over QOS {record.qos}'s MaxWall"
    if part.max_nodes != UNLIMITED and record.nodes > part.max_nodes:
        return f"more nodes than partition {partition}'s MaxNodes"
    holding = [n for n in part.nodes if _holds(cluster.nodes[n], record)]
    if len(holding) < record.nodes:
        return f"asks more than {'any node' if not holding else 'enough nodes'} of {partition} holds"
    return None


def _holds(node: NodeView, record: Record) -> bool:
    gpus = sum(1 for _, t in node.gpus if not record.gpu_type or t == record.gpu_type)
    wanted = parse_constraint(record.constraint) if record.constraint else ()
    return (node.cpus >= max(record.cpus_per_node) and node.mem >= record.mem
            and gpus >= record.gpus
            and (not wanted or any(set(alt) <= set(node.features) for alt in wanted)))


class Priorities:
    """priority/multifactor over the replay: age since submit, fair share from the billing-seconds
    each user's replayed jobs have run so far (decayed by PriorityDecayHalfLife), job size,
    partition and QOS factors, PriorityWeightTRES; the controller's arithmetic throughout."""

    def __init__(self, cfg: Config):
        from ..controller import fairshare, usage

        self.cfg, self._fairshare, self._usage = cfg, fairshare, usage
        w = cfg.priority_weights
        self.weights = prio.Weights(w.get("age", 0), w.get("fairshare", 0), w.get("jobsize", 0),
                                    w.get("partition", 0), w.get("qos", 0),
                                    cfg.priority_max_age * SECONDS_PER_MINUTE)
        self.total_cpus = sum(n.cpus for n in cfg.nodes.values())
        self.top_factor = max((p.priority_job_factor for p in cfg.partitions.values()), default=1) or 1
        self.top_qos = max((q.priority for q in cfg.qos.values()), default=0) or 1
        self.part_tres = {name: prio.partition_tres(p, cfg) for name, p in cfg.partitions.items()}
        self.half_life = cfg.priority_decay_half_life * SECONDS_PER_MINUTE
        self.raw: dict[tuple[str, str], float] = {}  # association -> decayed billing-seconds
        self.at = None  # when self.raw was last brought up to date

    def tres(self, record: Record) -> dict[str, float]:
        out = {"cpu": float(record.cpus), "mem": float(record.mem * record.nodes),
               "node": float(record.nodes)}
        if record.gpus:
            out["gres/gpu"] = float(record.gpus * record.nodes)
        return out

    def billing(self, record: Record, partition: str) -> float:
        weights = self.cfg.partitions[partition].tres_billing_weights
        return self._usage.billing(self.tres(record), weights, self.cfg.priority_flags)

    def charge(self, now: float, running) -> None:
        """Decay what was used to `now`, then add what `running` [(user, account, billing)]
        used since the last charge."""
        if self.at is not None and now > self.at:
            factor = prio.decayed(1.0, now - self.at, self.half_life)
            self.raw = {k: v * factor for k, v in self.raw.items()}
            for user, account, billing in running:
                key = self._fairshare.assoc_key(None, account, user)
                self.raw[key] = self.raw.get(key, 0.0) + billing * (now - self.at)
        self.at = now

    def priority(self, record: Record, partition: str, now: float, shares: dict) -> int:
        cfg = self.cfg
        qos = cfg.qos.get(record.qos or "normal")
        f = prio.factors(record.submit, now, record.cpus, self.total_cpus,
                         cfg.partitions[partition].priority_job_factor / self.top_factor,
                         shares.get(self._fairshare.assoc_key(None, record.account, record.user), 1.0),
                         self.weights, qos.priority / self.top_qos if qos else 0.0)
        tres = prio.tres_factors(self.tres(record), self.part_tres[partition],
                                 cfg.priority_weight_tres) if cfg.priority_weight_tres else {}
        return prio.combine(f, self.weights, 0, tres)

    def shares(self, users) -> dict:
        """Each association's fair-share factor now; `users`: the (account, user) waiting."""
        fs = self._fairshare
        keys = {fs.assoc_key(None, a, u) for a, u in users} | set(self.raw)
        tree = fs.effective_tree(None, keys)
        return fs.factors(fs.compute(tree, self.raw, "NO_FAIR_TREE" in self.cfg.priority_flags))
