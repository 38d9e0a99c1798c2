"""MPI across two real network hosts (network namespaces, each with its own address, see
netns_cluster.py): an mpi4py allreduce over 2 nodes x 2 tasks, for both MPI implementations and
each way Slurm users start them:

    MPICH     srun --mpi=pmi2 (the agent's PMI-2 server wires the ranks up, no mpirun)
    MPICH     mpiexec.mpich inside sbatch (hydra starts hydra_pmi_proxy on each node via srun)
    Open MPI  mpirun inside sbatch (plm/slurm starts orted on each node via srun)

Open MPI started by srun alone is not tested: Debian's Open MPI (4.1) has no PMI-1/PMI-2
component (ompi_info: pmix ext3x, isolated, flux only), so with Slurm too it needs --mpi=pmix.

Every rank prints its rank, the size, the allreduce of the ranks, its host's name and the
address its namespace reaches the controller from: ranks 0-1 must be on node1 (host 1's address),
2-3 on node2. The hosts have names of their own (NetnsCluster's own_hosts), as MPI needs: it
names its session files and shared-memory segments after the hostname, and its remote daemons
call back to the launching host by name. (SLURMD_NODENAME would not do: mpiexec.mpich passes
its own environment to every rank, as on Slurm.)
"""

from __future__ import annotations

import re
import time

import pytest

from mpi_support import find, require
from netns_cluster import NetnsCluster, available

pytestmark = pytest.mark.root

# Our own namespaces, subnet, port and cluster name, apart from test_ddp_netns's, so the two
# modules may run at the same time.
PREFIX, SUBNET, PORT = "pmpi", "10.213.9", 16911

PROBE = """
import os, socket, sys
from mpi4py import MPI
c = MPI.COMM_WORLD
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[1], 9))  # no packet: only picks the route, so the source address of this host
line = f"R {c.rank} {c.size} {c.allreduce(c.rank)} {socket.gethostname()} {s.getsockname()[0]}\\n"
os.write(1, line.encode())  # one write: ranks' lines cannot interleave mid-line in the output
"""
# Open MPI refuses to run as root unless told twice (the tests run as root, to make namespaces)
OMPI_AS_ROOT = "export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n"


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    why = available(PREFIX)
    if why:
        pytest.skip(why)
    missing = [why for _, why in map(find, ("MPICH", "Open MPI")) if why]
    if len(missing) == 2:  # not a cluster for nothing
        pytest.skip("; ".join(missing))
    c = NetnsCluster(tmp_path_factory.mktemp("mpinet"), cpus=2, gpus=0, prefix=PREFIX,
                     subnet=SUBNET, port=PORT, cluster="mpinets", own_hosts=True)
    try:
        c.start_controller()
        for i in (1, 2):
            c.start_agent(i)
        c.wait_nodes(2)
        yield c
    finally:
        c.stop()


@pytest.fixture
def probe(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return path


RANK_LINE = re.compile(r"\bR (\d+) (\d+) (\d+) (\S+) (\d+\.\d+\.\d+\.\d+)\b")


def _expected(hosts: NetnsCluster) -> list[list[str]]:
    node_of = {0: 1, 1: 1, 2: 2, 3: 2}  # block distribution: two ranks per node, in order
    return [[str(r), "4", "6", f"node{n}", hosts.addrs[n - 1]] for r, n in node_of.items()]


def _ranks(out: str) -> list[list[str]]:
    # the rank lines wherever they stand (a launcher's own words may precede one on its line:
    # CI once read "R R 3 4 6 node2 ...")
    return sorted((list(m) for m in RANK_LINE.findall(out)), key=lambda row: int(row[0]))


def _batch(hosts: NetnsCluster, tmp_path, body: str, timeout: float = 90) -> str:
    """Run body as an sbatch -N2 -n4 script; its output once it has COMPLETED."""
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n" + body)
    r = hosts.run(["sbatch", "--parsable", "-N2", "-n4", "-o", str(tmp_path / "out-%j"), str(script)],
                  cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    job_id = int(r.stdout.strip().split(";")[0])
    state = _wait(hosts, job_id, timeout)
    out_file = tmp_path / f"out-{job_id}"
    out = out_file.read_text() if out_file.exists() else ""
    assert state == "COMPLETED", f"{state}\n{out}\n{hosts.logs()}"
    return out


def _wait(hosts: NetnsCluster, job_id: int, timeout: float) -> str:
    deadline, state = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        state = hosts.run(["sacct", "-n", "-X", "-j", str(job_id), "-o", "State"]).stdout.strip()
        if state and state.split()[0] not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"):
            return state.split()[0]
        time.sleep(0.3)
    return state or "unknown"


def test_mpich_direct_launch_with_srun_mpi_pmi2(hosts, probe):
    kit = require("MPICH")
    r = hosts.run(["srun", "-N2", "-n4", "--mpi=pmi2", kit.python, str(probe), f"{SUBNET}.1"],
                  timeout=90)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{hosts.logs()}"
    assert _ranks(r.stdout) == _expected(hosts), r.stdout + r.stderr


def test_mpich_mpiexec_inside_sbatch(hosts, probe, tmp_path):
    kit = require("MPICH")
    # no -n and no host list: hydra takes both from the allocation (SLURM_JOB_NODELIST,
    # SLURM_TASKS_PER_NODE) and starts its proxies with our srun
    out = _batch(hosts, tmp_path, f"{kit.launcher} {kit.python} {probe} {SUBNET}.1\n")
    assert _ranks(out) == _expected(hosts), out


def test_openmpi_mpirun_inside_sbatch(hosts, probe, tmp_path):
    kit = require("Open MPI")
    out = _batch(hosts, tmp_path, OMPI_AS_ROOT + f"{kit.launcher} {kit.python} {probe} {SUBNET}.1\n")
    assert _ranks(out) == _expected(hosts), out
