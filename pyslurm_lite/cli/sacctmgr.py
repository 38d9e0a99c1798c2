"""sacctmgr: accounts, users, associations and QOS in the accounting database, Slurm's syntax.

    sacctmgr [-i] [-n] [-p|-P] VERB ENTITY [NAMES] [KEY=VALUE...] [where KEY=VALUE...] [set KEY=VALUE...]

VERB: add|create, modify|update, delete|remove, show|list; ENTITY: account, user, qos,
association. Options may come anywhere (getopt permutes), so `show assoc format=... -P` works.
This module only parses and prints; the controller checks every option (assoc_cmds.py).

A change without -i is described first (the controller's dry run) and committed after "Would
you like to commit changes? (You have 30 seconds to decide)" is answered y. With stdin not a
terminal there is no one to ask: the change is committed, and sacctmgr says so on stderr.
"""

from __future__ import annotations

import select
import sys

from ..errors import SlurmError
from .usage import VERSION_LINE

PROG = "sacctmgr"
VERBS = {"add": "add", "create": "add", "modify": "modify", "update": "modify",
         "delete": "delete", "remove": "delete", "show": "show", "list": "show"}
ENTITIES = (("account", "account"), ("user", "user"), ("qos", "qos"), ("association", "association"),
            ("assoc", "association"))
# column -> (title, width), Slurm's
COLUMNS = {
    "Cluster": ("Cluster", 10), "Account": ("Account", 10), "User": ("User", 10),
    "Partition": ("Partition", 10), "Fairshare": ("Share", 9), "Priority": ("Priority", 10),
    "GrpJobs": ("GrpJobs", 7), "GrpTRES": ("GrpTRES", 13), "GrpSubmit": ("GrpSubmit", 9),
    "GrpWall": ("GrpWall", 11), "GrpTRESMins": ("GrpTRESMins", 13), "MaxJobs": ("MaxJobs", 7),
    "MaxTRES": ("MaxTRES", 13), "MaxTRESPerNode": ("MaxTRESPerNode", 14),
    "MaxSubmitJobs": ("MaxSubmit", 9), "MaxWall": ("MaxWall", 11), "MaxTRESMins": ("MaxTRESMins", 13),
    "QOS": ("QOS", 20), "DefaultQOS": ("Def QOS", 9), "GrpTRESRunMins": ("GrpTRESRunMins", 13),
    "ParentName": ("Par Name", 10), "DefaultAccount": ("Def Acct", 10), "Admin": ("Admin", 9),
    "Description": ("Descr", 20), "Organization": ("Org", 20), "Name": ("Name", 10),
    "GraceTime": ("GraceTime", 10), "Preempt": ("Preempt", 10),
    "PreemptExemptTime": ("PreemptExemptTime", 19), "PreemptMode": ("PreemptMode", 11),
    "Flags": ("Flags", 10), "UsageThres": ("UsageThres", 10), "UsageFactor": ("UsageFactor", 11),
    "MaxTRESPerUser": ("MaxTRESPU", 13), "MaxJobsPerUser": ("MaxJobsPU", 9),
    "MaxSubmitJobsPerUser": ("MaxSubmitPU", 11), "MaxTRESPA": ("MaxTRESPA", 13),
    "MaxJobsPA": ("MaxJobsPA", 9), "MaxSubmitPA": ("MaxSubmitPA", 11), "MinTRES": ("MinTRES", 13),
}
ALIASES = {"share": "Fairshare", "shares": "Fairshare", "defqos": "DefaultQOS",
           "defacct": "DefaultAccount", "descr": "Description", "org": "Organization",
           "maxtrespu": "MaxTRESPerUser", "maxjobspu": "MaxJobsPerUser",
           "maxsubmitpu": "MaxSubmitJobsPerUser", "maxsubmit": "MaxSubmitJobs",
           "parent": "ParentName", "parname": "ParentName", "maxtresperjob": "MaxTRES"}
