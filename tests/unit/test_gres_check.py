"""controller/gres_check: slurm.conf's Gres= against the GPUs an agent reports, one row per case."""

from __future__ import annotations

import pytest

from pyslurm_lite.config import parse_gres_spec
from pyslurm_lite.controller.gres_check import check
from pyslurm_lite.model import GpuDevice


def gpus(*types: str) -> list[GpuDevice]:
    return [GpuDevice(index=i, type=t) for i, t in enumerate(types)]


@pytest.mark.parametrize("configured, reported, reason, usable, gres", [
    ("gpu:4", gpus("", "", "", ""), "", [0, 1, 2, 3], "gpu:4"),
    ("gpu:4", gpus("a100", "a100"), "gres/gpu count reported lower than configured (2 < 4)",
     [0, 1], "gpu:4"),
    ("gpu:a100:4", gpus("", "", "", ""), "gres/gpu:a100 count too low (0 < 4)", [], "gpu:a100:4"),
    ("gpu:a100:4", gpus("a100", "a100", "a100", "a100"), "", [0, 1, 2, 3], "gpu:a100:4"),
    ("gpu:4", gpus("a100", "a100", "t4", "t4"), "", [0, 1, 2, 3], "gpu:a100:2,gpu:t4:2"),
    ("gpu:2", gpus("h200", "h200", "h200", "h200"), "", [0, 1], "gpu:h200:2"),
    ("", gpus("h200", "h200"), "", [], ""),
    ("gpu:a100:1,gpu:t4:1", gpus("t4", "a100", "a100"), "", [0, 1], "gpu:a100:1,gpu:t4:1"),
    ("gpu:a100:2,gpu:t4:2", gpus("a100", "a100", "a100", "t4"), "gres/gpu:t4 count too low (1 < 2)",
     [0, 1, 3], "gpu:a100:2,gpu:t4:2"),
    ("gpu:2,shard:8", gpus("", ""), "", [0, 1], "gpu:2,shard:8"),
    ("gpu:4", [], "gres/gpu count reported lower than configured (0 < 4)", [], "gpu:4"),
])
def test_verdicts(configured, reported, reason, usable, gres):
    v = check(parse_gres_spec(configured), reported)
    assert v.reason == reason
    assert [d.index for d in v.usable] == usable
    assert ",".join(":".join([g.name] + ([g.type] if g.type else []) + [str(g.count)])
                    for g in v.gres) == gres
