"""Domain vocabulary: dataclasses and str Enums shared by controller, agent, scheduler and CLIs.

The Enum values are what is stored in the database and printed by the CLIs, spelled as Slurm
spells them. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import Enum

UNLIMITED = -1  # a time limit (minutes) with no bound, Slurm's INFINITE


class JobState(str, Enum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETING = "COMPLETING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"

    @property
    def compact(self) -> str:
        """squeue's %t two-letter code."""
        return COMPACT[self]

    @property
    def is_final(self) -> bool:
        return self not in (JobState.PENDING, JobState.RUNNING, JobState.SUSPENDED,
                            JobState.COMPLETING)


# squeue's %t codes. Keyed by JobState, a str Enum, so plain state strings look up too.
COMPACT = {
    JobState.PENDING: "PD", JobState.RUNNING: "R", JobState.SUSPENDED: "S",
    JobState.COMPLETING: "CG", JobState.COMPLETED: "CD", JobState.FAILED: "F",
    JobState.CANCELLED: "CA", JobState.TIMEOUT: "TO", JobState.NODE_FAIL: "NF",
    JobState.OUT_OF_MEMORY: "OOM", JobState.PREEMPTED: "PR", JobState.BOOT_FAIL: "BF",
    JobState.DEADLINE: "DL",
}


class Reason(str, Enum):
    """Why a job is pending (or why it ended), Slurm's names."""

    NONE = "None"
    PRIORITY = "Priority"
    RESOURCES = "Resources"
    HELD_USER = "JobHeldUser"
    HELD_ADMIN = "JobHeldAdmin"
    BEGIN_TIME = "BeginTime"
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER = "DependencyNeverSatisfied"
    REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"
    PARTITION_DOWN = "PartitionDown"
    PARTITION_INACTIVE = "PartitionInactive"
    PARTITION_TIME_LIMIT = "PartitionTimeLimit"
    PARTITION_NODE_LIMIT = "PartitionNodeLimit"
    NODE_DOWN = "NodeDown"
    BAD_CONSTRAINTS = "BadConstraints"
    NON_ZERO_EXIT = "NonZeroExitCode"
    TIME_LIMIT = "TimeLimit"
    RAISED_SIGNAL = "RaisedSignal"
    ARRAY_TASK_LIMIT = "JobArrayTaskLimit"
    QOS_MAX_JOBS_PER_USER = "QOSMaxJobsPerUserLimit"
    QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"
    QOS_MAX_WALL = "QOSMaxWallDurationPerJobLimit"
    RESERVATION = "Reservation"  # its --reservation has not begun yet
    RESERVED_MAINT = "ReqNodeNotAvail, Reserved for maintenance"
    DEADLINE = "DeadLine"  # ended: it could no longer finish before its --deadline
    # AccountingStorageEnforce=associations: its (account, user) association was deleted while
    # it waited (Slurm's FAIL_ACCOUNT); it stays pending until it is added back or the job moved
    INVALID_ACCOUNT = "InvalidAccount"
    # accounting limits (AccountingStorageEnforce=limits; sched/limits.py), Slurm's names
    ASSOC_GRP_CPU = "AssocGrpCpuLimit"
    ASSOC_GRP_MEM = "AssocGrpMemLimit"
    ASSOC_GRP_NODE = "AssocGrpNodeLimit"
    ASSOC_GRP_GRES = "AssocGrpGRES"
    ASSOC_GRP_BILLING = "AssocGrpBilling"
    ASSOC_GRP_CPU_MIN = "AssocGrpCPUMinutesLimit"
    ASSOC_GRP_MEM_MIN = "AssocGrpMemMinutes"
    ASSOC_GRP_NODE_MIN = "AssocGrpNodeMinutes"
    ASSOC_GRP_GRES_MIN = "AssocGrpGRESMinutes"
    ASSOC_GRP_BILLING_MIN = "AssocGrpBillingMinutes"
    ASSOC_MAX_CPU_PER_JOB = "AssocMaxCpuPerJobLimit"
    ASSOC_MAX_MEM_PER_JOB = "AssocMaxMemPerJob"
    ASSOC_MAX_NODE_PER_JOB = "AssocMaxNodePerJobLimit"
    ASSOC_MAX_GRES_PER_JOB = "AssocMaxGRESPerJob"
    ASSOC_MAX_BILLING_PER_JOB = "AssocMaxBillingPerJob"
    ASSOC_MAX_JOBS = "AssocMaxJobsLimit"
    ASSOC_MAX_WALL = "AssocMaxWallDurationPerJobLimit"
    QOS_GRP_CPU = "QOSGrpCpuLimit"
    QOS_GRP_MEM = "QOSGrpMemLimit"
    QOS_GRP_NODE = "QOSGrpNodeLimit"
    QOS_GRP_GRES = "QOSGrpGRES"
    QOS_GRP_BILLING = "QOSGrpBilling"
    QOS_MAX_CPU_PER_USER = "QOSMaxCpuPerUserLimit"
    QOS_MAX_MEM_PER_USER = "QOSMaxMemoryPerUser"
    QOS_MAX_NODE_PER_USER = "QOSMaxNodePerUserLimit"
    QOS_MAX_BILLING_PER_USER = "QOSMaxBillingPerUser"
    QOS_MAX_CPU_PER_JOB = "QOSMaxCpuPerJobLimit"
    QOS_MAX_MEM_PER_JOB = "QOSMaxMemoryPerJob"
    QOS_MAX_NODE_PER_JOB = "QOSMaxNodePerJobLimit"
    QOS_MAX_GRES_PER_JOB = "QOSMaxGRESPerJob"
    QOS_MAX_BILLING_PER_JOB = "QOSMaxBillingPerJob"


