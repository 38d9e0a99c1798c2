"""--usage, --help and --version as Slurm 22.05 prints them, for every command.

Slurm's texts are kept verbatim (USAGE here, HELP in helptext.py) and filtered through the
command's own parser, so what a user reads is Slurm's layout and wording, limited to what we
accept, and nothing we accept is left out:

    text line                                  our parser              printed
    "  -a, --array=indexes   job array ..."    takes --array           as is
    "      --bb=<spec>       burst buffer ..."  no --bb                 dropped (with its
                                                                        continuation lines)
    "  -s, --step=step(s)    ..."              takes --steps, not -s   "      --step=..." (getopt
                                                                        takes a unique prefix)
    (not in the text)                          takes --me              added under "Other
                                                                        options:", worded as
                                                                        Slurm's man page

A group ("Constraint options:") left with no option is dropped whole. This module must not
parse arguments or exit: common.SlurmArgParser does that and calls the three renderers here.
"""

from __future__ import annotations

import re

from ..version import SLURM_VERSION  # the agents report it too

# What `-V` prints: Slurm's exact line. Clients parse it strictly: OSG's Gratia probe does
# `name, version = output.split()`, clusterscope does int() on each dotted part, law matches
# r"^slurm (\d+)\.(\d+)\.(\d+)", some do r"^slurm (\d+\.\d+\.\d+)$". Any suffix naming
# pyslurm-lite would break the first two, so our own version is `pyslurm-lite --version`'s.
VERSION_LINE = f"slurm {SLURM_VERSION}\n"

HELP_INDENT_MAX = 11  # an option line starts within 11 columns (sshare: 10); deeper ones continue

# Options we take that Slurm's --help does not list (or lists under another name), in the words
# of Slurm 22.05's man pages.
EXTRA_HELP = {
    "--me": "equivalent to --user=<my username>",
    "--no-shell": "exit once the allocation is granted, without running a command",
    "--output": "location of stdout redirection",
    "--error": "location of stderr redirection",
    "--input": "location of stdin redirection",
    "--export": "specify environment variables to export",
    "--open-mode": "open the output and error files in append or truncate mode",
    "--requeue": "if set, permit the job to be requeued",
    "--no-requeue": "if set, do not permit the job to be requeued",
    "--array": "job array index values",
    "--kill-on-invalid-dep": "end the job if its dependency can never be satisfied (yes|no)",
    "--immediate": "exit if resources not available in \"secs\"",
    "--acctg-freq": "accounting and profiling sampling intervals",
    "--propagate": "propagate all [or specific list of] rlimits",
    "--cpu-bind": "Bind tasks to CPUs",
    "--network": "Use network performance counters",
    "--wait-all-nodes": "begin once all nodes are ready (1) or as soon as allocated (0)",
    "--batch": "run the batch script on the first node with these features",
}

