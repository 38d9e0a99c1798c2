"""What every compat test shares: a real local cluster whose commands the client library finds
as it would on a Slurm login node.

The libraries under test shell out to `sbatch`, `squeue`, `sacct`, `scancel`, `scontrol` and
`srun` from inside the test process, with the process's own environment. So for the length of a
module the test process itself gets the cluster's environment (our bin directory first on PATH,
PYSLURM_LITE_CONF, no stray SLURM_* variables), and its working directory becomes a fresh
directory of the cluster's, so no library drops files (slurm-*.out, logs, caches) into the
repository. Its directory is on PYTHONPATH, so that jobs import the workloads of compat_work.

This module must not stand in for any part of the cluster or the library: no mocks, no patched
library functions; what a library needs that we lack is reported, not special-cased.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import Cluster, configured_cluster

# 2 nodes x 2 CPUs x 2000 MiB, no GPUs: room for two one-CPU workers per node.
SHAPE = (2, 2, 2000, 0)
HERE = os.path.dirname(os.path.abspath(__file__))
DRAIN_TIMEOUT = 30.0  # seconds for the queue to empty after a library's own clean-up


def compat_cluster(tmp_path_factory, name: str, extra: str = ""):
    """Yield a cluster for one module, with the test process inside its environment; bring it
    down afterwards. Use as `yield from compat_cluster(tmp_path_factory, "dask")`."""
    clusters = configured_cluster(tmp_path_factory, name, SHAPE, extra=extra)
    c = next(clusters)
    try:
        (c.dir / "work").mkdir()
        c.env["PYTHONPATH"] = HERE  # so that jobs import compat_work, as a user's code
        with pytest.MonkeyPatch.context() as mp:
            for key in [k for k in os.environ if k not in c.env]:
                mp.delenv(key)  # SLURM_* of an outer allocation would mislead the library
            for key, value in c.env.items():
                mp.setenv(key, value)
            mp.chdir(c.dir / "work")
            yield c
    finally:
        clusters.close()  # configured_cluster brings the cluster down


def queue_ids(cluster: Cluster) -> list[str]:
    """Ids of the jobs plain squeue lists (pending, running, completing: not those ended)."""
    r = cluster.run(["squeue", "-h", "-o", "%i"])
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def assert_queue_drains(cluster: Cluster, timeout: float = DRAIN_TIMEOUT) -> None:
    """Every job leaves squeue: the library cleaned up (or its jobs ended) on its own."""
    deadline, left = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        left = queue_ids(cluster)
        if not left:
            return
        time.sleep(0.5)
    r = cluster.run(["squeue", "-o", "%i %T %r %j"])
    pytest.fail(f"jobs left in squeue {timeout:.0f}s after the library's clean-up: {left}\n{r.stdout}")


def job_output(directory: Path, pattern: str = "*") -> str:
    """Every file under directory matching pattern, concatenated (for failure messages)."""
    parts = []
    for f in sorted(directory.rglob(pattern)):
        if f.is_file():
            parts.append(f"--- {f}\n{f.read_text(errors='replace')[-3000:]}")
    return "\n".join(parts)
