"""sreport's two reports here: `cluster Utilization` and `user TopUsage`, Slurm 22.05's columns,
default formats and widths (cluster_reports.c, user_reports.c); the figures from
cli/sreport_usage.py over the controller's job records and nodes."""

from __future__ import annotations

import pwd
import sys
import time

from . import sreport_usage as su
from .sreport import Col, Opts, columns, header_lines, parse_conditions, render, show_time, title, \
    usage_width

# Format words: (full name, shortest prefix, column name, width, kind), in sreport's order of checks.
CLUSTER_TABLE = [
    ("accounts", 2, "Account", 15, "str"), ("allocated", 2, "Allocated", 12, "time"),
    ("cluster", 2, "Cluster", 9, "str"), ("down", 1, "Down", 10, "time"),
    ("idle", 1, "Idle", 12, "time"), ("login", 1, "Login", 9, "str"),
    ("overcommitted", 1, "Over Comm", 9, "time"), ("planneddown", 2, "PLND Down", 10, "time"),
    ("proper", 2, "Proper Name", 15, "str"), ("reported", 3, "Reported", 12, "time"),
    ("reserved", 3, "Planned", 9, "time"), ("trescount", 5, "TRES Count", 10, "count"),
    ("cpucount", 2, "TRES Count", 10, "count"), ("count", 2, "TRES Count", 10, "count"),
    ("tresname", 5, "TRES Name", 14, "str"), ("used", 1, "Used", 10, "time"),
    ("wckey", 2, "WCKey", 15, "str"), ("energy", 1, "Energy", 10, "time"),
]
USER_TABLE = [
    ("accounts", 1, "Account", 15, "str"), ("cluster", 1, "Cluster", 9, "str"),
    ("energy", 1, "Energy", 10, "time"), ("login", 1, "Login", 9, "str"),
    ("proper", 1, "Proper Name", 15, "str"), ("tresname", 5, "TRES Name", 14, "str"),
    ("used", 1, "Used", 10, "time"),
]
# The quantity each of cluster Utilization's time columns shows, and what its percent is of.
UTIL_VALUE = {"allocated": "allocated", "down": "down", "idle": "idle", "planneddown": "planned_down",
              "reserved": "planned", "reported": "reported", "energy": None, "overcommitted": None}


def _ours(names: list[str], cluster: str) -> bool:
    return not names or cluster.lower() in (n.lower() for n in names)


def fetch(client, window: tuple[float, float], wanted: bool):
    """(model Jobs overlapping the window, model Nodes, the controller's now)."""
    if not wanted:
        return [], [], time.time()
    from ..model import Job
    from ..rpc import wire
    runs, now = client.job_history(start=window[0], end=window[1])
    nodes, _ = client.nodes(raw=False)
    return [wire.from_msg(r.job, Job) for r in runs], nodes, now


def node_billing(cfg):
    """A node's billing: its TRES weighted by the partitions it is in (the largest), as Slurm
    sets a node's billing TRES; no weights: its CPUs."""
    from ..controller.usage import billing

    def billing_of(node, counts) -> float:
        weights = [p.tres_billing_weights for p in cfg.partitions.values()
                   if node.name in p.nodes and p.tres_billing_weights]
        return max((billing(counts, w, cfg.priority_flags) for w in weights), default=counts["cpu"])
    return billing_of


# ---- cluster Utilization ----------------------------------------------------------------------
def cluster_utilization(words: list[str], o: Opts) -> int:
    from ..client import Client
    client = Client()
    cluster = client.cfg.cluster_name
    c = parse_conditions(words, o, time.time(), for_users=False)
    window = su.report_window(c.start, c.end, time.time())
    fmt = c.format or (["Cl", "TresName", "al", "d", "planned", "i", "res", "rep"] if o.tres_given
                       else ["Cl", "al", "d", "planned", "i", "res", "rep"])
    cols = columns(fmt, CLUSTER_TABLE, o)
    jobs, nodes, now = fetch(client, window, _ours(c.clusters + o.clusters, cluster))
    util = su.utilization(jobs, nodes, window, now, node_billing(client.cfg),
                          lambda spec: su.request_counts(spec, client.cfg.def_mem_per_cpu,
                                                         client.cfg.def_mem_per_node))
    shown = [t for t in o.tres if t in util] if nodes else []
    _size_time_columns(cols, [util[t] for t in shown], o)
    out = title(o, "Cluster Utilization", window) + header_lines(cols, o)
    seconds = window[1] - window[0]
    for t in shown:
        out.append(render(cols, [_util_cell(col, t, util[t], cluster, seconds, o) for col in cols], o))
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def _size_time_columns(cols: list[Col], rows: list[su.Utilization], o: Opts) -> None:
    for col in cols:
        attr = UTIL_VALUE.get(col.key, "")
        if attr == "":
            continue
        col.width = usage_width(max((getattr(u, attr) for u in rows), default=0) if attr else 0, o)


