"""PriorityWeightTRES=GRES/shard=... and GRES/mps=...: a job's GPU shares count as their own TRES
against the partition's (sched/priority.py), as Slurm's TRES factors do."""

from pyslurm_lite.config import parse_gres_spec
from pyslurm_lite.model import GresRequest, JobSpec, NodeConfig, Partition
from pyslurm_lite.sched import priority


def _cfg(nodes):
    class C:  # the two attributes partition_tres reads
        pass
    c = C()
    c.nodes = nodes
    return c


def test_shard_job_counts_gres_shard_not_gpu():
    spec = JobSpec(num_nodes=2, gres=[GresRequest("shard", "", 3)])
    tres = priority.job_tres(spec)
    assert tres["gres/shard"] == 6.0
    assert "gres/gpu" not in tres


def test_partition_counts_configured_shards_and_factor():
    nodes = {f"n{i}": NodeConfig(name=f"n{i}", cpus=4, real_memory=1000,
                                 gres=parse_gres_spec("gpu:2,shard:8")) for i in (1, 2)}
    part = Partition(name="p", nodes=["n1", "n2"])
    ptres = priority.partition_tres(part, _cfg(nodes))
    assert ptres["gres/shard"] == 16.0 and ptres["gres/gpu"] == 4.0
    job = priority.job_tres(JobSpec(num_nodes=1, gres=[GresRequest("shard", "", 4)]))
    assert priority.tres_factors(job, ptres, {"gres/shard": 1000.0}) == {"gres/shard": 250.0}
