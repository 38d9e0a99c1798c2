"""--gpu-bind (agent/gpubind.py), --gres-flags (cli/jobopts.py, the scheduler's enforce-binding,
agent/cpus.py's core choice): parsing, each task's GPUs, slurmstepd's verbose line. Expectations
written by hand from Slurm's man pages (srun --gpu-bind, --gres-flags) and gres_common.c."""

from __future__ import annotations

import dataclasses

import pytest

from factories import job, node, snapshot
from pyslurm_lite.agent import gpubind
from pyslurm_lite.agent.cpus import CoreMap, gpu_cores
from pyslurm_lite.cli import sbatch
from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.model import GpuDevice
from pyslurm_lite.sched import schedule


@pytest.mark.parametrize("text, kind, values, per_gpu, verbose", [
    ("closest", "closest", [], 0, False),
    ("verbose,closest", "closest", [], 0, True),
    ("none", "none", [], 0, False),
    ("map_gpu:1,0", "map_gpu", [1, 0], 0, False),
    ("verbose,map_gpu:0*2,1", "map_gpu", [0, 0, 1], 0, True),
    ("mask_gpu:0x3,4", "mask_gpu", [3, 4], 0, False),
    ("single:2", "single", [], 2, False),
    ("v,single:1", "single", [], 1, True),
])
def test_parse(text, kind, values, per_gpu, verbose):
    b = gpubind.parse(text)
    assert (b.kind, b.values, b.per_gpu, b.verbose) == (kind, values, per_gpu, verbose)


@pytest.mark.parametrize("text", ["nearest", "map_gpu:", "map_gpu:a", "single:0", "single:x",
                                  "closest:1", "map_gpu:1*0", "mask_gpu:zz"])
def test_parse_rejects(text):
    with pytest.raises(InvalidRequest, match="Invalid --gpu-bind argument"):
        gpubind.parse(text)


CLOSE = {0: {0, 1}, 1: {2, 3}}  # Cores=0-1 for GPU 0, Cores=2-3 for GPU 1


@pytest.mark.parametrize("text, gpus, fence, tasks, cpus, expected", [
    pytest.param("", [0, 1], None, 2, None, None, id="default-unbound"),
    pytest.param("none", [0, 1], None, 2, None, None, id="none"),
    pytest.param("closest", [0, 1], None, 2, [{0, 1}, {2, 3}], [[0], [1]], id="closest"),
    pytest.param("closest", [0, 1], None, 2, [{1, 2}, {3}], [[0, 1], [1]], id="closest-straddles"),
    pytest.param("closest", [0, 1], None, 2, [set(), set()], [[0, 1], [0, 1]], id="closest-unbound"),
    pytest.param("map_gpu:1,0", [0, 1], None, 3, None, [[1], [0], [1]], id="map-wraps"),
    # fenced to the job's GPUs 2 and 3: IDs count them from 0
    pytest.param("map_gpu:1", [2, 3], [2, 3], 2, None, [[3], [3]], id="map-fenced-relative"),
    pytest.param("mask_gpu:0x2,0x3", [2, 3], [2, 3], 2, None, [[3], [2, 3]], id="mask-fenced"),
    pytest.param("mask_gpu:0x4", [1, 2, 3], None, 1, None, [[2]], id="mask-global"),
    pytest.param("single:2", [0, 1], None, 4, None, [[0], [0], [1], [1]], id="single-2"),
    pytest.param("single:1", [0, 1], None, 3, None, [[0], [1], [0]], id="single-wraps"),
])
def test_plan(text, gpus, fence, tasks, cpus, expected):
    assert gpubind.plan(gpubind.parse(text), gpus, fence, tasks, cpus, CLOSE) == expected


@pytest.mark.parametrize("text, gpus, fence", [
    ("map_gpu:2", [0, 1], [0, 1]),  # only 2 GPUs: IDs 0 and 1
    ("map_gpu:0", [1], None),  # the node's GPU 0 is not the step's
    ("mask_gpu:0x4", [0, 1], None),
])
def test_plan_refuses_gpus_not_in_step(text, gpus, fence):
    with pytest.raises(ValueError, match="names no GPU of this step"):
        gpubind.plan(gpubind.parse(text), gpus, fence, 1, None, {})


