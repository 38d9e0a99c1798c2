"""gres/shard and gres/mps in TRES terms, as Slurm 22.05 counts them: a job holding shards of a
GPU holds gres/shard (or gres/mps), never gres/gpu, in its AllocTRES, billing, limits, the node's
AllocTRES/GresUsed, sacct, seff and the metrics; plus scontrol show node's GPU notes and
scontrol show config's GPU, MPI, topology and cgroup keys. End to end:
tests/e2e/test_shard_accounting.py and test_gpu_notes.py."""

from __future__ import annotations

import dataclasses

import pytest

from factories import job, model_job, running
from pyslurm_lite.cli import acctfields as af
from pyslurm_lite.cli import nodefields as nf
from pyslurm_lite.cli import scontrol, showconfig
from pyslurm_lite.cli.seff import report
from pyslurm_lite.config import Config, parse_gres_spec
from pyslurm_lite.controller import idle_gpu, metrics, usage
from pyslurm_lite.model import (ForeignGpu, GpuDevice, GpuFault, GpuShareUse, GresRequest, Node,
                                NodeAllocation, NodeConfig, NodeState, Qos, Reason, UsageSample)
from pyslurm_lite.sched import limits


def shard_job(count=3, gpu=0, name="shard", billing=0.0):
    j = model_job(gres=[GresRequest(name, "", count)])
    j.billing = billing
    j.allocations = [NodeAllocation("node1", 1, 1000, [gpu], shares=[count], share_name=name)]
    return j


def gpu_node(alloc_gpus=(), shares=(), faults=(), foreign=()):
    return Node(config=NodeConfig("node1", cpus=4, real_memory=4000,
                                  gres=parse_gres_spec("gpu:2,shard:8")),
                state=NodeState.MIXED, responding=True,
                gpus=[GpuDevice(index=0), GpuDevice(index=1)], alloc_cpus=2, alloc_mem=200,
                alloc_gpus=list(alloc_gpus), alloc_shares=list(shares),
                gpu_faults=list(faults), foreign_gpus=list(foreign))


# ---- accounting: AllocTRES and billing ---------------------------------------------------------
@pytest.mark.parametrize("name", ["shard", "mps"])
def test_alloc_tres_counts_shares_and_no_gpu(name):
    tres = usage.alloc_tres(shard_job(3, name=name))
    assert tres[f"gres/{name}"] == 3 and "gres/gpu" not in tres


def test_whole_gpu_job_keeps_its_gres_gpu():
    assert usage.alloc_tres(model_job(gpus=[0, 1]))["gres/gpu"] == 2


def test_billing_weighs_shards():
    j = shard_job(3)
    assert usage.job_billing(j, {"cpu": 1.0, "gres/shard": 2.0}) == 1 + 3 * 2.0
    assert usage.job_billing(j, {"cpu": 1.0, "gres/gpu": 10.0}) == 1  # its GPU is no gres/gpu


def test_charges_shard_seconds():
    j = shard_job(3)
    out, _ = usage.charges([j], {}, j.start_time + 10)
    (per_assoc,) = out.values()
    assert per_assoc["gres/shard"] == 30 and "gres/gpu" not in per_assoc


def test_sacct_alloc_and_req_tres():
    j = shard_job(3, billing=7.0)
    j.end_time = j.start_time + 5
    rec = af.Rec(j, j.spec, "COMPLETED", None, j.end_time, Config())
    assert af.alloc_tres(rec) == "billing=7,cpu=1,gres/shard=3,mem=1000M,node=1"
    assert "gres/shard=3" in af.req_tres(rec) and "gres/gpu" not in af.req_tres(rec)
    (batch,) = af.run_steps(j, j.spec, "COMPLETED")
    step = af.Rec(j, j.spec, "COMPLETED", batch, j.end_time, Config())
    assert af.alloc_tres(step) == "cpu=1,gres/shard=3,mem=1000M,node=1"


# ---- limits ------------------------------------------------------------------------------------
def _shard_running(job_id, count):
    r = running(job_id, "n1", gpus=(0,))
    held = NodeAllocation("n1", 1, 100, [0], [count], "shard")
    return dataclasses.replace(r, allocations=(held,))


