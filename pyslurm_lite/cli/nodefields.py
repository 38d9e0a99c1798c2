"""Node facts as sinfo and scontrol print them, computed from a Node message (or dataclass).

Owns: the state words (IDLE+DRAIN, drng, allocated*...), the order sinfo sorts states in,
sinfo's per-node % letters and scontrol's node record. Must not: talk to the controller.

Node state follows Slurm's node_state_string(): the DRAIN flag wins over the base state (a DOWN
node that is also drained prints "drain"), and a node that does not respond gets a '*'.
"""

from __future__ import annotations

import os

from ..units import format_timestamp

# Slurm's numeric node states and flags: sinfo's default sort ("#P,-t") orders groups by them,
# highest first, so drained and silent nodes come before busy ones, busy before idle.
_STATE_NUM = {"UNKNOWN": 0, "DOWN": 1, "IDLE": 2, "ALLOCATED": 3, "MIXED": 5}
_FLAG_DRAIN = 0x200
_FLAG_NO_RESPOND = 0x800

_COMPACT = {"IDLE": "idle", "MIXED": "mix", "ALLOCATED": "alloc", "DOWN": "down", "UNKNOWN": "unk"}
_LONG = {"IDLE": "idle", "MIXED": "mixed", "ALLOCATED": "allocated", "DOWN": "down",
         "UNKNOWN": "unknown"}

# sinfo's column headers, by % letter.
HEADERS = {
    "a": "AVAIL", "A": "NODES(A/I)", "b": "ACTIVE_FEATURES", "B": "MAX_CPUS_PER_NODE",
    "c": "CPUS", "C": "CPUS(A/I/O/T)", "d": "TMP_DISK", "D": "NODES", "e": "FREE_MEM",
    "E": "REASON", "f": "AVAIL_FEATURES", "F": "NODES(A/I/O/T)", "g": "GROUPS", "G": "GRES",
    "h": "OVERSUBSCRIBE", "H": "TIMESTAMP", "I": "PRIO_JOB_FACTOR", "l": "TIMELIMIT",
    "L": "DEFAULTTIME", "m": "MEMORY", "M": "PREEMPT_MODE", "n": "HOSTNAMES", "N": "NODELIST",
    "o": "NODE_ADDR", "O": "CPU_LOAD", "p": "PRIO_TIER", "P": "PARTITION", "r": "ROOT",
    "R": "PARTITION", "s": "JOB_SIZE", "S": "ALLOCNODES", "t": "STATE", "T": "STATE",
    "u": "USER", "U": "USER", "v": "VERSION", "V": "CLUSTER", "w": "WEIGHT", "X": "SOCKETS",
    "Y": "CORES", "z": "S:C:T", "Z": "THREADS",
}


def _is_busy(node) -> bool:
    return node.state in ("ALLOCATED", "MIXED")


def is_other(node) -> bool:
    """Counted as 'O' (other) in A/I/O/T: not usable for new work."""
    return node.drain or node.state in ("DOWN", "UNKNOWN") or not node.responding


def display_state(node) -> str:
    """scontrol's State=: IDLE, MIXED+DRAIN, DOWN+NOT_RESPONDING ... (flags in Slurm's order)."""
    parts = [node.state]
    if node.drain:
        parts.append("DRAIN")
    if not node.responding:
        parts.append("NOT_RESPONDING")
    return "+".join(parts)


def compact_state(node) -> str:
    """sinfo %t: idle, mix, alloc, down, drain, drng, unk; '*' when not responding."""
    if node.drain:
        word = "drng" if _is_busy(node) else "drain"
    else:
        word = _COMPACT.get(node.state, node.state.lower())
    return word + ("" if node.responding else "*")


def long_state(node) -> str:
    """sinfo %T: idle, mixed, allocated, drained, draining, down, unknown; '*' when silent."""
    if node.drain:
        word = "draining" if _is_busy(node) else "drained"
    else:
        word = _LONG.get(node.state, node.state.lower())
    return word + ("" if node.responding else "*")


def state_rank(node) -> int:
    """Slurm's numeric node_state, for sinfo's "-t" (decreasing state) sort."""
    return (_STATE_NUM.get(node.state, 0) + (_FLAG_DRAIN if node.drain else 0)
            + (0 if node.responding else _FLAG_NO_RESPOND))


