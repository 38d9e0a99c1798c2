"""The job options sbatch, salloc and srun share, the ones accepted but not implemented, and the
SBATCH_* / SALLOC_* input environment variables.

Nothing is silent: an option Slurm has that we accept without its effect is declared with the
Unsupported action, which prints one warning naming it on stderr when it is parsed — from the
command line, an #SBATCH directive or an input variable alike — as "sbatch: warning: --hint=
nomultithread is not supported here and is ignored". tests/unit/test_nothing_silent.py walks
every option of the three parsers and fails on one that neither changes the job nor warns.
Options srun defines itself (--mpi, --cpu-freq, --network, ...) stay out of add_job_options, or
srun's parser would hold them twice.
"""

from __future__ import annotations

import argparse
import os
import sys

from .common import SlurmArgParser

IGNORED = "is not supported here and is ignored"


class JobArgParser(SlurmArgParser):
    """An option whose value is optional (--exclusive[=user], -I/--immediate[=secs]) takes
    only an attached value, as getopt_long's optional_argument: `sbatch --exclusive job.sh`
    runs job.sh exclusively, where argparse alone would read job.sh as the mode."""

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(_attach_consts(self, args), namespace)


def _attach_consts(parser, args: list[str]) -> list[str]:
    """Options with an optional value given bare get their const attached (--exclusive ->
    --exclusive=exclusive), up to the first positional (the script or command: what follows
    is its own)."""
    out, i = list(args), 0
    while i < len(out):
        token = out[i]
        if token == "--" or not token.startswith("-") or token == "-":
            break
        action, attached = _lookup(parser, token)
        if action is not None and not attached:
            if action.nargs == "?":
                out[i] = f"{max(action.option_strings, key=len)}={action.const}"
            elif action.nargs is None:
                i += 1  # its value is the next token
        i += 1
    return out


def _lookup(parser, token: str):
    """(action, whether a value is attached) for an option token, (None, False) if unknown."""
    if token.startswith("--"):
        name, eq, _ = token.partition("=")
        action = parser._option_string_actions.get(name)
        if action is None:
            matches = {a for o, a in parser._option_string_actions.items() if o.startswith(name)
                       and o.startswith("--")}
            action = matches.pop() if len(matches) == 1 else None
        return action, bool(eq)
    action = parser._option_string_actions.get(token[:2])
    return action, len(token) > 2


class Unsupported(argparse.Action):
    """Stores the value and warns once per command, unless the parsing command (parser.prog)
    is one of `implemented_by` (srun implements --cpu-bind; sbatch does not)."""

    def __init__(self, option_strings, dest, implemented_by=(), **kwargs):
        self.implemented_by = frozenset(implemented_by)
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, True if self.nargs == 0 else values)
        if parser.prog not in self.implemented_by:
            shown = self.option_strings[-1] + (f"={values}" if isinstance(values, str) and values else "")
            warn_once(parser, self.dest, f"{shown} {IGNORED}")


class GpuBindAction(argparse.Action):
    """--gpu-bind: checked as it is parsed (Slurm refuses a bad value at once). The agent reads
    a step's binding from SLURM_GPU_BIND in the step's environment (agent/gpubind.py): the
    job's (apply_gpu_options), or srun's own when srun puts ns.gpu_bind there."""

    def __call__(self, parser, namespace, values, option_string=None):
        from ..agent.gpubind import parse
        parse(values)
        setattr(namespace, self.dest, values)