# Slurm's usage lines, verbatim (each command's _usage()).
USAGE = {
    "sbatch": (
        "Usage: sbatch [-N nnodes] [-n ntasks]\n"
        "              [-c ncpus] [-r n] [-p partition] [--hold] [--parsable] [-t minutes]\n"
        "              [-D path] [--no-kill] [--overcommit]\n"
        "              [--input file] [--output file] [--error file]\n"
        "              [--time-min=minutes] [--licenses=names] [--clusters=cluster_names]\n"
        "              [--chdir=directory] [--oversubscribe] [-m dist] [-J jobname]\n"
        "              [--verbose] [--gid=group] [--uid=user]\n"
        "              [--contiguous] [--mincpus=n] [--mem=MB] [--tmp=MB] [-C list]\n"
        "              [--account=name] [--dependency=type:jobid[+time]] [--comment=name]\n"
        "              [--mail-type=type] [--mail-user=user] [--nice[=value]] [--wait]\n"
        "              [--requeue] [--no-requeue] [--ntasks-per-node=n] [--propagate]\n"
        "              [--nodefile=file] [--nodelist=hosts] [--exclude=hosts]\n"
        "              [--network=type] [--mem-per-cpu=MB] [--qos=qos] [--gres=list]\n"
        "              [--mem-bind=...] [--reservation=name] [--mcs-label=mcs]\n"
        "              [--cpu-freq=min[-max[:gov]]] [--power=flags] [--gres-flags=opts]\n"
        "              [--switches=max-switches{@max-time-to-wait}] [--reboot]\n"
        "              [--core-spec=cores] [--thread-spec=threads]\n"
        "              [--bb=burst_buffer_spec] [--bbf=burst_buffer_file]\n"
        "              [--array=index_values] [--profile=...] [--ignore-pbs] [--spread-job]\n"
        "              [--export[=names]] [--export-file=file|fd] [--delay-boot=mins]\n"
        "              [--use-min-nodes]\n"
        "              [--cpus-per-gpu=n] [--gpus=n] [--gpu-bind=...] [--gpu-freq=...]\n"
        "              [--gpus-per-node=n] [--gpus-per-socket=n] [--gpus-per-task=n]\n"
        "              [--mem-per-gpu=MB]\n"
        "              executable [args...]\n"
    ),
    "srun": (
        "Usage: srun [-N nnodes] [-n ntasks] [-i in] [-o out] [-e err]\n"
        "            [-c ncpus] [-r n] [-p partition] [--hold] [-t minutes]\n"
        "            [-D path] [--immediate[=secs]] [--overcommit] [--overlap] [--no-kill]\n"
        "            [--oversubscribe] [--label] [--unbuffered] [-m dist] [-J jobname]\n"
        "            [--jobid=id] [--verbose] [--slurmd_debug=#] [--gres=list]\n"
        "            [-T threads] [-W sec] [--gres-flags=opts]\n"
        "            [--licenses=names] [--clusters=cluster_names]\n"
        "            [--qos=qos] [--time-min=minutes]\n"
        "            [--contiguous] [--mincpus=n] [--mem=MB] [--tmp=MB] [-C list]\n"
        "            [--mpi=type] [--account=name] [--dependency=type:jobid[+time]]\n"
        "            [--kill-on-bad-exit] [--propagate[=rlimits] [--comment=name]\n"
        "            [--cpu-bind=...] [--mem-bind=...] [--network=type]\n"
        "            [--ntasks-per-node=n] [--ntasks-per-socket=n] [reservation=name]\n"
        "            [--ntasks-per-core=n] [--mem-per-cpu=MB] [--preserve-env]\n"
        "            [--profile=...] [--exact]\n"
        "            [--mail-type=type] [--mail-user=user] [--nice[=value]]\n"
        "            [--prolog=fname] [--epilog=fname]\n"
        "            [--task-prolog=fname] [--task-epilog=fname]\n"
        "            [--ctrl-comm-ifhn=addr] [--multi-prog] [--mcs-label=mcs]\n"
        "            [--cpu-freq=min[-max[:gov]]] [--power=flags] [--spread-job]\n"
        "            [--switches=max-switches{@max-time-to-wait}] [--reboot]\n"
        "            [--core-spec=cores] [--thread-spec=threads]\n"
        "            [--bb=burst_buffer_spec] [--bbf=burst_buffer_file]\n"
        "            [--bcast=<dest_path>] [--bcast-exclude=<NONE|path1,...,pathN>]\n"
        "            [--send-libs[=y|n]] [--compress[=library]]\n"
        "            [--acctg-freq=<datatype>=<interval>] [--delay-boot=mins]\n"
        "            [-w hosts...] [-x hosts...] [--use-min-nodes]\n"
        "            [--mpi-combine=yes|no] [--het-group=value]\n"
        "            [--cpus-per-gpu=n] [--gpus=n] [--gpu-bind=...] [--gpu-freq=...]\n"
        "            [--gpus-per-node=n] [--gpus-per-socket=n] [--gpus-per-task=n]\n"
        "            [--mem-per-gpu=MB]\n"
        "            executable [args...]\n"
    ),
    "salloc": (
        "Usage: salloc [-N numnodes|[min nodes]-[max nodes]] [-n num-processors]\n"
        "              [-c cpus-per-node] [-r n] [-p partition] [--hold] [-t minutes]\n"
        "              [--immediate[=secs]] [--no-kill] [--overcommit] [-D path]\n"
        "              [--oversubscribe] [-J jobname]\n"
        "              [--verbose] [--gid=group] [--uid=user] [--licenses=names]\n"
        "              [--clusters=cluster_names]\n"
        "              [--contiguous] [--mincpus=n] [--mem=MB] [--tmp=MB] [-C list]\n"
        "              [--account=name] [--dependency=type:jobid[+time]] [--comment=name]\n"
        "              [--mail-type=type] [--mail-user=user] [--nice[=value]]\n"
        "              [--bell] [--no-bell] [--kill-command[=signal]] [--spread-job]\n"
        "              [--nodefile=file] [--nodelist=hosts] [--exclude=hosts]\n"
        "              [--network=type] [--mem-per-cpu=MB] [--qos=qos]\n"
        "              [--mem-bind=...] [--reservation=name] [--mcs-label=mcs]\n"
        "              [--time-min=minutes] [--gres=list] [--gres-flags=opts]\n"
        "              [--cpu-freq=min[-max[:gov]]] [--power=flags] [--profile=...]\n"
        "              [--switches=max-switches[@max-time-to-wait]]\n"
        "              [--core-spec=cores] [--thread-spec=threads] [--reboot]\n"
        "              [--bb=burst_buffer_spec] [--bbf=burst_buffer_file]\n"
        "              [--delay-boot=mins] [--use-min-nodes]\n"
        "              [--cpus-per-gpu=n] [--gpus=n] [--gpu-bind=...] [--gpu-freq=...]\n"
        "              [--gpus-per-node=n] [--gpus-per-socket=n] [--gpus-per-task=n]\n"
        "              [--mem-per-gpu=MB]\n"
        "              [command [args...]]\n"
    ),
    "squeue": (
        "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]\n"
        "              [-n name] [-o format] [-p partitions] [--qos qos]\n"
        "              [--reservation reservation] [--sort fields] [--start]\n"
        "              [--step step_id] [-t states] [-u user_name] [--usage]\n"
        "              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]\n"
        "\t      [-ahjlrsv]\n"
    ),
    "scancel": (
        "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]\n"
        "               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]\n"
        "               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]\n"
        "               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]\n"
        "               [job_id[_array_id][.step_id]]\n"
    ),
    "sinfo": (
        "Usage: sinfo [-abdelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]\n"
        "             [-S fields] [-o format] [-O Format] [--federation] [--local]\n"
    ),
    "sacct": (
        "Usage: sacct [options]\n"
        "\tUse --help for help\n"
    ),
    "sprio": (
        "Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]\n"
        "   [--federation] [--local] [--sibling] [--usage] [-hlnvVw]\n"
    ),
    "sdiag": (
        "Usage: sdiag [-M cluster] [-aritT]\n"
    ),
}
# scontrol and sshare print their --help text for --usage too.
USAGE_IS_HELP = frozenset({"scontrol", "sshare"})
# scontrol's commands we carry out; the others are dropped from its help.
SCONTROL_COMMANDS = frozenset({"show", "update", "hold", "uhold", "release", "requeue",
                               "requeuehold", "create", "delete", "ping", "takeover",
                               "token"})