STATE_WORDS = sorted(set(_COMPACT.values()) | set(_LONG.values()) | {
    "drain", "drained", "draining", "drng", "no_respond", "not_responding", "responding"})


def valid_state(word: str) -> bool:
    w = word.lower()
    return any(s.startswith(w) for s in STATE_WORDS)


def matches_state(node, wanted: str) -> bool:
    """sinfo -t: a state name (compact or long, any case, prefix as Slurm allows) or flag."""
    w = wanted.lower()
    if w == "drain":
        return node.drain
    if w == "drained":
        return node.drain and not _is_busy(node)
    if w in ("draining", "drng"):
        return node.drain and _is_busy(node)
    if w in ("no_respond", "not_responding"):
        return not node.responding
    if w in ("responding",):
        return node.responding
    if node.drain and w.startswith("idle"):
        return False  # Slurm: an idle node that is drained is "drained", not "idle"
    base = node.state.lower()
    return (_COMPACT.get(node.state, base).startswith(w) or base.startswith(w)
            or _LONG.get(node.state, base).startswith(w))


def cores_per_socket(cfg) -> int:
    """CoresPerSocket, derived from CPUs when slurm.conf leaves it out (as Slurm does)."""
    return cfg.cores_per_socket or max(cfg.cpus // max(cfg.sockets * cfg.threads_per_core, 1), 1)


def gres_text(cfg) -> str:
    """Gres= / %G: gpu:4, gpu:a100:2,gpu:t4:2 or (null)."""
    items = [":".join([g.name] + ([g.type] if g.type else []) + [str(g.count)]) for g in cfg.gres]
    return ",".join(items) or "(null)"


# gres/shard and gres/mps as sched/sharing.py has them; the CLIs do not import the scheduler
# (its package costs them 0.4 s a start)
SHARING = ("shard", "mps")


def whole_gpus(a) -> list[int]:
    """The GPUs an allocation holds whole (gres/gpu); none when it holds shares of one."""
    return [] if a.share_name else list(a.gpus)


def share_request(gres) -> tuple[str, int]:
    """('shard', 3) for --gres=shard:3; ('', 0) when the job shares no GPU."""
    return next(((g.name, g.count) for g in gres if g.name in SHARING), ("", 0))


def gres_used_text(node) -> str:
    """sinfo -O GresUsed: per configured gres, how many are allocated and which indices, as
    Slurm's gres_get_node_used(): gpu:a100:2(IDX:0-1),gpu:t4:0(IDX:N/A); (null) without gres.
    A GPU whose shards (or mps) are in use is not counted as gres/gpu: gpu:0(IDX:N/A),shard:3."""
    if not node.config.gres:
        return "(null)"
    alloc = set(node.alloc_gpus) - {s.index for s in node.alloc_shares}
    items = []
    for g in node.config.gres:
        if g.name in SHARING:
            items.append(_share_used(node, g.name))
            continue
        if g.name != "gpu":
            items.append(f"{g.name}:0")  # only GPUs, shards and mps are allocated here
            continue
        devices = [d.index for d in node.gpus if not g.type or d.type == g.type] if node.gpus \
            else sorted(alloc)  # not registered since the controller started: the indices held
        ids = sorted(i for i in devices if i in alloc)
        label = ":".join(["gpu"] + ([g.type] if g.type else []) + [str(len(ids))])
        items.append(f"{label}(IDX:{index_ranges(ids) or 'N/A'})")
    return ",".join(items)


def _share_used(node, name: str) -> str:
    """shard:3: the shards (or mps) in use. Slurm 22.05's _node_gres_used() adds (IDX:...) only
    for gres with device files of their own; shards and mps here have none (gres.conf gives
    them a Count), so the GPUs they are on show in the job's scontrol -d GRES= instead."""
    return f"{name}:{sum(s.count for s in node.alloc_shares if s.name == name)}"


def shares_of(gres) -> dict[str, int]:
    """{'gres/shard': 8} from a node's configured Gres (its CfgTRES)."""
    out: dict[str, int] = {}
    for g in gres:
        if g.name in SHARING:
            out[f"gres/{g.name}"] = out.get(f"gres/{g.name}", 0) + g.count
    return out


def index_ranges(ids: list[int]) -> str:
    """[0, 1, 3] -> '0-1,3', as Slurm's bit_fmt."""
    out, start = [], None
    for i, n in enumerate(ids):
        if start is None:
            start = n
        if i + 1 == len(ids) or ids[i + 1] != n + 1:
            out.append(f"{start}-{n}" if n != start else str(n))
            start = None
    return ",".join(out)


def gpu_total(cfg) -> int:
    return sum(g.count for g in cfg.gres if g.name == "gpu")


def cpus_aiot(node) -> tuple[int, int, int, int]:
    """CPUs allocated/idle/other/total: an unusable node's free CPUs count as 'other'."""
    total, alloc = node.config.cpus, node.alloc_cpus
    free = max(total - alloc, 0)
    return (alloc, 0, free, total) if is_other(node) else (alloc, free, 0, total)


def nodes_aiot(node) -> tuple[int, int, int, int]:
    """One node as allocated/idle/other/total, for %F and sinfo -s."""
    if is_other(node):
        return (0, 0, 1, 1)
    return (1, 0, 0, 1) if _is_busy(node) else (0, 1, 0, 1)


def reason_text(node) -> str:
    return node.reason or "none"


def node_field(node, letter: str) -> str:
    """One node's value for a sinfo % letter; '' for letters that are not per node."""
    cfg = node.config
    simple = {
        "c": lambda: str(cfg.cpus), "d": lambda: "0", "E": lambda: reason_text(node),
        "f": lambda: ",".join(cfg.features) or "(null)", "G": lambda: gres_text(cfg),
        "m": lambda: str(cfg.real_memory), "n": lambda: cfg.name, "o": lambda: cfg.addr or cfg.name,
        "t": lambda: compact_state(node), "T": lambda: long_state(node),
        "w": lambda: str(cfg.weight), "X": lambda: str(cfg.sockets),
        "Y": lambda: str(cores_per_socket(cfg)), "Z": lambda: str(cfg.threads_per_core),
        "z": lambda: f"{cfg.sockets}:{cores_per_socket(cfg)}:{cfg.threads_per_core}",
        "v": lambda: node.agent_version or "N/A",
        "H": lambda: format_timestamp(node.reason_time) if node.reason else "Unknown",
        # The controller keeps no reason uid; only operators (root) may set a reason.
        "u": lambda: "root" if node.reason else "Unknown",
        "U": lambda: "root(0)" if node.reason else "Unknown",
        "b": lambda: ",".join(cfg.features) or "(null)",
        "O": lambda: f"{node.cpu_load:.2f}" if node.responding else "N/A",
        "e": lambda: str(node.free_memory) if node.responding else "N/A",
        "allocmem": lambda: str(node.alloc_mem), "gresused": lambda: gres_used_text(node),
        "port": lambda: str(cfg.port or 0), "statecomplete": lambda: display_state(node).lower(),
    }
    fn = simple.get(letter)
    return fn() if fn else ""


# ---- scontrol show node --------------------------------------------------------------------
def tres_text(cpus: int, mem: int, nodes: int | None, gpus: int, billing: bool = True,
              shares: dict[str, int] | None = None, billed: int = 0) -> str:
    """CfgTRES/AllocTRES/TRES text in Slurm's order: cpu, mem, node, billing, gres/gpu, then
    gres/mps and gres/shard (shares: {'gres/shard': 3}; TRES ids follow the names' order).
    billing: `billed` (a job's, under TRESBillingWeights) or else the CPUs."""
    from ..units import format_memory
    parts = [f"cpu={cpus}", f"mem={format_memory(mem)}"]
    parts += [f"node={nodes}"] if nodes is not None else []
    parts += [f"billing={billed or cpus}"] if billing else []
    parts += [f"gres/gpu={gpus}"] if gpus else []
    parts += [f"{k}={v}" for k, v in sorted((shares or {}).items()) if v]
    return ",".join(parts)


def alloc_shares(allocations) -> dict[str, int]:
    """{'gres/shard': 3}: the shards (or mps) some allocations hold, as AllocTRES counts them."""
    out: dict[str, int] = {}
    for a in allocations:
        if a.share_name:
            key = f"gres/{a.share_name}"
            out[key] = out.get(key, 0) + sum(a.shares)
    return out


def node_record(node, now: float, cfg, partitions: list[str]) -> list[str]:
    """scontrol show node: one node's lines in Slurm 22.05's order."""
    c = node.config
    port = f" Port={c.port}" if c.port and c.port != cfg.slurmd_port else ""
    version = f" Version={node.agent_version}" if node.agent_version else ""
    load = f"{node.cpu_load:.2f}" if node.responding else "N/A"
    free = str(node.free_memory) if node.responding else "N/A"
    # The controller keeps no last-busy time: a busy node is busy now, an idle one unknown.
    busy = format_timestamp(now) if node.alloc_cpus else "Unknown"
    shared = {f"gres/{name}": sum(u.count for u in node.alloc_shares if u.name == name)
              for name in SHARING}
    whole = len(set(node.alloc_gpus) - {u.index for u in node.alloc_shares})
    alloc = tres_text(node.alloc_cpus, node.alloc_mem, None, whole, billing=False,
                      shares=shared) if node.alloc_cpus else ""
    cfg_shares = shares_of(c.gres)
    lines = [f"NodeName={c.name}{_arch(node)} CoresPerSocket={cores_per_socket(c)} ",
             f"CPUAlloc={node.alloc_cpus} CPUEfctv={c.cpus} CPUTot={c.cpus} CPULoad={load}",
             f"AvailableFeatures={','.join(c.features) or '(null)'}",
             f"ActiveFeatures={','.join(c.features) or '(null)'}",
             f"Gres={gres_text(c)}",
             f"NodeAddr={c.addr or c.name} NodeHostName={c.name}{port}{version}"]
    lines += [f"OS={_os_text()} "] if node.responding else []
    lines += [f"RealMemory={c.real_memory} AllocMem={node.alloc_mem} FreeMem={free} "
              f"Sockets={c.sockets} Boards=1",
              f"State={display_state(node)} ThreadsPerCore={c.threads_per_core} TmpDisk=0 "
              f"Weight={c.weight} Owner=N/A MCS_label=N/A"]
    lines += [f"Partitions={','.join(partitions)} "] if partitions else []
    boot = f"BootTime={format_timestamp(node.boot_time)} " if node.boot_time else "BootTime=None "
    lines += [boot + "SlurmdStartTime=None", f"LastBusyTime={busy}",
              f"CfgTRES={tres_text(c.cpus, c.real_memory, None, gpu_total(c), shares=cfg_shares)}",
              f"AllocTRES={alloc}",
              "CapWatts=n/a", "CurrentWatts=0 AveWatts=0",
              "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s"]
    if node.reason:
        # The controller records no reason uid; only an operator (root) may set one.
        lines.append(f"Reason={node.reason} [root@{format_timestamp(node.reason_time)}]")
    notes = _gpu_notes(node, cfg)
    lines += [f"Comment={'; '.join(notes)}"] if notes else []
    return lines


def _gpu_notes(node, cfg) -> list[str]:
    """Ours, in Slurm's Comment= field: GPUs busy outside jobs (ForeignGpuAction says whether
    they are still scheduled) and GPUs out of scheduling for a fault (GpuHealthAction=gpu)."""
    notes = []
    if node.foreign_gpus:
        pids = ",".join(str(p) for f in node.foreign_gpus for p in f.pids)
        kept = ("kept out of scheduling" if cfg.foreign_gpu_action == "exclude"
                else "still scheduled (ForeignGpuAction=report)")
        notes.append(f"GPU(s) {','.join(str(f.index) for f in node.foreign_gpus)} used by "
                     f"processes no job started (pids {pids or 'unknown'}), {kept}")
    if node.gpu_faults:
        faults = ", ".join(f"gpu {f.index}: {f.detail or f.kind}" for f in node.gpu_faults)
        notes.append(f"GPU fault(s) {faults}, out of scheduling until the node is resumed")
    return notes


def _arch(node) -> str:
    # Agents do not report Arch/OS; a lab's nodes run the build this CLI runs on, so the local
    # values stand in for a node that answers, and are left out (as Slurm does) for one that
    # does not.
    return f" Arch={os.uname().machine}" if node.responding else ""


def _os_text() -> str:
    u = os.uname()
    return f"{u.sysname} {u.release} {u.version}"