def _shard_pending(job_id, count):
    return dataclasses.replace(job(job_id), share_name="shard", shares_per_node=count)


@pytest.mark.parametrize("what, qos, run, pending, expected", [
    ("GrpTRES gres/shard over", Qos("normal", grp_tres={"gres/shard": 4}), [_shard_running(9, 3)],
     _shard_pending(1, 2), Reason.QOS_GRP_GRES),
    ("GrpTRES gres/shard within", Qos("normal", grp_tres={"gres/shard": 4}), [_shard_running(9, 3)],
     _shard_pending(1, 1), None),
    ("a shard job holds no gres/gpu", Qos("normal", grp_tres={"gres/gpu": 1}),
     [_shard_running(9, 3)], job(1, gpus=1), None),
    ("MaxGPUsPerUser: shards are not GPUs", Qos("normal", max_gpus_per_user=1),
     [_shard_running(9, 3)], job(1, gpus=1), None),
    ("MaxTRES gres/shard per job", Qos("normal", max_tres_per_job={"gres/shard": 2}), [],
     _shard_pending(1, 3), Reason.QOS_MAX_GRES_PER_JOB),
])
def test_limits_count_shards(what, qos, run, pending, expected):
    assert limits.Tally({"normal": qos}, None, run).reason(pending) == expected


def test_parse_and_format_shard_tres():
    assert limits.parse_tres("gres/shard=4,cpu=2") == {"gres/shard": 4, "cpu": 2}
    assert limits.format_tres({"gres/shard": 4, "gres/gpu": 1, "cpu": 2}) == \
        "cpu=2,gres/gpu=1,gres/shard=4"


# ---- a node: GresUsed, AllocTRES, CfgTRES, Comment ---------------------------------------------
@pytest.mark.parametrize("alloc, shares, text", [
    ([0], [GpuShareUse(0, "shard", 3)], "gpu:0(IDX:N/A),shard:3"),
    ([0, 1], [GpuShareUse(0, "shard", 3), GpuShareUse(1, "shard", 4)], "gpu:0(IDX:N/A),shard:7"),
    ([0, 1], [GpuShareUse(0, "shard", 3)], "gpu:1(IDX:1),shard:3"),
    ([], [], "gpu:0(IDX:N/A),shard:0"),
])
def test_gres_used(alloc, shares, text):
    assert nf.gres_used_text(gpu_node(alloc, shares)) == text


def test_node_record_tres():
    lines = nf.node_record(gpu_node([0], [GpuShareUse(0, "shard", 3)]), 0.0, Config(), [])
    assert "AllocTRES=cpu=2,mem=200M,gres/shard=3" in lines
    assert "CfgTRES=cpu=4,mem=4000M,billing=4,gres/gpu=2,gres/shard=8" in lines


def _comment(node, **cfg):
    return [x for x in nf.node_record(node, 0.0, Config(**cfg), []) if x.startswith("Comment=")]


def test_gpu_fault_in_comment():
    fault = GpuFault(1, "xid", "XID 79 (fallen off the bus)")
    assert _comment(gpu_node(faults=[fault])) == [
        "Comment=GPU fault(s) gpu 1: XID 79 (fallen off the bus), out of scheduling until the "
        "node is resumed"]
    assert _comment(gpu_node()) == []


@pytest.mark.parametrize("action, words", [("exclude", "kept out of scheduling"),
                                           ("report", "still scheduled (ForeignGpuAction=report)")])
def test_foreign_gpu_comment_follows_the_action(action, words):
    (line,) = _comment(gpu_node(foreign=[ForeignGpu(0, [4242])]), foreign_gpu_action=action)
    assert line == f"Comment=GPU(s) 0 used by processes no job started (pids 4242), {words}"


# ---- scontrol show job -------------------------------------------------------------------------
def test_scontrol_job_tres_and_detail():
    j = shard_job(3, billing=7.0)
    _, cpus, tres = scontrol._job_resources(j, j.spec, Config())
    assert tres == "cpu=1,mem=1000M,node=1,billing=7,gres/shard=3"
    assert scontrol._detail_lines(j) == ["JOB_GRES=shard:3",
                                         "  Nodes=node1 Mem=1000 GRES=shard:3(IDX:0)"]


