"""Property tests of every parser that reads user or administrator text: whatever the input, only
the project's domain errors (SlurmError, or SystemExit from argparse's option errors) escape, and
each call returns quickly, however large the ranges it names (hostlists, arrays, numbers).

Budget: about 20 s in all (max_examples per property below); the deadline catches a parser that
expands what it should have counted.
"""

from __future__ import annotations

import os

import contextlib
import io
import time

import pytest

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pyslurm_lite import arrays, config, units
from pyslurm_lite.cli import sbatch
from pyslurm_lite.errors import SlurmError
from pyslurm_lite.sched import dependency

# The same examples every run (CI must not go red on a new draw); PYSLURM_LITE_FUZZ=explore
# draws new ones, ten times as many, to hunt.
EXPLORE = os.environ.get("PYSLURM_LITE_FUZZ") == "explore"
FUZZ = settings(max_examples=1500 if EXPLORE else 150, deadline=1000, database=None,
                derandomize=not EXPLORE, suppress_health_check=[HealthCheck.too_slow])
SLOW_CALL = 1.0  # seconds: a parser taking longer has expanded something it should have counted

# Text that looks like what these parsers expect, plus anything at all: digits of other scripts
# ("²" is isdigit() but not int()-able), control characters, huge numbers.
TOKENS = st.sampled_from(["0", "1", "7", "99", "4000000", "99999999999", "9" * 40, "-", ":", ",",
                          "%", "[", "]", "+", "@", "?", "_", "=", " ", "\n", "\t", "\x1b", "²",
                          "٣", "K", "M", "G", "T", "B", "now", "w", "s", "UNLIMITED", "infinite",
                          "gpu", "a100", "node", "n", "USR1", "SIG", "R:", "B:", "after", "ok",
                          "afterok", "afterany", "singleton", "T12:00", "2024-01-01", "."])
SHAPED = st.lists(TOKENS, max_size=12).map("".join)
TEXT = st.one_of(SHAPED, st.text(max_size=40))


def only_domain_errors(fn, *args):
    """Call fn; a SlurmError is a fine answer, anything else fails the property. Also timed."""
    t = time.perf_counter()
    try:
        return fn(*args)
    except SlurmError:
        return None
    finally:
        assert time.perf_counter() - t < SLOW_CALL, (fn.__name__, args)


# ---- units ----------------------------------------------------------------------------------
@FUZZ
@given(TEXT)
@example("9" * 5000)
@example("1-" + "9" * 400)
@example("²")
def test_time_limit(text):
    only_domain_errors(units.parse_time_limit, text)
    only_domain_errors(units.parse_duration_seconds, text)


@FUZZ
@given(TEXT)
@example("9" * 400)
@example("9" * 400 + "T")
@example("1.5G")
def test_memory(text):
    got = only_domain_errors(units.parse_memory, text)
    assert got is None or got >= 0


@FUZZ
@given(TEXT)
@example("now+99999999999w")
@example("now+" + "9" * 5000)
@example("0001-01-01")
@example("9999-12-31T23:59:59")
def test_begin_time(text):
    got = only_domain_errors(units.parse_begin_time, text, 1.7e9)
    if got is not None:
        units.format_timestamp(got)  # whatever is accepted can be printed by squeue


@FUZZ
@given(TEXT)
@example("²")
@example("_IGN")
@example("USR1@" + "9" * 5000)
def test_signal(text):
    only_domain_errors(units.parse_signal_name, text)
    only_domain_errors(units.parse_signal_spec, text)


# ---- arrays, hostlists, dependencies --------------------------------------------------------
@FUZZ
@given(TEXT, st.sampled_from([1, 11, 1001, arrays.MAX_ARRAY_SIZE]))
@example("0-99999999999", arrays.MAX_ARRAY_SIZE)
@example("0-3999999,0-3999999", arrays.MAX_ARRAY_SIZE)
@example("0-5%²", 1001)
def test_arrays(text, max_size):
    got = only_domain_errors(arrays.parse, text, max_size)
    if got is not None:
        indices, throttle = got
        assert indices and max(indices) < max_size and throttle >= 0
        assert arrays.check(text, max_size) >= len(indices)


HOSTLIST = st.lists(st.sampled_from(["n", "node", "a", "0", "1", "01", "9", "65536", "99999999",
                                     "9" * 30, "-", ",", "[", "]", "x", "\n", "."]),
                    max_size=16).map("".join)


@FUZZ
@given(st.one_of(HOSTLIST, st.text(max_size=30)))
@example("a[0-99999999][0-99999999]")
@example("n[1-" + "9" * 5000 + "]")
@example("a[1]" * 2000)
@example("n[1-65536],m[1-65536]")
def test_expand(expr):
    names = only_domain_errors(config.expand, expr)
    assert names is None or 0 < len(names) <= config.MAX_HOSTLIST


@FUZZ
@given(TEXT)
@example("afterok:" + "9" * 5000)
@example("afterok:1,afterany:2?singleton")
def test_dependency(text):
    got = only_domain_errors(dependency.parse, text)
    if got is not None:
        only_domain_errors(dependency.evaluate, text, {})


