"""srun --mpi=pmi2: the agents' PMI server (agent/pmi.py) and srun as the root of its fences, on
a 2-node loopback cluster (slurm.conf: MpiDefault=pmi2). Tasks here are small Python PMI-1 and
PMI-2 clients speaking the wire protocol over PMI_FD, as MPICH's libraries do; then MPICH itself
through mpi4py (skipped, with the reason, where MPICH or an MPICH-built mpi4py is missing).
"""

from __future__ import annotations

import re
import sys

import pytest

from conftest import configured_cluster
from mpi_support import require

# ranks 0,1 on node1 and 2,3 on node2: each puts a key, fences, reads its neighbour's (put on
# the other node for ranks 1 and 3), then again for a second fence; prints what it saw
PMI1_CLIENT = r"""
import os, socket, sys
s = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = s.makefile("rb")
rank, size = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
def cmd(line):
    s.sendall(line.encode() + b"\n")
    return dict(t.split("=", 1) for t in f.readline().decode().split())
assert cmd("cmd=init pmi_version=1 pmi_subversion=1")["rc"] == "0"
kvs = cmd("cmd=get_my_kvsname")["kvsname"]
cmd(f"cmd=put kvsname={kvs} key=card{rank} value=host{rank}")
assert cmd("cmd=barrier_in")["cmd"] == "barrier_out"
first = cmd(f"cmd=get kvsname={kvs} key=card{(rank + 1) % size}")["value"]
cmd(f"cmd=put kvsname={kvs} key=again{rank} value=r{rank}")
cmd("cmd=barrier_in")
second = cmd(f"cmd=get kvsname={kvs} key=again{(rank - 1) % size}")["value"]
mapping = cmd(f"cmd=get kvsname={kvs} key=PMI_process_mapping")["value"]
if sys.argv[1:] == ["abort"] and rank == 1:
    s.sendall(b"cmd=abort exitcode=7\n")
    sys.exit(7)
if sys.argv[1:] == ["vanish"] and rank == 2:
    os._exit(0)  # no finalize: the others would wait at the next fence for ever
if sys.argv[1:]:
    cmd("cmd=barrier_in")
assert cmd("cmd=finalize")["cmd"] == "finalize_ack"
print(rank, size, os.environ["PMI_JOBID"], kvs, first, second, mapping,
      os.environ["SLURM_MPI_TYPE"], "SLURM_PMI2_PROC_MAPPING" in os.environ, flush=True)
"""

PMI2_CLIENT = r"""
import os, socket
s = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = s.makefile("rb")
def send(**kv):
    body = "".join(f"{k.replace('_', '-')}={str(v).replace(';', ';;')};" for k, v in kv.items())
    s.sendall(f"{len(body):<6d}".encode() + body.encode())
def read():
    body, out, i = f.read(int(f.read(6))).decode(), {}, 0
    for part in body.replace(";;", "\0").split(";"):
        if part:
            k, _, v = part.partition("=")
            out[k] = v.replace("\0", ";")
    return out
def cmd(**kv):
    send(**kv)
    return read()
s.sendall(b"cmd=init pmi_version=2 pmi_subversion=0\n")
assert f.readline().split()[1:2] == [b"rc=0"]
init = cmd(cmd="fullinit", pmirank=0, threaded="FALSE")  # the claimed rank is not believed
rank, size = int(init["rank"]), int(init["size"])
jobid = cmd(cmd="job-getid")["jobid"]
mapping = cmd(cmd="info-getjobattr", key="PMI_process_mapping")["value"]
cmd(cmd="kvs-put", key=f"card{rank}", value=f"h;{rank}")
assert cmd(cmd="kvs-fence")["cmd"] == "kvs-fence-response"
other = cmd(cmd="kvs-get", jobid=jobid, srcid=-1, key=f"card{(rank + 2) % size}")["value"]
assert cmd(cmd="finalize")["cmd"] == "finalize-response"
print(rank, os.environ["PMI_RANK"], size, jobid, mapping, other, flush=True)
"""

MPI4PY = ("from mpi4py import MPI; c = MPI.COMM_WORLD; "
          "print(c.rank, c.size, c.allreduce(c.rank), flush=True)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from configured_cluster(tmp_path_factory, "pmi2", (2, 2, 2000, 0),
                                  extra="MpiDefault=pmi2\n")


def _lines(out: str) -> dict[int, list[str]]:
    """srun -l's lines by task id."""
    rows = {}
    for line in out.splitlines():
        task, _, rest = line.partition(": ")
        rows[int(task)] = rest.split()
    return rows