class NodeState(str, Enum):
    """A node's base state; DRAIN is a flag kept apart (see Node.drain)."""

    UNKNOWN = "UNKNOWN"
    IDLE = "IDLE"
    MIXED = "MIXED"
    ALLOCATED = "ALLOCATED"
    DOWN = "DOWN"


@dataclass
class GresRequest:
    """A generic resource request per node, e.g. gpu:a100:2 -> GresRequest('gpu', 'a100', 2)."""

    name: str = "gpu"
    type: str = ""
    count: int = 0


@dataclass
class JobSpec:
    """Everything a user asked for at submit time, after directives and defaults are merged.

    Memory is in MiB; time limits in minutes (UNLIMITED or 0 = take the partition's).
    """

    name: str = "sbatch"
    script: str = ""
    argv: list[str] = field(default_factory=list)
    work_dir: str = ""
    std_out: str = ""
    std_err: str = ""
    std_in: str = "/dev/null"
    open_mode: str = "truncate"
    partition: str = ""
    account: str = ""
    qos: str = ""
    num_nodes: int = 1
    num_tasks: int = 1
    ntasks_set: bool = False
    cpus_per_task: int = 1
    ntasks_per_node: int = 0
    mem_per_node: int = 0
    mem_per_cpu: int = 0
    time_limit: int = 0
    gres: list[GresRequest] = field(default_factory=list)
    gpus: int = 0
    gpus_per_node: int = 0
    gpu_type: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    export: str = "ALL"
    begin_time: float = 0.0
    hold: bool = False
    user: str = ""
    uid: int = 0
    gid: int = 0
    groups: list[int] = field(default_factory=list)
    submit_host: str = ""
    nice: int = 0
    requeue: bool = True
    constraint: str = ""
    exclusive: bool = False
    comment: str = ""
    nodelist: str = ""
    exclude: str = ""
    signal: str = ""
    batch: bool = True
    submit_dir: str = ""
    array: str = ""
    cpus_per_gpu: int = 0
    mem_per_gpu: int = 0
    dependency: str = ""
    kill_on_invalid_dep: bool = False
    reservation: str = ""
    gpus_per_task: int = 0  # --gpus-per-task; gpus then holds the job's total
    max_nodes: int = 0  # -N min-max: up to this many nodes when free (0: exactly num_nodes)
    min_cpus_per_node: int = 0  # --mincpus
    overcommit: bool = False  # -O: one CPU per task is not required (cpus_per_task per node)
    mem_whole_node: bool = False  # --mem=0: all the memory of each node
    exclusive_user: bool = False  # --exclusive=user: nodes shared only with the same user's jobs
    # PropagateResourceLimits / --propagate: the submitter's limits, "NAME=soft:hard" (rlimits.py)
    rlimits: list[str] = field(default_factory=list)
    deadline: float = 0.0  # --deadline: the job must end by then (0: none)
    # --priority: NO_PRIORITY (not asked), 0 (held), else an operator's fixed value
    priority: int = -1
    mail_type: str = ""  # --mail-type: "BEGIN,END,..." as given (controller/notify.py)
    mail_user: str = ""  # --mail-user: an address, or an http(s):// webhook
    # --switches=N[@TIME] (sched/switches.py): at most N leaf switches (0: any), waited for up
    # to TIME seconds (-1: not given, SchedulerParameters=max_switch_wait then)
    req_switch: int = 0
    wait4switch: int = -1
    # --gpu-bind (agent/gpubind.py): each task's GPUs, e.g. "verbose,closest", "map_gpu:1,0"
    gpu_bind: str = ""
    # --gres-flags: "enforce-binding" (only cores bound to its GPUs by gres.conf Cores=) or
    # "disable-binding" (cores anywhere); "" neither
    gres_flags: str = ""

    def gpus_needed_per_node(self) -> int:
        """GPUs this job needs on each of its nodes, from whichever flag set them."""
        per_node = self.gpus_per_node
        for g in self.gres:
            if g.name == "gpu":
                per_node = max(per_node, g.count)
        if self.gpus and not per_node:
            per_node = -(-self.gpus // max(self.num_nodes, 1))
        return per_node

    def gpu_type_wanted(self) -> str:
        for g in self.gres:
            if g.name == "gpu" and g.type:
                return g.type
        return self.gpu_type

    def tasks_on_node(self, node_index: int) -> int:
        """Block distribution of tasks over nodes: the first nodes get one more when uneven."""
        if self.ntasks_per_node:
            return self.ntasks_per_node
        base, extra = divmod(self.num_tasks, max(self.num_nodes, 1))
        return base + (1 if node_index < extra else 0)

    def cpus_on_node(self, node_index: int) -> int:
        by_tasks = max(self.tasks_on_node(node_index), 1) * self.cpus_per_task
        return max(by_tasks, self.cpus_per_gpu * self.gpus_needed_per_node())

    def mem_on_node(self, node_index: int, default_per_cpu: int = 0, default_per_node: int = 0) -> int:
        """MiB on one node: --mem, else --mem-per-gpu × GPUs, else --mem-per-cpu × CPUs, else
        the configured defaults."""
        if self.mem_per_node:
            return self.mem_per_node
        if self.mem_per_gpu and self.gpus_needed_per_node():
            return self.mem_per_gpu * self.gpus_needed_per_node()
        per_cpu = self.mem_per_cpu or default_per_cpu
        if per_cpu:
            return per_cpu * self.cpus_on_node(node_index)
        return default_per_node


@dataclass
class NodeAllocation:
    """What one job holds on one node."""

    node: str
    cpus: int
    mem: int
    gpus: list[int] = field(default_factory=list)
    # gres/shard or gres/mps (sched/sharing.py): how many of share_name each GPU of `gpus` gives
    # this job, the GPUs then being shared rather than held whole; empty: whole GPUs
    shares: list[int] = field(default_factory=list)
    share_name: str = ""


@dataclass
class Step:
    """A job step: tasks launched in the job's allocation by srun (the batch script is 'batch')."""

    step_id: int
    name: str = ""
    state: JobState = JobState.RUNNING
    nodes: list[str] = field(default_factory=list)
    num_tasks: int = 1
    tasks_per_node: list[int] = field(default_factory=list)
    cpus_per_task: int = 1
    start_time: float = 0.0
    end_time: float = 0.0
    exit_code: int = 0
    exit_signal: int = 0
    exclusive: bool = False
    cpus_per_node: list[int] = field(default_factory=list)
    task_nodes: list[int] = field(default_factory=list)  # task id -> index in nodes (srun -m)
    distribution: str = ""
    # What the step holds of the job's allocation on each of its nodes (srun -c/-n, --mem,
    # --gres/--gpus*): mem 0 = no --mem, the job's memory limit applies and nothing is held;
    # gpus = the step's GPUs (all of the job's there when it asked for none).
    allocations: list[NodeAllocation] = field(default_factory=list)
    gpus_held: bool = False  # asked for GPUs: other steps get others (unless --overlap)
    overlap: bool = False  # srun --overlap: shares what other steps hold, and holds nothing


@dataclass
class Job:
    job_id: int
    spec: JobSpec
    state: JobState = JobState.PENDING
    reason: Reason = Reason.NONE
    priority: int = 0
    submit_time: float = 0.0
    eligible_time: float = 0.0
    start_time: float = 0.0
    end_time: float = 0.0
    exit_code: int = 0
    exit_signal: int = 0
    allocations: list[NodeAllocation] = field(default_factory=list)
    restart_count: int = 0
    held: bool = False
    held_by_admin: bool = False
    time_limit: int = UNLIMITED  # effective minutes after partition defaults
    partition: str = ""
    master_port: int = 0
    batch_host: str = ""
    steps: list[Step] = field(default_factory=list)
    next_step_id: int = 0
    expected_start: float = 0.0  # pending: when backfill has reserved its start (0: unknown)
    start_note: str = ""  # pending without a projected start: why (bf_max_job_test, bf_window)
    array_job_id: int = 0  # 0: not part of an array
    array_task_id: int = 0
    array_limit: int = 0  # %N throttle, 0 none
    array_tasks: str = ""  # the array's indices, folded
    factors: dict[str, float] = field(default_factory=dict)  # multifactor's weighted factors
    preempt_time: float = 0.0  # being preempted: when its grace time ends (0: not preempted)
    preempt_mode: str = ""  # REQUEUE or CANCEL: what happens to it then
    cancelled_by: str = ""  # the uid whose scancel ended it (sacct's "CANCELLED by UID"); "": none
    # Slurm's state_desc: the reason spelled out ("ReqNodeNotAvail, UnavailableNodes:node2"),
    # printed instead of the reason's name when set; "" when the name says it all
    state_desc: str = ""
    # set by an operator (--priority, scontrol update Priority=): multifactor leaves it alone
    # (Slurm's direct_set_prio)
    direct_priority: bool = False
    admin_comment: str = ""  # Slurm's AdminComment: e.g. the idle-GPU flag
    billing: float = 0.0  # TRES billing of its allocation (TRESBillingWeights), set at start
    usage: list["UsageSample"] = field(default_factory=list)  # latest per (step, node)

    @property
    def node_names(self) -> list[str]:
        return [a.node for a in self.allocations]

    @property
    def num_cpus(self) -> int:
        return sum(a.cpus for a in self.allocations)


@dataclass
class UsageSample:
    """What an agent measured of one step of a job on its node (cgroup and NVML). Cumulative
    figures and peaks run from the step's start; the ave_ ones are means over the samples."""

    step: str  # "batch", "0", "1", ... as sacct names steps, without the job id
    node: str = ""
    restart_count: int = 0
    time: float = 0.0
    user_cpu: float = 0.0  # seconds
    system_cpu: float = 0.0  # seconds
    rss: int = 0  # bytes now
    max_rss: int = 0  # bytes
    ave_rss: float = 0.0  # bytes
    samples: int = 0
    gpus: int = 0  # GPUs the step holds on this node
    gpu_util: float = 0.0  # percent now, mean over its GPUs
    ave_gpu_util: float = 0.0
    max_gpu_util: float = 0.0
    gpu_mem: int = 0  # bytes now, over its GPUs
    max_gpu_mem: int = 0
    start: float = 0.0
    tasks: int = 0
    job_id: int = 0  # whose step (heartbeats carry several jobs' samples)


@dataclass
class ForeignGpu:
    """A GPU busy with processes that no job of the scheduler started (agent's report)."""

    index: int
    pids: list[int] = field(default_factory=list)
    memory: int = 0  # bytes


@dataclass
class GpuShareUse:
    """gres/shard or gres/mps in use on one GPU of a node (sched/sharing.py), for GresUsed."""

    index: int
    name: str = ""  # shard or mps
    count: int = 0


@dataclass
class GpuFault:
    """A GPU health problem the agent saw (agent/gpu_health.py): kind is xid, ecc,
    retired_pending, remap_pending, remap_failure or lost; detail is how people read it
    ("XID 79 (fallen off the bus)"), the drain reason's words."""

    index: int
    kind: str = ""
    detail: str = ""


@dataclass
class GpuDevice:
    index: int
    type: str = ""
    uuid: str = ""
    name: str = ""
    memory_mb: int = 0
    minor: int = -1
    pci_bus_id: str = ""
    numa_node: int = -1
    simulated: bool = True
    file: str = ""
    # interconnect, for choosing GPUs that talk fast (sched/gpu_topology.py): NVLinks to each
    # GPU of the node in index order (Slurm's gres.conf Links=: -1 itself, 0 none), the PCIe
    # switch it sits behind ("" unknown), the cores close to it (gres.conf Cores=, a cpulist)
    links: list[int] = field(default_factory=list)
    pci_switch: str = ""
    cores: str = ""
    # a MIG instance (agent/gpu.py with_mig): the physical GPU's index and its MIG slot there
    # (-1: a whole GPU), and every device file a job using it needs (/dev/nvidiaN, its caps)
    mig_parent: int = -1
    mig_index: int = -1
    mig_files: list[str] = field(default_factory=list)


@dataclass
class NodeConfig:
    """A node as slurm.conf declares it."""

    name: str
    addr: str = ""
    port: int = 0
    cpus: int = 1
    real_memory: int = 1
    gres: list[GresRequest] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    weight: int = 1
    sockets: int = 1
    cores_per_socket: int = 0
    threads_per_core: int = 1
    metrics_port: int = 0  # MetricsPort=: the agent's Prometheus /metrics (0: off)

    def gpu_count(self) -> int:
        return sum(g.count for g in self.gres if g.name == "gpu")


@dataclass
class Node:
    """A node as the controller sees it: configuration plus live state."""

    config: NodeConfig
    state: NodeState = NodeState.UNKNOWN
    drain: bool = False
    reason: str = ""
    reason_time: float = 0.0
    responding: bool = False
    last_heartbeat: float = 0.0
    boot_time: float = 0.0
    gpus: list[GpuDevice] = field(default_factory=list)
    alloc_cpus: int = 0
    alloc_mem: int = 0
    alloc_gpus: list[int] = field(default_factory=list)
    real_cpus: int = 0
    real_memory: int = 0
    free_memory: int = 0
    cpu_load: float = 0.0
    agent_version: str = ""
    # GPUs busy with processes no job started (agent's report): kept out of scheduling
    foreign_gpus: list["ForeignGpu"] = field(default_factory=list)
    # GPUs out of scheduling for a fault (GpuHealthAction=gpu) until the node is resumed
    gpu_faults: list["GpuFault"] = field(default_factory=list)
    # gres/shard and gres/mps in use, per GPU (the controller's share_use, shown as GresUsed)
    alloc_shares: list["GpuShareUse"] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.config.name


@dataclass
class Partition:
    name: str
    nodes: list[str] = field(default_factory=list)
    default: bool = False
    max_time: int = UNLIMITED
    default_time: int = UNLIMITED
    max_nodes: int = UNLIMITED
    state: str = "UP"
    priority_tier: int = 1
    priority_job_factor: int = 1
    allow_accounts: list[str] = field(default_factory=list)  # empty: ALL
    allow_groups: list[str] = field(default_factory=list)  # empty: ALL
    preempt_mode: str = ""  # "" = the cluster's PreemptMode
    grace_time: int = 0  # seconds between SIGTERM and the kill when preempted
    # TRESBillingWeights="CPU=1.0,Mem=0.25G,GRES/gpu=10.0": TRES name (lower case: cpu, mem,
    # gres/gpu, gres/gpu:a100) -> weight; mem's weight is per GiB. Empty: billing = CPUs.
    tres_billing_weights: dict[str, float] = field(default_factory=dict)


@dataclass
class Qos:
    """A quality of service: a priority, limits and whom its jobs may preempt (sacctmgr's QOS,
    declared here by QOSName lines in slurm.conf)."""

    name: str
    priority: int = 0
    max_wall: int = UNLIMITED  # minutes
    max_jobs_per_user: int = UNLIMITED
    max_submit_jobs_per_user: int = UNLIMITED  # pending and running jobs a user may hold
    max_gpus_per_user: int = UNLIMITED  # MaxTRESPerUser=gres/gpu=N
    preempt: list[str] = field(default_factory=list)  # QOS names its jobs may preempt
    preempt_mode: str = ""  # "" = the cluster's PreemptMode
    grace_time: int = 0  # seconds
    preempt_exempt_time: int = -1  # seconds; -1: the cluster's PreemptExemptTime
    # sacctmgr's TRES limits (TRES name -> count, as TresLimits); max_gpus_per_user above is
    # MaxTRESPerUser=gres/gpu=N and stays the one the scheduler reads for GPUs
    grp_tres: dict[str, int] = field(default_factory=dict)  # GrpTRES: all its running jobs
    grp_tres_mins: dict[str, int] = field(default_factory=dict)  # GrpTRESMins (recorded only)
    max_tres_per_user: dict[str, int] = field(default_factory=dict)  # MaxTRESPerUser
    max_tres_per_job: dict[str, int] = field(default_factory=dict)  # MaxTRES (per job)
    description: str = ""


@dataclass
class Reservation:
    """An advance reservation: nodes set aside for some users or accounts over a time window."""

    name: str
    start_time: float
    end_time: float
    nodes: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # MAINT, ...

    def admits(self, user: str, account: str) -> bool:
        return user in self.users or (bool(account) and account in self.accounts)

    def active(self, now: float) -> bool:
        return self.start_time <= now < self.end_time


def parse_constraint(text: str) -> tuple[tuple[str, ...], ...]:
    """--constraint: 'a&b|c' -> (('a', 'b'), ('c',)): a node qualifies when it has every feature
    of at least one alternative. '()' and '[]' groupings are flattened to that form."""
    cleaned = text.replace("(", "").replace(")", "").replace("[", "").replace("]", "")
    alternatives = tuple(tuple(f for f in alt.split("&") if f) for alt in cleaned.split("|"))
    return tuple(a for a in alternatives if a)


def constraint_met(alternatives: tuple[tuple[str, ...], ...], features) -> bool:
    return not alternatives or any(all(f in features for f in alt) for alt in alternatives)


def replace(obj, **changes):
    """dataclasses.replace, re-exported so callers need one import."""
    return dataclasses.replace(obj, **changes)


# ---- accounting: accounts, users and their associations (sacctmgr; controller/assoc.py) -------
@dataclass
class TresLimits:
    """Limits of an association or QOS in Slurm's TRES terms: TRES name (lower case: cpu, mem,
    node, gres/gpu, billing) -> count (TRES-minutes for the *_mins ones). Absent: no limit."""

    grp_tres: dict[str, int] = field(default_factory=dict)  # GrpTRES: all jobs running under it
    grp_tres_mins: dict[str, int] = field(default_factory=dict)  # GrpTRESMins: decayed usage
    max_tres_per_user: dict[str, int] = field(default_factory=dict)  # MaxTRESPerUser
    max_tres_per_job: dict[str, int] = field(default_factory=dict)  # MaxTRES (per job)
    max_jobs: int = UNLIMITED  # MaxJobs: running at once
    max_submit_jobs: int = UNLIMITED  # MaxSubmitJobs: pending and running
    max_wall: int = UNLIMITED  # MaxWall, minutes


@dataclass
class Association:
    """An account (user == "") or a user in an account: the unit fair share and limits apply
    to. The account tree is built from `parent` (root at the top, parent "")."""

    account: str
    user: str = ""
    parent: str = "root"  # for accounts: the account above; for users: their account
    fairshare: int = 1  # RawShares (sacctmgr Fairshare=)
    qos: list[str] = field(default_factory=list)  # QOS allowed (users: inherited when empty)
    default_qos: str = ""
    limits: TresLimits = field(default_factory=TresLimits)
    description: str = ""
    organization: str = ""


@dataclass
class AssocTree:
    """What the scheduler and fair share read of the accounting database, at one moment: every
    association, the users' default accounts, and whether associations are enforced."""

    assocs: dict[tuple[str, str], Association] = field(default_factory=dict)  # (account, user)
    default_account: dict[str, str] = field(default_factory=dict)  # user -> account
    enforce: tuple[str, ...] = ()  # AccountingStorageEnforce words

    def children(self, account: str) -> list[Association]:
        """Accounts directly under `account` and its users."""
        return [a for a in self.assocs.values()
                if (a.user == "" and a.parent == account and a.account != account)
                or (a.user != "" and a.account == account)]
