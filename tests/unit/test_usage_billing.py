"""TRES billing (TRESBillingWeights, PriorityFlags=MAX_TRES), what an allocation counts, usage
charged in periods without double charges, decay, and the TRES priority factor."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite.controller.usage import alloc_tres, billing, charges, job_billing, run_minutes
from pyslurm_lite.model import JobSpec, NodeAllocation
from pyslurm_lite.sched.priority import decayed, tres_factors

GPU_WEIGHTS = {"cpu": 1.0, "gres/gpu": 10.0}
START = 1_700_000_000.0


def gpu_job(job_id=1, cpus=1, mem=100, gpus=(0,), nodes=("node1",), **spec):
    j = model_job(job_id, nodes=nodes, cpus=cpus, gpus=gpus, **spec)
    for a in j.allocations:
        a.mem = mem
    return j


@pytest.mark.parametrize("tres, weights, flags, want", [
    ({"cpu": 1, "mem": 100, "node": 1}, {}, (), 1.0),  # no weights: the CPUs
    ({"cpu": 1, "mem": 100, "node": 1, "gres/gpu": 1}, GPU_WEIGHTS, (), 11.0),
    ({"cpu": 1, "mem": 100, "node": 1}, GPU_WEIGHTS, (), 1.0),
    ({"cpu": 2, "mem": 4096, "node": 1, "gres/gpu": 1}, {"cpu": 1.0, "mem": 0.25, "gres/gpu": 10.0}, (), 13.0),
    ({"cpu": 2, "mem": 4096, "node": 1, "gres/gpu": 1}, {"cpu": 1.0, "mem": 0.25, "gres/gpu": 10.0},
     ("MAX_TRES",), 10.0),
    ({"cpu": 8, "mem": 4096, "node": 1, "gres/gpu": 1}, {"cpu": 2.0, "gres/gpu": 10.0}, ("MAX_TRES",), 16.0),
    # a typed GPU counts for gres/gpu and gres/gpu:a100 both, as in Slurm's TRES
    ({"cpu": 1, "gres/gpu": 2, "gres/gpu:a100": 2}, {"gres/gpu:a100": 30.0}, (), 60.0),
    ({"cpu": 4, "node": 2}, {"node": 5.0}, (), 10.0),
])
def test_billing(tres, weights, flags, want):
    assert billing(tres, weights, flags) == pytest.approx(want)


def test_alloc_tres_counts_the_allocation_over_its_nodes():
    j = gpu_job(cpus=2, mem=300, gpus=(0, 1), nodes=("node1", "node2"), gpu_type="a100")
    j.spec.gres[0].type = "a100"
    got = alloc_tres(j, weights=GPU_WEIGHTS)
    assert got == {"cpu": 4, "mem": 600, "node": 2, "gres/gpu": 4, "gres/gpu:a100": 4, "billing": 44.0}
    j.billing = 7.0  # set at start: that is what it bills
    assert alloc_tres(j)["billing"] == 7.0
    types = {("node1", 0): "h100", ("node1", 1): "h100", ("node2", 0): "a100", ("node2", 1): "a100"}
    got = alloc_tres(j, lambda n, i: types[(n, i)])
    assert got["gres/gpu:h100"] == 2 and got["gres/gpu:a100"] == 2


def test_gpu_job_bills_more_than_the_same_job_without():
    assert job_billing(gpu_job(), GPU_WEIGHTS) == 11.0
    assert job_billing(gpu_job(gpus=()), GPU_WEIGHTS) == 1.0


def test_charges_run_in_periods_and_never_twice():
    j = gpu_job()
    j.start_time, j.billing = START, 11.0
    added, until = charges([j], {}, START + 60)
    key = ("", "alice")
    assert added[key]["billing"] == pytest.approx(660.0) and added[key]["gres/gpu"] == 60.0
    assert until == {1: START + 60}
    again, _ = charges([j], until, START + 60)  # the same moment again: nothing
    assert again == {}
    j.end_time = START + 90  # ended: charged up to its end, not to now
    added, until = charges([j], until, START + 500)
    assert added[key]["billing"] == pytest.approx(330.0) and until == {1: START + 90}
    assert charges([j], until, START + 900)[0] == {}


def test_charges_go_to_the_association_the_key_names():
    j = gpu_job(user="bob", account="")
    j.start_time, j.billing = START, 1.0
    added, _ = charges([j], {}, START + 10, key=lambda job: ("bio", job.spec.user))
    assert list(added) == [("bio", "bob")]


def test_run_minutes_are_whats_left_of_the_time_limit():
    j = gpu_job()
    j.start_time, j.billing, j.time_limit = START, 11.0, 10
    got = run_minutes([j], START + 4 * 60)[("", "alice")]
    assert got["gres/gpu"] == pytest.approx(6.0) and got["billing"] == pytest.approx(66.0)


@pytest.mark.parametrize("usage, elapsed, half_life, want", [
    (1000.0, 0.0, 60.0, 1000.0), (1000.0, 60.0, 60.0, 500.0), (1000.0, 120.0, 60.0, 250.0),
    (1000.0, 1e6, 0.0, 1000.0),  # PriorityDecayHalfLife=0: no decay
])
def test_decay(usage, elapsed, half_life, want):
    assert decayed(usage, elapsed, half_life) == pytest.approx(want)


def test_tres_factor_counts_gpus_against_the_partitions():
    part = {"cpu": 8.0, "mem": 8000.0, "node": 2.0, "gres/gpu": 4.0}
    assert tres_factors({"cpu": 1, "gres/gpu": 2}, part, {"gres/gpu": 1000.0}) == {"gres/gpu": 500.0}
    assert tres_factors({"cpu": 1}, part, {"gres/gpu": 1000.0}) == {"gres/gpu": 0.0}
    assert tres_factors({"cpu": 1}, {"cpu": 8.0}, {"gres/gpu": 1000.0}) == {}  # no GPUs there


def test_alloc_tres_of_a_job_with_no_allocation_is_empty():
    from pyslurm_lite.model import Job
    j = Job(1, JobSpec(user="a"))
    assert alloc_tres(j) == {"cpu": 0.0, "mem": 0.0, "node": 0.0, "billing": 0.0}
    j.allocations = [NodeAllocation("n", 2, 10)]
    assert alloc_tres(j)["billing"] == 2.0