DEFAULT_FORMAT = {
    "association": "Cluster,Account,User,Partition,Fairshare,GrpJobs,GrpTRES,GrpSubmit,GrpWall,"
                   "GrpTRESMins,MaxJobs,MaxTRES,MaxTRESPerNode,MaxSubmitJobs,MaxWall,MaxTRESMins,"
                   "QOS,DefaultQOS,GrpTRESRunMins",
    "account": "Account,Description,Organization",
    "user": "User,DefaultAccount,Admin",
    "qos": "Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags,UsageThres,"
           "UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpSubmit,GrpWall,MaxTRES,"
           "MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPerUser,MaxJobsPerUser,MaxSubmitJobsPerUser,"
           "MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES",
}
# show's words that change what Slurm lists; accepted, with a warning, and nothing changed
SHOW_OPTIONS = ("withassoc", "withcoord", "withdeleted", "withsubaccounts", "withrawqoslevel",
                "tree", "withusage")
COMMIT_QUESTION = "Would you like to commit changes? (You have 30 seconds to decide)"
USAGE = ("Usage: sacctmgr [-i] [-n] [-Q] [-p|-P] add|modify|delete|show account|user|qos|association "
         "[NAMES] [KEY=VALUE...] [where KEY=VALUE...] [set KEY=VALUE...]")


class Usage(Exception):
    """A command line sacctmgr cannot run: the message, exit 1."""


def parse(argv: list[str]) -> tuple[dict, list[str]]:
    """(flags, the command's words) with options taken from anywhere."""
    flags = {"immediate": False, "parsable": False, "parsable2": False, "noheader": False,
             "quiet": False}
    words = []
    short = {"i": "immediate", "p": "parsable", "P": "parsable2", "n": "noheader", "Q": "quiet"}
    longs = {"--immediate": "immediate", "--parsable": "parsable", "--parsable2": "parsable2",
             "--noheader": "noheader", "--quiet": "quiet"}
    for arg in argv:
        if arg in longs:
            flags[longs[arg]] = True
        elif arg in ("-V", "--version", "-h", "--help", "--usage"):
            flags[arg.lstrip("-")[0].lower()] = True
        elif arg.startswith("-") and len(arg) > 1 and not arg.startswith("--") and \
                all(c in short for c in arg[1:]):
            for c in arg[1:]:
                flags[short[c]] = True
        elif arg.startswith("-") and len(arg) > 1:
            raise Usage(f"{PROG}: invalid option -- '{arg.lstrip('-')}'\n{USAGE}")
        else:
            words.append(arg)
    return flags, words


def command(words: list[str]) -> dict:
    """verb, entity, names, where, set, format from the words after the options."""
    if len(words) < 2:
        raise Usage(f" Too few arguments for sacctmgr: give a command.\n{USAGE}")
    verb = VERBS.get(words[0].lower())
    if verb is None:
        raise Usage(f"invalid keyword: {words[0]}")
    low = words[1].lower()
    low = low[:-1] if low.endswith("s") and low != "qos" else low  # accounts, users, ...
    entity = next((e for name, e in ENTITIES if len(low) >= 3 and name.startswith(low)), None)
    if entity is None:
        raise Usage(f" Not valid entity {words[1]}\n {USAGE}")
    cmd = {"verb": verb, "entity": entity, "names": [], "where": {}, "set": {}, "format": []}
    into = "set" if verb == "add" else "where"
    for word in words[2:]:
        key, sep, value = word.partition("=")
        if not sep and word.lower() in ("where", "set"):
            into = word.lower()
        elif not sep and word.lower() in SHOW_OPTIONS and verb == "show":
            sys.stderr.write(f"{PROG}: warning: {word} is not supported here and is ignored\n")
        elif not sep:
            cmd["names"] += [n for n in word.split(",") if n]
        elif key.lower() == "format" and verb == "show":
            cmd["format"] += [f for f in value.split(",") if f]
        else:
            cmd[into][key] = value
    if verb == "modify" and not cmd["set"]:
        raise Usage(" You didn't give me anything to set")
    return cmd


