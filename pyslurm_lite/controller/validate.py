"""Submit-time validation: reject what can never run, fill in what the partition implies.

Slurm's own messages are used, so scripts that grep for them keep working. A request that could
run on the configured nodes, just not now, is accepted (it waits with a Reason).

A spec is untrusted input: its sizes, numbers and strings are checked first (check_limits), each
before anything is expanded or allocated from it, so that no request can cost the controller
more than the limits allow. Limits and their texts are Slurm's (slurmctld's
_test_job_desc_fields, _valid_array_inx, validate_job_create_req; slurm_errno.c) unless a
comment says they are ours.
"""

from __future__ import annotations

import re
from collections import Counter

from .. import arrays
from ..config import Config, expand
from ..errors import ConfigError, InvalidRequest, NotFound, PermissionDenied, Unsatisfiable
from ..model import UNLIMITED, JobSpec, NodeConfig, Partition, Qos, constraint_met, parse_constraint
from ..sched import sharing
from ..sched.sharing import SHARING

NODE_CONFIG_UNAVAILABLE = "Requested node configuration is not available"
# slurm_errno.c's texts
TOO_LONG = "Pathname of a file, directory or other parameter too long"  # ESLURM_PATHNAME_TOO_LONG
INVALID_TIME_LIMIT = "Requested time limit is invalid (missing or exceeds some limit)"
INVALID_TIME_VALUE = "Invalid time specified"  # ESLURM_INVALID_TIME_VALUE
INVALID_NICE = "Invalid --nice value"  # ESLURM_INVALID_NICE: a negative nice from a non-operator
INVALID_NODE_NAME = "Invalid node name specified"  # ESLURM_INVALID_NODE_NAME
INVALID_GRES = "Invalid generic resource (gres) specification"  # ESLURM_INVALID_GRES
MAX_JOB_COUNT = "MaxJobCount limit reached"  # ESLURM_MAX_JOB_COUNT (sbatch: "Slurm job queue full")
ACCOUNTING_POLICY = ("Job violates accounting/QOS policy (job submit limit, user's size and/or "
                     "time limits)")  # ESLURM_ACCOUNTING_POLICY

DEFAULT_MAX_SCRIPT_SIZE = 4 * 1024 * 1024  # SchedulerParameters=max_script_size, Slurm's default
# SchedulerParameters=max_env_size is ours (Slurm has none): the agent hands the environment to
# exec(), which refuses much more than this anyway (ARG_MAX), so beyond it a job could never start.
DEFAULT_MAX_ENV_SIZE = 1024 * 1024
NICE_LIMIT = 2147483645  # NICE_OFFSET - 3: sbatch's --nice range is +/- this
MAX_TIME_LIMIT = 2**31 - 1  # minutes; beyond it is no limit anyone means (UNLIMITED is -1)
MAX_COUNT = 2**31 - 1  # nodes, tasks, CPUs, GPUs: what the wire's int32 carries
MAX_MEMORY = (2**63 - 1) >> 20  # MiB: the cgroup memory limit in bytes must fit an int64
MAX_TIMESTAMP = 253402300799.0  # 9999-12-31T23:59:59 UTC, the last instant datetime can print
PATH_MAX = 4096

# Longest value per string field, as _test_job_desc_fields (1024 unless noted). Fields it does
# not know get the limit of their nearest kin; every one of them is also free of control
# characters (_CONTROL), which would otherwise reach other users' terminals through squeue.
_STRING_LIMITS = {
    "name": 1024, "comment": 1024, "account": 1024, "qos": 1024, "partition": 1024,
    "reservation": 1024, "constraint": 1024, "submit_host": 1024, "user": 1024,
    "gpu_type": 1024, "signal": 1024, "open_mode": 1024,
    "array": 4 * 1024, "dependency": 128 * 1024,
    "nodelist": 128 * 1024, "exclude": 128 * 1024,  # ours; the hostlist cap bounds them too
    "export": 128 * 1024,  # ours; its values also count in max_env_size
    "work_dir": PATH_MAX, "submit_dir": PATH_MAX,
    "std_out": PATH_MAX, "std_err": PATH_MAX, "std_in": PATH_MAX,
}
# C0 (newline, tab, ESC...), DEL and C1: terminal control. Not checked in the script, argv or
# environment values, which are the job's own business and never printed by squeue.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def resolve_partition(cfg: Config, spec: JobSpec) -> Partition:
    if not spec.partition:
        part = cfg.default_partition()
        if part is None:
            raise NotFound("No partition specified or system default partition")
        return part
    part = cfg.partitions.get(spec.partition)
    if part is None:
        raise NotFound(f"invalid partition specified: {spec.partition}\n"
                       "Batch job submission failed: Invalid partition name specified")
    return part


