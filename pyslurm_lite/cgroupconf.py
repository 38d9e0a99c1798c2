"""cgroup.conf, beside slurm.conf, in Slurm's syntax: which cgroup version the agent uses
(CgroupPlugin=autodetect|cgroup/v1|cgroup/v2) and what a job's cgroup enforces
(ConstrainDevices, ConstrainCores, ConstrainRAMSpace, each YES unless set to NO: pyslurm-lite
has always confined jobs so, where Slurm's defaults are NO).

Owns: reading the file into the Config. Must not: check the host (whether it has the plugin
named is the agent's start-up question, agent/cgroup.make_tracker), so that a cgroup.conf this
host cannot honour never stops the commands or `cluster down` from reading the configuration.
"""

from __future__ import annotations

import os

from .confvalues import _yes_no
from .errors import ConfigError

PLUGINS = ("autodetect", "cgroup/v1", "cgroup/v2")
# key (lower case) -> Config attribute
CONSTRAIN_KEYS = {
    "constraindevices": ("constrain_devices", "ConstrainDevices"),
    "constraincores": ("constrain_cores", "ConstrainCores"),
    "constrainramspace": ("constrain_ram_space", "ConstrainRAMSpace"),
}


def load_beside(slurm_conf: str, cfg) -> None:
    """cgroup.conf in slurm.conf's directory, when there is one."""
    path = os.path.join(os.path.dirname(os.path.abspath(slurm_conf)), "cgroup.conf")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    parse(text, path, cfg)


def parse(text: str, path: str, cfg) -> None:
    """Set cfg's cgroup fields from cgroup.conf's text; keys not honoured here go to
    cfg.ignored (the daemons' start-up warning names each)."""
    from .config import _lines, _pairs  # config imports this module from load()
    for where, line in _lines(text, path):
        for key, value in _pairs(line, where):
            if key == "cgroupplugin":
                cfg.cgroup_plugin = value.strip().lower()
            elif key in CONSTRAIN_KEYS:
                attr, name = CONSTRAIN_KEYS[key]
                setattr(cfg, attr, _yes_no(value, name, where))
            else:
                cfg.ignored.append(f"{where}: {_slurm_spelling(line, key)}={value}")


def _slurm_spelling(line: str, key: str) -> str:
    """The key as the file wrote it (pairs come lower-cased)."""
    at = line.lower().find(key + "=")
    return line[at:at + len(key)] if at >= 0 else key
