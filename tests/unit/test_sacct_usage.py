"""sacct's usage fields (cli/acctusage.py, cli/acctfields.py) from jobs built with agents' samples:
Slurm 22.05's spellings (convert_num_unit, _elapsed_time), which line carries what, billing."""

from __future__ import annotations

import pytest

from factories import model_job
from pyslurm_lite.cli import acctfields as af
from pyslurm_lite.cli.acctusage import convert_num_unit, elapsed_time, secs2time_str
from pyslurm_lite.config import Config
from pyslurm_lite._proto import types_pb2
from pyslurm_lite.model import JobSpec, JobState, Partition, UsageSample
from pyslurm_lite.rpc import wire

MIB = 1 << 20


@pytest.mark.parametrize("num, want", [
    (0, "0"), (512, "512"), (1024, "1K"), (225280, "220K"),  # Slurm's reference: 220K
    (200 * MIB, "200M"), (200 * MIB + 256 * 1024, "205056K"), (1536 * MIB, "1.50G"),
    (4096 * 1024 * MIB, "4T"), (1000, "1000"), (1023 * 1024 + 512, "1023.50K"), (1023 * 1024 + 256, "1047808"),
])
def test_convert_num_unit_exact(num, want):
    assert convert_num_unit(num) == want


@pytest.mark.parametrize("seconds, want", [
    (0, "00:00:00"), (12.345, "00:12.345"), (12, "00:00:12"), (65.5, "01:05.500"),
    (3723.25, "01:02:03"), (86400 + 7, "1-00:00:07"), (0.0004, "00:00:00"),
])
def test_elapsed_time(seconds, want):
    assert elapsed_time(seconds) == want


def test_secs2time_str():
    assert (secs2time_str(61), secs2time_str(90061)) == ("00:01:01", "1-01:01:01")


def sample(step="batch", node="node1", tasks=1, **kw) -> UsageSample:
    return UsageSample(step=step, node=node, samples=5, tasks=tasks, **kw)


def finished_job(usage, *, nodes=("node1",), gpus=(), billing=0.0, **kw):
    job = model_job(12, nodes=nodes, gpus=gpus, **kw)
    job.state, job.end_time = JobState.COMPLETED, job.start_time + 20
    job.usage, job.billing = usage, billing
    return job


def lines(job, fields: str, cfg=None) -> dict[str, dict[str, str]]:
    """JobID -> {field: value} for the job's line and its steps' lines."""
    names = fields.split(",")
    steps = [None] + af.run_steps(job, job.spec, job.state.value)
    out = {}
    for step in steps:
        rec = af.Rec(job, job.spec, job.state.value, step, job.end_time, cfg or Config())
        out[af.job_id(rec)] = {n: af.value(n, rec) for n in names}
    return out


def test_batch_step_carries_rss_and_the_job_line_sums_cpu():
    job = finished_job([sample(max_rss=200 * MIB, ave_rss=150 * MIB, user_cpu=1.25, system_cpu=0.5)])
    got = lines(job, "MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,TotalCPU,UserCPU,SystemCPU,AveCPU,MaxVMSize")
    assert got["12.batch"] == {"MaxRSS": "200M", "MaxRSSNode": "node1", "MaxRSSTask": "0",
                               "AveRSS": "150M", "TotalCPU": "00:01.750", "UserCPU": "00:01.250",
                               "SystemCPU": "00:00.500", "AveCPU": "00:00:01", "MaxVMSize": ""}
    assert got["12"] == {"MaxRSS": "", "MaxRSSNode": "", "MaxRSSTask": "", "AveRSS": "",
                         "TotalCPU": "00:01.750", "UserCPU": "00:01.250", "SystemCPU": "00:00.500",
                         "AveCPU": "", "MaxVMSize": ""}


