"""Submission limits (controller/validate.py, arrays.py, config.expand), table-driven: each row is
one field of a spec and what the controller answers, with Slurm's text where Slurm has one."""

from __future__ import annotations

import dataclasses
import math
import time

import pytest

from pyslurm_lite import arrays, config
from pyslurm_lite.controller import validate
from pyslurm_lite.errors import ConfigError, InvalidRequest, PermissionDenied
from pyslurm_lite.model import GresRequest, JobSpec

CONF = """\
NodeName=n[1-2] CPUs=4 RealMemory=4000 Gres=gpu:2
PartitionName=main Nodes=ALL Default=YES MaxTime=UNLIMITED
QOSName=normal
QOSName=capped MaxSubmitJobsPerUser=3
"""


@pytest.fixture(scope="module")
def cfg():
    c = config.parse(CONF, "slurm.conf")
    assert c.qos["capped"].max_submit_jobs_per_user == 3
    return c


def spec(**changes) -> JobSpec:
    base = JobSpec(name="job", script="#!/bin/sh\ntrue\n", user="alice", uid=1000, gid=1000,
                   work_dir="/home/alice", std_out="slurm-%j.out", environment={"HOME": "/home/alice"})
    return dataclasses.replace(base, **changes)


def refused(cfg, s, operator=False):
    """(exception type, message) of a refused spec, or None when accepted."""
    try:
        validate.validate_spec(cfg, s, None, operator)
    except (InvalidRequest, PermissionDenied) as e:
        return type(e), e.message
    return None


ARRAY = "Invalid job array specification"
TIME = "Requested time limit is invalid (missing or exceeds some limit)"
TOO_LONG = "Pathname of a file, directory or other parameter too long"
GRES = "Invalid generic resource (gres) specification"
MEMORY = "Memory required by task is not available"


# ---- accepted -------------------------------------------------------------------------------
@pytest.mark.parametrize("changes", [
    {},
    {"array": "0-1000"}, {"array": "0-1000:10%4"}, {"array": "1,3,5-7"},
    {"time_limit": -1}, {"time_limit": 0}, {"time_limit": 1}, {"time_limit": 2**31 - 1},
    {"begin_time": 0.0}, {"begin_time": time.time() + 3600},
    {"nice": 0}, {"nice": 2147483645},
    {"mem_per_node": 4000}, {"mem_per_cpu": 100}, {"mem_per_gpu": 100, "gpus_per_node": 1},
    {"gres": [GresRequest("gpu", "", 2)]}, {"gpus": 2}, {"cpus_per_gpu": 1, "gpus_per_node": 1},
    {"ntasks_per_node": 2, "num_tasks": 2},
    {"name": "ünïcode ☃ name"}, {"comment": "x" * 1024},
    {"nodelist": "n[1-2]"}, {"exclude": "n1"},
    {"script": "#!/bin/sh\n" + "x" * (4 * 1024 * 1024 - 10)},
    {"argv": ["a\nb", "\x1b[31m"], "environment": {"PS1": "\x1b[1m$ \x1b[0m", "NL": "a\nb"}},
    {"script": "#!/bin/sh\nprintf '\\033[1m\\t'\n\x1b\n"},
])
def test_valid_specs_still_pass(cfg, changes):
    assert refused(cfg, spec(**changes)) is None


def test_operator_may_lower_nice(cfg):
    assert refused(cfg, spec(nice=-100), operator=True) is None
    assert refused(cfg, spec(nice=-2147483645), operator=True) is None


def test_positional_reservations_still_work(cfg):
    part, limit = validate.validate_spec(cfg, spec(), {})
    assert (part.name, limit) == ("main", -1)