def _util_cell(col: Col, tres: str, u: su.Utilization, cluster: str, seconds: float, o: Opts) -> str:
    if col.key == "cluster":
        return cluster
    if col.key == "tresname":
        return tres
    if col.kind == "count":
        return str(int(u.count))
    if col.key == "reported":
        return show_time(u.reported, u.count * seconds, o)
    if col.kind == "time":
        attr = UTIL_VALUE.get(col.key)
        return show_time(getattr(u, attr) if attr else 0, u.reported, o)
    return ""


# ---- user TopUsage ----------------------------------------------------------------------------
def user_top(words: list[str], o: Opts) -> int:
    from ..client import Client
    client = Client()
    cluster = client.cfg.cluster_name
    c = parse_conditions(words, o, time.time(), for_users=True)
    window = su.report_window(c.start, c.end, time.time())
    fmt = c.format or (["Cl", "L", "P", "A", "TresName", "Used"] if o.tres_given
                       else ["Cl", "L", "P", "A", "U", "Energy"])
    cols = columns(fmt, USER_TABLE, o)
    jobs, nodes, now = fetch(client, window, _ours(c.clusters + o.clusters, cluster))
    rows = su.sort_users(su.top_users(jobs, window, now, c.group, c.users, c.accounts),
                         o.tres[0], o.sort_by_time)[:c.top]
    capacity = {t: 0.0 for t in su.COUNTED}
    for node in nodes:
        for t, n in su.node_counts(node, node_billing(client.cfg)).items():
            capacity[t] += n * (window[1] - window[0])
    _size_user_columns(cols, rows, o)
    extra = f" ({int(window[1] - window[0])} secs)"
    out = title(o, f"Top {c.top} Users", window, extra) + header_lines(cols, o)
    for row in rows:
        for t in o.tres:
            out.append(render(cols, [_user_cell(col, t, row, cluster, capacity, o) for col in cols], o))
    sys.stdout.write("".join(line + "\n" for line in out))
    return 0


def _size_user_columns(cols: list[Col], rows: list[su.UserUsage], o: Opts) -> None:
    """sreport_set_usage_column_width: from the top user (with an Energy column: its CPU)."""
    first = rows[0].seconds if rows else {}
    with_energy = any(col.key == "energy" for col in cols)
    largest = first.get("cpu", 0.0) if with_energy else max((first.get(t, 0.0) for t in o.tres),
                                                             default=0.0)
    for col in cols:
        if col.key == "used":
            col.width = usage_width(largest, o)
        elif col.key == "energy":
            col.width = usage_width(0, o)


def _user_cell(col: Col, tres: str, row: su.UserUsage, cluster: str, capacity, o: Opts) -> str:
    if col.key == "cluster":
        return cluster
    if col.key == "login":
        return row.user
    if col.key == "proper":
        return proper_name(row.user)
    if col.key == "accounts":
        return ", ".join(row.accounts)
    if col.key == "tresname":
        return tres
    if col.key == "used":
        return show_time(row.seconds.get(tres, 0.0), capacity.get(tres, 0.0), o)
    return show_time(0, 0, o)  # Energy: no energy is gathered here


def proper_name(user: str) -> str:
    """The GECOS field's first part, as sreport prints a user's proper name."""
    try:
        gecos = pwd.getpwnam(user).pw_gecos
    except KeyError:
        return ""
    return gecos.split(",")[0]