def test_job_line_sums_cpu_over_steps_and_an_unsampled_step_has_no_statistics():
    job = finished_job([sample(user_cpu=2), sample("0", user_cpu=3, system_cpu=1)])
    job.steps = []  # the batch step alone is listed; the job's totals count every sample
    got = lines(job, "TotalCPU,MaxRSS")
    assert got["12"] == {"TotalCPU": "00:00:06", "MaxRSS": ""}
    assert lines(finished_job([]), "TotalCPU,MaxRSS,TRESUsageInMax")["12.batch"] == \
        {"TotalCPU": "00:00:00", "MaxRSS": "", "TRESUsageInMax": ""}


def test_samples_of_an_earlier_run_are_not_this_runs():
    job = finished_job([sample(max_rss=300 * MIB)])
    job.restart_count = 1
    assert lines(job, "MaxRSS")["12.batch"]["MaxRSS"] == ""


def test_multi_node_step_statistics_name_node_and_task():
    job = finished_job([sample("batch", "node1", max_rss=MIB, user_cpu=4, tasks=2),
                        sample("batch", "node2", max_rss=3 * MIB, user_cpu=9, tasks=1)],
                       nodes=("node1", "node2"))
    step = af.StepRec("batch", "batch", "COMPLETED", 0, 0, job.start_time, job.end_time,
                      ["node1", "node2"], 3, 2)
    rec = af.Rec(job, job.spec, "COMPLETED", step, job.end_time, Config())
    got = {n: af.value(n, rec) for n in ("MaxRSSNode", "MaxRSSTask", "MinCPU", "MinCPUNode",
                                          "MinCPUTask", "AveCPU", "TRESUsageInTot")}
    assert got == {"MaxRSSNode": "node2", "MaxRSSTask": "2", "MinCPU": "00:00:02",
                   "MinCPUNode": "node1", "MinCPUTask": "0", "AveCPU": "00:00:04",
                   "TRESUsageInTot": "cpu=00:00:13,mem=4M"}


def test_tres_usage_strings_with_gpus():
    job = finished_job([sample(max_rss=200 * MIB, ave_rss=100 * MIB, user_cpu=61, gpus=2,
                               ave_gpu_util=37.5, max_gpu_util=90.0, max_gpu_mem=2048 * MIB)],
                       gpus=(0, 1))
    got = lines(job, "TRESUsageInAve,TRESUsageInMax,TRESUsageInTot")["12.batch"]
    assert got == {
        "TRESUsageInAve": "cpu=00:01:01,gres/gpumem=2G,gres/gpuutil=37,mem=100M",
        "TRESUsageInMax": "cpu=00:01:01,gres/gpumem=2G,gres/gpuutil=90,mem=200M",
        "TRESUsageInTot": "cpu=00:01:01,gres/gpumem=2G,gres/gpuutil=37,mem=200M"}


def test_alloc_and_req_tres_bill_under_the_partitions_weights():
    cfg = Config()
    cfg.partitions["main"] = Partition(name="main", nodes=["node1"],
                                       tres_billing_weights={"cpu": 1.0, "gres/gpu": 10.0})
    gpu_job = finished_job([], gpus=(0,), billing=11.0, mem_per_node=400)
    got = lines(gpu_job, "AllocTRES,ReqTRES,CPUTime,CPUTimeRAW", cfg)
    assert got["12"] == {"AllocTRES": "billing=11,cpu=1,gres/gpu=1,mem=1000M,node=1",
                         "ReqTRES": "billing=11,cpu=1,gres/gpu=1,mem=400M,node=1",
                         "CPUTime": "00:00:20", "CPUTimeRAW": "20"}
    assert got["12.batch"]["AllocTRES"] == "cpu=1,gres/gpu=1,mem=1000M,node=1"
    plain = lines(finished_job([]), "AllocTRES")["12"]["AllocTRES"]
    assert plain.startswith("billing=1,cpu=1,")  # no billing recorded: its CPUs, as Slurm


def test_admin_comment_is_on_the_job_line_only():
    job = finished_job([])
    job.admin_comment = "idle GPUs: 0% for 20 s"
    got = lines(job, "AdminComment")
    assert (got["12"]["AdminComment"], got["12.batch"]["AdminComment"]) == (job.admin_comment, "")