# ---- refused --------------------------------------------------------------------------------
@pytest.mark.parametrize("changes, kind, message", [
    # --array: indices in [0, MaxArraySize=1001), steps below it, checked before expanding
    ({"array": "0-1001"}, InvalidRequest, ARRAY),
    ({"array": "1001"}, InvalidRequest, ARRAY),
    ({"array": "0-99999999999"}, InvalidRequest, ARRAY),
    ({"array": "0-10:1001"}, InvalidRequest, ARRAY),
    ({"array": "0-10:0"}, InvalidRequest, ARRAY),
    ({"array": "5-1"}, InvalidRequest, ARRAY),
    ({"array": "0-3%x"}, InvalidRequest, ARRAY),
    ({"array": "²"}, InvalidRequest, ARRAY),
    ({"array": "0-3%²"}, InvalidRequest, ARRAY),
    ({"array": "-1"}, InvalidRequest, ARRAY),
    ({"array": ",".join(["0-1000"] * 2)}, InvalidRequest, ARRAY),  # 2002 tasks counted
    ({"array": "1," * 2100 + "1"}, InvalidRequest, TOO_LONG),  # longer than Slurm's 4096
    # time limit: UNLIMITED, unset or 1..2**31-1 minutes
    ({"time_limit": -2}, InvalidRequest, TIME),
    ({"time_limit": -1000}, InvalidRequest, TIME),
    ({"time_limit": 2**31}, InvalidRequest, TIME),
    ({"time_limit": 2**63}, InvalidRequest, TIME),
    # begin time
    ({"begin_time": -1.0}, InvalidRequest, "Invalid time specified"),
    ({"begin_time": math.inf}, InvalidRequest, "Invalid time specified"),
    ({"begin_time": math.nan}, InvalidRequest, "Invalid time specified"),
    ({"begin_time": 1e18}, InvalidRequest, "Invalid time specified"),
    # nice
    ({"nice": -1}, PermissionDenied, "Invalid --nice value"),
    ({"nice": -1000000}, PermissionDenied, "Invalid --nice value"),
    ({"nice": 2147483646}, InvalidRequest, "Invalid --nice value, out of range (+/- 2147483645)"),
    ({"nice": -2147483646}, InvalidRequest, "Invalid --nice value, out of range (+/- 2147483645)"),
    # sizes: script (max_script_size, Slurm's 4 MiB), environment (max_env_size, ours, 1 MiB)
    ({"script": "x" * (4 * 1024 * 1024 + 1)}, InvalidRequest, TOO_LONG),
    ({"script": "é" * (2 * 1024 * 1024 + 1)}, InvalidRequest, TOO_LONG),  # bytes, not characters
    ({"environment": {"BIG": "x" * (1024 * 1024)}}, InvalidRequest, TOO_LONG),
    ({"environment": {f"V{i}": "x" * 100 for i in range(11000)}}, InvalidRequest, TOO_LONG),
    # string lengths (slurmctld's _test_job_desc_fields)
    ({"name": "x" * 1025}, InvalidRequest, TOO_LONG),
    ({"comment": "x" * 1025}, InvalidRequest, TOO_LONG),
    ({"work_dir": "/" + "x" * 4096}, InvalidRequest, TOO_LONG),
    ({"std_out": "/" + "x" * 4096}, InvalidRequest, TOO_LONG),
    ({"dependency": "afterok:1" * 20000}, InvalidRequest, TOO_LONG),
    # negative or absurd resources
    ({"mem_per_node": -1}, InvalidRequest, MEMORY),
    ({"mem_per_cpu": -5}, InvalidRequest, MEMORY),
    ({"mem_per_gpu": -5}, InvalidRequest, MEMORY),
    ({"mem_per_node": 2**60}, InvalidRequest, MEMORY),
    ({"gpus": -1}, InvalidRequest, GRES),
    ({"gpus_per_node": -1}, InvalidRequest, GRES),
    ({"gpus_per_node": 2**31}, InvalidRequest, GRES),
    ({"gres": [GresRequest("gpu", "", -1)]}, InvalidRequest, GRES),
    ({"gres": [GresRequest("gpu", "a\n100", 1)]}, InvalidRequest, GRES),
    ({"gres": [GresRequest("fpga", "", 1)]}, InvalidRequest, GRES),
    ({"cpus_per_gpu": -1}, InvalidRequest, "CPU count specification invalid"),
    ({"cpus_per_task": 2**31}, InvalidRequest, "CPU count specification invalid"),
    ({"ntasks_per_node": -1}, InvalidRequest, "Task count specification invalid"),
    ({"num_tasks": 2**31}, InvalidRequest, "Task count specification invalid"),
    ({"num_nodes": 2**31}, InvalidRequest, "Node count specification invalid"),
    ({"num_nodes": 0}, InvalidRequest, "Invalid node, task or CPU count"),
    # hostlists: malformed or too large, before expanding
    ({"nodelist": "n[1-99999999]"}, InvalidRequest, "Invalid node name specified"),
    ({"nodelist": "a[0-999][0-999]"}, InvalidRequest, "Invalid node name specified"),
    ({"exclude": "x[0-999][0-999]"}, InvalidRequest, "Invalid node name specified"),
    ({"exclude": "n[1-"}, InvalidRequest, "Invalid node name specified"),
    ({"nodelist": "n3"}, InvalidRequest, "Invalid node name specified"),
])
def test_refused(cfg, changes, kind, message):
    got = refused(cfg, spec(**changes))
    assert got is not None, "accepted"
    assert got[0] is kind and got[1].startswith(message), got


