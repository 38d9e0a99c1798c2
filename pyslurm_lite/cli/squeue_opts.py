"""squeue's -O/--Format long field names, -S/--sort keys, and its SQUEUE_* input variables.

    -O JobID,Name:10,State:.8     a field per name, any case; no size: 20 columns left-justified;
                                  `:N` N columns, `:.N` right-justified, text after N a suffix
    -S -t,+i                      sort by state descending, then job id; letters as -o's
    SQUEUE_FORMAT / SQUEUE_FORMAT2 / SQUEUE_SORT / SQUEUE_USERS / ...   defaults for the flags

Pure: turns text into tokens for fmt.compile_row and key functions for sorting.
"""

from __future__ import annotations

import re

from ..errors import InvalidRequest
from .jobfields import FIELDS, HEADERS, job_id_text

DEFAULT_WIDTH = 20  # an -O field without a size, as squeue's _parse_long_token
DEFAULT_SORT = "P,t,-p"  # partition, state, priority (descending): squeue's sort_job_list

# --Format name (lower case) -> (field key, header). Keys are FIELDS' %-letters, or the extra
# fields below that have no letter.
LONG = {
    "account": ("a", "ACCOUNT"), "admincomment": ("admin", "ADMIN_COMMENT"), "arrayjobid": ("F", "ARRAY_JOB_ID"),
    "arraytaskid": ("K", "ARRAY_TASK_ID"), "batchhost": ("B", "EXEC_HOST"),
    "command": ("o", "COMMAND"), "comment": ("k", "COMMENT"), "contiguous": ("O", "CONTIGUOUS"),
    "cpus-per-task": ("c", "CPUS_PER_TASK"), "cpuspertask": ("c", "CPUS_PER_TASK"),
    "dependency": ("E", "DEPENDENCY"), "eligibletime": ("eligible", "ELIGIBLE_TIME"),
    "endtime": ("e", "END_TIME"), "exit_code": ("exit", "EXIT_CODE"),
    "feature": ("f", "FEATURES"), "gres": ("b", "TRES_PER_NODE"),
    "groupid": ("gid", "GROUP"), "groupname": ("G", "GROUP"), "jobarrayid": ("i", "JOBID"),
    "jobid": ("A", "JOBID"), "mincpus": ("c", "MIN_CPUS"), "minmemory": ("m", "MIN_MEMORY"),
    "name": ("j", "NAME"), "nice": ("y", "NICE"), "nodelist": ("N", "NODELIST"),
    "numcpus": ("C", "CPUS"), "numnodes": ("D", "NODES"), "numtasks": ("tasks", "TASKS"),
    "oversubscribe": ("h", "OVER_SUBSCRIBE"), "shared": ("h", "OVER_SUBSCRIBE"),
    "partition": ("P", "PARTITION"), "priority": ("p", "PRIORITY"),
    "prioritylong": ("Q", "PRIORITY"), "qos": ("q", "QOS"), "reason": ("r", "REASON"),
    "reasonlist": ("R", "NODELIST(REASON)"), "reqnodes": ("n", "REQ_NODES"),
    "excnodes": ("x", "EXC_NODES"), "requeue": ("requeue", "REQUEUE"),
    "reservation": ("v", "RESERVATION"), "restartcnt": ("restarts", "RESTART_COUNT"),
    "schednodes": ("Y", "SCHEDNODES"), "starttime": ("S", "START_TIME"),
    "state": ("T", "STATE"), "statecompact": ("t", "ST"), "stderr": ("stderr", "STDERR"),
    "stdin": ("stdin", "STDIN"), "stdout": ("stdout", "STDOUT"),
    "submittime": ("V", "SUBMIT_TIME"), "timeleft": ("L", "TIME_LEFT"),
    "timelimit": ("l", "TIME_LIMIT"), "timeused": ("M", "TIME"),
    "tres-per-node": ("b", "TRES_PER_NODE"), "userid": ("U", "UID"),
    "username": ("u", "USER"), "workdir": ("Z", "WORK_DIR"), "batchflag": ("batch", "BATCH_FLAG"),
    "pendingtime": ("pending", "PENDING_TIME"),
}

EXTRA = {  # fields with no %-letter
    "eligible": lambda j, now: _ts(j.eligible_time),
    "exit": lambda j, now: f"{j.exit_code}:{j.exit_signal}",
    "gid": lambda j, now: str(j.spec.gid),
    "tasks": lambda j, now: str(max(j.spec.num_tasks, j.spec.num_nodes)),
    "requeue": lambda j, now: str(int(j.spec.requeue)),
    "restarts": lambda j, now: str(j.restart_count),
    "stdout": lambda j, now: j.spec.std_out or "slurm-%j.out",
    "stderr": lambda j, now: j.spec.std_err or j.spec.std_out or "slurm-%j.out",
    "stdin": lambda j, now: j.spec.std_in or "/dev/null",
    "batch": lambda j, now: str(int(j.spec.batch)),
    "admin": lambda j, now: j.admin_comment or "(null)",  # e.g. the idle-GPU flag
    "pending": lambda j, now: str(int(max((j.start_time or now) - j.submit_time, 0))
                                  if j.state == "PENDING" or j.start_time else "0"),
}


def _ts(epoch: float) -> str:
    from ..units import format_timestamp
    return format_timestamp(epoch)


