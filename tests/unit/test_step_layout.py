"""rpc/credential.py: a step's task layout signed in its launch credential (compactly, whatever
the distribution) and the agent's check of srun's layout against it."""

from __future__ import annotations

import pytest

from pyslurm_lite.layout import distribute
from pyslurm_lite.rpc import credential
from pyslurm_lite.rpc.credential import Claims, CredentialError, NodeShare, check_layout

KEY = b"k" * 32


def _layout(ntasks: int, nnodes: int, distribution: str) -> dict[str, list[int]]:
    where = distribute(ntasks, nnodes, distribution)
    return {f"n{i}": [t for t, n in enumerate(where) if n == i] for i in range(nnodes)}


@pytest.mark.parametrize("ids, runs", [
    ([], []),
    ([5], [[5, 1, 0]]),
    ([0, 1, 2, 3], [[0, 4, 1]]),  # block
    ([1, 4, 7, 10], [[1, 4, 3]]),  # cyclic over 3 nodes
    ([0, 1, 4, 5, 8], [[0, 2, 1], [4, 2, 1], [8, 1, 0]]),  # plane=2
    ([9, 2, 2, 7], [[9, 2, -7], [2, 2, 5]]),  # arbitrary: any order, exact
])
def test_runs_round_trip(ids, runs):
    assert credential._runs(ids) == runs
    assert credential._ids(runs) == ids


@pytest.mark.parametrize("distribution", ["block", "cyclic", "plane=4"])
def test_a_big_step_layout_stays_small(distribution):
    tasks = _layout(4096, 8, distribution)
    runs = sum(len(credential._runs(ids)) for ids in tasks.values())
    assert runs <= (8 if distribution != "plane=4" else 1024)
    assert {n: credential._ids(credential._runs(ids)) for n, ids in tasks.items()} == tasks


def _claims(tasks) -> Claims:
    nodes = ["n0", "n1"]
    return Claims(job_id=7, step=0, restart_count=0, uid=1000, gid=1000, groups=[], user="u",
                  nodes=nodes, alloc={n: NodeShare(2, 100) for n in nodes}, tasks=tasks)


def test_the_layout_is_signed_and_read_back():
    tasks = {"n0": [0, 2], "n1": [1]}
    cred = credential.sign(lambda n: KEY, _claims(tasks), 60)
    assert credential.verify(cred, KEY, "n1").tasks == tasks
    batch = credential.sign(lambda n: KEY, _claims(None), 60)
    assert credential.verify(batch, KEY, "n0").tasks is None


def test_the_layout_cannot_be_changed_after_signing():
    import base64
    import json
    cred = credential.sign(lambda n: KEY, _claims({"n0": [0], "n1": [1]}), 60)
    _, body, macs = cred.split(".", 2)
    claims = json.loads(credential._unb64(body))
    claims["tasks"]["n0"] = [[0, 2**31 - 1, 1]]
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    with pytest.raises(CredentialError, match="invalid launch credential"):
        credential.verify(f"c1.{forged}.{macs}", KEY, "n0")


@pytest.mark.parametrize("tasks, nodes, counts, ids, ok", [
    ({"n0": [0, 1], "n1": [2]}, ["n0", "n1"], [2, 1], [0, 1], True),
    ({"n0": [0, 1], "n1": [2]}, ["n0", "n1"], [2, 2**31 - 1], [0, 1], False),  # PMI_SIZE
    ({"n0": [0, 1], "n1": [2]}, ["n0", "n1"], [3, 1], [0, 1], False),
    ({"n0": [0, 1], "n1": [2]}, ["n0", "n1"], [2, 1], [0, 2], False),  # another node's rank
    ({"n0": [0, 1], "n1": [2]}, ["n0", "n1"], [2, 1], [0, 1, 1], False),
    ({"n0": [0, 1], "n1": [2]}, ["n1", "n0"], [2, 1], [0, 1], False),
    ({"n0": [0, 1], "n1": [2]}, ["n0"], [2], [0, 1], False),
    (None, ["n0", "n1"], [2, 1], [0, 1], False),  # a step credential without a layout
])
def test_check_layout(tasks, nodes, counts, ids, ok):
    claims = _claims(tasks)
    if ok:
        check_layout(claims, "n0", nodes, counts, ids)
    else:
        with pytest.raises(CredentialError, match="layout"):
            check_layout(claims, "n0", nodes, counts, ids)


def test_sign_job_signs_each_node_of_the_step():
    from pyslurm_lite.model import Job, JobSpec, NodeAllocation
    job = Job(job_id=7, spec=JobSpec(uid=1000, gid=1000, user="u"),
              allocations=[NodeAllocation("n0", 2, 100), NodeAllocation("n1", 2, 100)])
    cred = credential.sign_job(lambda n: KEY, job, 0, ["n0", "n1"], 60,
                               tasks={"n0": [0, 1], "n1": [2]})
    assert credential.verify(cred, KEY, "n1").tasks == {"n0": [0, 1], "n1": [2]}
    assert credential.verify(credential.sign_job(lambda n: KEY, job, credential.BATCH, ["n0"], 60),
                             KEY, "n0").tasks is None