def effective_time_limit(spec: JobSpec, part: Partition, qos: Qos | None = None) -> int:
    """Minutes (UNLIMITED: none). Without --time: the partition's DefaultTime, else its MaxTime,
    capped by the QOS's MaxWall as Slurm's acct_policy does (a job that gave a longer --time
    itself waits with QOSMaxWallDurationPerJobLimit instead)."""
    limit = spec.time_limit if spec.time_limit else part.default_time
    if limit in (0, None):
        limit = UNLIMITED
    if part.max_time != UNLIMITED and (limit == UNLIMITED or limit > part.max_time):
        if spec.time_limit:
            raise InvalidRequest("Requested time limit is invalid (missing or exceeds some limit)")
        limit = part.max_time
    wall = qos.max_wall if qos is not None else UNLIMITED
    if not spec.time_limit and wall != UNLIMITED and (limit == UNLIMITED or limit > wall):
        limit = wall
    return limit


def node_can_hold(node: NodeConfig, spec: JobSpec, index: int, cfg: Config) -> bool:
    from ..sched.placement import cpus_on_node, gpu_kinds, mem_on_node
    kinds = gpu_kinds(spec)  # --gres=gpu:a100:1,gpu:t4:1: enough of each type
    if len(kinds) <= 1:
        kinds = ((spec.gpu_type_wanted(), spec.gpus_needed_per_node()),)
    gpus_ok = all(sum(g.count for g in node.gres if g.name == "gpu" and (not t or g.type == t)) >= n
                  for t, n in kinds)
    features_ok = constraint_met(parse_constraint(spec.constraint), node.features)
    return (node.cpus >= cpus_on_node(spec, index)  # -O and --mincpus counted
            and node.real_memory >= mem_on_node(spec, index, cfg.def_mem_per_cpu, 0)
            and gpus_ok and features_ok and _shares_fit(node, spec))


def _shares_fit(node: NodeConfig, spec: JobSpec) -> bool:
    """--gres=shard:K (or mps:K): some GPU of the node has K, all of them from that one GPU."""
    name, count = sharing.request(spec.gres)
    if not name:
        return True
    per_gpu = sharing.configured(node.gres, list(range(node.gpu_count()))).items()
    return any(n == name and have >= count for (_, n), have in per_gpu)


def check_sharing(cfg: Config, spec: JobSpec) -> None:
    """gres/shard and gres/mps requests as slurmctld takes them: a name GresTypes declares, one
    sharing gres per job and no GPUs beside it (Slurm refuses gpu with shard or mps)."""
    names = {g.name for g in spec.gres if g.name in SHARING}
    if not names:
        return
    whole = any(g.name == "gpu" for g in spec.gres) or spec.gpus or spec.gpus_per_node \
        or spec.gpus_per_task
    if len(names) > 1 or whole or not names <= set(cfg.gres_types) or \
            any(g.type or g.count < 1 for g in spec.gres if g.name in SHARING):
        raise InvalidRequest(INVALID_GRES)


def check_access(cfg: Config, spec: JobSpec, part: Partition, reservations: dict,
                 operator: bool = False) -> None:
    """The partition's state and AllowAccounts/AllowGroups, the QOS, the reservation."""
    if part.state in ("DRAIN", "INACTIVE"):
        raise InvalidRequest("Required partition not available (inactive or drain)")
    if part.allow_accounts and spec.account not in part.allow_accounts:
        raise PermissionDenied("Invalid account or account/partition combination specified")
    if part.allow_groups and not _in_groups(part.allow_groups, spec):
        raise PermissionDenied("User's group not permitted to use this partition")
    if (spec.qos or "normal") not in cfg.qos:
        raise InvalidRequest("Invalid qos specification")
    if spec.reservation:
        resv = reservations.get(spec.reservation)
        if resv is None:
            raise InvalidRequest("Requested reservation is invalid")
        if not resv.admits(spec.user, spec.account) and not operator:  # operators: any
            raise PermissionDenied("Access denied to requested reservation")


