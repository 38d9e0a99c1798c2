"""topology.conf for Slurm's topology/tree plugin: the switches, their levels and the nodes under
each, read beside slurm.conf when it says TopologyPlugin=topology/tree.

Worked example (4 nodes, two leaf switches under one top switch):

    SwitchName=s1 Nodes=node[1-2]
    SwitchName=s2 Nodes=node[3-4]
    SwitchName=top Switches=s[1-2] LinkSpeed=100

gives s1 and s2 Level=0 and top Level=1 (one more than its highest child); node3's path, leaf
first, is ('s2', 'top'), which the scheduler (sched/switches.py) uses to keep a multi-node job
under as low a switch as it can. `scontrol show topology` prints Slurm's lines:

    SwitchName=s1 Level=0 LinkSpeed=1 Nodes=node[1-2]
    SwitchName=s2 Level=0 LinkSpeed=1 Nodes=node[3-4]
    SwitchName=top Level=1 LinkSpeed=100 Nodes=node[1-4] Switches=s[1-2]

Slurm logs some mistakes and goes on (unknown node names, a node on two leaf switches, nodes on
no switch, which then no job can use); here each is a start-up error naming the file and line,
since a job silently never placed on a node is worse than a refused configuration.

Pure: parse() reads text; load() is the one function that opens the file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import ConfigError
from .hostlists import collect, expand

PLUGINS = ("topology/none", "topology/tree")  # what TopologyPlugin= may name here
# Slurm's other plugins: accepted with a start-up warning, placement then ignores the network
OTHER_PLUGINS = ("topology/3d_torus", "topology/dragonfly", "topology/hypercube", "topology/block")
MAX_SWITCH_WAIT = 300  # seconds: SchedulerParameters=max_switch_wait= default, as Slurm's
SWITCH_KEYS = ("switchname", "nodes", "switches", "linkspeed")


@dataclass(frozen=True)
class Switch:
    name: str
    level: int  # 0: a leaf switch (nodes hang on it); else 1 + its highest child's level
    link_speed: int = 1  # LinkSpeed=: arbitrary units, shown, not used (as in Slurm)
    nodes: tuple[str, ...] = ()  # every node below it, in slurm.conf's order
    children: tuple[str, ...] = ()  # child switches (Switches=), expanded
    nodes_text: str = ""  # Nodes= as written (a leaf's, shown as is)
    switches_text: str = ""  # Switches= as written


@dataclass(frozen=True)
class Topology:
    switches: tuple[Switch, ...] = ()  # in the file's order
    paths: dict = field(default_factory=dict)  # node -> its switches, leaf first, root last

    def path(self, node: str) -> tuple[str, ...]:
        return self.paths.get(node, ())

    def find(self, name: str) -> Switch | None:
        return next((s for s in self.switches if s.name == name), None)

    def show_line(self, s: Switch) -> str:
        """One switch as `scontrol show topology` prints it."""
        line = f"SwitchName={s.name} Level={s.level} LinkSpeed={s.link_speed}"
        line += f" Nodes={s.nodes_text or collect(list(s.nodes))}"
        return line + (f" Switches={s.switches_text}" if s.switches_text else "")

    def address(self, node: str) -> tuple[str, str]:
        """SLURM_TOPOLOGY_ADDR and SLURM_TOPOLOGY_ADDR_PATTERN as Slurm's topology/tree makes
        them: one field per level, top level first, holding the node's switch at that level
        (empty where its path skips a level), then the node: `top.s2.node3`,
        `switch.switch.node`; without switches the node alone, pattern `node`."""
        if not self.switches:
            return node, "node"
        by_level = {s.level: s.name for s in self.switches if s.name in self.path(node)}
        levels = range(max(s.level for s in self.switches), -1, -1)
        return (".".join([by_level.get(j, "") for j in levels] + [node]),
                ".".join(["switch"] * len(levels) + ["node"]))

    def environment(self, node: str) -> dict[str, str]:
        """The job's SLURM_TOPOLOGY_ADDR and SLURM_TOPOLOGY_ADDR_PATTERN on this node."""
        addr, pattern = self.address(node)
        return {"SLURM_TOPOLOGY_ADDR": addr, "SLURM_TOPOLOGY_ADDR_PATTERN": pattern}


def plugin_of(value: str, where: str) -> str:
    """TopologyPlugin=: ours, or Slurm's others (a warning, from the caller), else an error."""
    plugin = value.strip().lower()
    if plugin in PLUGINS or plugin in OTHER_PLUGINS:
        return plugin
    raise ConfigError(f"{where}: unknown TopologyPlugin={value}; valid: "
                      f"{', '.join(PLUGINS + OTHER_PLUGINS)}")


def max_switch_wait(scheduler_parameters: dict, where: str = "SchedulerParameters") -> int:
    """SchedulerParameters=max_switch_wait=SECONDS: the longest a job waits for its --switches
    count (default 300)."""
    text = scheduler_parameters.get("max_switch_wait")
    if text is None:
        return MAX_SWITCH_WAIT
    if not re.fullmatch(r"[0-9]{1,9}", text.strip()):
        raise ConfigError(f"{where}: bad max_switch_wait={text} (seconds, 0 or more)")
    return int(text)


def load(conf_dir: str, nodes: list[str]) -> Topology:
    """topology.conf in slurm.conf's directory; a missing one is an error (topology/tree asks
    for it)."""
    path = os.path.join(conf_dir, "topology.conf")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"TopologyPlugin=topology/tree: cannot read {path}: {e.strerror}") from None
    return parse(text, path, nodes)