CONTROL_FIELDS = ["name", "comment", "account", "qos", "partition", "reservation", "constraint",
                  "dependency", "nodelist", "exclude", "work_dir", "std_out", "std_err", "std_in",
                  "submit_host", "user", "signal", "array", "export"]


@pytest.mark.parametrize("field", CONTROL_FIELDS)
@pytest.mark.parametrize("char", ["\n", "\t", "\x00", "\x1b", "\x7f", "\x85", "\x9b"])
def test_control_characters_refused(cfg, field, char):
    got = refused(cfg, spec(**{field: "ok" + char + "ok"}))
    assert got == (InvalidRequest, f"Invalid {field}: control characters are not allowed")


def test_terminal_escape_in_name_refused(cfg):
    assert refused(cfg, spec(name="job\x1b]0;pwned\x07")) is not None


def test_script_and_env_limits_follow_scheduler_parameters():
    c = config.parse(CONF + "SchedulerParameters=max_script_size=100,max_env_size=50\n")
    assert refused(c, spec(script="x" * 100, environment={})) is None
    assert refused(c, spec(script="x" * 101, environment={}))[1].startswith(TOO_LONG)
    assert refused(c, spec(environment={"A": "x" * 47})) is None  # "A=" + 47 + NUL: 50 bytes
    assert refused(c, spec(environment={"A": "x" * 48}))[1].startswith(TOO_LONG)


def test_array_limit_follows_max_array_size():
    c = config.parse(CONF + "MaxArraySize=11\n")
    assert refused(c, spec(array="0-10")) is None
    assert refused(c, spec(array="0-11")) == (InvalidRequest, ARRAY)


def test_huge_requests_are_refused_in_microseconds(cfg):
    for changes in ({"array": "0-99999999999"}, {"array": "0-" + "9" * 4000},
                    {"nodelist": "n[0-99999999999999]"}, {"nodelist": "a[0-9999][0-9999][0-9999]"}):
        t = time.perf_counter()
        assert refused(cfg, spec(**changes)) is not None
        assert time.perf_counter() - t < 0.05, changes


# ---- arrays.parse and config.expand directly ------------------------------------------------
@pytest.mark.parametrize("text, max_size, expected", [
    ("0-15:4%2", 1001, ([0, 4, 8, 12], 2)),
    ("1,3,5-7", 1001, ([1, 3, 5, 6, 7], 0)),
    ("3,1,3", 1001, ([1, 3], 0)),
    ("0-10", 11, (list(range(11)), 0)),
    ("7", arrays.MAX_ARRAY_SIZE, ([7], 0)),
    ("4000000", arrays.MAX_ARRAY_SIZE, ([4000000], 0)),
])
def test_arrays_parse_valid(text, max_size, expected):
    assert arrays.parse(text, max_size) == expected


@pytest.mark.parametrize("text, max_size", [
    ("0-11", 11), ("11", 11), ("0-10:11", 11), ("4000001", arrays.MAX_ARRAY_SIZE),
    ("0-99999999999", arrays.MAX_ARRAY_SIZE), ("9" * 5000, arrays.MAX_ARRAY_SIZE),
    ("", 11), ("%3", 11), ("1,", 11), ("0-5%" + "9" * 11, 11), ("0-5%99999999999", 11),
    (",".join(["0-3999999"] * 3), arrays.MAX_ARRAY_SIZE),
])
def test_arrays_parse_refused(text, max_size):
    with pytest.raises(InvalidRequest, match="^Invalid job array specification$"):
        arrays.parse(text, max_size)
    with pytest.raises(InvalidRequest):
        arrays.check(text, max_size)


def test_arrays_check_counts_without_building():
    assert arrays.check("0-3999999", arrays.MAX_ARRAY_SIZE) == 4000000
    assert arrays.check("0-10:5,2", 11) == 4


@pytest.mark.parametrize("expr, n", [
    ("node[1-4,7]", 5), ("r[1-256]n[1-256]", 65536), ("x,y,z", 3), ("n[01-10]", 10),
    ("r[1-2]n[1-3]", 6),
])
def test_expand_within_cap(expr, n):
    assert len(config.expand(expr)) == n


