"""Node names that resolve for a local cluster's jobs: one marked block of /etc/hosts per cluster.

On a Slurm cluster every node name is in DNS or /etc/hosts, and jobs rely on it: the usual DDP
recipe is MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1). A local
cluster's nodes (node1 ... nodeN, all on loopback) are in neither, so `cluster up`, when root,
writes their addresses into /etc/hosts, and `cluster down` takes them out:

    # pyslurm-lite cluster /tmp/c1 begin: written by `pyslurm-lite cluster up`, removed by `cluster down`
    127.0.0.1 node1 node2
    # pyslurm-lite cluster /tmp/c1 end

Owns: that block, one per cluster directory, so clusters started side by side (each with its own
node1) never clobber each other's lines; every line outside our blocks is kept byte for byte.
Writing the same block again changes nothing. A block whose directory no longer holds a
slurm.conf (a cluster removed without `cluster down`) is dropped by the next edit. Edits hold an
exclusive flock on the file and rewrite it in place: in containers /etc/hosts is often a bind
mount, which rename() cannot replace. Must not: touch any other line, or resolve names through
DNS (a lab without a resolver would wait on every `cluster up`).
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import re

HOSTS = "/etc/hosts"
_MARK = "# pyslurm-lite cluster "
_BEGIN = " begin: written by `pyslurm-lite cluster up`, removed by `cluster down`"
_END = " end"
NAMES_PER_LINE = 8  # short lines: some resolvers read /etc/hosts with a fixed line buffer


# a plain, unqualified host name: a dotted one could take over a real host's name
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")


def entries(cfg) -> dict[str, list[str]]:
    """Address -> node names, for the nodes whose NodeAddr is an IP address (not the name).
    Root writes these into a system file from a slurm.conf: anything but an address and a
    plain host name is left out, so no line of that file can be smuggled in."""
    out: dict[str, list[str]] = {}
    for node in cfg.nodes.values():
        if node.addr and node.addr != node.name and _is_address(node.addr) and _NAME.fullmatch(node.name):
            out.setdefault(node.addr, []).append(node.name)
    return out


def _is_address(text: str) -> bool:
    """A loopback address (a local cluster's nodes all live on this host), without an IPv6
    scope id (which may hold blanks, and so more names)."""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return False
    return ip.is_loopback and getattr(ip, "scope_id", None) is None


def block(directory: str, addrs: dict[str, list[str]]) -> list[str]:
    lines = [f"{_MARK}{directory}{_BEGIN}"]
    for addr, names in addrs.items():
        for i in range(0, len(names), NAMES_PER_LINE):
            lines.append(f"{addr} {' '.join(names[i:i + NAMES_PER_LINE])}")
    return lines + [f"{_MARK}{directory}{_END}"]


def _split(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The lines outside our blocks, and each block's lines by directory."""
    outside, blocks, current = [], {}, None
    for line in text.splitlines():
        if current is None and line.startswith(_MARK) and line.endswith(_BEGIN):
            current = line[len(_MARK):-len(_BEGIN)]
            blocks[current] = [line]
        elif current is not None:
            blocks[current].append(line)
            if line == f"{_MARK}{current}{_END}":
                current = None
        else:
            outside.append(line)
    if current is not None:  # an unterminated block (someone edited it): keep it as text
        outside += blocks.pop(current)
    return outside, blocks


def rewrite(text: str, directory: str, addrs: dict[str, list[str]] | None,
            alive=lambda d: os.path.exists(os.path.join(d, "slurm.conf"))) -> str:
    """text with directory's block replaced by addrs (removed when None or empty); blocks of
    directories that no longer hold a cluster are dropped."""
    outside, blocks = _split(text)
    kept = [lines for d, lines in blocks.items() if d != directory and alive(d)]
    out = outside + [line for lines in kept for line in lines]
    if addrs:
        out += block(directory, addrs)
    return "\n".join(out) + "\n" if out else ""


def conflicts(text: str, addrs: dict[str, list[str]]) -> list[str]:
    """Lines outside our blocks that already give one of our names another address: the first
    line naming a host wins, so our entry would not be the one jobs get."""
    wanted = {name: addr for addr, names in addrs.items() for name in names}
    outside, _ = _split(text)
    found = []
    for line in outside:
        words = line.split("#", 1)[0].split()
        if len(words) < 2:
            continue
        for name in words[1:]:
            if name in wanted and words[0] != wanted[name]:
                found.append(f"{name} is already {words[0]} in /etc/hosts ('{line.strip()}')")
    return found


def edit(directory: str, addrs: dict[str, list[str]] | None, path: str = HOSTS) -> list[str]:
    """Write (or, with addrs None, remove) directory's block in path, under an exclusive lock.
    Returns the conflicts found; OSError when the file cannot be written."""
    if any(c in directory for c in "\r\n"):
        raise OSError(f"a cluster directory with a line break in its name: {directory!r}")
    _trusted(directory)
    with open(path, "r+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        text = f.read()
        new = rewrite(text, directory, addrs)
        if new != text:
            f.seek(0)
            f.write(new)
            f.truncate()
        return conflicts(text, addrs or {})


def _trusted(directory: str) -> None:
    """Root writes a system file from DIR/slurm.conf only when no other user could have
    written that file or replaced it: it and DIR are root's (or this user's) and neither is
    writable by group or others."""
    me = os.geteuid()
    for path in (directory, os.path.join(directory, "slurm.conf")):
        st = os.stat(path)
        if st.st_uid not in (0, me) or st.st_mode & 0o022:
            raise OSError(f"{path} could be written by another user than root")


def has_block(directory: str, path: str = HOSTS) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return directory in _split(f.read())[1]
    except OSError:
        return False


def manual_line(addrs: dict[str, list[str]]) -> str:
    return "; ".join(f"{addr} {' '.join(names)}" for addr, names in addrs.items())