def columns(entity: str, fields: list[str]) -> list[tuple[str, str, int]]:
    """(record key, title, width) per format= item (Name%W sets the width)."""
    out = []
    for item in fields or DEFAULT_FORMAT[entity].split(","):
        name, _, width = item.partition("%")
        key = ALIASES.get(name.lower()) or next((k for k in COLUMNS if k.lower() == name.lower()), None)
        if key is None:
            raise Usage(f" Unknown field '{name}'")
        title, default = COLUMNS[key]
        try:
            out.append((key, title, int(width) if width else default))
        except ValueError:
            raise Usage(f" Unknown field '{item}'") from None
    return out


def render(records: list[dict], cols, flags) -> list[str]:
    if flags["parsable"] or flags["parsable2"]:
        end = "|" if flags["parsable"] else ""
        lines = [] if flags["noheader"] else ["|".join(t for _, t, _ in cols) + end]
        return lines + ["|".join(r.get(k, "") for k, _, _ in cols) + end for r in records]
    lines = [] if flags["noheader"] else [" ".join(_cell(t, w) for _, t, w in cols) + " ",
                                          " ".join("-" * abs(w) for _, _, w in cols) + " "]
    return lines + [" ".join(_cell(r.get(k, ""), w) for k, _, w in cols) + " " for r in records]


def _cell(text: str, width: int) -> str:
    """Right-justified in width (left with a negative one); too long: cut, '+' last (Slurm's)."""
    n = abs(width)
    if len(text) > n:
        text = text[:n - 1] + "+"
    return text.rjust(n) if width > 0 else text.ljust(n)


def main_args(argv: list[str]) -> int:
    try:
        flags, words = parse(argv)
        if flags.get("v"):
            sys.stdout.write(VERSION_LINE)
            return 0
        if flags.get("h") or flags.get("u"):
            print(USAGE)
            return 0
        cmd = command(words)
        cols = columns(cmd["entity"], cmd["format"]) if cmd["verb"] == "show" else []
    except Usage as e:
        sys.stderr.write(f"{e}\n")
        return 1
    from ..client import Client
    client = Client()
    try:
        if cmd["verb"] == "show":
            records, _ = client.sacctmgr("show", cmd["entity"], cmd["names"], cmd["where"])
            _write(render(records, cols, flags))
            return 0
        return _change(client, cmd, flags)
    except SlurmError as e:
        text = e.message if e.message.startswith(" ") else f"{PROG}: error: {e.message}"
        sys.stderr.write(text.rstrip("\n") + "\n")
        return 1


def _change(client, cmd: dict, flags: dict) -> int:
    """-i: commit at once. A terminal: describe, ask, commit on y. Else: commit, and say why."""
    args = (cmd["verb"], cmd["entity"], cmd["names"], cmd["where"], cmd["set"])
    asking = not flags["immediate"] and sys.stdin.isatty()
    _, lines = client.sacctmgr(*args, dry_run=asking)
    if not flags["quiet"]:  # -Q: errors only
        _write(lines)
    if any(line.startswith(" Nothing new added") for line in lines):
        return 1  # as Slurm's: nothing to commit is an error
    if not asking:
        if not flags["immediate"]:
            sys.stderr.write(f"{PROG}: stdin is not a terminal, nobody to ask "
                             f"\"{COMMIT_QUESTION.split('?')[0]}?\": committed (use -i to say so)\n")
        return 0
    if _confirm():
        client.sacctmgr(*args)
        return 0
    print(" Changes Discarded")
    return 0


def _confirm() -> bool:
    """Slurm's commit_check: 30 seconds to answer y or n; anything else asks again."""
    print(COMMIT_QUESTION)
    while True:
        sys.stdout.write("(N/y): ")
        sys.stdout.flush()
        ready, _, _ = select.select([sys.stdin], [], [], 30)
        if not ready:
            print("timeout")
            return False
        answer = sys.stdin.readline()
        if not answer:
            return False
        c = answer.strip()[:1]
        if c in ("Y", "y"):
            return True
        if c in ("N", "n", ""):
            return False
        print("Y or N please")


def _write(lines: list[str]) -> None:
    sys.stdout.write("".join(f"{line}\n" for line in lines))


def main() -> None:
    from .common import run
    run(PROG, main_args)


if __name__ == "__main__":
    main()
