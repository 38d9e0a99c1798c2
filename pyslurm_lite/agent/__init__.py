"""The agent daemon (slurmd's role): one per host, launches and tracks what the controller allocates."""