def test_pmi1_put_fence_get_across_nodes(cluster, tmp_path):
    script = tmp_path / "pmi1.py"
    script.write_text(PMI1_CLIENT)
    r = cluster.run(["srun", "-l", "-N2", "-n4", "--mpi=pmi2", sys.executable, script],
                    cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tails()
    rows = _lines(r.stdout)
    assert sorted(rows) == [0, 1, 2, 3], r.stdout
    jobid = rows[0][2]
    for rank, row in rows.items():
        assert row == [str(rank), "4", jobid, jobid, f"host{(rank + 1) % 4}", f"r{(rank - 1) % 4}",
                       "(vector,(0,2,2))", "pmi2", "False"], row
    assert re.fullmatch(r"\d+\.\d+", jobid), jobid  # job.step, as Slurm's pmi_jobid


def test_pmi2_wire_across_nodes_with_the_started_rank(cluster, tmp_path):
    script = tmp_path / "pmi2.py"
    script.write_text(PMI2_CLIENT)
    # MpiDefault=pmi2: no --mpi needed
    r = cluster.run(["srun", "-l", "-N2", "-n4", sys.executable, script], cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tails()
    rows = _lines(r.stdout)
    for rank, row in rows.items():
        assert row[:3] == [str(rank), str(rank), "4"], row
        assert row[4:] == ["(vector,(0,2,2))", f"h;{(rank + 2) % 4}"], row
    assert sorted(rows) == [0, 1, 2, 3]


def test_mpi_none_starts_no_server(cluster, tmp_path):
    # --mpi=none wins over MpiDefault and over a SLURM_MPI_TYPE inherited from a pmi2 task
    r = cluster.run(["srun", "--mpi=none", "-n1", "env"], cwd=tmp_path,
                    env={"SLURM_MPI_TYPE": "pmi2"})
    assert r.returncode == 0, r.stderr
    assert "PMI_FD=" not in r.stdout and "SLURM_MPI_TYPE" not in r.stdout
    r = cluster.run(["srun", "-n1", "env"], cwd=tmp_path)  # MpiDefault=pmi2
    assert "PMI_RANK=0" in r.stdout and "SLURM_MPI_TYPE=pmi2" in r.stdout, r.stdout


def test_mpi_list(cluster):
    r = cluster.run(["srun", "--mpi=list"])
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == "MPI plugin types are...\n\tnone\n\tpmi2\n"


def test_unknown_mpi_type_is_refused_before_anything_runs(cluster, tmp_path):
    marker = tmp_path / "ran"
    r = cluster.run(["srun", "--mpi=pmix", "touch", marker], cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr == (
        "srun: error: Couldn't find the specified plugin name for mpi/pmix looking at all files\n"
        "srun: error: cannot find mpi plugin for mpi/pmix\n"
        "srun: error: MPI: Cannot create context for mpi/pmix\n"
        "srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types\n")
    assert not marker.exists()


def test_abort_ends_the_step_with_its_exit_code(cluster, tmp_path):
    script = tmp_path / "pmi1.py"
    script.write_text(PMI1_CLIENT)
    r = cluster.run(["srun", "-N2", "-n4", "--mpi=pmi2", sys.executable, script, "abort"],
                    cwd=tmp_path, timeout=60)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "task 1: PMI abort; terminating StepId=" in r.stderr, r.stderr


def test_task_gone_without_finalize_ends_the_step(cluster, tmp_path):
    script = tmp_path / "pmi1.py"
    script.write_text(PMI1_CLIENT)
    r = cluster.run(["srun", "-N2", "-n4", "--mpi=pmi2", sys.executable, script, "vanish"],
                    cwd=tmp_path, timeout=60)
    assert r.returncode != 0
    assert "task 2: exited without calling PMI finalize; terminating" in r.stderr, r.stderr


def test_mpich_allreduce_with_srun_mpi_pmi2(cluster, tmp_path):
    kit = require("MPICH")
    r = cluster.run(["srun", "-l", "-N2", "-n4", "--mpi=pmi2", kit.python, "-c", MPI4PY],
                    cwd=tmp_path, timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tails()
    assert _lines(r.stdout) == {t: [str(t), "4", "6"] for t in range(4)}, r.stdout + r.stderr


def test_mpich_abort_ends_the_step_with_its_code(cluster, tmp_path):
    kit = require("MPICH")
    code = ("from mpi4py import MPI; c = MPI.COMM_WORLD\n"
            "if c.rank == 3: c.Abort(5)\n"
            "c.Barrier(); c.Barrier()")
    r = cluster.run(["srun", "-N2", "-n4", "--mpi=pmi2", kit.python, "-c", code], cwd=tmp_path,
                    timeout=90)
    assert r.returncode == 5, r.stdout + r.stderr
    assert "task 3: PMI abort; terminating" in r.stderr, r.stderr
