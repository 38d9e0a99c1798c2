"""Standard Workload Format (SWF) traces: read a file into the columns the engines replay.

Owns the conventions that make replays comparable with other simulators; nothing else in sim/
interprets SWF fields. A data line has 18 whitespace-separated fields; ';' lines are comments,
and the header's comments carry the machine size:

    ; MaxNodes: 338 (batch partition; 512 total)     text after the number is ignored
    ; MaxProcs: 338                                  the machine, in processors (else MaxNodes)
    1  0  588530  937  306  142.00  -1  -1  35100  -1  1  97  -1  307  3  -1  -1  -1
    |  |          |    |                |   |
    |  submit (2) run (4), allocated procs (5; else requested, 8), requested time (9), user (12)
    job number (1): the id the CSV dump shows

Rules (a value <= 0 counts as missing; SWF writes -1):
  procs     field 5, else field 8;
  estimate  field 9, else the run time; a job is killed at its estimate, so the time it holds
            its processors ("run" below) is min(run time, estimate);
  skipped   run time <= 0, procs <= 0, or procs > the machine;
  order     service order is (submit time, file order): the columns come sorted that way.

Reading is one bulk split of the file into tokens (its 18 columns sliced out at C speed); when
the token count does not match the line count, or a comment sits among the data, the file is
read again line by line, which is slower but names the offending line.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass, field

from ..errors import InvalidRequest

FIELDS = 18  # per SWF data line
_HEADER_NUMBER = re.compile(rb"^;\s*(MaxProcs|MaxNodes)\s*:\s*(\d+)", re.IGNORECASE)


@dataclass
class Trace:
    """The jobs to replay, one list per column, in service order (index = the job everywhere)."""

    name: str
    machine: int  # processors
    ids: list = field(default_factory=list)  # SWF job number (field 1)
    submit: list = field(default_factory=list)  # seconds
    run: list = field(default_factory=list)  # seconds held: min(run time, estimate)
    procs: list = field(default_factory=list)
    estimate: list = field(default_factory=list)  # seconds: requested time, else run time
    user: list = field(default_factory=list)  # SWF user id (field 12; -1 when unknown)
    skipped: int = 0  # records not replayed (see the module docstring)

    def __len__(self) -> int:
        return len(self.submit)


def trace_name(path: str) -> str:
    """KTH-SP2-1996-2.1-cln.swf.gz -> KTH-SP2-1996-2.1-cln."""
    name = os.path.basename(path)
    for suffix in (".gz", ".swf"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def read(path: str, procs: int | None = None) -> Trace:
    """Read an SWF file (gzip or plain); `procs` overrides the header's machine size."""
    return parse(_read_bytes(path), trace_name(path), procs, where=path)


def parse(data: bytes | str, name: str = "trace", procs: int | None = None,
          where: str | None = None) -> Trace:
    """SWF text (tests write tiny traces this way) -> Trace; `where` names it in errors."""
    where = where or name
    if isinstance(data, str):
        data = data.encode()
    header_end, sizes = _header(data)
    machine = procs or sizes.get(b"maxprocs") or sizes.get(b"maxnodes")
    if not machine:
        raise InvalidRequest(f"{where}: no MaxProcs or MaxNodes in the header; give --procs")
    columns = _fast_columns(data, header_end)
    if columns is None:  # something unusual: the careful reader says what and where
        columns = _careful_columns(where, data)
    return _build(name, machine, columns)


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InvalidRequest(f"cannot read trace {path}: {e.strerror or e}") from None
    if data[:2] == b"\x1f\x8b":  # gzip magic, whatever the file is called
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise InvalidRequest(f"{path}: not a readable gzip file: {e}") from None
    return data


def _header(data: bytes) -> tuple[int, dict]:
    """Offset where the leading comment block ends, and MaxProcs/MaxNodes found in it."""
    sizes, pos = {}, 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        nl = len(data) if nl < 0 else nl
        line = data[pos:nl].strip()
        if line and not line.startswith(b";"):
            break
        m = _HEADER_NUMBER.match(line)
        if m and int(m.group(2)) > 0:
            sizes[m.group(1).lower()] = int(m.group(2))
        pos = nl + 1
    return pos, sizes


def _fast_columns(data: bytes, start: int):
    """Fields 1, 2, 4, 5, 8, 9 as lists of ints, or None when the body is not plain 18-column
    integer data (then the careful reader takes over). Field 8 is only converted when some
    job has no field 5."""
    body = data[start:]
    if b";" in body:
        return None
    tokens = body.split()
    lines = body.count(b"\n") + (0 if body.endswith(b"\n") or not body else 1)
    if len(tokens) != FIELDS * lines:  # blank or short lines: let the careful reader judge
        return None
    try:
        ids, submit, run, alloc, req_time, user = (list(map(int, tokens[k::FIELDS]))
                                                   for k in (0, 1, 3, 4, 8, 11))
        req_procs = list(map(int, tokens[7::FIELDS])) if min(alloc, default=1) <= 0 else alloc
    except ValueError:  # a fraction or garbage in a field we use
        return None
    return ids, submit, run, alloc, req_procs, req_time, user


def _careful_columns(path: str, data: bytes):
    cols = ([], [], [], [], [], [], [])
    for number, line in enumerate(data.split(b"\n"), 1):
        fields = line.split()
        if not fields or fields[0].startswith(b";"):
            continue
        if len(fields) != FIELDS:
            raise InvalidRequest(f"{path}:{number}: expected {FIELDS} fields, found {len(fields)}")
        for col, k in zip(cols, (0, 1, 3, 4, 7, 8, 11)):
            col.append(_number(fields[k], path, number, k + 1))
    return cols


def _number(token: bytes, path: str, line: int, field_no: int):
    try:
        return int(token)
    except ValueError:
        pass
    try:
        return float(token)
    except ValueError:
        raise InvalidRequest(f"{path}:{line}: field {field_no} is not a number: "
                             f"{token.decode(errors='replace')!r}") from None


def _build(name: str, machine: int, columns) -> Trace:
    ids, submit, run, alloc, req_procs, req_time, user = columns
    if ids and min(run) > 0 and min(alloc) > 0 and max(alloc) <= machine and (
            min(req_time) > 0 or max(req_time) <= 0):
        # every job replayed as it stands (all of HPC2N, the lublin logs): whole columns at once
        estimate = req_time if req_time[0] > 0 else run
        killed = [r if r < e else e for r, e in zip(run, estimate)]  # at its estimate
        trace = Trace(name, machine, ids, submit, killed, alloc, list(estimate), user)
    else:
        trace = _build_each(name, machine, columns)
    submit = trace.submit
    if sorted(submit) != submit:  # service order: (submit, file order); sorted() is stable
        order = sorted(range(len(submit)), key=submit.__getitem__)
        for col in (trace.ids, trace.submit, trace.run, trace.procs, trace.estimate, trace.user):
            col[:] = [col[k] for k in order]
    return trace


def _build_each(name: str, machine: int, columns) -> Trace:
    trace = Trace(name=name, machine=machine)
    ids, submit, run, procs, estimate, users = (trace.ids, trace.submit, trace.run, trace.procs,
                                                trace.estimate, trace.user)
    for job, sub, r, alloc, req_procs, req_time, user in zip(*columns):
        p = alloc if alloc > 0 else req_procs
        if r <= 0 or p <= 0 or p > machine:
            trace.skipped += 1
            continue
        est = req_time if req_time > 0 else r
        ids.append(job)
        submit.append(sub)
        run.append(r if r < est else est)  # killed at its estimate
        procs.append(p)
        estimate.append(est)
        users.append(user)
    return trace
