"""Node, Partition, Reservation, sdiag's counters and controller pings -> their v0.0.42 shapes.

    Node(config=NodeConfig(name="node1", cpus=2, gres=[gpu:4]), state=IDLE, drain=True)
    -> {"name": "node1", "state": ["IDLE", "DRAIN"], "cpus": 2, "gres": "gpu:4", ...}
"""

from __future__ import annotations

from ...cli.nodefields import cores_per_socket, gres_text, gres_used_text
from ...hostlists import collect
from ...model import UNLIMITED, Node, Partition, Reservation
from .common import csv, epoch, minutes, number, unset

# v0.0.42_reservation_info's flag names (ours are a subset, spelled the same)
RESERVATION_FLAGS = frozenset((
    "MAINT", "NO_MAINT", "DAILY", "NO_DAILY", "WEEKLY", "NO_WEEKLY", "IGNORE_JOBS",
    "NO_IGNORE_JOBS", "ANY_NODES", "STATIC", "NO_STATIC", "PART_NODES", "NO_PART_NODES",
    "OVERLAP", "SPEC_NODES", "TIME_FLOAT", "REPLACE", "ALL_NODES", "PURGE_COMP", "WEEKDAY",
    "WEEKEND", "FLEX", "MAGNETIC", "USER_DELETE", "NO_HOLD_JOBS_AFTER", "NO_USER_DELETE",
))


def node(n: Node, partitions: list[str]) -> dict:
    c = n.config
    return {
        "name": c.name, "hostname": c.name, "address": c.addr or c.name, "port": c.port,
        "state": node_states(n), "reason": n.reason, "reason_changed_at": epoch(n.reason_time),
        "cpus": c.cpus, "effective_cpus": c.cpus, "alloc_cpus": n.alloc_cpus,
        "alloc_idle_cpus": max(c.cpus - n.alloc_cpus, 0), "boards": 1, "sockets": c.sockets,
        "cores": cores_per_socket(c), "threads": c.threads_per_core,
        "real_memory": c.real_memory, "alloc_memory": n.alloc_mem,
        "free_mem": number(n.free_memory) if n.free_memory else unset(),
        "cpu_load": int(n.cpu_load * 100),  # Slurm's CPULoad is hundredths
        "features": csv(c.features), "active_features": csv(c.features),
        "gres": _null_to_empty(gres_text(c)), "gres_used": _null_to_empty(gres_used_text(n)),
        "gres_drained": "", "partitions": csv(partitions), "weight": c.weight,
        "boot_time": epoch(n.boot_time), "last_busy": unset(), "version": n.agent_version,
        "tres": _node_tres(n),
    }


def node_states(n: Node) -> list[str]:
    """The base state, then Slurm's flags: DRAIN, NOT_RESPONDING."""
    states = [n.state.value]
    if n.drain:
        states.append("DRAIN")
    if not n.responding and n.state.value != "DOWN":
        states.append("NOT_RESPONDING")
    return states


def _null_to_empty(value: str) -> str:
    return "" if value == "(null)" else value


def _node_tres(n: Node) -> str:
    c = n.config
    gpus = sum(g.count for g in c.gres if g.name == "gpu")
    return f"cpu={c.cpus},mem={c.real_memory}M,billing={c.cpus}" + \
        (f",gres/gpu={gpus}" if gpus else "")


def partition(p: Partition, cpus_total: int) -> dict:
    """cpus_total: the CPUs of its nodes, summed by the caller (it has the nodes)."""
    return {
        "name": p.name, "cluster": "",
        "nodes": {"allowed_allocation": "", "configured": collect(p.nodes) if p.nodes else "",
                  "total": len(p.nodes)},
        "accounts": {"allowed": ",".join(p.allow_accounts), "deny": ""},
        "groups": {"allowed": ",".join(p.allow_groups)},
        "cpus": {"task_binding": 0, "total": cpus_total},
        "defaults": {"time": minutes(p.default_time)},
        "maximums": {"time": minutes(p.max_time),
                     "nodes": number(0, infinite=True) if p.max_nodes == UNLIMITED
                     else number(p.max_nodes)},
        "priority": {"job_factor": p.priority_job_factor, "tier": p.priority_tier},
        "partition": {"state": [p.state.upper()]}, "grace_time": p.grace_time,
        "tres": {"billing_weights": ",".join(f"{k}={v}" for k, v in
                                             sorted(p.tres_billing_weights.items())),
                 "configured": ""},
    }


def reservation(r: Reservation) -> dict:
    return {"name": r.name, "node_list": collect(r.nodes) if r.nodes else "",
            "node_count": len(r.nodes), "start_time": epoch(r.start_time),
            "end_time": epoch(r.end_time), "users": ",".join(r.users),
            "accounts": ",".join(r.accounts), "partition": "",
            "flags": [f for f in r.flags if f in RESERVATION_FLAGS]}


def statistics(d) -> dict:
    """sdiag's counters (a GetDiagReply) as v0.0.42_stats_msg; what we do not count is left out."""
    mean = d.total_cycle_us // d.cycles if d.cycles else 0
    return {"req_time": epoch(d.now), "req_time_start": epoch(d.since),
            "jobs_submitted": d.jobs_submitted, "jobs_started": d.jobs_started,
            "jobs_completed": d.jobs_completed, "jobs_canceled": d.jobs_canceled,
            "jobs_failed": d.jobs_failed, "jobs_pending": d.jobs_pending,
            "jobs_running": d.jobs_running, "schedule_cycle_max": d.max_cycle_us,
            "schedule_cycle_last": d.last_cycle_us, "schedule_cycle_sum": d.total_cycle_us,
            "schedule_cycle_total": d.cycles, "schedule_cycle_mean": mean,
            "schedule_queue_length": d.last_queue_length,
            "bf_backfilled_jobs": d.backfilled_jobs}


def ping(hostname: str, index: int, count: int, reply, latency_us: int) -> dict:
    """Controller `index` of `count` (SlurmctldHost= order); reply is its PingReply, None when
    it did not answer. Modes as scontrol ping names them."""
    mode = "primary" if index == 0 else "backup" if count == 2 else f"backup{index}"
    return {"hostname": hostname, "pinged": "UP" if reply is not None else "DOWN",
            "responding": reply is not None, "latency": latency_us, "mode": mode,
            "primary": index == 0}
