"""slurmrestd's data parser v0.0.42: our model <-> its JSON shapes (pure; no I/O, no clock).

    common.py     the {"set", "infinite", "number"} no-value structs, CSV and hostlist fields
    jobs.py       Job -> v0.0.42_job_info
    job_desc.py   v0.0.42_job_desc_msg -> JobSpec (submit) or scontrol update changes (POST job)
    resources.py  Node, Partition, Reservation, sdiag counters and pings -> their shapes

Only v0.0.42 is served, under no other version's name: v0.0.41's shapes differ from it (submit
answers under `result`, job_info has `exclusive`/`oversubscribe` for `shared`, a ping has no
`responding`/`primary`), and v0.0.43 adds fields we would leave out (stdout_expanded, a node's
topology); an alias would answer with documents its own schema does not describe.
"""

VERSION = "v0.0.42"
OP = "slurm_v0042_"  # slurmrestd's operationId prefix: the `source` of errors and warnings
