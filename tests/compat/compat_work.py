"""The workloads the compat tests send into jobs. A library pickles a function by reference, so
the job must import it: this module imports nothing from the tests, and the compat fixture puts
its directory on PYTHONPATH, as a user's project directory would be."""

from __future__ import annotations

import os


def node_and_square(x: int) -> tuple[str, int, str]:
    """Where it ran, x squared, and which array task ran it ('' outside an array)."""
    return os.environ["SLURMD_NODENAME"], x * x, os.environ.get("SLURM_ARRAY_TASK_ID", "")


def slurm_job_id() -> str:
    """The job this process runs in."""
    return os.environ["SLURM_JOB_ID"]