# ---- sbatch: directives and options ---------------------------------------------------------
DIRECTIVE = st.one_of(
    st.builds(lambda opt, val: f"#SBATCH {opt}={val}",
              st.sampled_from(["--array", "--time", "--mem", "--gres", "--gpus", "--nodes",
                               "--nice", "--begin", "--signal", "-J", "--dependency"]), TEXT),
    st.builds(lambda rest: "#SBATCH " + rest, TEXT),
    TEXT,
)


@FUZZ
@given(st.lists(DIRECTIVE, max_size=6))
@example(['#SBATCH --job-name="unbalanced'])
def test_read_directives(lines):
    only_domain_errors(sbatch.read_directives, "#!/bin/sh\n" + "\n".join(lines) + "\ntrue\n")


@FUZZ
@given(TEXT, st.lists(TEXT, max_size=3))
@example("gpu:2", ["gpu:a100:2,gpu:1"])
def test_sbatch_values(text, gres):
    only_domain_errors(sbatch.parse_gpus, text, "--gpus")
    only_domain_errors(sbatch.parse_nodes, text)
    only_domain_errors(sbatch.parse_gres, gres)
    only_domain_errors(sbatch.parse_array, text)


@pytest.mark.parametrize("fn, args", [
    (sbatch.parse_gpus, ("a100:" + "9" * 5000, "--gpus")),
    (sbatch.parse_gres, (["gpu:²"],)),
    (sbatch.parse_gres, (["gpu:" + "9" * 5000],)),
    (sbatch.parse_nodes, ("9" * 5000,)),
    (config.parse_gres_spec, ("gpu:²",)),
    (config.parse_gres_spec, ("gpu:" + "9" * 5000,)),
])
def test_digits_int_cannot_take_are_refused(fn, args):
    """'²'.isdigit() is true and int() refuses 5000 digits: both once escaped as ValueError."""
    only_domain_errors(fn, *args)


OPTION = st.sampled_from(["--array", "--time", "--mem", "--gres", "--gpus", "--nodes", "--nice",
                          "-n", "-c", "--begin", "--signal", "-J", "--wrap", "--export",
                          "--dependency", "-w", "--exclusive", "--parsable"])
ARGV = st.lists(st.one_of(OPTION, TEXT, st.builds("{}={}".format, OPTION, TEXT)), max_size=6)


@FUZZ
@given(ARGV)
@example(["--nice=" + "9" * 5000])
@example(["-n", "²"])
def test_sbatch_parse_args(argv):
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            only_domain_errors(sbatch.build_parser().parse_args, argv)
        except SystemExit:
            pass  # argparse's answer to a bad option: exit 255 with a message


# ---- slurm.conf and gres.conf ---------------------------------------------------------------
CONF_KEYS = st.sampled_from(["NodeName", "PartitionName", "Nodes", "CPUs", "RealMemory", "Gres",
                             "MaxTime", "DefaultTime", "MaxArraySize", "MaxJobCount", "QOSName",
                             "MaxSubmitJobsPerUser", "SchedulerParameters", "SlurmctldPort",
                             "KillWait", "DefMemPerCPU", "Default", "State", "NodeAddr", "Port",
                             "PreemptMode", "Weight", "Feature", "AllowAccounts", "Priority"])
CONF_LINE = st.one_of(
    st.builds(lambda pairs: " ".join(f"{k}={v}" for k, v in pairs),
              st.lists(st.tuples(CONF_KEYS, st.one_of(HOSTLIST, TEXT)), min_size=1, max_size=4)),
    TEXT,
)
GOOD_BASE = "NodeName=n[1-2] CPUs=2 Gres=gpu:2\nPartitionName=p Nodes=ALL\n"


@FUZZ
@given(st.lists(CONF_LINE, max_size=5), st.booleans())
@example(["NodeName=n[1-99999999] CPUs=1"], False)
@example(["MaxArraySize=" + "9" * 5000], True)
def test_config_parse(lines, with_base):
    text = (GOOD_BASE if with_base else "") + "\n".join(lines) + "\n"
    only_domain_errors(config.parse, text, "slurm.conf")


GRES_LINE = st.builds(lambda pairs: " ".join(f"{k}={v}" for k, v in pairs),
                      st.lists(st.tuples(st.sampled_from(["Name", "Type", "File", "NodeName",
                                                          "Count", "AutoDetect"]),
                                         st.one_of(HOSTLIST, TEXT)), min_size=1, max_size=4))


@FUZZ
@given(st.lists(st.one_of(GRES_LINE, TEXT), max_size=4))
@example(["Name=gpu File=/dev/nvidia[0-99999999]"])
def test_gres_conf_parse(lines):
    cfg = config.parse(GOOD_BASE, "slurm.conf")
    only_domain_errors(config.parse_gres, "\n".join(lines) + "\n", "gres.conf", cfg)
    only_domain_errors(config.parse_gres_spec, " ".join(lines))