class Options:
    """What a parser accepts, answered as getopt_long would: an exact name, or a long option
    given by a unique prefix (Slurm's text says --step, our squeue takes --steps)."""

    def __init__(self, parser):
        self.actions = parser._option_string_actions  # argparse's own table; no public one
        self.longs = [o for o in self.actions if o.startswith("--")]

    def takes(self, option: str) -> bool:
        if option in self.actions:
            return True
        return option.startswith("--") and len(self.resolve(option)) == 1

    def resolve(self, option: str) -> set:
        return {id(self.actions[o]) for o in self.longs if o.startswith(option)}

    def action_of(self, option: str):
        if option in self.actions:
            return self.actions[option]
        hits = [self.actions[o] for o in self.longs if o.startswith(option)]
        return hits[0] if len({id(h) for h in hits}) == 1 else None


def usage_text(parser) -> str:
    prog = parser.prog
    if prog in USAGE_IS_HELP or prog not in USAGE:
        return help_text(parser)
    return filter_usage(USAGE[prog], Options(parser))


def help_text(parser) -> str | None:
    from .helptext import HELP
    if parser.prog not in HELP:
        return None
    return render_help("".join(HELP[parser.prog]), parser)


# ---- --usage: drop the [items] of options we do not take ------------------------------------

def _items(line: str):
    """(start, end) of each top-level [...] item; an unclosed one runs to the end of the line
    (srun's own text has '[--propagate[=rlimits] [--comment=name]')."""
    depth, start = 0, 0
    for i, c in enumerate(line):
        if c == "[":
            if depth == 0:
                start = i
            depth += 1
        elif c == "]" and depth:
            depth -= 1
            if depth == 0:
                yield start, i + 1
    if depth:
        yield start, len(line)


