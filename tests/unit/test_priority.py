"""priority/multifactor, table-driven: the formula, its factors, fair share and decay."""

import pytest

from pyslurm_lite.sched.priority import Weights, combine, decayed, factors

W = Weights(age=1000, fairshare=10000, jobsize=100, partition=10, max_age=100.0)


def test_worked_example():
    f = factors(eligible_since=0, now=50, cpus=0, total_cpus=10, partition_factor=0.0,
                fairshare_factor=2 ** -1, weights=W)  # used its share (classic)
    assert combine(f, Weights(age=1000, fairshare=10000, max_age=100.0)) == 5500


@pytest.mark.parametrize("since, now, cpus, want_age, want_size", [
    (0, 0, 1, 0.0, 0.1), (0, 50, 5, 0.5, 0.5), (0, 500, 20, 1.0, 1.0), (10, 0, 1, 0.0, 0.1),
])
def test_factors_are_in_unit_interval(since, now, cpus, want_age, want_size):
    f = factors(since, now, cpus, 10, 1.0, 1.0, W)
    assert f["age"] == want_age and f["jobsize"] == want_size and f["partition"] == 1.0


def test_nice_lowers_priority_and_priority_stays_positive():
    f = factors(0, 100, 10, 10, 1.0, 1.0, W)
    assert combine(f, W) - combine(f, W, nice=100) == 100
    assert combine(factors(0, 0, 0, 10, 0.0, 0.0, W), W, nice=10 ** 6) == 1


def test_usage_halves_every_half_life():
    assert decayed(100.0, 3600, 3600) == 50.0 and decayed(100.0, 0, 3600) == 100.0
