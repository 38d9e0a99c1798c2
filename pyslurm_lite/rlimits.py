"""Resource limits that travel with a job (Slurm's PropagateResourceLimits).

Owns: Slurm's names for the propagated limits, which of them a command sends (slurm.conf
PropagateResourceLimits / PropagateResourceLimitsExcept, overridden by --propagate), their wire
form, and applying them to a task on the node. It must not decide anything else about a task.

As in Slurm, the submitting command (sbatch, srun) sends its own soft limits; the node sets each
as the task's soft limit before the task runs. A soft limit above the node's hard limit cannot be
set: it is lowered to the hard limit, and the node logs "Can't propagate RLIMIT_...", as
slurmstepd does.

Worked example: PropagateResourceLimitsExcept=CORE, `ulimit -S -c 0; ulimit -S -n 512; sbatch`
-> the job carries "NOFILE=512:20000", "STACK=8388608:-1", ... but no CORE; on the node the
script starts with 512 open files and the node's own core-file limit.
"""

from __future__ import annotations

import resource
import shutil

# Slurm's names (slurm_rlimits_info.c), in its order; each to its setrlimit resource.
LIMITS = {"CPU": resource.RLIMIT_CPU, "FSIZE": resource.RLIMIT_FSIZE,
          "DATA": resource.RLIMIT_DATA, "STACK": resource.RLIMIT_STACK,
          "CORE": resource.RLIMIT_CORE, "RSS": resource.RLIMIT_RSS,
          "NPROC": resource.RLIMIT_NPROC, "NOFILE": resource.RLIMIT_NOFILE,
          "MEMLOCK": resource.RLIMIT_MEMLOCK, "AS": resource.RLIMIT_AS}
UNLIMITED = -1  # the wire's word for RLIM_INFINITY
_DELIMS = ", \t\n"


class BadRlimits(ValueError):
    """A list of limit names with one Slurm does not know."""


def parse(text: str) -> set[str]:
    """ALL, NONE, or a list of names ("CORE,NOFILE"; "RLIMIT_CORE" too), as Slurm's
    parse_rlimits reads them: case-sensitive, separated by commas or blanks."""
    if text == "ALL":
        return set(LIMITS)
    if text == "NONE":
        return set()
    names = set()
    for token in text.translate({ord(c): "," for c in _DELIMS}).split(","):
        if not token:
            continue
        name = token.removeprefix("RLIMIT_")
        if name not in LIMITS:
            raise BadRlimits(f"Bad rlimit name: {token}")
        names.add(name)
    return names


def selected(propagate: str | None, conf_limits: str = "ALL", conf_except: str = "") -> set[str]:
    """The limits a command sends: --propagate when given (bare: ALL), else slurm.conf's
    PropagateResourceLimitsExcept (all but those) or PropagateResourceLimits (default ALL)."""
    if propagate is not None:
        return parse(propagate or "ALL")
    if conf_except:
        return set(LIMITS) - parse(conf_except)
    return parse(conf_limits or "ALL")


def capture(names: set[str]) -> list[str]:
    """This process's limits, "NAME=soft:hard" (-1 unlimited), in Slurm's order."""
    out = []
    for name, res in LIMITS.items():
        if name in names:
            soft, hard = resource.getrlimit(res)
            out.append(f"{name}={_wire(soft)}:{_wire(hard)}")
    return out


def _wire(value: int) -> int:
    return UNLIMITED if value == resource.RLIM_INFINITY else int(value)


def decode(items) -> dict[str, int]:
    """name -> the soft limit asked for (RLIM_INFINITY for unlimited); an item not in our
    form raises ValueError naming it."""
    out = {}
    for item in items:
        name, eq, values = item.partition("=")
        soft_s, _, _hard = values.partition(":")
        if name not in LIMITS or not eq or not (soft_s == "-1" or soft_s.isascii() and soft_s.isdigit()):
            raise ValueError(f"malformed resource limit {item!r}")
        soft = int(soft_s)
        out[name] = resource.RLIM_INFINITY if soft == UNLIMITED else soft
    return out


def fit(wanted: int, hard: int) -> int:
    """The soft limit that can be set under this hard limit: wanted, or hard when above it."""
    if hard == resource.RLIM_INFINITY:
        return wanted
    if wanted == resource.RLIM_INFINITY or wanted > hard:
        return hard
    return wanted


# util-linux's prlimit, by absolute path: the task's own shell runs it (as the user, on itself)
PRLIMIT = shutil.which("prlimit", path="/usr/bin:/bin")


def shell(items, log, hard_of=resource.getrlimit) -> str:
    """Shell code the task's shim runs, as the user and on itself, just before it execs the task:
    each propagated soft limit set with prlimit (inherited by all the task runs). The agent
    cannot set them from outside once the task runs as the user: changing another user's
    process's limits needs CAP_SYS_RESOURCE, which a container's root often lacks, while a
    process may always move its own soft limit up to its hard one — what slurmstepd also does
    in the task. The task inherits the agent's limits, so hard_of (the agent's) says how far
    each may go; one above is lowered to the hard limit and logged, as slurmd does."""
    args = []
    for name, wanted in decode(items).items():
        soft, hard = hard_of(LIMITS[name])
        value = fit(wanted, hard)
        if value != wanted:
            log.warning("Can't propagate RLIMIT_%s of %s from submit host: above the hard "
                        "limit %s here; set to %s", name, _shown(wanted), _shown(hard),
                        _shown(value))
        if value != soft:
            shown = "unlimited" if value == resource.RLIM_INFINITY else str(value)
            args.append(f"--{name.lower()}={shown}:")
    if not args:
        return ""
    if PRLIMIT is None:  # said in the task's own stderr, where its user looks
        return ("echo \"slurmstepd: error: Can't propagate resource limits from submit host: "
                "no prlimit on this node\" >&2; ")
    return f"{PRLIMIT} --pid $$ {' '.join(args)} || exit 1; "


def _shown(value: int) -> str:
    return "'unlimited'" if value == resource.RLIM_INFINITY else str(value)


def for_command(propagate: str | None) -> list[str]:
    """What sbatch or srun sends: --propagate's limits, else slurm.conf's choice (Slurm's
    default, ALL, when there is no readable slurm.conf: the command fails on that later)."""
    from .config import load_shared as load
    from .errors import ConfigError, InvalidRequest
    try:
        cfg = load()
        conf_limits, conf_except = cfg.propagate_rlimits, cfg.propagate_rlimits_except
    except ConfigError:
        conf_limits, conf_except = "ALL", ""
    try:
        return capture(selected(propagate, conf_limits, conf_except))
    except BadRlimits:
        raise InvalidRequest(f"--propagate={propagate} is not valid.") from None
