"""scontrol update JobId=<id|A_T|A> Field=Value ...: the arguments read as scontrol reads them.

Field names match as scontrol's update_job.c matches them: any case, and any prefix at least
as long as Slurm's minimum for that field (`timel=5`, `Part=debug`). A field we do not update
is refused naming the argument ("Update of this parameter is not supported: X"), exit 1, and
nothing is sent. Values are checked again by the controller, which applies all or nothing.
"""

from __future__ import annotations

import sys

from ..errors import InvalidRequest
from .common import fail

PROG = "scontrol"

# (Slurm's name, shortest prefix it accepts, the field the controller knows)
FIELDS = [
    ("JobId", 3, "JobId"), ("TimeLimit", 5, "TimeLimit"), ("Partition", 2, "Partition"),
    ("NumNodes", 8, "NumNodes"), ("ReqNodes", 8, "NumNodes"), ("Dependency", 1, "Dependency"),
    ("Nice", 2, "Nice"), ("QOS", 2, "QOS"), ("Name", 2, "JobName"), ("JobName", 4, "JobName"),
    ("Comment", 3, "Comment"), ("StartTime", 2, "StartTime"), ("EligibleTime", 2, "StartTime"),
    ("ArrayTaskThrottle", 10, "ArrayTaskThrottle"), ("MinMemoryNode", 10, "MinMemoryNode"),
    ("Features", 1, "Features"), ("ReqNodeList", 8, "ReqNodeList"),
    ("NodeList", 8, "ReqNodeList"), ("ExcNodeList", 3, "ExcNodeList"),
    ("Priority", 2, "Priority"), ("Deadline", 3, "Deadline"), ("Account", 1, "Account"),
]


def is_job_update(args: list[str]) -> bool:
    """A JobId= (any case, Slurm's shortest 'job=') among the arguments makes it a job update."""
    for arg in args:
        tag = arg.split("=", 1)[0]
        if len(tag) >= 3 and "jobid".startswith(tag.lower()):
            return True
    return False


def field_of(tag: str) -> str | None:
    low = tag.lower()
    for name, shortest, canonical in FIELDS:
        if len(low) >= shortest and name.lower().startswith(low):
            return canonical
    return None


def parse(args: list[str]) -> tuple[str, dict[str, str]]:
    """(the job id text, {controller field: value}); refusals exit 1 in scontrol's words."""
    job_text, changes = None, {}
    i = 0
    while i < len(args):
        tag, sep, value = args[i].partition("=")
        if not sep:  # "TimeLimit 5": scontrol takes the next word as the value
            if i + 1 >= len(args):
                _abort(f"Invalid input: {args[i]}")
            value = args[i + 1]
            i += 1
        field = field_of(tag)
        if field is None:
            _abort(f"Update of this parameter is not supported: {args[i]}")
        if field == "JobId":
            job_text = value
        else:
            changes[field] = _checked(field, value)
        i += 1
    if not changes:
        _abort("No changes specified", aborted=False)
    if not job_text:
        fail(PROG, "No job ID specified")
    return job_text, changes


def _checked(field: str, value: str) -> str:
    """What scontrol itself refuses before asking the controller."""
    if field == "Priority" and not (value.isdigit() and int(value) <= 0xFFFFFFFF):
        fail(PROG, f"Invalid Priority value: {value}")  # scontrol's parse_uint32
    if field == "TimeLimit":
        from ..units import parse_time_limit
        try:
            parse_time_limit(value)
        except InvalidRequest:
            fail(PROG, "Invalid TimeLimit value")
    if field == "Nice":
        try:
            nice = int(value)
        except ValueError:
            fail(PROG, f"Invalid Nice value: {value}")
        if abs(nice) > 2147483645:
            fail(PROG, "Nice value out of range (+/- 2147483645). Value ignored")
    if field == "ArrayTaskThrottle" and not value.strip().isdigit():
        fail(PROG, "Invalid ArrayTaskThrottle value")
    return value


def _abort(message: str, aborted: bool = True):
    sys.stderr.write(message + "\n" + ("Request aborted\n" if aborted else ""))
    sys.exit(1)


def update_job(client, args: list[str]) -> int:
    from .jobids import filter_fields, parse as parse_ids
    job_text, changes = parse(args)
    try:
        ids, tasks = filter_fields(parse_ids(job_text))
    except InvalidRequest:
        sys.stderr.write(f"Invalid job id specified for job {job_text}\n")
        return 1
    _, errors = client.update_jobs(ids, "update", array_tasks=tasks, changes=changes)
    report_errors(errors)
    return 1 if errors else 0


def report_errors(errors) -> None:
    """As scontrol: "<error> for job 12", or "12_3: <error>" for an array task."""
    import re
    for label, message in errors:
        # The controller words its ownership check for scancel; scontrol prints the bare cause.
        message = re.sub(r"^Kill job error on job id \d+: ", "", message)
        if isinstance(label, str) and "_" in label:
            sys.stderr.write(f"{label}: {message}\n")
        else:
            sys.stderr.write(f"{message} for job {label}\n")
