"""PropagateResourceLimits: which limits a command sends, their wire form, and the soft limit a
node can set under its own hard limit."""

import resource

import pytest

from pyslurm_lite import rlimits
from pyslurm_lite.rlimits import BadRlimits

ALL = set(rlimits.LIMITS)
INF = resource.RLIM_INFINITY


@pytest.mark.parametrize("text, names", [
    ("ALL", ALL),
    ("NONE", set()),
    ("CORE", {"CORE"}),
    ("CORE,NOFILE", {"CORE", "NOFILE"}),
    ("RLIMIT_STACK, AS", {"STACK", "AS"}),   # Slurm takes the RLIMIT_ prefix and blanks
    ("", set()),
])
def test_parse(text, names):
    assert rlimits.parse(text) == names


@pytest.mark.parametrize("text", ["core", "CORE,BOGUS", "all", "RLIMIT_"])
def test_parse_refuses_what_slurm_does_not_know(text):
    with pytest.raises(BadRlimits):
        rlimits.parse(text)


@pytest.mark.parametrize("propagate, conf, conf_except, names", [
    (None, "ALL", "", ALL),                    # Slurm's default
    (None, "NONE", "", set()),
    (None, "ALL", "CORE", ALL - {"CORE"}),     # PropagateResourceLimitsExcept
    (None, "NOFILE", "", {"NOFILE"}),
    ("", "NONE", "", ALL),                     # bare --propagate: ALL, over slurm.conf
    ("NONE", "ALL", "", set()),
    ("CORE", "ALL", "CORE", {"CORE"}),         # --propagate wins over the Except list
])
def test_selected(propagate, conf, conf_except, names):
    assert rlimits.selected(propagate, conf, conf_except) == names


def test_capture_and_decode_round_trip():
    items = rlimits.capture({"CORE", "NOFILE"})
    assert [i.split("=")[0] for i in items] == ["CORE", "NOFILE"]  # Slurm's order
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert rlimits.decode(items)["NOFILE"] == soft


@pytest.mark.parametrize("items, decoded", [
    (["CORE=0:-1"], {"CORE": 0}),
    (["STACK=-1:-1"], {"STACK": INF}),
])
def test_decode(items, decoded):
    assert rlimits.decode(items) == decoded


@pytest.mark.parametrize("item", ["BOGUS=1:1", "CORE", "CORE=x:1", "CORE=:1"])
def test_decode_refuses_malformed(item):
    with pytest.raises(ValueError):
        rlimits.decode([item])


@pytest.mark.parametrize("wanted, hard, soft", [
    (100, 200, 100),
    (300, 200, 200),     # above the node's hard limit: lowered to it
    (INF, 200, 200),
    (INF, INF, INF),
    (5, INF, 5),
])
def test_fit(wanted, hard, soft):
    assert rlimits.fit(wanted, hard) == soft


def test_the_task_sets_its_limits_itself_and_one_above_the_hard_limit_is_lowered(caplog):
    """Run as the agent's shims run it: a shell sets its own soft limits and execs; one above
    the (agent's, here the shell's) hard limit becomes that hard limit, with slurmd's words."""
    import logging
    import subprocess
    hard = {resource.RLIMIT_NOFILE: (64, 128), resource.RLIMIT_CORE: (0, resource.RLIM_INFINITY)}
    log = logging.getLogger("test.rlimits")
    with caplog.at_level(logging.WARNING, logger="test.rlimits"):
        code = rlimits.shell(["NOFILE=500:-1", "CORE=4096:-1"], log, hard_of=hard.__getitem__)
    assert "Can't propagate RLIMIT_NOFILE of 500 from submit host" in caplog.text
    assert "CORE" not in caplog.text
    out = subprocess.run(
        ["bash", "-c", "ulimit -S -n 64; ulimit -H -n 128; ulimit -S -c 0; " + code
         + 'exec bash -c "ulimit -S -n; ulimit -S -c"'],
        capture_output=True, text=True, check=True).stdout.split()
    assert out == ["128", "4"], out  # ulimit -c counts KiB
    assert rlimits.shell(["NOFILE=64:-1"], log, hard_of=hard.__getitem__) == ""  # nothing to change
