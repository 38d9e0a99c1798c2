"""v0.0.42_job_desc_msg -> JobSpec (POST /job/submit) or scontrol update's changes (POST
/job/{job_id}). Pure: the caller's uid, gid and host are given.

    {"script": "#!/bin/bash\\necho hi\\n",
     "job": {"name": "t", "current_working_directory": "/home/alice", "environment": ["A=1"],
             "time_limit": {"set": true, "number": 30}, "tasks": 2, "licenses": "x"}}
    -> JobSpec(name="t", work_dir="/home/alice", environment={"A": "1"}, time_limit=30,
               num_tasks=2, ...) and a warning: "licenses" is not implemented, not applied

A field of the schema we do not implement is named in a warning (never dropped silently); a
field the schema does not have is a warning too, as slurmrestd's parser reports it; a value of
the wrong type is a 400 naming the field, and nothing is submitted.
"""

from __future__ import annotations

import os
from datetime import datetime

from ...errors import InvalidRequest
from ...model import UNLIMITED, GresRequest, JobSpec
from ..envelope import ESLURM_REST_FAIL_PARSING, RestError, warning
from . import OP

SUBMIT = OP + "post_job_submit"
UPDATE = OP + "post_job"

# every property of v0.0.42_job_desc_msg that JobSpec has no room for
NOT_IMPLEMENTED = frozenset((
    "account_gather_frequency", "admin_comment", "allocation_node_list", "allocation_node_port",
    "batch_features", "burst_buffer", "clusters", "cluster_constraint", "contiguous",
    "container", "container_id", "core_specification", "thread_specification", "cpu_binding",
    "cpu_binding_flags", "cpu_frequency", "cpus_per_tres", "crontab", "delay_boot", "end_time",
    "rlimits", "extra", "group_id", "hetjob_group", "immediate", "job_id", "kill_on_node_fail",
    "licenses", "mcs_label", "memory_binding", "memory_binding_type", "memory_per_tres",
    "network", "oom_kill_step", "reserve_ports", "distribution_plane_size", "power_flags",
    "prefer", "profile", "reboot", "site_factor", "spank_environment", "distribution",
    "time_minimum", "tres_bind", "tres_freq", "tres_per_socket", "tres_per_task", "wait_all_nodes",
    "kill_warning_flags", "kill_warning_signal", "kill_warning_delay", "minimum_cpus",
    "maximum_cpus", "minimum_boards_per_node", "minimum_sockets_per_board", "sockets_per_node",
    "threads_per_core", "tasks_per_socket", "tasks_per_core", "tasks_per_board",
    "ntasks_per_tres", "temporary_disk_per_node", "selinux_context", "segment_size",
    "wait_for_switch", "wckey", "x11", "x11_magic_cookie", "x11_target_host", "x11_target_port",
))


def bad(field: str, want: str, source: str) -> RestError:
    return RestError(400, ESLURM_REST_FAIL_PARSING, f"job description field '{field}': {want}",
                     source)


# ---- the submit request -----------------------------------------------------------------------
def submit_request(body, source: str = SUBMIT) -> tuple[dict, str]:
    """(the job description, its script) from a job_submit_req: the script inside "job" or
    beside it, as slurmrestd takes either."""
    if not isinstance(body, dict):
        raise RestError(400, ESLURM_REST_FAIL_PARSING,
                        "the request body must be a JSON object (v0.0.42_job_submit_req)", source)
    if "jobs" in body:
        raise RestError(400, ESLURM_REST_FAIL_PARSING, "heterogeneous jobs (\"jobs\") are not "
                        "supported by pyslurm-lite: submit one \"job\"", source)
    job = body.get("job")
    if not isinstance(job, dict):
        raise RestError(400, ESLURM_REST_FAIL_PARSING,
                        "the request needs a \"job\" object (the job description)", source)
    script = job.get("script", body.get("script"))
    if not isinstance(script, str) or not script.startswith("#!"):
        raise RestError(400, ESLURM_REST_FAIL_PARSING, "the batch script (\"script\", in "
                        "\"job\" or beside it) must be a string starting with #!", source)
    return {k: v for k, v in job.items() if k != "script"}, script


def to_spec(desc: dict, script: str, uid: int, gid: int, user: str, host: str,
            source: str = SUBMIT) -> tuple[JobSpec, list[dict]]:
    """The JobSpec a job description asks for, and a warning per field not applied."""
    spec = JobSpec(script=script, name="", submit_host=host, uid=uid, gid=gid, user=user,
                   export="ALL")
    warnings = []
    for field, value in desc.items():
        setter = _SETTERS.get(field)
        if setter is None:
            warnings.append(_unapplied(field, source))
            continue
        try:
            setter(spec, value)
        except (TypeError, ValueError, InvalidRequest) as e:
            raise bad(field, str(e) or type(e).__name__, source) from None
    _finish(spec, source)
    return spec, warnings


