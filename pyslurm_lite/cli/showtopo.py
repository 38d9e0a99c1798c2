"""scontrol show topology [SWITCH | NODES]: the switches of topology.conf as Slurm 22.05 prints
them (api/topo_info.c), and the optional Switches= line of scontrol show job.

The topology is the one this command's configuration reads beside slurm.conf (config.load), the
file the controller reads too: Slurm asks slurmctld, whose copy is the same file.
"""

from __future__ import annotations

import sys

from ..config import expand


def show_topology(client, ns, arg: str | None) -> int:
    """All switches; a switch by name; else the switches above every node NODES names. Slurm's
    errors (no topology, no match) go to stderr with exit status 0, as its scontrol does."""
    topo = client.cfg.topology
    if topo is None:
        sys.stderr.write("scontrol: error: No topology information available\n")
        return 0
    if not arg:
        switches = list(topo.switches)
    else:
        named = topo.find(arg)
        switches = [named] if named else _above(topo, arg)
    if not switches:
        sys.stderr.write(f"scontrol: error: Topology information contains no switch or node named {arg}\n")
        return 0
    for s in switches:
        sys.stdout.write(topo.show_line(s) + "\n")
    return 0


def _above(topo, arg: str) -> list:
    try:
        nodes = set(expand(arg))
    except Exception:  # not a hostlist: a name that matches nothing
        return []
    return [s for s in topo.switches if nodes <= set(s.nodes)]


def switches_line(spec, cfg) -> list[str]:
    """Switches=N@D-HH:MM:SS when the job asked --switches: the wait as the controller applies
    it (at most SchedulerParameters=max_switch_wait)."""
    from ..sched.switches import request
    from ..units import format_hms
    asked = request(spec, cfg.max_switch_wait)
    if not asked:
        return []
    return [f"Switches={asked['req_switch']}@{format_hms(asked['switch_wait'])}"]