def parse_long(text: str) -> tuple[list, dict[str, str]]:
    """'JobID,Name:10' -> (tokens for fmt.compile_row, {field key: header}). Unknown names are
    refused, naming the first (InvalidRequest)."""
    tokens: list = []
    headers: dict[str, str] = {}
    for raw in (t for t in text.split(",") if t):
        name, sep, size = raw.partition(":")
        entry = LONG.get(name.lower())
        if entry is None:
            raise InvalidRequest(f"Invalid job format specification: {name}")
        right = size.startswith(".")
        m = re.match(r"[0-9]*", size[1:] if right else size)
        width = int(m.group()) if sep and m.group() else (DEFAULT_WIDTH if not sep else None)
        suffix = (size[1:] if right else size)[m.end():] if sep else ""
        key = f"{entry[0]}#{len(tokens)}"  # one key per column: a field may appear twice
        headers[key] = entry[1]
        tokens.append((key, width if width else None, right))
        if suffix:
            tokens.append(suffix)
    return tokens, headers


def long_fields(tokens: list) -> dict:
    """The row functions for parse_long's keys."""
    fields = {}
    for t in tokens:
        if not isinstance(t, str):
            base = t[0].split("#")[0]
            fields[t[0]] = FIELDS.get(base) or EXTRA[base]
    return fields


# -S letters -> key(job, now); strings compare as Slurm's xstrcmp, numbers as numbers
_SORT_KEYS = {
    "B": lambda j, now: j.allocations[0].node if j.allocations else "",
    "C": lambda j, now: int(FIELDS["C"](j, now)),
    "D": lambda j, now: int(FIELDS["D"](j, now)),
    "e": lambda j, now: j.end_time, "g": lambda j, now: j.spec.gid,
    "G": lambda j, now: j.spec.gid, "i": lambda j, now: (j.array_job_id or j.job_id, j.array_task_id),
    "j": lambda j, now: j.spec.name, "l": lambda j, now: j.time_limit if j.time_limit >= 0 else 2**62,
    "L": lambda j, now: (j.time_limit * 60 - ((j.end_time or now) - j.start_time if j.start_time else 0)
                         if j.time_limit >= 0 else 2**62),
    "m": lambda j, now: j.spec.mem_per_node or j.spec.mem_per_cpu,
    "M": lambda j, now: (j.end_time or now) - j.start_time if j.start_time else 0,
    "N": lambda j, now: FIELDS["N"](j, now), "p": lambda j, now: 0 if j.held else j.priority,
    "P": lambda j, now: j.partition, "Q": lambda j, now: 0 if j.held else j.priority,
    # a pending job's expected start; unknown ones after every known one, as squeue --start
    "S": lambda j, now: (j.expected_start or float("inf")) if j.state == "PENDING" else j.start_time,
    "t": lambda j, now: FIELDS["t"](j, now), "T": lambda j, now: j.state,
    "u": lambda j, now: j.spec.user, "U": lambda j, now: j.spec.uid,
    "v": lambda j, now: j.spec.reservation, "V": lambda j, now: j.submit_time,
}
_IGNORED = set("cdfhHIJnOz")  # letters squeue accepts and does not sort by (nor do we)


def parse_sort(text: str) -> list[tuple[str, bool]]:
    """'-t,+i' -> [('t', True), ('i', False)]: (letter, descending), most significant first."""
    keys, descending = [], False
    for ch in text:
        if ch in ",+":
            descending = False if ch == "+" else descending
            continue
        if ch == "-":
            descending = True
            continue
        if ch not in _SORT_KEYS and ch not in _IGNORED:
            raise InvalidRequest(f"Invalid sort specification: {ch}")
        if ch in _SORT_KEYS:
            keys.append((ch, descending))
        descending = False
    return keys


def sort_jobs(jobs: list, keys: list[tuple[str, bool]], now: float) -> list:
    """Stable sorts from the least significant key up, from job id order (the tie-break)."""
    out = sorted(jobs, key=lambda j: j.job_id)
    for letter, descending in reversed(keys):
        fn = _SORT_KEYS[letter]
        out.sort(key=lambda j: fn(j, now), reverse=descending)
    return out


def env_defaults(ns, environ) -> None:
    """SQUEUE_* variables fill what the command line left unset, as squeue's opts.c: flags win."""
    if environ.get("SQUEUE_ALL"):
        ns.all = True
    if environ.get("SQUEUE_ARRAY"):
        ns.array = True
    if ns.sort is None and environ.get("SQUEUE_SORT"):
        ns.sort = environ["SQUEUE_SORT"]
    if ns.format is None and ns.Format is None:
        if environ.get("SQUEUE_FORMAT"):
            ns.format = environ["SQUEUE_FORMAT"]
        elif environ.get("SQUEUE_FORMAT2"):
            ns.Format = environ["SQUEUE_FORMAT2"]
    for attr, var in (("account", "SQUEUE_ACCOUNT"), ("name", "SQUEUE_NAMES"),
                      ("partition", "SQUEUE_PARTITION"), ("qos", "SQUEUE_QOS"),
                      ("states", "SQUEUE_STATES"), ("user", "SQUEUE_USERS")):
        if getattr(ns, attr) is None and environ.get(var):
            setattr(ns, attr, [environ[var]])


__all__ = ["DEFAULT_SORT", "HEADERS", "LONG", "env_defaults", "job_id_text", "long_fields",
           "parse_long", "parse_sort", "sort_jobs"]
