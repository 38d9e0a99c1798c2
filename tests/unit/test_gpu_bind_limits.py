"""--gpu-bind and --cpu-bind as the root agent parses them from a user's launch: values past
the bounds (huge repeat counts, giant masks, megabytes of text) are refused at once, with
Slurm's message, instead of costing the agent memory or time; ordinary values still work."""

from __future__ import annotations

import time

import pytest

from pyslurm_lite.agent import binding, gpubind
from pyslurm_lite.errors import InvalidRequest


@pytest.mark.parametrize("text", [
    "map_gpu:0*4000000000",                 # a list of four billion entries
    "map_gpu:0*4096,1",                     # one past the entry bound
    "mask_gpu:0x" + "f" * 1_000_000,        # a million hex digits
    "mask_gpu:0x1" + "0" * 16,              # bit 64: past a 64-bit mask
    "map_gpu:1024",                         # past any GPU id
    "map_gpu:" + ",".join(["0"] * 3000),    # past the text bound
    "single:4000000000",
])
def test_oversized_gpu_bind_is_refused_quickly(text):
    began = time.monotonic()
    with pytest.raises(InvalidRequest, match="Invalid --gpu-bind argument"):
        gpubind.parse(text)
    assert time.monotonic() - began < 0.5


def test_error_quotes_a_long_value_cut_short():
    with pytest.raises(InvalidRequest) as e:
        gpubind.parse("mask_gpu:0x" + "f" * 10_000)
    assert len(str(e.value)) < 200


@pytest.mark.parametrize("text, values", [
    ("map_gpu:0*4095,1", [0] * 4095 + [1]),
    ("mask_gpu:0xffffffffffffffff", [(1 << 64) - 1]),
    ("map_gpu:1023", [1023]),
])
def test_values_at_the_bounds_are_taken(text, values):
    assert gpubind.parse(text).values == values


@pytest.mark.parametrize("text", [
    "mask_cpu:0x" + "f" * 1_000_000,
    "mask_cpu:0x1" + "0" * 1024,            # CPU 4096
    "map_cpu:4096",
    "map_cpu:" + ",".join(["1"] * 3000),
])
def test_oversized_cpu_bind_is_refused_quickly(text):
    began = time.monotonic()
    with pytest.raises(InvalidRequest, match="Invalid --cpu-bind argument"):
        binding.parse(text)
    assert time.monotonic() - began < 0.5


def test_widest_cpu_mask_is_planned():
    bind = binding.parse("mask_cpu:0x" + "f" * 1024)
    assert binding.plan(bind, [0], 2, 1, False) == [set(range(4096))] * 2