def _in_groups(names: list[str], spec: JobSpec) -> bool:
    import grp
    mine = {spec.gid, *spec.groups}
    for name in names:
        try:
            if grp.getgrnam(name).gr_gid in mine:
                return True
        except KeyError:
            continue  # a group this host does not know admits nobody here
    return False


def validate_spec(cfg: Config, spec: JobSpec, reservations: dict | None = None,
                  operator: bool = False) -> tuple[Partition, int]:
    """Check spec against limits and configuration; returns (partition, effective time limit in
    minutes). `operator`: the authenticated caller is root, SlurmUser or an AdminUser (may set a
    negative nice)."""
    check_limits(cfg, spec, operator)
    check_sharing(cfg, spec)
    part = resolve_partition(cfg, spec)
    check_access(cfg, spec, part, reservations or {}, operator)
    limit = effective_time_limit(spec, part, cfg.qos.get(spec.qos or "normal"))
    nodes = [cfg.nodes[n] for n in part.nodes]
    if spec.exclude:
        excluded = set(_hostlist(spec.exclude))
        nodes = [n for n in nodes if n.name not in excluded]
    if spec.nodelist:
        _check_nodelist(cfg, spec, part, nodes)
    wanted = parse_constraint(spec.constraint)
    if wanted and not any(constraint_met(wanted, n.features) for n in nodes):
        raise InvalidRequest("Invalid feature specification")
    if spec.exclusive and spec.num_nodes > len(nodes):
        raise Unsatisfiable("Node count specification invalid")
    if spec.num_nodes > len(nodes):
        raise Unsatisfiable("Node count specification invalid")
    if part.max_nodes != UNLIMITED and spec.num_nodes > part.max_nodes:
        raise Unsatisfiable("Node count specification invalid")
    if spec.mem_per_node and all(n.real_memory < spec.mem_per_node for n in nodes):
        raise Unsatisfiable(f"Memory specification can not be satisfied\n{NODE_CONFIG_UNAVAILABLE}")
    if not _enough_nodes(nodes, spec, cfg):
        raise Unsatisfiable(NODE_CONFIG_UNAVAILABLE)
    return part, limit


def _check_nodelist(cfg: Config, spec: JobSpec, part: Partition, nodes: list[NodeConfig]) -> None:
    """-w: known nodes of the partition, none of them excluded, each able to hold its share
    (Slurm's texts). More of them than -N asks raises the node count (placement.refine)."""
    wanted = _hostlist(spec.nodelist)
    if set(wanted) - set(cfg.nodes):
        raise InvalidRequest(INVALID_NODE_NAME)
    if not set(wanted) <= {n.name for n in nodes}:
        raise Unsatisfiable(NODE_CONFIG_UNAVAILABLE)
    if not all(node_can_hold(cfg.nodes[name], spec, i, cfg) for i, name in enumerate(wanted)):
        raise Unsatisfiable(NODE_CONFIG_UNAVAILABLE)


def _check_rlimits(spec: JobSpec) -> None:
    """The propagated resource limits, refused at submit rather than failing the launch."""
    from .. import rlimits
    if len(spec.rlimits) > len(rlimits.LIMITS):
        raise InvalidRequest("Invalid resource limits")
    try:
        rlimits.decode(spec.rlimits)
    except ValueError as e:
        raise InvalidRequest(f"Invalid resource limits: {e}") from None


def check_limits(cfg: Config, spec: JobSpec, operator: bool = False) -> None:
    """Everything about a spec that needs no partition or node: strings, sizes, numbers, the
    array. Cheapest first; nothing here builds anything as large as the input."""
    _check_strings(spec)
    _check_sizes(cfg, spec)
    _check_rlimits(spec)
    if spec.array:
        arrays.check(spec.array, cfg.max_array_size)
    _check_counts(spec)
    _check_time(spec)
    _check_nice(spec, operator)
    _check_parsed_later(spec)


