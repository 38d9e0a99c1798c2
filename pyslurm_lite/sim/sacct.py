"""A lab's own accounting history as replay input: `sacct --parsable2` output -> Records.

Owns reading sacct's pipe-separated text (the header line names the fields, in any order, as
real Slurm 22.05 and pyslurm-lite's sacct both print it); nothing else in sim/ interprets sacct
fields. Only the job line of each job is read: step lines (123.batch, 123.0, 123.extern, there
when -X was not given) are passed over.

    JobID|User|Account|Partition|QOS|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|ReqMem|ReqTRES|State
    42|ann|lab|gpu|normal|2026-01-05T10:00:00|2026-01-05T10:02:00|2026-01-05T11:02:00|01:00:00|\
02:00:00|2|8|4G|billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=8G,node=2|COMPLETED
    -> Record(job_id="42", submit=..., run=3600, limit=120, nodes=2, cpus=8, mem=4096 (per node),
              gpus=1 (per node), gpu_type="a100", partition="gpu", ...)

Rules:
  resources  ReqTRES (what was asked: cpu, mem for the whole job, node, gres/gpu[:type]) where it
             is given, else NCPUS / NNodes / ReqMem (per node; older Slurm's 4000Mc is per CPU);
  run        End - Start, else Elapsed; the replay caps it at the limit;
  limit      Timelimit in minutes; UNLIMITED -> -1; Partition_Limit (or no column) -> None:
             the replayed partition's own limit decides;
  skipped    never started (Start Unknown, PENDING, CANCELLED before it started: Start = End)
             and still running (End Unknown): counted, not replayed.
Times are local, as sacct prints them; only differences between them matter here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime

from ..errors import InvalidRequest
from ..units import parse_duration_seconds, parse_memory, parse_time_limit

REQUIRED = ("JobID", "Submit", "Start")  # and End or Elapsed, and NCPUS or ReqTRES
UNSET = {"", "unknown", "none", "n/a"}  # sacct's spellings of a time never reached
_STEP = re.compile(r"^[0-9_+\[\]-]+\.")  # 123.batch, 123_4.0, 123+1.extern
_MEM = re.compile(r"^([0-9.]+[KMGTP]?)([nc]?)$", re.IGNORECASE)


@dataclass(frozen=True)
class Record:
    """One job as it ran: what the replay submits again."""

    job_id: str  # sacct's JobID: 123, 123_4 (array task), 123+0 (heterogeneous component)
    submit: int  # epoch seconds
    run: int  # seconds it held its allocation
    limit: int | None  # minutes; -1 unlimited; None: the partition's limit
    nodes: int
    cpus: int  # over all its nodes
    mem: int  # MiB per node
    gpus: int = 0  # per node
    gpu_type: str = ""
    partition: str = ""
    qos: str = ""
    user: str = ""
    account: str = ""
    constraint: str = ""  # --constraint, when the Constraints column is there

    @property
    def cpus_per_node(self) -> tuple[int, ...]:
        """Its CPUs spread over its nodes, the first nodes taking the remainder."""
        base, extra = divmod(self.cpus, self.nodes)
        return tuple(base + (1 if i < extra else 0) for i in range(self.nodes))


@dataclass
class History:
    name: str
    records: list[Record] = field(default_factory=list)
    never_started: int = 0
    still_running: int = 0
    het_components: int = 0  # heterogeneous jobs' components: replayed as jobs of their own


def read(path: str) -> History:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InvalidRequest(f"cannot read sacct output {path}: {e.strerror or e}") from None
    return parse(text, path)


def parse(text: str, where: str = "sacct") -> History:
    """sacct --parsable2 text (header first) -> History, sorted by submit time (file order among
    equals); a one-line error naming the line for anything malformed."""
    lines = text.splitlines()
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise InvalidRequest(f"{where}: empty: expected sacct --parsable2 output with its header")
    columns = _header(lines[first], where, first + 1)
    history = History(name=where)
    for number, line in enumerate(lines[first + 1:], first + 2):
        if not line.strip():
            continue
        if line.endswith("|") and line.count("|") == len(columns):  # --parsable: a closing '|'
            line = line[:-1]
        fields = line.split("|")
        if len(fields) != len(columns):
            raise InvalidRequest(f"{where}:{number}: {len(fields)} fields where the header has "
                                 f"{len(columns)}")
        row = dict(zip(columns, fields))
        if _STEP.match(row["jobid"]):
            continue
        record = _record(row, f"{where}:{number}", history)
        if record is not None:
            history.records.append(record)
    history.records.sort(key=lambda r: r.submit)  # stable: file order among equal submits
    return history


def _header(line: str, where: str, number: int) -> list[str]:
    # --parsable (not 2) ends every line with '|': the empty last name is that, not a field
    names = [n.strip().lower() for n in line.rstrip("|").split("|")]
    have = set(names)
    missing = [c for c in REQUIRED if c.lower() not in have]
    if "end" not in have and "elapsed" not in have:
        missing.append("End or Elapsed")
    if "ncpus" not in have and "reqtres" not in have:
        missing.append("NCPUS or ReqTRES")
    if missing:
        raise InvalidRequest(f"{where}:{number}: not a sacct --parsable2 header with the columns "
                             f"the replay needs: missing {', '.join(missing)}")
    return names


def _record(row: dict, where: str, history: History) -> Record | None:
    state = row.get("state", "").split(" ")[0].upper()  # "CANCELLED by 0"
    submit, start = _time(row, "submit", where), _time(row, "start", where)
    end = _time(row, "end", where) if "end" in row else None
    if submit is None:
        raise InvalidRequest(f"{where}: no Submit time")
    if start is None or state == "PENDING" or (state.startswith("CANCELLED") and end == start):
        history.never_started += 1
        return None
    if state in ("RUNNING", "SUSPENDED", "COMPLETING") or ("end" in row and end is None):
        history.still_running += 1
        return None
    if "+" in row["jobid"]:
        history.het_components += 1
    run = end - start if end is not None else _duration(row.get("elapsed", ""), "Elapsed", where)
    tres = _tres(row.get("reqtres", ""), where)
    nodes = int(tres.get("node") or _count(row, "nnodes", where) or 1)
    cpus = int(tres.get("cpu") or _count(row, "ncpus", where) or nodes)
    if nodes > MAX_COUNT or cpus > MAX_COUNT:
        raise InvalidRequest(f"{where}: {nodes} nodes / {cpus} CPUs is more than any cluster "
                             f"(at most {MAX_COUNT})")
    mem = _mem_per_node(row, tres, nodes, cpus, where)
    gpus, gpu_type = _gpus(tres)
    return Record(job_id=row["jobid"], submit=submit, run=max(int(run), 0),
                  limit=_limit(row.get("timelimit", ""), where), nodes=nodes,
                  cpus=max(cpus, nodes), mem=mem, gpus=-(-gpus // nodes), gpu_type=gpu_type,
                  partition=row.get("partition", ""), qos=row.get("qos", ""),
                  user=row.get("user", ""), account=row.get("account", ""),
                  constraint=row.get("constraints", ""))


def _time(row: dict, key: str, where: str) -> int | None:
    text = row.get(key, "").strip()
    if text.lower() in UNSET:
        return None
    try:
        return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp())
    except ValueError:
        raise InvalidRequest(f"{where}: bad {key.capitalize()} time {text!r} "
                             "(expected YYYY-MM-DDTHH:MM:SS)") from None


def _duration(text: str, name: str, where: str) -> int:
    try:
        return parse_duration_seconds(text)
    except InvalidRequest:
        raise InvalidRequest(f"{where}: bad {name} {text!r} (expected [D-]HH:MM:SS)") from None


def _limit(text: str, where: str) -> int | None:
    text = text.strip()
    if not text or text.lower() == "partition_limit":
        return None
    try:
        return parse_time_limit(text)
    except InvalidRequest:
        raise InvalidRequest(f"{where}: bad Timelimit {text!r}") from None


MAX_COUNT = 1 << 20  # nodes or CPUs one job may ask: past this a record is refused as malformed


def _count(row: dict, key: str, where: str) -> int:
    text = row.get(key, "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise InvalidRequest(f"{where}: bad {key.upper()} {text!r} (expected a count)")
    return int(text)


def _tres(text: str, where: str) -> dict[str, float]:
    """'billing=4,cpu=4,gres/gpu=2,mem=8G,node=2' -> {name: count}, mem in MiB."""
    out: dict[str, float] = {}
    for item in filter(None, text.strip().split(",")):
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise InvalidRequest(item)
            count = parse_memory(value) if name.strip().lower() == "mem" else float(value)
            if not math.isfinite(count) or count < 0:
                raise ValueError(value)
            out[name.strip().lower()] = count
        except (InvalidRequest, ValueError, OverflowError):
            raise InvalidRequest(f"{where}: bad ReqTRES item {item!r} "
                                 "(expected NAME=COUNT, as cpu=4,mem=8G)") from None
    return out


def _mem_per_node(row: dict, tres: dict, nodes: int, cpus: int, where: str) -> int:
    if "mem" in tres:
        return -(-int(tres["mem"]) // nodes)  # ReqTRES: the whole job's
    text = row.get("reqmem", "").strip()
    if not text:
        return 0
    m = _MEM.match(text)
    if not m:
        raise InvalidRequest(f"{where}: bad ReqMem {text!r} (expected as 4000M, 4G or 4000Mc)")
    mib = parse_memory(m.group(1))
    return mib * -(-cpus // nodes) if m.group(2).lower() == "c" else mib


def _gpus(tres: dict) -> tuple[int, str]:
    """GPUs over the whole job, and their type when ReqTRES names one (gres/gpu:a100=2)."""
    typed = [(k.split(":", 1)[1], v) for k, v in tres.items() if k.startswith("gres/gpu:")]
    total = int(tres.get("gres/gpu", 0) or sum(v for _, v in typed))
    return total, typed[0][0] if len(typed) == 1 else ""