@pytest.mark.parametrize("expr, why", [
    ("a[1-65537]", "expands to more than 65536 names"),
    ("a[1-256][1-257]", "expands to more than 65536 names"),
    ("a[0-99999],b[0-99999]", "expands to more than 65536 names"),
    ("a[" + ",".join(["1-60000"] * 2) + "]", "expands to more than 65536 names"),
    (",".join(["h"] * 65537), "expands to more than 65536 names"),
    ("n[1-" + "9" * 5000 + "]", "bad hostlist"),
    ("a[1]" * 2000, "bad hostlist"),
    ("a[[1]]", "bad hostlist"), ("a[1", "bad hostlist"), ("a]1[", "bad hostlist"),
    ("a[x]", "bad hostlist"), ("a[]", "bad hostlist"), ("a[3-1]", "bad hostlist"),
])
def test_expand_refused_before_expanding(expr, why):
    t = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        config.expand(expr, "slurm.conf:3")
    assert time.perf_counter() - t < 0.5  # the long ones are 130 kB to read; short ones take µs
    assert e.value.message.startswith("slurm.conf:3: ") and why in e.value.message
    assert len(e.value.message) < 200  # the expression is named, shortened


# ---- check_job_counts -----------------------------------------------------------------------
@pytest.mark.parametrize("n, total, by_user_qos, qos, message", [
    (1, 0, {}, "", None),
    (1, 9999, {}, "", None),
    (1, 10000, {}, "", validate.MAX_JOB_COUNT),
    (2, 9999, {}, "", validate.MAX_JOB_COUNT),
    (1001, 9000, {}, "", validate.MAX_JOB_COUNT),
    (3, 0, {}, "capped", None),
    (4, 0, {}, "capped", validate.ACCOUNTING_POLICY),
    (1, 10, {("alice", "capped"): 2}, "capped", None),
    (1, 10, {("alice", "capped"): 3}, "capped", validate.ACCOUNTING_POLICY),
    (1, 10, {("bob", "capped"): 3}, "capped", None),  # bob's jobs are not alice's
    (1, 10, {("alice", "normal"): 3}, "capped", None),  # nor another QOS's
    (500, 10, {("alice", "normal"): 5000}, "normal", None),  # normal is UNLIMITED
])
def test_check_job_counts(cfg, n, total, by_user_qos, qos, message):
    specs = [spec(qos=qos) for _ in range(n)]
    if message is None:
        validate.check_job_counts(cfg, specs, total, by_user_qos, "alice")
    else:
        with pytest.raises(InvalidRequest) as e:
            validate.check_job_counts(cfg, specs, total, by_user_qos, "alice")
        assert e.value.message == message


def test_check_job_counts_texts_are_slurms():
    assert validate.MAX_JOB_COUNT == "MaxJobCount limit reached"
    assert validate.ACCOUNTING_POLICY == ("Job violates accounting/QOS policy (job submit limit, "
                                          "user's size and/or time limits)")


def test_check_job_counts_uses_the_submitter_for_specs_without_user(cfg):
    with pytest.raises(InvalidRequest):
        validate.check_job_counts(cfg, [spec(user="", qos="capped")], 0, {("carol", "capped"): 3},
                                  "carol")


# ---- what the controller parses again later is parsed at submit --------------------------------
@pytest.mark.parametrize("field, value", [
    ("dependency", "aftesok:1"), ("dependency", "afterok:x"), ("signal", "NOSUCHSIG@10"),
    ("open_mode", "sideways"),
])
def test_fields_parsed_later_are_refused_at_submit(field, value):
    """A job the client did not check (a raw API call) must not carry what would break the
    scheduler's pass or the monitor's loop each time they parse it (found by RPC fuzzing)."""
    from pyslurm_lite.controller.validate import check_limits
    cfg = config.parse("NodeName=n1 CPUs=2 RealMemory=100\nPartitionName=p Nodes=n1\n")
    with pytest.raises(InvalidRequest):
        check_limits(cfg, JobSpec(**{field: value}))


@pytest.mark.parametrize("items", [["NOFILE=--5:-1"], ["NOFILE=-5:-1"], ["BOGUS=1:1"], ["CORE"]])
def test_malformed_resource_limits_are_refused_at_submit(items):
    with pytest.raises(InvalidRequest, match="Invalid resource limits"):
        validate.check_limits(config.parse("NodeName=n1 CPUs=2 RealMemory=100\nPartitionName=p Nodes=n1\n"),
                              JobSpec(rlimits=items))
