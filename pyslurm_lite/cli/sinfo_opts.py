"""sinfo's -O/--Format long field names, -S/--sort keys and its SINFO_* input variables.

    -O NodeList,GresUsed:30,CPUsState:.14   a field per name, any case; no size: 20 columns
                                            left-justified; `:N` N columns, `:.N` right-justified
    -S -t,+N / SINFO_SORT                   sort rows by state descending, then node list;
                                            '#P' is partitions in slurm.conf order. Defaults:
                                            "#P,-t", and "N" with -N (sinfo's sort.c)
    SINFO_FORMAT / SINFO_PARTITION          defaults for -o and -p; a flag on the command line wins

Pure: text to tokens and sort keys; nodefields and sinfo.row_field compute the values.
"""

from __future__ import annotations

import re

from ..errors import InvalidRequest
from . import nodefields as nf

DEFAULT_WIDTH = 20  # an -O field without a size, as sinfo's _parse_long_token

# --Format name (lower case) -> field key: sinfo's % letter where there is one, else a word
# that row_field and nodefields.node_field know.
LONG = {
    "allocmem": "allocmem", "allocnodes": "S", "available": "a", "cluster": "V", "cores": "Y",
    "cpus": "c", "cpusload": "O", "cpusstate": "C", "defaulttime": "L", "disk": "d",
    "features": "f", "features_act": "b", "freemem": "e", "gres": "G", "gresused": "gresused",
    "groups": "g", "maxcpuspernode": "B", "memory": "m", "nodeaddr": "o", "nodeai": "A",
    "nodeaiot": "F", "nodehost": "n", "nodelist": "N", "nodes": "D", "oversubscribe": "h",
    "share": "h", "partition": "P", "partitionname": "R", "port": "port", "preemptmode": "M",
    "priorityjobfactor": "I", "prioritytier": "p", "reason": "E", "root": "r", "size": "s",
    "socketcorethread": "z", "sockets": "X", "statecompact": "t", "statelong": "T",
    "statecomplete": "statecomplete", "threads": "Z", "time": "l", "timestamp": "H", "user": "u",
    "userlong": "U", "version": "v", "weight": "w",
}
HEADERS = {**nf.HEADERS, "allocmem": "ALLOCMEM", "gresused": "GRES_USED", "port": "PORT",
           "statecomplete": "STATECOMPLETE"}


def parse_long(text: str) -> list:
    """'NodeList,GresUsed:30' -> fmt tokens ((key, width, right) or literal text). The columns
    are separated by nothing, as sinfo's: each field's width includes its padding."""
    tokens: list = []
    for raw in (t for t in text.split(",") if t):
        name, sep, size = raw.partition(":")
        if name.lower() == "all":
            continue  # sinfo's "All" prints every field; a script asking for it reads nothing
        key = LONG.get(name.lower())
        if key is None:
            raise InvalidRequest(f"Invalid node format specification: {name}")
        right = size.startswith(".")
        digits = re.match(r"[0-9]*", size[1:] if right else size).group()
        width = int(digits) if digits else (None if sep else DEFAULT_WIDTH)
        tokens.append((key, width or None, right))
        suffix = (size[1:] if right else size)[len(digits):] if sep else ""
        if suffix:
            tokens.append(suffix)
    return tokens


# -S letters (or -O keys) compared as numbers; the others compare as the text printed, except
# those below that have an order of their own.
_NUMERIC = set("cdDmwXYZpIe") | {"allocmem", "port"}
_ORDERED = {
    "t": nf.state_rank, "T": nf.state_rank,
    "O": lambda n: n.cpu_load, "H": lambda n: n.reason_time,
}
_SORTABLE = set("aAbBcCdDeEfFgGhHIlLmMnNoOpPrRsStTuUvVwXYZz")


def parse_sort(text: str) -> list[tuple[str, bool, bool]]:
    """'#P,-t' -> [('P', False, True), ('t', True, False)]: (letter, descending, in
    slurm.conf order), most significant first."""
    keys = []
    for item in (t.strip() for t in text.split(",") if t.strip()):
        m = re.fullmatch(r"([+-]?)(#?)([A-Za-z])", item)
        if not m or m.group(3) not in _SORTABLE:
            raise InvalidRequest(f"Invalid sort specification: {item}")
        keys.append((m.group(3), m.group(1) == "-", bool(m.group(2))))
    return keys


def sort_key(letter: str, config_order: bool, part_order: dict, natural, value):
    """A key function for one row (partition, [nodes]); value(row, letter) is the printed text."""
    if letter in ("P", "R") and config_order:
        return lambda row: part_order.get(row[0].name, -1) if row[0] else -1
    if letter in ("N", "n"):
        return lambda row: natural(value(row, letter))
    if letter in _ORDERED:
        fn = _ORDERED[letter]
        return lambda row: max((fn(n) for n in row[1]), default=0)
    if letter in _NUMERIC:
        return lambda row: _number(value(row, letter))
    return lambda row: value(row, letter)


def _number(text: str) -> float:
    m = re.match(r"-?[0-9.]+", text)
    return float(m.group()) if m else -1.0


def attach_sort(argv: list[str]) -> list[str]:
    """`-S -t` as getopt reads it: the word after -S/--sort is its value even when it starts with
    '-' (a descending key), which argparse would take for an option."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("-S", "--sort") and i + 1 < len(argv):
            out.append(f"--sort={argv[i + 1]}")
            i += 2
            continue
        if argv[i] == "--":
            return out + argv[i:]
        out.append(argv[i])
        i += 1
    return out


def env_defaults(ns, environ) -> None:
    """SINFO_* variables fill what the command line left unset, as sinfo's opts.c: SINFO_FORMAT
    only where no other option picks the format (-s, -N, -R)."""
    if ns.partition is None and environ.get("SINFO_PARTITION"):
        ns.partition = [environ["SINFO_PARTITION"]]
    if ns.sort is None and environ.get("SINFO_SORT"):
        ns.sort = environ["SINFO_SORT"]
    if ns.format is None and ns.Format is None and not (ns.summarize or ns.node_view or ns.reasons) \
            and environ.get("SINFO_FORMAT"):
        ns.format = environ["SINFO_FORMAT"]
