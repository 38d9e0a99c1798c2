"""srun --cpu-bind: parsing, each task's CPUs, and the SLURM_CPU_BIND* variables."""

import pytest

from pyslurm_lite.agent import binding
from pyslurm_lite.errors import InvalidRequest


@pytest.mark.parametrize("text, kind, ids, masks, verbose", [
    ("", "", [], [], False),
    ("cores", "cores", [], [], False),
    ("verbose,threads", "threads", [], [], True),
    ("no", "none", [], [], False),
    ("map_cpu:3,1", "map_cpu", [3, 1], [], False),
    ("v,map_cpu:0x2,4", "map_cpu", [2, 4], [], True),
    ("mask_cpu:0x3,C", "mask_cpu", [], [3, 12], False),
])
def test_parse(text, kind, ids, masks, verbose):
    b = binding.parse(text)
    assert (b.kind, b.ids, b.masks, b.verbose) == (kind, ids, masks, verbose)


@pytest.mark.parametrize("text", ["diagonal", "map_cpu:", "map_cpu:x", "mask_cpu:0xZ", "cores:2"])
def test_bad_cpu_bind(text):
    with pytest.raises(InvalidRequest, match="--cpu-bind"):
        binding.parse(text)


@pytest.mark.parametrize("text, cpus, ntasks, cpt, pinned, want", [
    ("cores", [0, 1, 2, 3], 2, 2, False, [{0, 1}, {2, 3}]),
    ("cores", [0, 1], 3, 1, False, [{0}, {1}, {0}]),         # more tasks than CPUs: wrap round
    ("", [4, 5], 2, 1, True, [{4}, {5}]),                      # default: bound when pinned
    ("", [0, 1], 2, 1, False, None),                           # ... not otherwise
    ("none", [0, 1], 2, 1, True, None),
    ("map_cpu:3,1", [0, 1, 2, 3], 3, 1, False, [{3}, {1}, {3}]),
    ("mask_cpu:0x3", [0, 1], 1, 1, False, [{0, 1}]),
])
def test_plan(text, cpus, ntasks, cpt, pinned, want):
    assert binding.plan(binding.parse(text), cpus, ntasks, cpt, pinned) == want


def test_environment_lists_every_local_mask():
    env = binding.environment(binding.parse("cores"), [{0}, {1}, {2, 3}])
    assert env == {"SLURM_CPU_BIND": "quiet,mask_cpu:0x1,0x2,0xC", "SLURM_CPU_BIND_TYPE": "mask_cpu:",
                   "SLURM_CPU_BIND_LIST": "0x1,0x2,0xC", "SLURM_CPU_BIND_VERBOSE": "quiet"}
    assert binding.environment(binding.parse("verbose,none"), None)["SLURM_CPU_BIND"] == "verbose,none"