def parse(text: str, path: str, nodes: list[str]) -> Topology:
    """The switches of topology.conf text; `nodes`: slurm.conf's node names, in order."""
    from .config import _lines, _pairs
    raw: list[tuple[str, dict]] = []
    for where, line in _lines(text, path):
        raw.append((where, _switch_line(_pairs(line, where), where)))
    if not raw:
        raise ConfigError(f"{path}: no switches configured")
    names = [opts["switchname"] for _, opts in raw]
    for i, (where, opts) in enumerate(raw):
        if opts["switchname"] in names[:i]:
            raise ConfigError(f"{where}: switch {opts['switchname']} has already been defined")
    children = {opts["switchname"]: _children(opts, names, where) for where, opts in raw}
    leaves = {opts["switchname"]: _leaf_nodes(opts, nodes, where) for where, opts in raw
              if "nodes" in opts}
    levels, below = _resolve(children, leaves, path)
    _check_coverage(leaves, nodes, path)
    order = {n: i for i, n in enumerate(nodes)}
    switches = tuple(Switch(name=o["switchname"], level=levels[o["switchname"]],
                            link_speed=_link_speed(o, w),
                            nodes=tuple(sorted(below[o["switchname"]], key=order.__getitem__)),
                            children=children[o["switchname"]], nodes_text=o.get("nodes", ""),
                            switches_text=o.get("switches", ""))
                     for w, o in raw)
    return Topology(switches=switches, paths=_paths(switches, leaves))


def _switch_line(pairs, where: str) -> dict:
    if pairs[0][0] != "switchname" or not pairs[0][1]:
        raise ConfigError(f"{where}: a topology.conf line starts with SwitchName=")
    opts = dict(pairs)
    unknown = [k for k, _ in pairs if k not in SWITCH_KEYS]
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                          "valid: SwitchName, Nodes, Switches, LinkSpeed")
    if ("nodes" in opts) == ("switches" in opts):
        which = "both child switches and nodes" if "nodes" in opts else "neither child switches nor nodes"
        raise ConfigError(f"{where}: switch {opts['switchname']} has {which}")
    return opts


def _children(opts: dict, names: list[str], where: str) -> tuple[str, ...]:
    if "switches" not in opts:
        return ()
    kids = tuple(expand(opts["switches"], where))
    for kid in kids:
        if kid not in names or kid == opts["switchname"]:
            raise ConfigError(f"{where}: switch {opts['switchname']} has invalid child ({kid})")
    return kids


def _leaf_nodes(opts: dict, nodes: list[str], where: str) -> tuple[str, ...]:
    names = expand(opts["nodes"], where)
    known = set(nodes)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"{where}: switch {opts['switchname']} names unknown nodes "
                          f"{collect(unknown)} (not in slurm.conf)")
    return tuple(names)


def _link_speed(opts: dict, where: str) -> int:
    text = opts.get("linkspeed", "1")
    if not re.fullmatch(r"[0-9]{1,9}", text):
        raise ConfigError(f"{where}: bad LinkSpeed={text}")
    return int(text)


def _resolve(children: dict, leaves: dict, path: str) -> tuple[dict, dict]:
    """Each switch's level and the nodes below it; a loop or a switch with two parents is
    refused (Slurm: "Switch configuration is not a tree")."""
    parents: dict[str, str] = {}
    for name, kids in children.items():
        for kid in kids:
            if kid in parents:
                raise ConfigError(f"{path}: switch configuration is not a tree: {kid} is a child "
                                  f"of both {parents[kid]} and {name}")
            parents[kid] = name
    levels: dict[str, int] = {}
    below: dict[str, set] = {}
    for name in children:
        _level(name, children, leaves, levels, below, (), path)
    return levels, below


def _level(name, children, leaves, levels, below, seen: tuple, path: str) -> int:
    if name in levels:
        return levels[name]
    if name in seen:
        loop = " -> ".join((*seen[seen.index(name):], name))
        raise ConfigError(f"{path}: switch configuration is not a tree: loop {loop}")
    if name in leaves:
        levels[name], below[name] = 0, set(leaves[name])
        return 0
    level, nodes = 0, set()
    for kid in children[name]:
        level = max(level, 1 + _level(kid, children, leaves, levels, below, (*seen, name), path))
        nodes |= below[kid]
    levels[name], below[name] = level, nodes
    return level


def _check_coverage(leaves: dict, nodes: list[str], path: str) -> None:
    """Every node on exactly one leaf switch: its path must be one line to the top."""
    home: dict[str, str] = {}
    for switch, names in leaves.items():
        for n in names:
            if n in home and home[n] != switch:
                raise ConfigError(f"{path}: node {n} is on two leaf switches ({home[n]}, {switch})")
            home[n] = switch
    lacking = [n for n in nodes if n not in home]
    if lacking:
        raise ConfigError(f"{path}: switches lack access to {len(lacking)} nodes: {collect(lacking)} "
                          "(no job could use them under topology/tree)")


def _paths(switches: tuple[Switch, ...], leaves: dict) -> dict[str, tuple[str, ...]]:
    parent = {kid: s.name for s in switches for kid in s.children}
    paths = {}
    for leaf, names in leaves.items():
        chain = [leaf]
        while chain[-1] in parent:
            chain.append(parent[chain[-1]])
        for n in names:
            paths[n] = tuple(chain)
    return paths