def _check_parsed_later(spec: JobSpec) -> None:
    """Fields the controller parses again later (the scheduler each pass, the monitor each
    second) are parsed now: a job the client did not check must not break those loops."""
    from ..sched import dependency
    from ..units import parse_signal_spec
    if spec.dependency:
        dependency.parse(spec.dependency)
    if spec.signal:
        parse_signal_spec(spec.signal)
    if spec.open_mode not in ("", "append", "truncate"):
        raise InvalidRequest(f"Invalid --open-mode specification: {spec.open_mode}")


def _check_strings(spec: JobSpec) -> None:
    for field, longest in _STRING_LIMITS.items():
        value = getattr(spec, field) or ""
        if len(value) > longest:
            raise InvalidRequest(f"{TOO_LONG} ({field}: more than {longest} characters)")
        if _CONTROL.search(value):
            raise InvalidRequest(f"Invalid {field}: control characters are not allowed")
    for g in spec.gres:
        for value in (g.name, g.type):
            if len(value) > 1024 or _CONTROL.search(value):
                raise InvalidRequest(INVALID_GRES)


def _check_sizes(cfg: Config, spec: JobSpec) -> None:
    """The batch script and the environment, in bytes as they are stored and exec'd."""
    max_script = _sched_param(cfg, "max_script_size", DEFAULT_MAX_SCRIPT_SIZE)
    size = _utf8_size(spec.script)
    if size > max_script:
        raise InvalidRequest(f"{TOO_LONG} (script: {size} bytes, max_script_size={max_script})")
    max_env = _sched_param(cfg, "max_env_size", DEFAULT_MAX_ENV_SIZE)
    size = _env_size(spec.environment)
    if size > max_env:
        raise InvalidRequest(f"{TOO_LONG} (environment: {size} bytes, max_env_size={max_env})")


def _sched_param(cfg: Config, key: str, default: int) -> int:
    """SchedulerParameters=key=N; the default when absent or not a number (as atoi would give 0,
    a typo must not refuse every job)."""
    value = cfg.scheduler_parameters.get(key, "")
    return int(value) if re.fullmatch(r"[0-9]{1,18}", value) else default


def _env_size(env: dict[str, str]) -> int:
    """Bytes of the "k=v\\0" strings; map() keeps it C-speed, each task of an array re-checks it."""
    keys, values = env.keys(), env.values()
    if all(map(str.isascii, keys)) and all(map(str.isascii, values)):
        return sum(map(len, keys)) + sum(map(len, values)) + 2 * len(env)
    return sum(_utf8_size(k) + _utf8_size(v) + 2 for k, v in env.items())


def _utf8_size(text: str) -> int:
    # isascii() is O(1) in CPython: an array's tasks each re-check a script of up to 4 MiB.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _check_counts(spec: JobSpec) -> None:
    """No negative or absurd count reaches the arithmetic of placement."""
    if spec.num_nodes < 1 or spec.num_tasks < 1 or spec.cpus_per_task < 1:
        raise InvalidRequest("Invalid node, task or CPU count")
    if spec.num_nodes > MAX_COUNT or not 0 <= spec.max_nodes <= MAX_COUNT:
        raise InvalidRequest("Node count specification invalid")  # ESLURM_INVALID_NODE_COUNT
    if not 0 <= spec.min_cpus_per_node <= MAX_COUNT:
        raise InvalidRequest("CPU count specification invalid")  # ESLURM_INVALID_CPU_COUNT
    if spec.num_tasks > MAX_COUNT or not 0 <= spec.ntasks_per_node <= MAX_COUNT:
        raise InvalidRequest("Task count specification invalid")  # ESLURM_BAD_TASK_COUNT
    if spec.cpus_per_task > MAX_COUNT or not 0 <= spec.cpus_per_gpu <= MAX_COUNT:
        raise InvalidRequest("CPU count specification invalid")  # ESLURM_INVALID_CPU_COUNT
    for mem in (spec.mem_per_node, spec.mem_per_cpu, spec.mem_per_gpu):
        if not 0 <= mem <= MAX_MEMORY:
            raise InvalidRequest("Memory required by task is not available")  # ..._TASK_MEMORY
    if not (0 <= spec.gpus <= MAX_COUNT and 0 <= spec.gpus_per_node <= MAX_COUNT):
        raise InvalidRequest(INVALID_GRES)
    for g in spec.gres:
        if g.name not in ("gpu", *SHARING) or not 0 <= g.count <= MAX_COUNT:
            raise InvalidRequest(INVALID_GRES)


