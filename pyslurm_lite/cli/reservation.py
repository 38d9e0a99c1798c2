"""scontrol's reservation commands: create, delete and show advance reservations.

    scontrol create reservation ReservationName=maint StartTime=now Duration=60 \\
        Nodes=node[1-2] Users=root Flags=MAINT          -> "Reservation created: maint"
    scontrol show reservation [NAME]
    scontrol delete ReservationName=maint

Times use Slurm's forms: StartTime/EndTime as --begin takes them (now, now+1hour,
2026-12-01T10:00), Duration as a time limit (minutes, H:MM:SS, D-HH). Output as Slurm 22.05.
"""

from __future__ import annotations

import sys

from .common import fail

PROG = "scontrol"
KEYS = {"reservationname", "reservation", "starttime", "endtime", "duration", "nodes", "nodecnt",
        "users", "accounts", "flags", "partitionname", "partition"}


def _options(args: list[str]) -> dict[str, str]:
    opts = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key.lower() not in KEYS:
            fail(PROG, f"Invalid input: {arg}\nRequest aborted")
        opts[key.lower()] = value
    return opts


def _window(opts: dict[str, str], now: float) -> tuple[float, float]:
    from ..errors import InvalidRequest
    from ..units import parse_begin_time, parse_time_limit
    try:
        start = parse_begin_time(opts.get("starttime", "now"), now) if opts.get("starttime", "now") != "now" else now
        if "endtime" in opts:
            end = parse_begin_time(opts["endtime"], now)
        elif "duration" in opts:
            minutes = parse_time_limit(opts["duration"])
            end = start + minutes * 60 if minutes > 0 else start + 365 * 86400.0
        else:
            fail(PROG, "Error creating the reservation: Duration or EndTime must be given")
    except InvalidRequest as e:
        fail(PROG, f"Error creating the reservation: {e.message}")
    return start, end


def create(client, args: list[str]) -> int:
    import time

    from ..config import expand
    from ..errors import SlurmError
    from ..model import Reservation
    opts = _options(args)
    start, end = _window(opts, time.time())
    names = lambda key: [v for v in opts.get(key, "").split(",") if v]  # noqa: E731
    resv = Reservation(name=opts.get("reservationname", opts.get("reservation", "")),
                       start_time=start, end_time=end,
                       nodes=expand(opts["nodes"]) if opts.get("nodes") else [],
                       users=names("users"), accounts=names("accounts"),
                       flags=[f.upper() for f in names("flags")])
    count = opts.get("nodecnt", "0")
    if not count.isdigit():
        fail(PROG, f"Invalid input: NodeCnt={count}\nRequest aborted")
    try:
        name = client.create_reservation(resv, int(count), opts.get("partitionname", opts.get("partition", "")))
    except SlurmError as e:
        sys.stderr.write(f"{e.message}\n" if e.message.startswith("Error") else
                         f"Error creating the reservation: {e.message}\n")
        return 1
    print(f"Reservation created: {name}")
    return 0


def delete(client, args: list[str]) -> int:
    from ..errors import SlurmError
    opts = _options(args)
    name = opts.get("reservationname", opts.get("reservation", ""))
    if not name:
        fail(PROG, "delete: ReservationName= is required")
    try:
        client.delete_reservation(name)
    except SlurmError as e:
        sys.stderr.write(f"Error deleting the reservation: {e.message}\n")
        return 1
    return 0


def record(r, now: float) -> list[str]:
    from ..config import collect
    from ..units import format_hms, format_timestamp
    state = "ACTIVE" if r.start_time <= now < r.end_time else "INACTIVE"
    return [f"ReservationName={r.name} StartTime={format_timestamp(r.start_time)} "
            f"EndTime={format_timestamp(r.end_time)} Duration={format_hms(r.end_time - r.start_time)}",
            f"Nodes={collect(list(r.nodes)) or '(null)'} NodeCnt={len(r.nodes)} CoreCnt=0 "
            f"Features=(null) PartitionName=(null) Flags={','.join(list(r.flags) + ['SPEC_NODES'])}",
            "TRES=(null)",
            f"Users={','.join(r.users) or '(null)'} Groups=(null) "
            f"Accounts={','.join(r.accounts) or '(null)'} Licenses=(null) State={state} "
            "BurstBuffer=(null) Watts=n/a",
            "MaxStartDelay=(null)"]


def show(client, ns, arg: str | None) -> int:
    from .scontrol import emit
    reservations, now = client.reservations()
    if arg is not None:
        reservations = [r for r in reservations if r.name == arg]
        if not reservations:
            print(f"Reservation {arg} not found")
            return 1
    if not reservations:
        print("No reservations in the system")
        return 0
    emit([record(r, now) for r in reservations], ns.oneliner)
    return 0
