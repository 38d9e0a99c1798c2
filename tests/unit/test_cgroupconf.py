"""cgroup.conf (cgroupconf.py), read by config.load beside slurm.conf, and the agent's refusal
of a CgroupPlugin it does not know or this host cannot give (agent/cgroup.make_tracker)."""

from __future__ import annotations

import os

import pytest

from pyslurm_lite import cgroupconf, config
from pyslurm_lite.agent import cgroup
from pyslurm_lite.errors import ConfigError

SLURM_CONF = "NodeName=n1 CPUs=2 RealMemory=100\nPartitionName=p Nodes=ALL\n"


def parsed(text: str) -> config.Config:
    cfg = config.Config()
    cgroupconf.parse(text, "cgroup.conf", cfg)
    return cfg


@pytest.mark.parametrize("text,plugin,devices,cores,ram", [
    ("", "autodetect", True, True, True),  # what pyslurm-lite always did
    ("CgroupPlugin=cgroup/v2\n", "cgroup/v2", True, True, True),
    ("cgroupplugin=Cgroup/V1  # comment\n", "cgroup/v1", True, True, True),
    ("CgroupPlugin=autodetect\nConstrainDevices=no\n", "autodetect", False, True, True),
    ("ConstrainCores=NO ConstrainRAMSpace=no\n", "autodetect", True, False, False),
    ("ConstrainDevices=yes\nConstrainCores=yes\nConstrainRAMSpace=yes\n", "autodetect", True, True, True),
    ("CgroupPlugin=cgroup/v3\n", "cgroup/v3", True, True, True),  # refused by the agent, not here
])
def test_keys_honoured(text, plugin, devices, cores, ram):
    cfg = parsed(text)
    assert (cfg.cgroup_plugin, cfg.constrain_devices, cfg.constrain_cores, cfg.constrain_ram_space) \
        == (plugin, devices, cores, ram)
    assert cfg.ignored == []
    assert cgroup.Constrain.of(cfg) == cgroup.Constrain(devices, cores, ram)


def test_other_slurm_keys_are_named_for_the_start_up_warning():
    cfg = parsed("CgroupPlugin=cgroup/v2\nConstrainSwapSpace=yes\nAllowedRAMSpace=95 MinRAMSpace=30\n")
    assert cfg.ignored == ["cgroup.conf:2: ConstrainSwapSpace=yes", "cgroup.conf:3: AllowedRAMSpace=95",
                           "cgroup.conf:3: MinRAMSpace=30"]


@pytest.mark.parametrize("text,msg", [
    ("ConstrainDevices=maybe\n", "cgroup.conf:1: ConstrainDevices=maybe: expected YES or NO"),
    ("CgroupPlugin\n", "cgroup.conf:1: expected Key=Value"),
])
def test_malformed_lines_are_errors_naming_the_line(text, msg):
    with pytest.raises(ConfigError, match=msg):
        parsed(text)


def test_config_load_reads_cgroup_conf_beside_slurm_conf(tmp_path):
    (tmp_path / "slurm.conf").write_text(SLURM_CONF)
    assert config.load(str(tmp_path / "slurm.conf")).cgroup_plugin == "autodetect"  # no file
    (tmp_path / "cgroup.conf").write_text("CgroupPlugin=cgroup/v2\nConstrainCores=no\nIgnoreSystemd=yes\n")
    cfg = config.load(str(tmp_path / "slurm.conf"))
    assert (cfg.cgroup_plugin, cfg.constrain_cores) == ("cgroup/v2", False)
    assert cfg.ignored == [f"{tmp_path}/cgroup.conf:3: IgnoreSystemd=yes"]


def test_an_unknown_plugin_is_refused_with_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown CgroupPlugin=cgroup/v3; valid: autodetect, "
                                          r"cgroup/v1, cgroup/v2"):
        cgroup.make_tracker("proctrack/auto", "n1", plugin="cgroup/v3")


@pytest.mark.parametrize("plugin", ["cgroup/v1", "cgroup/v2"])
def test_a_plugin_this_host_lacks_is_refused(tmp_path, plugin):
    """A root with neither hierarchy (an empty directory): the agent does not start."""
    why = "needs the agent to run as root" if os.geteuid() != 0 else "but this host has no cgroup"
    with pytest.raises(ConfigError, match=f"CgroupPlugin={plugin} {why}"):
        cgroup.make_tracker("proctrack/auto", "n1", root=str(tmp_path), plugin=plugin)


def test_pgid_tracking_needs_no_cgroup_version():
    assert cgroup.make_tracker("proctrack/pgid", "n1", root="/nonexistent", plugin="cgroup/v2").name \
        == "proctrack/pgid"