def _usage_item(item: str, opts: Options) -> str:
    """The item as printed: unchanged, its flags thinned ([-hlnvVw]), or '' when not taken."""
    inner = item.strip("[]")
    if not inner.startswith("-"):
        return item  # an operand: [job_id[_array_id][.step_id]], [command [args...]]
    if re.fullmatch(r"-[A-Za-z]{2,}", inner):  # a cluster of flags
        kept = "".join(c for c in inner[1:] if opts.takes("-" + c))
        return f"[-{kept}]" if kept else ""
    names = re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", inner)
    return item if any(opts.takes(n) for n in names) else ""


def filter_usage(text: str, opts: Options) -> str:
    out = []
    for n, line in enumerate(text.splitlines()):
        pieces, pos = [], 0
        for start, end in _items(line):
            pieces += [line[pos:start], _usage_item(line[start:end], opts)]
            pos = end
        pieces.append(line[pos:])
        lead = len(line) - len(line.lstrip())
        body = re.sub(r" {2,}", " ", "".join(pieces)[lead:]).strip()
        if body or n == 0:
            out.append(line[:lead] + body)
    return "\n".join(out) + "\n"


# ---- --help: Slurm's groups and wording, limited to what we take -----------------------------

def _is_option_line(line: str) -> bool:
    stripped = line.lstrip(" ")
    return stripped.startswith("-") and len(line) - len(stripped) <= HELP_INDENT_MAX


def _is_continuation(line: str) -> bool:
    stripped = line.lstrip(" ")
    return bool(stripped.strip()) and (line.startswith("\t") or
                                       len(line) - len(stripped) > HELP_INDENT_MAX)


def _names(line: str) -> list[str]:
    """The options an option line documents: '-a, --array=indexes', '-a or --all', '-u,--uid'."""
    names = []
    for word in re.split(r"[\s,]+", line.strip()):
        if word == "or":
            continue
        if not word.startswith("-") or word == "-":
            break
        names.append(re.split(r"[=\[:]", word, maxsplit=1)[0])
    return names


def _blocks(text: str):
    """The text cut into blocks: ('option', lines) or ('text', lines); continuation lines (deep
    or tab indented) stay with the line they continue."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if _is_option_line(line):
            blocks.append(("option", [line]))
        elif _is_continuation(line) and blocks:
            blocks[-1][1].append(line)
        else:
            blocks.append(("text", [line]))
    return blocks


def _shown(lines: list[str], opts: Options, shown: set) -> list[str] | None:
    """An option's lines as printed, or None when we take none of its names. A short name we
    do not take is blanked ('-s, --step' -> '    --step'), keeping Slurm's columns."""
    names = _names(lines[0])
    taken = [n for n in names if opts.takes(n)]
    if not taken:
        return None
    for n in taken:
        action = opts.action_of(n)
        if action is not None:
            shown.add(id(action))
    first = lines[0]
    for n in names:
        if n not in taken and not n.startswith("--"):
            first = re.sub(rf"(?<![\w-]){re.escape(n)}(, ?| or |\s)",
                           lambda m: " " * len(m.group(0)), first, count=1)
    return [first] + lines[1:]


