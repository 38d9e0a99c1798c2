"""Command-line tools with Slurm's names, flags, output formats and exit codes."""
