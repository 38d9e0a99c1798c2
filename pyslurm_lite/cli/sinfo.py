"""sinfo: partitions and nodes in Slurm's columns, grouped as Slurm groups them.

Partition view (default): one row per partition and per set of nodes that print alike (same
state, same reason... whatever the format shows), partitions in slurm.conf order, then states
in decreasing Slurm state number ("#P,-t"). Node view (-N): one row per node and partition,
nodes by name. Column widths written '%#P' / '%#N' are sized to the longest value, at least 9,
as Slurm 22.05 does. -O/--Format, -S/--sort and the SINFO_* variables: sinfo_opts.py.
"""

from __future__ import annotations

import os
import re
import sys
import time

from . import fmt, nodefields as nf, sinfo_opts
from .common import SlurmArgParser, cluster_banner, fail, run, split_list, write_lines

PROG = "sinfo"
FORMATS = {
    "default": "%#P %.5a %.10l %.6D %.6t %N",
    "long": "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N",
    "node": "%#N %.6D %.#P %6t",
    "node_long": "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E",
    "summarize": "%#P %.5a %.10l %.16F  %N",
    "reasons": "%20E %9u %19H %N",
    "reasons_long": "%20E %12U %19H %6t %N",
}
MIN_SIZED_WIDTH = 9  # Slurm's floor for the computed %#P / %#N widths
PART_LETTERS = set("alLsrhgpPRSBIMV")  # values that belong to the partition, not the node
SUM_LETTERS = set("NnoDCFA") | {"allocmem"}  # values summed or listed over a row's nodes
REASON_STATES = ("down", "drain")  # what -R lists, as Slurm's default "down,fail,drain"


def build_parser() -> SlurmArgParser:
    # -h means --noheader, as in Slurm, so argparse's own -h is off.
    p = SlurmArgParser(prog=PROG, add_help=False)
    a = p.add_argument
    # -a (hidden partitions) and -e (exact grouping) change nothing here: no partition is
    # hidden, and rows already group only identical nodes. They are accepted for scripts.
    a("-a", "--all", action="store_true")
    a("-d", "--dead", action="store_true")
    a("-e", "--exact", action="store_true")
    a("-h", "--noheader", action="store_true")
    a("-i", "--iterate", type=int)
    a("-l", "--long", action="store_true")
    a("-n", "--nodes", action="append")
    a("-N", "--Node", action="store_true", dest="node_view")
    a("-o", "--format")
    a("-O", "--Format", dest="Format")
    a("-p", "--partition", action="append")
    a("-r", "--responding", action="store_true")
    a("-R", "--list-reasons", action="store_true", dest="reasons")
    a("-s", "--summarize", action="store_true")
    a("-S", "--sort")
    a("-t", "--states", action="append")
    a("-v", "--verbose", action="store_true")
    p.add_argument("--help", action="help")
    return p


def pick_format(ns) -> str:
    if ns.format:
        return ns.format
    if ns.summarize:
        return FORMATS["summarize"]
    if ns.node_view:
        return FORMATS["node_long" if ns.long else "node"]
    if ns.reasons:
        return FORMATS["reasons_long" if ns.long else "reasons"]
    return FORMATS["long" if ns.long else "default"]


def node_filter(ns):
    """A predicate for -n, -t, -r, -d and -R; the options combine with AND."""
    from ..config import expand
    names = None
    if ns.nodes:
        names = set()
        for expr in ns.nodes:
            try:
                names.update(expand(expr))
            except Exception:  # ConfigError from the hostlist parser, reworded as Slurm does
                fail(PROG, f"'{expr}' invalid entry for --nodes")
    states = split_list(ns.states)
    for s in states:
        if s.lower() != "all" and not nf.valid_state(s):
            fail(PROG, f'Bad state string: "{s}"')
    if any(s.lower() == "all" for s in states):
        states = []
    if ns.reasons and not states:
        states = list(REASON_STATES)

    def keep(node) -> bool:
        if names is not None and node.config.name not in names:
            return False
        if ns.responding and not node.responding or ns.dead and node.responding:
            return False
        return not states or any(nf.matches_state(node, s) for s in states)
    return keep


