"""The controller daemon (slurmctld's role)."""