def test_verbose_line():
    """gres_common.c's line: usable and allocated GPUs as hex masks; fenced, local indices."""
    assert gpubind.verbose_line([3], [2, 3], [2, 3]) == (
        "gpu-bind: usable_gres=0x2; bit_alloc=0xc; local_inx=2; global_list=3; local_list=1\n")
    assert gpubind.verbose_line([1], [0, 1], None) == (
        "gpu-bind: usable_gres=0x2; bit_alloc=0x3; local_inx=0; global_list=1; local_list=1\n")


def test_close_cores_from_gres_conf():
    devs = [GpuDevice(0, cores="0-1"), GpuDevice(1, cores="2,3"), GpuDevice(2)]
    assert gpubind.close_cores(devs) == {0: {0, 1}, 1: {2, 3}}


# ---- --gres-flags ------------------------------------------------------------------------------

def spec(*argv):
    ns = sbatch.build_parser().parse_args(list(argv))
    return sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")


@pytest.mark.parametrize("argv, gpu_bind, gres_flags", [
    (("--gres-flags=enforce-binding",), "", "enforce-binding"),
    (("--gres-flags=Disable-Binding",), "", "disable-binding"),
    (("--gpu-bind=verbose,closest",), "verbose,closest", ""),
    ((), "", ""),
])
def test_spec_options(argv, gpu_bind, gres_flags):
    s = spec(*argv)
    assert (s.gpu_bind, s.gres_flags) == (gpu_bind, gres_flags)


@pytest.mark.parametrize("argv, message", [
    (("--gres-flags=sometimes",), "Invalid --gres-flags specification"),
    (("--gpu-bind=nearest",), "Invalid --gpu-bind argument: nearest"),
])
def test_spec_options_rejected(argv, message):
    with pytest.raises(InvalidRequest, match=message):
        spec(*argv)


def _bound_node(**kw):
    """4 GPUs: 0-1 bound to cores 0-1, 2-3 to cores 2-7 (gres.conf Cores=)."""
    v = node("n1", cpus=8, gpus=4, **kw)
    return dataclasses.replace(v, gpu_cores=((0, frozenset({0, 1})), (1, frozenset({0, 1})),
                                             (2, frozenset(range(2, 8))), (3, frozenset(range(2, 8)))))


@pytest.mark.parametrize("cpus, free, enforce, expected", [
    pytest.param(4, (0, 1, 2, 3), True, [2], id="enforce-picks-gpu-with-enough-cores"),
    pytest.param(4, (0, 1, 2, 3), False, [0], id="without-lowest"),
    pytest.param(2, (0, 1, 2, 3), True, [0], id="enforce-enough-anywhere"),
    pytest.param(4, (0, 1), True, None, id="enforce-waits"),
])
def test_enforce_binding_schedules(cpus, free, enforce, expected):
    j = dataclasses.replace(job(1, cpus=cpus, gpus=1), enforce_binding=enforce)
    plan = schedule(snapshot([j], [_bound_node(free_gpus=free)]), 0.0)
    got = [a.gpus for a in plan.starts[0].allocations][0] if plan.starts else None
    assert got == expected


def test_gres_flags_reach_the_job_view():
    from pyslurm_lite.sched.placement import refine
    s = spec("--gres-flags=enforce-binding", "--gres=gpu:1")
    assert refine(job(1), s).enforce_binding and not refine(job(1), spec()).enforce_binding


@pytest.mark.parametrize("flags, near, strict", [
    ("", {0, 1, 2}, False), ("enforce-binding", {0, 1, 2}, True), ("disable-binding", set(), False),
])
def test_agent_cores_for_gpus(flags, near, strict):
    devs = [GpuDevice(0, cores="0-1"), GpuDevice(1, cores="2"), GpuDevice(2, cores="6-7")]
    assert gpu_cores(devs, [0, 1], flags) == (near, strict)
    assert gpu_cores([GpuDevice(0)], [0], flags)[0] == (set() if flags == "disable-binding" else None)


def test_core_map_prefers_and_enforces_bound_cores():
    cores = CoreMap(set(range(8)))
    assert cores.take("a", 2, near={6, 7}) == [6, 7]
    assert cores.take("b", 2, near={5, 6, 7}) == [0, 5]  # 6, 7 taken: one near, one other
    # only 4 is free near: enforce-binding shares bound cores rather than run elsewhere
    assert cores.take("c", 2, near={4, 5, 6, 7}, strict=True) == [4, 5] and cores.held("c") == []
    assert cores.take("d", 1, near={4, 5}, strict=True) == [4]
