"""IdleGPUAction=cancel end to end: real daemons, simulated GPUs made busy or idle through the
agent's simgpu files. An idle array task ends alone (its id may be the array's), and a run the
owner requeues is watched, flagged and acted on again."""

from __future__ import annotations

import os
import re
import time

import pytest

from conftest import configured_cluster

GPUS = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    extra = ("\nJobAcctGatherFrequency=1\nIdleGPUThreshold=5\nIdleGPUTime=2\n"
             "IdleGPUAction=cancel\n")
    yield from configured_cluster(tmp_path_factory, "idlecancel", (1, 4, 4000, GPUS), extra=extra)


def simgpu(cluster, index: int, util: int | None) -> None:
    """GPU index's utilization as the agent samples it (None: no file, so idle)."""
    path = cluster.dir / "state" / "agent-node1" / "simgpu" / str(index)
    if util is None:
        path.unlink(missing_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{util} 512")
        os.chmod(path, 0o644)


def show(cluster, name: str) -> str:
    return cluster.run(["scontrol", "show", "job", "-d", name]).stdout


def field(text: str, key: str) -> str:
    m = re.search(rf"\b{key}=(\S*)", text)
    return m.group(1) if m else ""


def wait_for(what, timeout: float = 25.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.3)
    return what()


def test_an_idle_array_task_ends_alone_and_its_next_run_is_flagged_again(cluster):
    for i in range(GPUS):
        simgpu(cluster, i, 70)  # every GPU busy to begin with
    try:
        array = cluster.sbatch("-o", "/dev/null", "--array=0-2", "--gres=gpu:1", "-c", "1",
                               "--mem=100", "--wrap", "sleep 120")
        tasks = [f"{array}_{i}" for i in range(3)]
        for t in tasks:
            assert wait_for(lambda: field(show(cluster, t), "JobState") == "RUNNING"), show(cluster, t)
        first = show(cluster, tasks[0])
        assert field(first, "JobId") == str(array)  # the first task holds the array's id
        idx = re.search(r"IDX:(\d+)", first).group(1)
        simgpu(cluster, int(idx), None)  # task 0's GPU goes idle; its siblings' stay busy
        text = wait_for(lambda: field(show(cluster, tasks[0]), "JobState") == "CANCELLED"
                        and show(cluster, tasks[0]))
        assert text and "AdminComment=IdleGPU: 1 GPU(s) under 5% for 2 s since " in text, text
        assert "(run 0)" in text, text
        assert [field(show(cluster, t), "JobState") for t in tasks[1:]] == ["RUNNING", "RUNNING"]

        # the owner puts it back: the new run is idle too, and is flagged and cancelled again
        r = cluster.run(["scontrol", "requeue", tasks[0]])
        assert r.returncode == 0, r.stderr
        again = wait_for(lambda: "(run 1)" in show(cluster, tasks[0]) and show(cluster, tasks[0]),
                         timeout=40)
        assert again and field(again, "JobState") == "CANCELLED", show(cluster, tasks[0])
        assert again.count("IdleGPU:") == 2, again
        assert [field(show(cluster, t), "JobState") for t in tasks[1:]] == ["RUNNING", "RUNNING"]
    finally:
        cluster.run(["scancel", str(array)])
        for i in range(GPUS):
            simgpu(cluster, i, None)
