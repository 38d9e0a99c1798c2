"""The scheduler's inputs and outputs: immutable views of jobs, nodes and partitions, and a Plan.

Views carry only what scheduling needs, in the units the scheduler works in (CPUs, MiB, GPU
indices, epoch seconds), so building them is cheap and the simulator can build them too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import NodeAllocation, Qos, Reason, Reservation


@dataclass(frozen=True)
class JobView:
    job_id: int
    priority: int
    submit_time: float
    partition: str
    num_nodes: int
    cpus_per_node: tuple[int, ...]  # by node index within the allocation
    mem_per_node: tuple[int, ...]  # MiB, by node index
    gpus_per_node: int = 0
    gpu_type: str = ""
    exclusive: bool = False
    begin_time: float = 0.0
    # since when it has been able to run (not held, --begin reached, dependencies met): the
    # starvation guard counts its wait from there; 0: from submit_time
    waiting_since: float = 0.0
    held: bool = False
    held_by_admin: bool = False
    features: tuple[tuple[str, ...], ...] = ()  # --constraint as alternatives of required features
    time_limit: int = -1  # minutes, -1 unlimited
    array_job_id: int = 0
    array_limit: int = 0  # %N: at most N of the array's tasks running
    user: str = ""
    account: str = ""
    qos: str = "normal"
    reservation: str = ""  # --reservation: only its nodes, only in its window
    # placement (see placement.py, which fills these from the JobSpec)
    required: tuple[str, ...] = ()  # -w: every one of these nodes, then others if num_nodes asks more
    excluded: frozenset = frozenset()  # -x: never these nodes
    whole_mem: bool = False  # --mem=0: all the memory of each node
    exclusive_user: bool = False  # --exclusive=user: no other user's job on its nodes
    gpu_types: tuple[tuple[str, int], ...] = ()  # mixed typed GPUs per node (a100:1,t4:1)
    wider: tuple["JobView", ...] = ()  # -N min-max: the same job on more nodes, widest first
    # --gres-flags=enforce-binding: its CPUs only on cores gres.conf binds to its GPUs (Cores=)
    enforce_binding: bool = False
    # --switches=N@wait (sched/switches.py): at most N leaf switches, waited for up to
    # switch_wait seconds from when the job became eligible; 0: any count
    req_switch: int = 0
    switch_wait: float = 0.0
    share_name: str = ""  # --gres=shard:K or mps:K (sched/sharing.py): "shard" or "mps"
    shares_per_node: int = 0  # K: on one GPU of each node
    # EASY++ (SchedulerParameters=sched_policy, sched/policy.py): the minutes backfill books it
    # for, its user's recent run times; 0: its time_limit (which still kills it)
    planned_minutes: float = 0

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.num_nodes


@dataclass(frozen=True)
class NodeView:
    name: str
    cpus: int
    mem: int
    gpus: tuple[tuple[int, str], ...]  # (index, type) of every GPU the node has
    free_cpus: int
    free_mem: int
    free_gpus: tuple[int, ...]
    available: bool  # up, responding, not draining
    features: tuple[str, ...] = ()
    weight: int = 1
    idle: bool = True  # nothing allocated at all
    # GPU wiring (gpu_topology.py): (index, index, weight) for GPU pairs sharing NVLink, a PCIe
    # switch or a NUMA node; () when unknown (then GPUs go lowest index first)
    gpu_affinity: tuple[tuple[int, int, int], ...] = ()
    # gres.conf Cores= per GPU: (index, cores) for the GPUs that have it (--gres-flags=enforce-binding)
    gpu_cores: tuple[tuple[int, frozenset], ...] = ()
    switches: tuple[str, ...] = ()  # topology/tree: its switches, leaf first, root last
    # gres/shard and gres/mps per GPU (sched/sharing.py): (GPU index, name, configured, in use)
    shares: tuple[tuple[int, str, int, int], ...] = ()


@dataclass(frozen=True)
class RunningView:
    """A running job as backfill sees it: what it holds and when it will have let go at the
    latest (its time limit; math.inf when it has none)."""

    job_id: int
    allocations: tuple[NodeAllocation, ...]
    end: float
    start: float = 0.0
    partition: str = ""
    user: str = ""
    qos: str = "normal"
    priority: int = 0
    requeue: bool = True  # may be requeued (else a requeueing preemption cancels it)
    preempting: bool = False  # signalled by a preemption (its end: the grace's end), or ending
    exclusive_user: bool = False  # --exclusive=user: other users' jobs stay off its nodes
    account: str = ""  # its association's account (limits count it there)
    # EASY++: when backfill plans it to let go (start + prediction, corrected once outlived);
    # 0: at `end`. `end` stays the kill limit
    planned_end: float = 0


@dataclass(frozen=True)
class PartitionView:
    name: str
    nodes: tuple[str, ...]
    up: bool = True  # UP or DRAIN: its pending jobs are scheduled
    priority_tier: int = 1
    preempt_mode: str = ""  # "" = SchedConfig.preempt_mode
    grace_time: int = 0  # seconds
    max_time: int = -1  # MaxTime, minutes (-1 unlimited): a learned score's run time of a job without a limit


@dataclass(frozen=True)
class Snapshot:
    jobs: tuple[JobView, ...]
    nodes: tuple[NodeView, ...]
    partitions: dict = field(default_factory=dict)  # name -> PartitionView
    running: tuple[RunningView, ...] = ()
    dependencies: dict = field(default_factory=dict)  # job id -> "wait" | "never" (unmet only)
    array_running: dict = field(default_factory=dict)  # array id -> tasks running
    qos: dict[str, Qos] = field(default_factory=dict)  # name -> Qos (limits, preemption)
    reservations: tuple[Reservation, ...] = ()  # advance reservations not yet over
    limits: object = None  # limits.AssocLimits: association limits enforced (None: none)
    # project every pending job's start this pass (sched/projection.py): it costs about what
    # conservative backfill does, so the controller asks once every bf_interval seconds, as
    # Slurm's backfill runs; a replay asks only when it measures the projections
    project_starts: bool = False
    # sched_policy: a learned score's time origin (the submit time of the oldest job the
    # controller knows), and the starvation guard's bound: a job eligible now that has waited
    # this long (seconds since submit) is starved (sched/policy.py)
    sched_epoch: float = 0.0
    starve_bound: float = math.inf
    starved: frozenset = frozenset()  # jobs an earlier pass found starved (Plan.starved)


@dataclass(frozen=True)
class Start:
    """Start job_id now on these allocations."""

    job_id: int
    allocations: tuple[NodeAllocation, ...]


@dataclass(frozen=True)
class Preemption:
    """Preempt job_id (running) so that `by` can start: signal it now, and after `grace`
    seconds requeue it (mode REQUEUE) or end it PREEMPTED (mode CANCEL)."""

    job_id: int
    by: int
    mode: str
    grace: int


@dataclass
class Plan:
    starts: list[Start] = field(default_factory=list)
    reasons: dict[int, Reason] = field(default_factory=dict)  # pending job -> why it waits
    reservations: dict[int, float] = field(default_factory=dict)  # blocked job -> expected start
    preemptions: list[Preemption] = field(default_factory=list)
    backfilled: int = 0  # starts made ahead of a blocked job (sdiag's backfilled jobs)
    # ReqNodeNotAvail because a node named by -w is down or drained: job -> those nodes, as
    # Slurm's "ReqNodeNotAvail, UnavailableNodes:node2"
    unavailable: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # every other pending job's projected start (sched/projection.py), within the limits below
    projected: dict[int, float] = field(default_factory=dict)
    # pending job -> why it got no projection: "bf_max_job_test" or "bf_window"
    unprojected: dict[int, str] = field(default_factory=dict)
    projecting: bool = False
    # jobs the starvation guard protects: the next snapshot's `starved`
    starved: frozenset = frozenset()  # this pass projected starts: `projected` is the whole answer