def test_scontrol_pending_shard_job_tres():
    j = shard_job(3)
    j.allocations = []
    assert scontrol._job_resources(j, j.spec, Config())[2].endswith(",gres/shard=3")


def test_scontrol_partition_tres_counts_configured_shards():
    from pyslurm_lite.model import Partition
    lines = scontrol.partition_record(Partition("main", nodes=["node1"]), {"node1": gpu_node()})
    assert lines[-1] == "TRES=cpu=4,mem=4000M,node=1,billing=4,gres/gpu=2,gres/shard=8"


# ---- seff, idle GPUs, metrics ------------------------------------------------------------------
def test_seff_says_the_gpu_is_shared():
    j = shard_job(3)
    j.end_time = j.start_time + 10
    j.usage = [UsageSample(job_id=j.job_id, step="batch", node="node1", time=j.end_time, gpus=1,
                           ave_gpu_util=40.0, max_gpu_mem=1 << 20)]
    rec = af.Rec(j, j.spec, "COMPLETED", None, j.end_time, Config())
    gpu_line = next(x for x in report(rec, "c").splitlines() if x.startswith("GPU Efficiency"))
    assert gpu_line == ("GPU Efficiency: 40.00% of 1 GPU(s) (shared: shard:3, the GPU's use by "
                        "all its jobs)")


def test_idle_flag_of_a_shard_job_names_its_shares():
    j = shard_job(3)
    assert idle_gpu.job_gpus(j) == 1  # watched, by its GPU's utilisation
    text = idle_gpu.flag_text(1, 5, 20, 0.0, 0, idle_gpu.shares_text(j))
    assert text.startswith("IdleGPU: 1 GPU(s) (shared, shard:3) under 5%")
    assert idle_gpu.flagged_runs(text) == {0}


def test_metrics_rows():
    row = metrics.JobRow.of(shard_job(3))
    assert row.gpus == 0 and row.shares == (("shard", 3),)
    fam = metrics._shares_family([row], private=False)
    assert [(s.labels, s.value) for s in fam.samples] == [
        ({"user": "alice", "account": "", "gres": "gres/shard"}, 3)]
    node = metrics.NodeRow.of(gpu_node([0, 1], [GpuShareUse(0, "shard", 3)]))
    assert (node.gpus_allocated, node.gpus_shared, node.shard_allocated) == (1, 1, 3)


# ---- scontrol show config ----------------------------------------------------------------------
def test_show_config_keys_and_cgroup_section():
    cfg = Config(mpi_default="pmi2", topology_plugin="topology/tree", gpu_health_action="gpu",
                 foreign_gpu_action="report", cgroup_plugin="cgroup/v2", constrain_cores=False)
    out = showconfig.lines(cfg, 0.0, 0.0)
    for key, value in [("MpiDefault", "pmi2"), ("TopologyPlugin", "topology/tree"),
                       ("GpuHealthAction", "gpu"), ("ForeignGpuAction", "report"),
                       ("MpsControlProgram", "(null)")]:
        assert f"{key:<23} = {value}" in out[:out.index("Cgroup Support Configuration:")]
    at = out.index("Cgroup Support Configuration:")
    assert out[at - 1] == "" and out[at + 1:at + 5] == [
        "CgroupPlugin            = cgroup/v2", "ConstrainCores          = no",
        "ConstrainDevices        = yes", "ConstrainRAMSpace       = yes"]


def test_fields_a_message_carries():
    """Node.alloc_shares reaches the CLIs (pbwire) as the controller fills it."""
    from pyslurm_lite.rpc import wire
    from pyslurm_lite._proto import types_pb2
    msg = wire.to_msg(gpu_node([0], [GpuShareUse(0, "shard", 3)]), types_pb2.Node)
    assert [(u.index, u.name, u.count) for u in msg.alloc_shares] == [(0, "shard", 3)]
