"""Core pinning on both cgroup versions: a job with -c 1 (its batch script and an srun step in
it) runs on exactly one CPU, its affinity (Cpus_allowed_list) that of its cgroup's cpuset.

    cgroup v1 (this host's default): the job's own cpuset cgroup holds cpuset.cpus = that CPU;
    CgroupPlugin=cgroup/v2 on a host whose cgroup2 mount has no cpuset controller (a hybrid one):
        no cpuset anywhere of the job's own; the agent pins each of its processes by affinity
        instead (sched_setaffinity before it runs), which the job may widen, a cpuset would not;
    ConstrainCores=no (v1): no cpuset cgroup either, the same affinity pinning.
"""

from __future__ import annotations

import os
import re

import pytest

from conftest import start_cluster, wait_final
from pyslurm_lite.agent.cgroup import unified_mount
from pyslurm_lite.agent.cpus import parse_cpulist

UNIFIED = unified_mount()
V1_CPUSET = "/sys/fs/cgroup/cpuset"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (cgroups)")
SHAPE = (1, 2, 2000, 0)

SCRIPT = f"""#!/bin/bash
echo "AFF $(grep Cpus_allowed_list /proc/self/status | cut -f2)"
echo "NPROC $(nproc)"
cs=$(awk -F: '$2 ~ /(^|,)cpuset(,|$)/ {{ print $3 }}' /proc/self/cgroup)
echo "CSPATH $cs"
echo "CSCPUS $(cat {V1_CPUSET}$cs/cpuset.cpus 2>/dev/null || echo none)"
u=$(awk -F: '$1 == "0" && $2 == "" {{ print $3 }}' /proc/self/cgroup)
echo "V2PATH $u"
echo "V2CPUS $(cat {UNIFIED}$u/cpuset.cpus 2>/dev/null || echo none)"
echo "STEP $(srun -n1 grep Cpus_allowed_list /proc/self/status | cut -f2)"
taskset -pc 0-1 $$ >/dev/null 2>&1
echo "WIDENED $(grep Cpus_allowed_list /proc/self/status | cut -f2)"
"""


def _own_cpuset() -> str:
    for line in open("/proc/self/cgroup").read().splitlines():
        _, names, path = line.split(":", 2)
        if "cpuset" in names.split(","):
            return path
    return ""


def _run(tmp_path_factory, name: str, cgroup_conf: str) -> tuple[dict[str, str], str]:
    from pyslurm_lite.cli.cluster import write_config
    d = tmp_path_factory.mktemp(name)

    def prepare(directory):
        directory.mkdir(exist_ok=True)
        write_config(str(directory), *SHAPE)
        if cgroup_conf:
            (directory / "cgroup.conf").write_text(cgroup_conf)

    c = start_cluster(d / "cluster", shape=SHAPE, prepare=prepare)
    try:
        j = c.sbatch("-c", "1", "-o", str(d / "pin-%j.out"), cwd=d, input=SCRIPT)
        assert wait_final(c, j) == "COMPLETED", c.log_tails()
        out = (d / f"pin-{j}.out").read_text()
        return dict(re.findall(r"^([A-Z0-9]+) ?(.*)$", out, re.M)), out
    finally:
        c.down()


@pytest.mark.skipif(not os.path.exists(f"{V1_CPUSET}/cgroup.procs"), reason="no cgroup v1 cpuset here")
def test_v1_the_job_is_confined_to_its_cpuset(tmp_path_factory):
    seen, out = _run(tmp_path_factory, "pin-v1", "")
    cpus = parse_cpulist(seen["AFF"])
    assert len(cpus) == 1 and seen["NPROC"] == "1", out
    assert "/job_" in seen["CSPATH"] and parse_cpulist(seen["CSCPUS"]) == cpus, out
    assert parse_cpulist(seen["STEP"]) == cpus, out
    assert parse_cpulist(seen["WIDENED"]) == cpus, out  # the cpuset holds


@pytest.mark.skipif(UNIFIED is None, reason="no cgroup2 mount")
def test_v2_without_a_cpuset_controller_pins_by_affinity(tmp_path_factory):
    if "cpuset" in open(os.path.join(UNIFIED, "cgroup.controllers")).read().split():
        pytest.skip("this host's cgroup2 has cpuset: test_v2_cpuset would apply (not written)")
    seen, out = _run(tmp_path_factory, "pin-v2", "CgroupPlugin=cgroup/v2\n")
    cpus = parse_cpulist(seen["AFF"])
    assert len(cpus) == 1 and seen["NPROC"] == "1", out
    assert "/job_" in seen["V2PATH"] and seen["V2CPUS"] == "none", out  # tracked in v2, no cpuset
    assert seen["CSPATH"] == _own_cpuset(), out  # and in no v1 cpuset of its own
    assert parse_cpulist(seen["STEP"]) == cpus, out
    assert len(parse_cpulist(seen["WIDENED"])) == 2, out  # affinity only: the job may undo it


@pytest.mark.skipif(not os.path.exists(f"{V1_CPUSET}/cgroup.procs"), reason="no cgroup v1 cpuset here")
def test_constrain_cores_no_pins_by_affinity_without_a_cpuset(tmp_path_factory):
    seen, out = _run(tmp_path_factory, "pin-nocs", "ConstrainCores=no\n")
    assert len(parse_cpulist(seen["AFF"])) == 1 and seen["NPROC"] == "1", out
    assert seen["CSPATH"] == _own_cpuset(), out
