"""The pure parts of usage sampling: cgroup files, folding readings into a step's sample, the
simulated GPU file, foreign GPUs, a gatherer round over a fake tracker and GPU source, and
sstat's selection and spelling."""

from __future__ import annotations

import types

import pytest

from pyslurm_lite.agent import acctgather as ag
from pyslurm_lite.agent.cgroup import parse_cpu_stat_v2, parse_cpuacct_stat_v1
from pyslurm_lite.agent.gpu import GpuSample, NvmlSource, parse_sim
from pyslurm_lite.cli import sstat
from pyslurm_lite.model import Job, JobSpec, JobState, NodeAllocation, Step, UsageSample

MIB = 1024 * 1024


@pytest.mark.parametrize("text, want", [
    ("usage_usec 3500000\nuser_usec 3000000\nsystem_usec 500000\nnr_periods 0\n", (3.0, 0.5)),
    ("usage_usec 10\n", None),
    ("", None),
])
def test_cgroup_v2_cpu_stat(text, want):
    assert parse_cpu_stat_v2(text) == want


@pytest.mark.parametrize("text, hz, want", [
    ("user 250\nsystem 50\n", 100, (2.5, 0.5)),
    ("user 1000\nsystem 0\n", 1000, (1.0, 0.0)),
    ("garbage\n", 100, None),
])
def test_cgroup_v1_cpuacct_stat(text, hz, want):
    assert parse_cpuacct_stat_v1(text, hz) == want


def test_readings_fold_into_peaks_means_and_cpu_that_never_goes_back():
    s = UsageSample(step="batch")
    for rss, user, util in ((0, 1.0, 0.0), (200 * MIB, 2.0, 50.0), (100 * MIB, 1.5, 100.0)):
        s = ag.fold(s, ag.Reading(user_cpu=user, rss=rss, gpu_util=util, gpu_mem=MIB), 10.0)
    assert (s.samples, s.rss, s.max_rss) == (3, 100 * MIB, 200 * MIB)
    assert s.ave_rss == pytest.approx(100 * MIB)
    assert s.user_cpu == 2.0  # a reading lower than the last one does not lower it
    assert (s.gpu_util, s.max_gpu_util, s.ave_gpu_util, s.max_gpu_mem) == (100.0, 100.0, 50.0, MIB)


def test_wait4_figures_raise_the_final_sample_never_lower_it():
    s = UsageSample(step="batch", user_cpu=2.0, system_cpu=0.1, max_rss=10 * MIB)
    ru = types.SimpleNamespace(ru_utime=3.0, ru_stime=0.05, ru_maxrss=50 * 1024)  # KiB
    out = ag.with_rusage(s, ru)
    assert (out.user_cpu, out.system_cpu, out.max_rss) == (3.0, 0.1, 50 * MIB)
    assert ag.with_rusage(s, None) is s


@pytest.mark.parametrize("words, want", [
    ([], GpuSample(0)),
    (["85"], GpuSample(0, 85.0)),
    (["85", "2048"], GpuSample(0, 85.0, 2048 * MIB)),
    (["150", "1", "42", "43"], GpuSample(0, 100.0, MIB, [42, 43])),
    (["busy"], GpuSample(0)),
])
def test_simulated_gpu_file(words, want):
    assert parse_sim(0, words) == want


def test_gpus_with_processes_of_no_step_are_foreign():
    gpus = {0: GpuSample(0, 10, 5, [100, 200]), 1: GpuSample(1, 0, 0, [100]), 2: GpuSample(2)}
    found = ag.foreign_gpus(gpus, ours={100}, exists=lambda pid: True)
    assert [(f.index, f.pids, f.memory) for f in found] == [(0, [200], 5)]
    # a PID this agent cannot see (another PID namespace's) is nobody it can tell
    assert ag.foreign_gpus(gpus, ours={100}, exists=lambda pid: pid != 200) == []


def test_process_figures_sum_live_processes_and_their_reaped_children():
    import os
    import subprocess
    subprocess.run(["python3", "-c", "t = sum(range(3_000_000))"], check=True)  # a reaped child
    before = os.times()
    user, system, rss = ag.process_figures([os.getpid(), 999_999_999])  # the second is gone
    assert user >= before.user + before.children_user - 0.05 and before.children_user > 0
    assert rss > 10 * MIB


class FakeTracker:
    def __init__(self, pids, cpu):
        self._pids, self._cpu = pids, cpu

    def step_pids(self, key, step, leaders):
        return self._pids

    def step_cpu(self, key, step):
        return self._cpu


class FakeGpus:
    def sample(self):
        return [GpuSample(0, 30.0, 4 * MIB, []), GpuSample(1, 90.0, 2 * MIB, [1])]


def test_a_round_samples_each_step_and_finish_delivers_the_last_one_once():
    target = ag.Target(7, 0, "batch", leaders=[], gpus=[0, 1], tasks=1, start=1.0)
    g = ag.Gatherer("node1", FakeTracker([], (4.0, 1.0)), FakeGpus(), lambda: [target], 1,
                    clock=lambda: 5.0)
    g.run_once(2.0)
    (s,) = g.latest()
    assert (s.job_id, s.step, s.node, s.user_cpu, s.system_cpu) == (7, "batch", "node1", 4.0, 1.0)
    assert (s.gpus, s.gpu_util, s.gpu_mem) == (2, 60.0, 6 * MIB)
    assert [f.index for f in g.foreign] == [1]  # pid 1 is no step's here
    assert g.latest(since=2.0) == []  # nothing newer than what the last heartbeat took
    final = g.finish(target)
    assert final.samples == 1 and g.latest() == [] and g.take_finals() == [final]
    g.run_once(3.0)  # a round that listed the step before it ended records nothing
    assert g.latest() == [] and g.take_finals() == []