class MailTypeAction(argparse.Action):
    """--mail-type: Slurm's words, checked as they are parsed; several given add up (Slurm ORs
    them into one mask)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from ..mailtypes import parse
        words = [w for w in (getattr(namespace, self.dest, None) or "").split(",") if w]
        words += [w for w in parse(values).split(",") if w]
        setattr(namespace, self.dest, ",".join(dict.fromkeys(words)))


def apply_mail_options(ns, spec) -> None:
    """--mail-type and --mail-user onto the job (the controller fills in the default user)."""
    spec.mail_type = getattr(ns, "mail_type", None) or ""
    spec.mail_user = (getattr(ns, "mail_user", None) or "").strip()


# the input variable that sets --switches' wait alone (Slurm's env-only option), per command
WAIT4SWITCH = {"sbatch": "SBATCH_WAIT4SWITCH", "salloc": "SALLOC_WAIT4SWITCH", "srun": "SLURM_WAIT4SWITCH"}


def apply_switches(ns, spec, environ=None) -> None:
    """--switches=N[@max-time] onto the job: at most N leaf switches, waited for up to max-time
    (Slurm's time formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours...);
    SBATCH_WAIT4SWITCH (SALLOC_, SLURM_) gives the wait when the option does not."""
    from ..errors import InvalidRequest
    from ..units import parse_duration_seconds
    text = getattr(ns, "switches", None)
    environ = os.environ if environ is None else environ
    wait = environ.get(WAIT4SWITCH.get(getattr(ns, "command_name", ""), ""))
    if text:
        count, at, given = text.partition("@")
        if not (count.isascii() and count.isdigit() and 0 < int(count) < 2**31):
            raise InvalidRequest(f'Invalid numeric value "{count}" for --switches.')
        spec.req_switch = int(count)
        wait = given if at else wait
    if wait is not None and spec.req_switch:
        try:
            spec.wait4switch = (2**31 - 1 if wait.strip().upper() in ("-1", "INFINITE", "UNLIMITED")
                                else min(parse_duration_seconds(wait), 2**31 - 1))
        except InvalidRequest:
            raise InvalidRequest(f"Invalid --switches time specification: {wait}") from None


GRES_FLAGS = ("enforce-binding", "disable-binding")


def apply_gpu_options(ns, spec) -> None:
    """--gpu-bind and --gres-flags onto the job, checked now: a bad value is refused at submit
    with Slurm's message, never carried to the node."""
    from ..agent.gpubind import parse
    from ..errors import InvalidRequest
    text = getattr(ns, "gpu_bind", None)
    if text:
        parse(text)
        spec.gpu_bind = text
    flags = getattr(ns, "gres_flags", None)
    if flags:
        if flags.lower() not in GRES_FLAGS:
            raise InvalidRequest("Invalid --gres-flags specification")
        spec.gres_flags = flags.lower()


def warn_once(parser, key: str, text: str) -> None:
    """One warning per option and command, though sbatch parses the command line, the
    directives and the input variables in turn with the same parser."""
    warned = parser.__dict__.setdefault("_warned", set())
    if key not in warned:
        warned.add(key)
        sys.stderr.write(f"{parser.prog}: warning: {text}\n")


def unsupported(p, *flags, flag: bool = False, optional: bool = False, implemented_by=()) -> None:
    """Declare an option accepted without its effect: a flag (no value), an optional value, or
    a value (the default)."""
    kwargs = {"nargs": 0} if flag else ({"nargs": "?", "const": ""} if optional else {})
    p.add_argument(*flags, action=Unsupported, implemented_by=implemented_by, **kwargs)


def add_job_options(p) -> None:
    """The options sbatch, srun and salloc share (resources, limits, I/O, placement)."""
    p.set_defaults(command_name=p.prog)  # which command parsed them, for warnings made later
    _add_implemented(p)
    _add_unsupported(p)


def _add_implemented(p) -> None:
    a = p.add_argument
    a("-J", "--job-name", dest="name")
    a("-p", "--partition")
    a("-N", "--nodes")
    a("-n", "--ntasks", type=int)
    a("-c", "--cpus-per-task", type=int)
    a("--ntasks-per-node", type=int)
    a("--mincpus", type=int)
    a("-O", "--overcommit", action="store_true", default=None)
    a("--use-min-nodes", action="store_true", default=None)
    a("--mem")
    a("--mem-per-cpu")
    a("--mem-per-gpu")
    a("-t", "--time")
    a("--gres", action="append")
    a("-G", "--gpus")
    a("--gpus-per-node")
    a("--gpus-per-task")
    a("--cpus-per-gpu", type=int)
    a("-o", "--output")
    a("-e", "--error")
    a("-i", "--input")
    a("-D", "--chdir")
    a("--export")
    a("--open-mode", choices=["append", "truncate"])
    a("-b", "--begin")
    a("-H", "--hold", action="store_true", default=None)
    a("-A", "--account")
    a("-q", "--qos")
    a("--comment")
    a("--mail-type", action=MailTypeAction)  # checked here: Slurm refuses a bad word at once
    a("--mail-user")
    a("-C", "--constraint")
    a("--exclusive", nargs="?", const="exclusive", default=None)
    a("--requeue", action="store_const", const=True, dest="requeue", default=None)
    a("--no-requeue", action="store_const", const=False, dest="requeue")
    a("--nice", type=int, nargs="?", const=100)
    a("-w", "--nodelist")
    a("-x", "--exclude")
    a("--signal")
    a("-a", "--array")
    a("-d", "--dependency")
    a("--kill-on-invalid-dep")
    a("--reservation")
    a("--deadline")
    a("--priority")  # a number, or TOP; only an operator's is kept (the controller says so)
    a("-Q", "--quiet", action="store_true", default=None)
    a("--gpu-bind", action=GpuBindAction)  # each task's GPUs (agent/gpubind.py)
    a("--gres-flags")  # enforce-binding | disable-binding (apply_gpu_options)
    a("--switches")  # N[@max-time]: topology/tree (apply_switches)
    # --immediate[=secs]: sbatch, salloc and srun give up when the job does not start at once
    # (srun inside an allocation: when its step cannot be created at once)
    p.add_argument("-I", "--immediate", nargs="?", const="", action=Unsupported,
                   implemented_by={"sbatch", "salloc", "srun"})


def _add_unsupported(p) -> None:
    """Slurm's options whose effect we do not have (no sockets, cores or threads in placement;
    no licenses, burst buffers, power or energy management, federation). -M/--clusters
    is SlurmArgParser's: it names this cluster or 'all', else is refused."""
    for value in ("--wckey", "--hint",
                  ("-L", "--licenses"), "--mcs-label", "--tmp", "--cluster-constraint",
                  "--time-min", "--threads-per-core", "--cores-per-socket",
                  "--sockets-per-node", "--ntasks-per-socket", "--ntasks-per-core",
                  ("-B", "--extra-node-info"), "--delay-boot", "--power",
                  "--profile", "--acctg-freq", ("-S", "--core-spec"), "--thread-spec", "--bb",
                  "--bbf", "--container", "--gpu-freq"):
        unsupported(p, *((value,) if isinstance(value, str) else value))
    # -s: jobs here never share CPUs, as under Slurm's default OverSubscribe=NO partitions
    for value in ("--contiguous", "--spread-job", ("-k", "--no-kill"), ("-s", "--oversubscribe")):
        unsupported(p, *((value,) if isinstance(value, str) else value), flag=True)
    # sbatch and srun send the caller's limits (rlimits.py); salloc has no such option in Slurm
    unsupported(p, "--propagate", optional=True, implemented_by={"sbatch", "srun"})
    unsupported(p, "--get-user-env", optional=True)
    # srun lays out its tasks by these (its step path); a batch job or an allocation only
    # passes them on to its steps in Slurm, which we do not
    unsupported(p, "--distribution", implemented_by={"srun"})
    unsupported(p, "--cpu-bind", implemented_by={"srun"})


def add_batch_options(p) -> None:
    """sbatch's and salloc's options that srun defines in its own parser."""
    unsupported(p, "--mem-bind")
    unsupported(p, "--cpu-freq")
    unsupported(p, "--network")
    p.add_argument("-m", dest="distribution", action=Unsupported)
    p.add_argument("-v", "--verbose", action=Unsupported, nargs=0)  # no debug lines to print
    # nodes here are up when the job starts, never booted for it: the same as Slurm's waiting
    p.add_argument("--wait-all-nodes", choices=["0", "1"])


# ---- input environment variables (man sbatch / salloc, INPUT ENVIRONMENT VARIABLES) -----------
# name after the prefix -> the option it stands for. Flags: set by an empty value, "yes" or a
# non-zero number, as Slurm reads them. Precedence (Slurm's): command line > variable > #SBATCH.
COMMON_VARIABLES = {
    "ACCOUNT": "--account", "ACCTG_FREQ": "--acctg-freq", "CLUSTERS": "--clusters",
    "CONSTRAINT": "--constraint", "CONTAINER": "--container", "CORE_SPEC": "--core-spec",
    "CPUS_PER_GPU": "--cpus-per-gpu", "DEBUG": "--verbose", "DELAY_BOOT": "--delay-boot",
    "EXCLUSIVE": "--exclusive", "GPU_BIND": "--gpu-bind", "GPU_FREQ": "--gpu-freq",
    "GPUS": "--gpus", "GPUS_PER_NODE": "--gpus-per-node", "GPUS_PER_TASK": "--gpus-per-task",
    "GRES": "--gres", "GRES_FLAGS": "--gres-flags", "HINT": "--hint", "MEM_BIND": "--mem-bind",
    "MEM_PER_CPU": "--mem-per-cpu", "MEM_PER_GPU": "--mem-per-gpu", "MEM_PER_NODE": "--mem",
    "NETWORK": "--network", "NO_KILL": "--no-kill", "OVERCOMMIT": "--overcommit",
    "PARTITION": "--partition", "POWER": "--power", "PROFILE": "--profile", "QOS": "--qos",
    "REQ_SWITCH": "--switches", "RESERVATION": "--reservation", "SIGNAL": "--signal",
    "SPREAD_JOB": "--spread-job", "THREAD_SPEC": "--thread-spec",
    "THREADS_PER_CORE": "--threads-per-core", "TIMELIMIT": "--time",
    "USE_MIN_NODES": "--use-min-nodes", "WCKEY": "--wckey",
}
SBATCH_VARIABLES = {
    **COMMON_VARIABLES, "ARRAY_INX": "--array", "DISTRIBUTION": "--distribution",
    "EXPORT": "--export", "GET_USER_ENV": "--get-user-env", "JOB_NAME": "--job-name",
    "MAIL_TYPE": "--mail-type", "MAIL_USER": "--mail-user",
    "NO_REQUEUE": "--no-requeue", "OPEN_MODE": "--open-mode", "REQUEUE": "--requeue",
    "WAIT": "--wait",
}
SALLOC_VARIABLES = {**COMMON_VARIABLES, "IMMEDIATE": "--immediate"}
FLAGS = {"--no-kill", "--overcommit", "--spread-job", "--use-min-nodes", "--no-requeue",
         "--requeue", "--wait", "--verbose"}
OPTIONAL = {"--exclusive", "--get-user-env", "--immediate"}  # a value, or none at all


def env_arguments(prefix: str, table: dict[str, str], environ=None) -> list[str]:
    """The arguments the input variables stand for (SBATCH_PARTITION=gpu -> --partition=gpu),
    in the table's order."""
    environ = os.environ if environ is None else environ
    args: list[str] = []
    for suffix, option in table.items():
        value = environ.get(prefix + suffix)
        if value is None:
            continue
        if option in FLAGS:
            if _flag_set(value):
                args.append(option)
        elif option in OPTIONAL and not value:
            args.append(option)
        else:
            args.append(f"{option}={value}")
    return args


def _flag_set(value: str) -> bool:
    v = value.strip().lower()
    return v in ("", "yes") or (v.isdigit() and int(v) != 0)