def _natural(name: str):
    """node2 before node10, as a person (and Slurm's hostlist order) expects."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def select_pairs(parts, nodes, ns, keep, per_partition: bool):
    """(partition, node) pairs to report; partition None when the format ignores partitions."""
    wanted = set(split_list(ns.partition))
    by_name = {n.config.name: n for n in nodes}
    pairs, seen = [], set()
    for part in parts:
        if wanted and part.name not in wanted:
            continue
        for name in part.nodes:
            node = by_name.get(name)
            if node is None or not keep(node):
                continue
            if per_partition:
                pairs.append((part, node))
            elif name not in seen:  # a node in two partitions is still one node
                seen.add(name)
                pairs.append((None, node))
    return pairs


def group_rows(pairs, letters, parts, node_view: bool, show_empty: bool):
    """Rows of (partition, [nodes]): one per node in node view, else per alike nodes."""
    if node_view:
        rows = [(p, [n]) for p, n in pairs]
        rows.sort(key=lambda r: _natural(r[1][0].config.name))
        return rows
    keyed = [l for l in letters if l not in SUM_LETTERS and l not in PART_LETTERS]
    groups: dict = {}
    for part, node in pairs:
        key = (part.name if part else "", tuple(nf.node_field(node, l) for l in keyed))
        groups.setdefault(key, (part, []))[1].append(node)
    rows = list(groups.values())
    if show_empty:  # Slurm shows every partition, even one without nodes
        have = {p.name for p, _ in rows if p}
        rows += [(p, []) for p in parts if p.name not in have]
    order = {p.name: i for i, p in enumerate(parts)}
    rows.sort(key=lambda r: (order.get(r[0].name, -1) if r[0] else -1,
                             -max((nf.state_rank(n) for n in r[1]), default=0)))
    return rows


def part_field(part, letter: str, cluster: str) -> str:
    if part is None:
        return "n/a"
    from ..units import format_partition_limit
    values = {
        "a": lambda: {"INACTIVE": "inact"}.get(part.state, part.state.lower()),
        "l": lambda: format_partition_limit(part.max_time),
        "L": lambda: "n/a" if part.default_time < 0 else format_partition_limit(part.default_time),
        "s": lambda: f"1-{'infinite' if part.max_nodes < 0 else part.max_nodes}",
        "P": lambda: part.name + ("*" if part.default else ""), "R": lambda: part.name,
        "p": lambda: str(part.priority_tier), "r": lambda: "no", "h": lambda: "NO",
        "g": lambda: "all", "S": lambda: "all", "B": lambda: "UNLIMITED", "I": lambda: "1",
        "M": lambda: "off", "V": lambda: cluster,
    }
    return values[letter]()


def _sums(nodes, per_node) -> str:
    totals = [sum(col) for col in zip(*(per_node(n) for n in nodes))] or [0, 0, 0, 0]
    return "/".join(str(t) for t in totals)


def row_field(row, letter: str, cluster: str) -> str:
    part, nodes = row
    if letter in PART_LETTERS:
        return part_field(part, letter, cluster)
    from ..config import collect
    if letter == "allocmem":
        return str(sum(n.alloc_mem for n in nodes))
    if letter in ("N", "n"):
        return collect(sorted({n.config.name for n in nodes}, key=_natural))
    if letter == "o":
        return ",".join(dict.fromkeys(n.config.addr or n.config.name for n in nodes))
    if letter == "D":
        return str(len(nodes))
    if letter == "C":
        return _sums(nodes, nf.cpus_aiot)
    if letter in ("F", "A"):
        text = _sums(nodes, nf.nodes_aiot)
        return text if letter == "F" else "/".join(text.split("/")[:2])
    if not nodes:
        return "n/a"
    return nf.node_field(nodes[0], letter)


def size_widths(form: str, rows, cluster: str) -> str:
    """Replace '%#P' and '%#N' (also '%.#P') with the width of their longest value, at least 9."""
    def width(letter: str) -> int:
        values = [row_field(r, letter, cluster) for r in rows]
        return max([MIN_SIZED_WIDTH] + [len(v) for v in values])
    sized = {}
    return re.sub(r"%(\.?)#([A-Za-z])",
                  lambda m: f"%{m.group(1)}{sized.setdefault(m.group(2), width(m.group(2)))}"
                            f"{m.group(2)}", form)


def report(ns, form: str, client) -> list[str]:
    """The listing's lines; form is a %-format, or the -O field list when ns.Format is set."""
    parts, nodes = client.partitions()
    long_tokens = sinfo_opts.parse_long(ns.Format) if ns.Format else None
    tokens = long_tokens or fmt.parse(form.replace("#", ""))
    letters = [t[0] for t in tokens if not isinstance(t, str)]
    per_partition = ns.node_view or any(l in PART_LETTERS for l in letters)
    pairs = select_pairs(parts, nodes, ns, node_filter(ns), per_partition)
    filtering = bool(ns.nodes or ns.states or ns.responding or ns.dead or ns.reasons)
    shown = [p for p in parts if not ns.partition or p.name in split_list(ns.partition)]
    rows = group_rows(pairs, letters, shown, ns.node_view,
                      show_empty=per_partition and not filtering)
    cluster = client.cfg.cluster_name
    if ns.sort:
        rows = sort_rows(rows, sinfo_opts.parse_sort(ns.sort), shown, cluster)
    if long_tokens is None:
        tokens = fmt.parse(size_widths(form, rows, cluster))
    out = []
    if (ns.long or ns.iterate or ns.verbose) and not ns.noheader:  # as Slurm's print_date()
        out.append(time.strftime("%a %b %d %H:%M:%S %Y"))
    out += cluster_banner(ns)  # -M: below the date, every pass (Slurm's _multi_cluster)
    if not ns.noheader:
        out.append(fmt.render(tokens, sinfo_opts.HEADERS))
    for row in rows:
        out.append(fmt.render_row(tokens, lambda letter, r=row: row_field(r, letter, cluster)))
    return out


def sort_rows(rows, keys, parts, cluster: str):
    """-S: stable sorts from the least significant key up, from the default order."""
    order = {p.name: i for i, p in enumerate(parts)}
    value = lambda row, letter: row_field(row, letter, cluster)  # noqa: E731
    for letter, descending, config_order in reversed(keys):
        rows = sorted(rows, key=sinfo_opts.sort_key(letter, config_order, order, _natural, value),
                      reverse=descending)
    return rows


def main_args(argv: list[str]) -> int:
    ns = build_parser().parse_args(sinfo_opts.attach_sort(argv))
    sinfo_opts.env_defaults(ns, os.environ)
    if ns.iterate is not None and ns.iterate <= 0:
        fail(PROG, f"Error: invalid entry for --iterate={ns.iterate}")
    form = pick_format(ns)
    if ns.Format:
        sinfo_opts.parse_long(ns.Format)  # a bad field name is refused before any call
    if ns.sort:
        sinfo_opts.parse_sort(ns.sort)
    from ..client import Client
    client = Client()
    while True:
        out = report(ns, form, client)
        write_lines(out)
        if not ns.iterate:
            return 0
        sys.stdout.write("\n")
        sys.stdout.flush()
        time.sleep(ns.iterate)


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