def test_history_of_a_running_job_has_its_live_samples_and_flag(tmp_path):
    from pyslurm_lite.controller import accounting
    from pyslurm_lite.controller.accounting import JobRun
    from pyslurm_lite.controller.state import ClusterState
    from pyslurm_lite.controller.store import Store
    store = Store(f"sqlite:///{tmp_path / 'state.db'}", clock=lambda: 150.0)
    try:
        state = ClusterState(Config(), store, lambda: 150.0)
        live = model_job(12)
        live.usage, live.admin_comment = [sample(max_rss=MIB)], "idle GPUs"
        state.jobs[12] = live
        ended = model_job(12)
        ended.job_id = 13
        # as the database last saw them: the stored messages, which the reply sends as they are
        recorded, ended = (wire.to_msg(j, types_pb2.Job) for j in (model_job(12), ended))
        runs = accounting.with_live_usage([JobRun(recorded, "RUNNING"), JobRun(ended, "COMPLETED")],
                                          state)
        assert [([wire.from_msg(u, UsageSample) for u in r.job.usage], r.job.admin_comment)
                for r in runs] == [([sample(max_rss=MIB)], "idle GPUs"), ([], "")]
    finally:
        store.close()


@pytest.mark.parametrize("changes", [
    {}, {"qos": "high", "account": "lab", "comment": "c", "constraint": "ib", "reservation": "r"},
    {"mem_per_cpu": 512, "cpus_per_task": 3}])
def test_a_line_from_the_message_alone_is_the_line_from_its_converted_spec(changes):
    """sacct's lines leave a run's JobSpec unconverted until a field needs more than its
    scalars (acctfields.Rec): every field prints the same either way."""
    job = model_job(12, gpus=(0, 1), **changes)
    job.state, job.end_time, job.exit_code = JobState.COMPLETED, 1_700_000_100.0, 3
    msg = wire.to_msg(job, types_pb2.Job)
    cfg = Config()
    for name in af.WIDTHS:
        lazy = af.Rec(msg, None, "COMPLETED", None, job.end_time, cfg)
        given = af.Rec(msg, wire.from_msg(msg.spec, JobSpec), "COMPLETED", None, job.end_time, cfg)
        assert (name, af.value(name, lazy)) == (name, af.value(name, given))
    untouched = af.Rec(msg, None, "COMPLETED", None, job.end_time, cfg)
    [af.value(n, untouched) for n in ("JobID", "State", "JobName", "Account", "User", "QOS")]
    assert untouched._spec is None  # nothing converted for these


def test_history_of_a_pending_job_has_its_live_reason(tmp_path):
    """A pending job's reason lives in memory between commits: sacct's stored message gets the
    current one (the reply sends that message as it is)."""
    from pyslurm_lite.controller import accounting
    from pyslurm_lite.controller.accounting import JobRun
    from pyslurm_lite.controller.state import ClusterState
    from pyslurm_lite.controller.store import Store
    from pyslurm_lite.model import Reason
    store = Store(f"sqlite:///{tmp_path / 'state.db'}", clock=lambda: 150.0)
    try:
        state = ClusterState(Config(), store, lambda: 150.0)
        live = model_job(12)
        live.state, live.reason = JobState.PENDING, Reason.RESOURCES
        state.jobs[12] = live
        recorded = wire.to_msg(model_job(12), types_pb2.Job)  # committed before the pass
        recorded.state, recorded.reason = "PENDING", "None"
        [run] = accounting.with_live_reasons([JobRun(recorded, "PENDING")], state)
        assert (run.job.reason, run.job.SerializeToString()) == \
            ("Resources", types_pb2.Job(**{**_fields(recorded), "reason": "Resources"}).SerializeToString())
    finally:
        store.close()


def _fields(msg) -> dict:
    return {f.name: v for f, v in msg.ListFields()}
