"""The GPU placement simulator (sim/gpu_placement.py) against a scenario worked by hand.

2 nodes x 2 GPUs. t=0: A (2 GPUs, runs 10 s) and B (1 GPU, 100 s) arrive: A takes n1, B n2.
t=10: A ends. t=20: C (1 GPU, 100 s): first fit sends it to n1 (first node with room), best fit
to n2 (the fuller). t=30: D (2 GPUs, 10 s): under best fit n1 is whole, D starts at once; under
first fit one GPU is free on each node: D waits until B ends at t=100 (its reservation, at B's
limit, comes later), then runs to 110; C ends at 120 either way.
"""

from __future__ import annotations

import pytest

from pyslurm_lite.sim.gpu_placement import SimJob, simulate, workload

JOBS = [SimJob(0, 2, 1, 10), SimJob(0, 1, 2, 100), SimJob(20, 1, 2, 100), SimJob(30, 2, 1, 10)]


@pytest.mark.parametrize("best_fit, wait_d, waiting_free", [
    (True, 0.0, 0.0),
    (False, 70.0, 70 / 120),  # t=30-100: D waits with 2 GPUs free, one per node
])
def test_hand_worked_scenario(best_fit, wait_d, waiting_free):
    r = simulate(JOBS, 2, 2, best_fit)
    assert r.wait_all == pytest.approx(wait_d / 4)
    assert r.waiting_free == pytest.approx(waiting_free) and r.fragmented == pytest.approx(waiting_free)
    # busy GPU-seconds 2*10 + 100 + 100 + 2*10 = 240 over 4 GPUs x 120 s
    assert r.utilization == pytest.approx(0.5)
    assert r.wait_8 == 0.0  # no 8-GPU job here


def test_workload_is_seeded_and_mixed():
    a, b = workload(400, 8, 8, 0.9, 3), workload(400, 8, 8, 0.9, 3)
    assert a == b and {j.gpus for j in a} == {1, 2, 4, 8}
    assert all(0 < j.run <= j.limit * 60 for j in a)
    assert [j.submit for j in a] == sorted(j.submit for j in a)
