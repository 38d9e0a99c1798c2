"""The Slurm release whose behaviour (and version strings) this project reproduces: what every
command's -V and `scontrol version` print, and the Version= each agent reports for its node
(slurmd's). The project's own version is pyslurm_lite.__version__."""

SLURM_VERSION = "22.05.8"  # the reference cluster's (shared/slurm-reference, Version=22.05.8)
