"""Hostlist expressions (node[1-4,7]) to names and back, through python-hostlist, with the size
checked before anything is expanded: a 64-byte expression can name half a million hosts.
Errors are ConfigError naming where the expression came from.
"""

from __future__ import annotations

import re

import hostlist as _hostlist

from .errors import ConfigError

MAX_HOSTLIST = 65536  # names one hostlist expression may expand to; counted before expanding
_MAX_BRACKETS = 64  # bracket groups in one name: python-hostlist recurses once per group
_HL_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?\n?")  # python-hostlist's `$` admits one "\n"


def expand(expr: str, where: str = "") -> list[str]:
    """A hostlist expression (node[1-4,7]) to names; ConfigError naming `where` when malformed,
    or when it would expand to more than MAX_HOSTLIST names (refused before expanding: a
    64-byte expression can name half a million hosts)."""
    shown = expr if len(expr) <= 80 else expr[:77] + "..."
    count = _hostlist_size(expr, shown, where)
    if count > MAX_HOSTLIST:
        message = f"{where}: hostlist '{shown}' expands to more than {MAX_HOSTLIST} names"
        raise ConfigError(message.lstrip(": "))
    try:
        names = _hostlist.expand_hostlist(expr)
    except (_hostlist.BadHostlist, ValueError, RecursionError) as e:
        raise ConfigError(f"{where}: bad hostlist '{shown}': {e}".lstrip(": ")) from None
    if not names:
        raise ConfigError(f"{where}: empty hostlist '{shown}'".lstrip(": "))
    return names


# The grammar python-hostlist accepts is regular: top-level parts split by commas outside
# brackets, each text with non-nested [rangelist] groups. Regexes walk it at C speed.
_HL_WELL_FORMED = re.compile(r"(?:[^\[\],]|\[[^\[\]]*\]|,)*")
_HL_PART = re.compile(r"(?:[^\[\],]|\[[^\[\]]*\])+")


def _hostlist_size(expr: str, shown: str, where: str) -> int:
    """How many names python-hostlist would produce, duplicates counted, from the bracket
    ranges alone; past MAX_HOSTLIST the exact figure does not matter and counting stops."""
    def bad(why: str) -> ConfigError:
        return ConfigError(f"{where}: bad hostlist '{shown}': {why}".lstrip(": "))

    if not _HL_WELL_FORMED.fullmatch(expr):
        raise bad("nested or unbalanced brackets")
    parts = _HL_PART.findall(expr)
    total = len(parts)  # each part names at least one host (or is refused)
    for part in parts:
        if total > MAX_HOSTLIST:
            break
        if "[" in part:
            total += _part_size(part, bad) - 1
    return total


def _part_size(part: str, bad) -> int:
    """Names of one part: the product of its bracket groups' sizes."""
    rangelists = re.findall(r"\[([^\]]*)\]", part)
    if len(rangelists) > _MAX_BRACKETS:
        raise bad("too many bracket groups")
    size = 1
    for rangelist in rangelists:
        size *= _rangelist_size(rangelist, bad)
        if size > MAX_HOSTLIST:
            break
    return size


def _rangelist_size(rangelist: str, bad) -> int:
    size = 0
    for range_ in rangelist.split(","):
        m = _HL_RANGE.fullmatch(range_)
        if not m:
            raise bad("bad range")
        if m.group(2) is None:
            size += 1
            continue
        low, high = (s.lstrip("0") or "0" for s in m.group(1, 2))
        if len(low) > 18 or len(high) > 18:  # int() of a huge digit string is itself the attack
            raise bad("number too large")
        size += max(int(high) - int(low) + 1, 0)
    return size


def collect(names) -> str:
    """Names back to a compact hostlist expression (node[1-2,4])."""
    return _hostlist.collect_hostlist(list(names)) if names else ""