def _command_lines(lines: list[str], prog: str) -> bool:
    """scontrol's command list: keep a command only if we carry it out."""
    word = lines[0].strip().split(" ")[0]
    return prog != "scontrol" or not re.fullmatch(r"[a-z_!]+", word) or word in SCONTROL_COMMANDS


def render_help(text: str, parser) -> str:
    opts, shown = Options(parser), set()
    groups: list[list[str]] = [[]]
    has_option: list[bool] = [False]
    for kind, lines in _blocks(text):
        if kind == "text" and lines[0] and not lines[0][0].isspace():
            groups.append([])  # a group title ("Constraint options:") opens a group
            has_option.append(False)
        if kind == "option":
            kept = _shown(lines, opts, shown)
            if kept is None:
                continue
            groups[-1] += kept
            has_option[-1] = True
        elif _in_command_list(groups) and not _command_lines(lines, parser.prog):
            continue
        else:
            groups[-1] += lines
    extra = _extra_lines(parser, opts, shown, text)
    return _join(groups, has_option, extra)


def _in_command_list(groups) -> bool:
    return any("Valid <COMMAND> values" in line for line in groups[-1])


def _join(groups, has_option, extra: list[str]) -> str:
    """The groups in order; a titled group whose options were all dropped goes whole (title,
    its notes, its trailing blank line). Extra options join "Other options:", else the group
    before "Help options:", else the end."""
    keep = [g for i, g in enumerate(groups) if i == 0 or has_option[i] or not _is_option_group(g)]
    if extra:
        target = _extra_target(keep)
        at = len(target)
        while at and not target[at - 1].strip():
            at -= 1  # before the group's trailing blank lines
        target[at:at] = extra
    return "".join(line + "\n" for g in keep for line in g)


def _is_option_group(group: list[str]) -> bool:
    return bool(group) and group[0].rstrip().endswith(":") and "options" in group[0].lower() \
        or bool(group) and group[0].startswith("Affinity/Multi-core options")


def _extra_target(groups):
    for g in groups:
        if g and g[0].startswith("Other options:"):
            return g
    for i, g in enumerate(groups):
        if g and g[0].startswith("Help options:") and i:
            return groups[i - 1]
    return groups[-1]


def _extra_lines(parser, opts: Options, shown: set, text: str) -> list[str]:
    """Lines for the options we take that the text does not list, in its columns."""
    indent, column = _columns(text)
    out = []
    for action in parser._actions:
        if not action.option_strings or id(action) in shown:
            continue
        shorts = [o for o in action.option_strings if not o.startswith("--")]
        longs = [o for o in action.option_strings if o.startswith("--")]
        spec = (shorts[0] + ", " if shorts else "    ") + (longs[0] if longs else "")
        spec = spec.rstrip(", ") + (_value_spec(action) if longs else "")
        words = action.help or EXTRA_HELP.get(longs[0] if longs else "", "")
        out.append(f"{' ' * indent}{spec:<{column - indent - 1}} {words}".rstrip())
    return out


def _value_spec(action) -> str:
    """'=value' as Slurm writes it: '=append|truncate' for a choice, '[=value]' when optional."""
    if action.nargs == 0:
        return ""
    value = "|".join(action.choices) if action.choices else (action.metavar or "value")
    return f"[={value}]" if action.nargs == "?" else f"={value}"


def _columns(text: str) -> tuple[int, int]:
    """Where option names and their descriptions start in this text (Slurm's widths differ per
    command: 2/30 for sbatch, 2/34 for squeue, 4/27 for sshare)."""
    for line in text.splitlines():
        m = re.match(r"^( {1,9})(-\S.*?\S)( {2,})(\S)", line)
        if m:
            return len(m.group(1)), m.start(4)
    return 2, 30