def test_the_final_sample_keeps_the_cgroups_cpu_of_processes_already_gone():
    target = ag.Target(7, 0, "0", leaders=[], gpus=[], tasks=1)
    tracker = FakeTracker([os_pid()], (1.0, 0.0))
    g = ag.Gatherer("node1", tracker, None, lambda: [target], 1, clock=lambda: 5.0)
    g.run_once(2.0)
    tracker._pids, tracker._cpu = [], (3.0, 0.5)  # the tasks exited, the cgroup counted on
    final = g.finish(target)
    assert (final.user_cpu, final.system_cpu, final.samples) == (3.0, 0.5, 1)
    assert final.rss > 0  # the last RSS seen, not the 0 of processes gone


def os_pid() -> int:
    import os
    return os.getpid()


def test_a_failing_source_is_logged_once_and_never_raised(caplog):
    def broken():
        raise OSError("no such device")
    g = ag.Gatherer("node1", FakeTracker([], None), types.SimpleNamespace(sample=broken),
                    lambda: [], 1)
    g.run_once(1.0)
    g.run_once(2.0)
    assert sum("no such device" in r.message for r in caplog.records) == 1


def test_nvml_sample_reads_utilization_memory_and_processes():
    proc = types.SimpleNamespace
    nv = types.SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUtilizationRates=lambda h: proc(gpu=42, memory=10),
        nvmlDeviceGetMemoryInfo=lambda h: proc(used=3 * MIB, total=8 * MIB),
        nvmlDeviceGetComputeRunningProcesses=lambda h: [proc(pid=11)],
        nvmlDeviceGetGraphicsRunningProcesses=lambda h: [proc(pid=11), proc(pid=12)])
    assert NvmlSource(nv).sample() == [GpuSample(0, 42.0, 3 * MIB, [11, 12])]


# ---- sstat ------------------------------------------------------------------------------------
def _job(state=JobState.RUNNING, steps=(), usage=()):
    return Job(job_id=5, spec=JobSpec(batch=True), state=state, restart_count=0,
               allocations=[NodeAllocation("node1", 1, 100, [])],
               steps=[Step(step_id=i, state=JobState.RUNNING, nodes=["node1"]) for i in steps],
               usage=list(usage))


@pytest.mark.parametrize("steps, asked, all_steps, want", [
    ((), None, False, ([], "")),  # batch only: the lowest srun step is none, and no error
    ((), None, True, (["batch"], "")),
    ((0, 1), None, False, (["0"], "")),
    ((1, 0), None, True, (["batch", "0", "1"], "")),
    ((0,), "batch", False, (["batch"], "")),
    ((0,), "3", False, ([], "StepId=5.3 not found running.")),
])
def test_sstat_picks_steps_as_slurm(steps, asked, all_steps, want):
    assert sstat.chosen(_job(steps=steps), asked, all_steps) == want


def test_sstat_says_when_nothing_runs():
    assert sstat.chosen(_job(JobState.COMPLETED), None, False) == ([], "No steps running for job 5")


@pytest.mark.parametrize("num, want", [
    (0, "0"), (512, "512"), (209715200, "200M"), (209977344, "200.25M"), (3 * 1024 ** 3, "3G"),
])
def test_sstat_sizes_convert_aggressively(num, want):
    assert sstat.convert(num) == want


def test_sstat_values_of_a_sampled_step():
    u = UsageSample(step="batch", node="node1", user_cpu=61.0, system_cpu=4.0, rss=100 * MIB,
                    max_rss=200 * MIB, ave_rss=150 * MIB, samples=3, tasks=1, gpus=1,
                    gpu_util=20.0, ave_gpu_util=30.0, max_gpu_util=70.0, gpu_mem=MIB,
                    max_gpu_mem=2 * MIB)
    fields = [(f, 0) for f in ("JobID", "MaxRSS", "MaxRSSNode", "AveRSS", "AveCPU", "NTasks",
                               "TRESUsageInMax", "MaxVMSize", "MaxDiskReadNode")]
    assert sstat.values(_job(usage=[u]), "batch", fields) == [
        "5.batch", "200M", "node1", "150M", "00:01:05", "1",
        "cpu=00:01:05,gres/gpumem=2M,gres/gpuutil=70,mem=200M", "0", ""]


def test_sstat_field_names_match_by_prefix_and_unknown_ones_fail(capsys):
    ns = sstat.build_parser().parse_args(["-o", "jobid,maxrss%20,tresusageinmax", "-j", "1"])
    assert sstat.parse_fields(ns) == [("JobID", -12), ("MaxRSS", 20), ("TRESUsageInMax", 14)]
    ns = sstat.build_parser().parse_args(["-o", "nosuch", "-j", "1"])
    with pytest.raises(SystemExit):
        sstat.parse_fields(ns)
    assert 'Invalid field requested: "nosuch"' in capsys.readouterr().err
