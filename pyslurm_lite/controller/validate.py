"""Submit-time validation: reject what can never run, fill in what the partition implies.

Slurm's own messages are used, so scripts that grep for them keep working. A request that could
run on the configured nodes, just not now, is accepted (it waits with a Reason).
"""

from __future__ import annotations

from ..config import Config, expand
from ..errors import InvalidRequest, NotFound, PermissionDenied, Unsatisfiable
from ..model import UNLIMITED, JobSpec, NodeConfig, Partition, constraint_met, parse_constraint

NODE_CONFIG_UNAVAILABLE = "Requested node configuration is not available"


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


def effective_time_limit(spec: JobSpec, part: Partition) -> int:
    limit = spec.time_limit if spec.time_limit else part.default_time
    if limit in (0, None):
        limit = UNLIMITED
    if part.max_time != UNLIMITED and (limit == UNLIMITED or limit > part.max_time):
        if spec.time_limit:
            raise InvalidRequest("Requested time limit is invalid (missing or exceeds some limit)")
        limit = part.max_time
    return limit


def node_can_hold(node: NodeConfig, spec: JobSpec, index: int, cfg: Config) -> bool:
    gpus_needed = spec.gpus_needed_per_node()
    gpu_type = spec.gpu_type_wanted()
    gpus = sum(g.count for g in node.gres if g.name == "gpu" and (not gpu_type or g.type == gpu_type))
    features_ok = constraint_met(parse_constraint(spec.constraint), node.features)
    return (node.cpus >= spec.cpus_on_node(index)
            and node.real_memory >= spec.mem_on_node(index, cfg.def_mem_per_cpu, 0)
            and gpus >= gpus_needed and features_ok)


def check_access(cfg: Config, spec: JobSpec, part: Partition, reservations: dict) -> None:
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
        if not resv.admits(spec.user, spec.account) and spec.uid != 0:
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


def validate_spec(cfg: Config, spec: JobSpec, reservations: dict | None = None) -> tuple[Partition, int]:
    """Check spec against configuration; returns (partition, effective time limit in minutes)."""
    for g in spec.gres:
        if g.name != "gpu" or g.count < 0:
            raise InvalidRequest("Invalid generic resource (gres) specification")
    if spec.num_nodes < 1 or spec.num_tasks < 1 or spec.cpus_per_task < 1:
        raise InvalidRequest("Invalid node, task or CPU count")
    part = resolve_partition(cfg, spec)
    check_access(cfg, spec, part, reservations or {})
    limit = effective_time_limit(spec, part)
    nodes = [cfg.nodes[n] for n in part.nodes]
    if spec.nodelist:
        wanted = set(expand(spec.nodelist))
        unknown = wanted - set(cfg.nodes)
        if unknown:
            raise InvalidRequest("Invalid node name specified")
        nodes = [n for n in nodes if n.name in wanted]
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


def _enough_nodes(nodes: list[NodeConfig], spec: JobSpec, cfg: Config) -> bool:
    """Are there num_nodes distinct nodes able to hold the job, node index by node index?"""
    used: set[str] = set()
    for index in range(spec.num_nodes):
        fit = next((n for n in nodes if n.name not in used and node_can_hold(n, spec, index, cfg)), None)
        if fit is None:
            return False
        used.add(fit.name)
    return True