def _finish(spec: JobSpec, source: str) -> None:
    if not spec.work_dir:
        raise bad("current_working_directory", "required (an absolute path)", source)
    if not spec.environment:
        raise bad("environment", "required: a batch job needs its environment (a list of "
                  "NAME=value), as in Slurm", source)
    spec.submit_dir = spec.work_dir
    spec.name = spec.name or "sbatch"
    if spec.num_tasks < spec.num_nodes and not spec.ntasks_set:
        spec.num_tasks = spec.num_nodes


def _unapplied(field: str, source: str) -> dict:
    if field in NOT_IMPLEMENTED:
        return warning(f"job description field '{field}' is not implemented by pyslurm-lite; "
                       "it was not applied", source)
    return warning(f"job description field '{field}' is not in v0.0.42_job_desc_msg; it was "
                   "not applied", source)


# ---- value readers: each raises ValueError saying what was wanted -----------------------------
def text(value) -> str:
    if not isinstance(value, str):
        raise ValueError("a string")
    return value


def whole(value, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2**31:
        raise ValueError(f"a whole number from {low}")
    return value


def flag(value) -> bool:
    if not isinstance(value, bool):
        raise ValueError("true or false")
    return value


def strings(value) -> list[str]:
    """A list of strings (v0.0.42_string_array; a csv_string also takes "a,b")."""
    if isinstance(value, str):
        return [v for v in value.split(",") if v]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("a list of strings")
    return value


def no_val(value) -> int:
    """A *_no_val_struct or a bare number: UNLIMITED for infinite, -2 for not set."""
    if isinstance(value, dict):
        if value.get("infinite") is True:
            return UNLIMITED
        if value.get("set") is False:
            return -2
        value = value.get("number")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise ValueError("a number or {\"set\": true, \"number\": N} / {\"infinite\": true}")
    return value


def environment(value) -> dict[str, str]:
    out = {}
    for item in strings(value):
        name, eq, val = item.partition("=")
        if not eq or not name:
            raise ValueError(f"'{item}' is not NAME=value")
        out[name] = val
    return out


def abs_path(value) -> str:
    path = text(value)
    if not os.path.isabs(path):
        raise ValueError(f"'{path}' is not an absolute path")
    return path


def gres(value) -> list[GresRequest]:
    """tres_per_node "gres/gpu:2,gres/gpu:a100:1" (also "gpu:2")."""
    from ...cli.sbatch import parse_gres
    return parse_gres([text(value).replace("gres/", "")])


def job_gpus(value) -> tuple[str, int]:
    """tres_per_job: only "gres/gpu[:type]:N" is a request we model."""
    items = [g for g in gres(value)]
    if len(items) != 1 or items[0].name != "gpu":
        raise ValueError("only gres/gpu[:type]:N is supported")
    return items[0].type, items[0].count


def _set(field: str, read=text):
    def setter(spec: JobSpec, value) -> None:
        setattr(spec, field, read(value))
    return setter


def _tasks(spec: JobSpec, value) -> None:
    spec.num_tasks, spec.ntasks_set = whole(value, 1), True


def _nodes(spec: JobSpec, value) -> None:
    from ...cli.sbatch import parse_node_range
    spec.num_nodes, spec.max_nodes = parse_node_range(text(value))


def _time_limit(spec: JobSpec, value) -> None:
    minutes = no_val(value)
    if minutes == 0:
        raise ValueError("a time limit of at least one minute")
    spec.time_limit = 0 if minutes == -2 else minutes


def _memory(field: str):
    def setter(spec: JobSpec, value) -> None:
        mib = no_val(value)
        if mib == UNLIMITED:
            raise ValueError("a size in MiB (not infinite)")
        setattr(spec, field, max(mib, 0))
        spec.mem_whole_node = field == "mem_per_node" and mib == 0
    return setter


def _array(spec: JobSpec, value) -> None:
    from ...cli.sbatch import parse_array
    spec.array = parse_array(text(value))


def _open_mode(spec: JobSpec, value) -> None:
    modes = strings(value)
    if modes not in (["APPEND"], ["TRUNCATE"]):
        raise ValueError('["APPEND"] or ["TRUNCATE"]')
    spec.open_mode = modes[0].lower()


def _shared(spec: JobSpec, value) -> None:
    kinds = strings(value)
    if not set(kinds) <= {"none", "user"}:
        raise ValueError('["none"] (exclusive) or ["user"]; oversubscribe, mcs and topo are '
                         "not supported")
    spec.exclusive, spec.exclusive_user = "none" in kinds, "user" in kinds


def _flags(spec: JobSpec, value) -> None:
    known = {"KILL_INVALID_DEPENDENCY", "NO_KILL_INVALID_DEPENDENCY"}
    flags = strings(value)
    if not set(flags) <= known:
        raise ValueError(f"only {', '.join(sorted(known))} are supported")
    spec.kill_on_invalid_dep = "KILL_INVALID_DEPENDENCY" in flags


def _begin(spec: JobSpec, value) -> None:
    when = no_val(value)
    spec.begin_time = float(when) if when > 0 else 0.0


def _priority(spec: JobSpec, value) -> None:
    prio = no_val(value)
    spec.priority = -1 if prio == -2 else (2**31 - 1 if prio == UNLIMITED else prio)


def _gpus_per_node(spec: JobSpec, value) -> None:
    requests = gres(value)
    spec.gres = [g for g in requests if g.name != "gpu"]
    for g in requests:
        if g.name == "gpu":
            spec.gpu_type, spec.gpus_per_node = g.type, g.count


def _gpus_per_job(spec: JobSpec, value) -> None:
    spec.gpu_type, spec.gpus = job_gpus(value)


def _user(spec: JobSpec, value) -> None:
    """user_id (a name or number): the controller refuses one not the caller's unless the
    caller is an operator."""
    import pwd
    who = text(value)
    try:
        pw = pwd.getpwuid(int(who)) if who.isdigit() else pwd.getpwnam(who)
    except (KeyError, OverflowError):
        raise ValueError(f"no user {who}") from None
    spec.uid, spec.gid, spec.user = pw.pw_uid, pw.pw_gid, pw.pw_name


_SETTERS = {
    "name": _set("name"), "current_working_directory": _set("work_dir", abs_path),
    "environment": _set("environment", environment), "argv": _set("argv", strings),
    "partition": _set("partition"), "account": _set("account"), "qos": _set("qos"),
    "comment": _set("comment"), "dependency": _set("dependency"),
    "reservation": _set("reservation"), "constraints": _set("constraint"),
    "standard_output": _set("std_out"), "standard_error": _set("std_err"),
    "standard_input": _set("std_in"), "mail_user": _set("mail_user"),
    "mail_type": _set("mail_type", lambda v: ",".join(strings(v))),
    "required_nodes": _set("nodelist", lambda v: ",".join(strings(v))),
    "excluded_nodes": _set("exclude", lambda v: ",".join(strings(v))),
    "hold": _set("hold", flag), "requeue": _set("requeue", flag),
    "overcommit": _set("overcommit", flag), "nice": _set("nice", lambda v: whole(v, -2**31)),
    "tasks": _tasks, "cpus_per_task": _set("cpus_per_task", lambda v: whole(v, 1)),
    "tasks_per_node": _set("ntasks_per_node", lambda v: whole(v, 1)),
    "minimum_nodes": _set("num_nodes", lambda v: whole(v, 1)),
    "maximum_nodes": _set("max_nodes", whole), "nodes": _nodes,
    "minimum_cpus_per_node": _set("min_cpus_per_node", whole),
    "time_limit": _time_limit, "memory_per_node": _memory("mem_per_node"),
    "memory_per_cpu": _memory("mem_per_cpu"), "array": _array, "open_mode": _open_mode,
    "shared": _shared, "flags": _flags, "begin_time": _begin,
    "deadline": _set("deadline", lambda v: float(whole(v))), "priority": _priority,
    "required_switches": _set("req_switch", lambda v: max(no_val(v), 0)),
    "tres_per_node": _gpus_per_node, "tres_per_job": _gpus_per_job, "user_id": _user,
}


# ---- POST /job/{job_id}: the same description as scontrol update's changes --------------------
def _when(value) -> str:
    return datetime.fromtimestamp(no_val(value)).strftime("%Y-%m-%dT%H:%M:%S")


def _limit(value) -> str:
    minutes = no_val(value)
    return "UNLIMITED" if minutes == UNLIMITED else str(minutes)


_UPDATES = {  # job_desc_msg field -> (scontrol update's field, value reader)
    "time_limit": ("TimeLimit", _limit), "partition": ("Partition", text),
    "name": ("JobName", text), "comment": ("Comment", text), "dependency": ("Dependency", text),
    "nice": ("Nice", lambda v: str(whole(v, -2**31))), "qos": ("QOS", text),
    "account": ("Account", text), "priority": ("Priority", lambda v: str(no_val(v))),
    "constraints": ("Features", text),
    "required_nodes": ("ReqNodeList", lambda v: ",".join(strings(v))),
    "excluded_nodes": ("ExcNodeList", lambda v: ",".join(strings(v))),
    "minimum_nodes": ("NumNodes", lambda v: str(whole(v, 1))),
    "memory_per_node": ("MinMemoryNode", lambda v: str(no_val(v))),
    "begin_time": ("StartTime", _when), "deadline": ("Deadline", _when),
}


def to_changes(desc, source: str = UPDATE) -> tuple[dict[str, str], str, list[dict]]:
    """(scontrol update changes, "hold"/"release"/"" for a `hold` field, warnings)."""
    if not isinstance(desc, dict):
        raise RestError(400, ESLURM_REST_FAIL_PARSING, "the request body must be a JSON object "
                        "(v0.0.42_job_desc_msg)", source)
    changes, action, warnings = {}, "", []
    for field, value in desc.items():
        try:
            if field == "hold":
                action = "hold" if flag(value) else "release"
            elif field in _UPDATES:
                name, read = _UPDATES[field]
                changes[name] = read(value)
            else:
                warnings.append(_unapplied_update(field, source))
        except (TypeError, ValueError, OverflowError, OSError) as e:
            raise bad(field, str(e) or type(e).__name__, source) from None
    return changes, action, warnings


def _unapplied_update(field: str, source: str) -> dict:
    return warning(f"job description field '{field}' cannot be updated by pyslurm-lite; it was "
                   "not applied", source)