def _check_time(spec: JobSpec) -> None:
    """time_limit: UNLIMITED (-1), 0 (unset: the partition's DefaultTime) or 1..MAX_TIME_LIMIT
    minutes; anything else would slip past MaxTime (-2 is not UNLIMITED) and never be enforced.
    begin_time: a finite instant the system can print; 0 is "not deferred"."""
    limit = spec.time_limit or 0
    if limit != UNLIMITED and not 0 <= limit <= MAX_TIME_LIMIT:
        raise InvalidRequest(INVALID_TIME_LIMIT)
    if not 0 <= (spec.begin_time or 0.0) <= MAX_TIMESTAMP:  # also false for NaN
        raise InvalidRequest(INVALID_TIME_VALUE)


def check_deadline(spec: JobSpec, now: float) -> None:
    """--deadline at submit, as slurmctld's _part_access_check: one already past is refused.
    One too close for the time limit is accepted there and ended DEADLINE by the first
    scheduling pass (job_mgr.deadlines), as in Slurm."""
    if not spec.deadline:
        return
    if not 0 < spec.deadline <= MAX_TIMESTAMP:  # also false for NaN
        raise InvalidRequest(INVALID_TIME_VALUE)
    if spec.deadline < now:
        raise InvalidRequest(INVALID_TIME_LIMIT)


def _check_nice(spec: JobSpec, operator: bool) -> None:
    """As validate_job_create_req: a negative nice raises priority, so only operators may."""
    if not -NICE_LIMIT <= spec.nice <= NICE_LIMIT:
        raise InvalidRequest(f"{INVALID_NICE}, out of range (+/- {NICE_LIMIT})")  # sbatch's text
    if spec.nice < 0 and not operator:
        raise PermissionDenied(INVALID_NICE)


def _hostlist(expr: str) -> list[str]:
    """--nodelist / --exclude through the capped expansion; a malformed or oversized one is the
    user's error (InvalidRequest), not the configuration's."""
    try:
        return expand(expr)
    except ConfigError as e:
        raise InvalidRequest(f"{INVALID_NODE_NAME} ({e.message})") from None


def check_job_counts(cfg: Config, specs: list[JobSpec], total_active: int,
                     active_by_user_qos: dict[tuple[str, str], int], user: str) -> None:
    """May the controller accept `specs` (one job each; an array's tasks are specs) now?

    total_active: jobs the controller holds (pending, running, suspended, completing);
    active_by_user_qos: those jobs counted by (user, QOS name); user: the submitter, for specs
    that name no user. Pure: the caller counts, under its lock, and calls this before it assigns
    ids. Refuses, with Slurm's texts, past MaxJobCount (InvalidRequest "MaxJobCount limit
    reached": sbatch's retry is the user's to make) and past a QOS's MaxSubmitJobsPerUser
    (InvalidRequest, ESLURM_ACCOUNTING_POLICY's text)."""
    if total_active + len(specs) > cfg.max_job_count:
        raise InvalidRequest(MAX_JOB_COUNT)
    wanted = Counter((spec.user or user, spec.qos or "normal") for spec in specs)
    for (owner, qos_name), count in wanted.items():
        qos = cfg.qos.get(qos_name)
        if qos is None or qos.max_submit_jobs_per_user == UNLIMITED:
            continue  # an unknown QOS is validate_spec's to refuse
        if active_by_user_qos.get((owner, qos_name), 0) + count > qos.max_submit_jobs_per_user:
            raise InvalidRequest(ACCOUNTING_POLICY)


def _enough_nodes(nodes: list[NodeConfig], spec: JobSpec, cfg: Config) -> bool:
    """Are there num_nodes distinct nodes able to hold the job, node index by node index?"""
    used: set[str] = set()
    for index in range(spec.num_nodes):
        fit = next((n for n in nodes if n.name not in used and node_can_hold(n, spec, index, cfg)), None)
        if fit is None:
            return False
        used.add(fit.name)
    return True
