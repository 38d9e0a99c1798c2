"""pyslurm-lite: a small, readable workload manager that speaks Slurm."""

__version__ = "0.1.0"
