"""Where the MPI tests find their MPI: each implementation's launcher and a Python whose mpi4py
is built against it. .ci/run installs both when it runs as root; a test whose MPI is missing
skips, naming what is missing and how to install it.

    MPICH     mpiexec.mpich (hydra)   this venv's python: mpi4py built from source with
                                      MPICC=mpicc.mpich (PyPI's binary wheel wants libmpi.so.12,
                                      which Debian's MPICH names libmpich.so.12)
    Open MPI  mpirun.openmpi          /usr/bin/python3: Debian's python3-mpi4py (built against
                                      Open MPI)

The two cannot share one mpi4py: an mpi4py is compiled against one MPI library.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"
PROBE = "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])"


@dataclass(frozen=True)
class MpiKit:
    name: str       # "MPICH" or "Open MPI", as Get_library_version() begins
    launcher: str   # the implementation's own mpiexec/mpirun (absolute path)
    python: str     # an interpreter whose mpi4py is built against this implementation


@functools.lru_cache(maxsize=None)
def mpi4py_library(python: str) -> str:
    """The first line of MPI.Get_library_version() in that interpreter, or why none."""
    try:
        r = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"error: {e}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return f"error: {last}"
    return r.stdout.strip()


INSTALL = {
    "MPICH": ("mpiexec.mpich", sys.executable,
              "apt-get install mpich libmpich-dev, then .ci/mpi4py-mpich .venv/bin/python "
              "(compiles mpi4py against MPICH; .ci/run does both, as root)"),
    "Open MPI": ("mpirun.openmpi", SYSTEM_PYTHON,
                 "apt-get install openmpi-bin libopenmpi-dev python3-mpi4py (.ci/run does, as root)"),
}


def find_launcher(name: str) -> tuple[str | None, str]:
    """The path of "MPICH"'s or "Open MPI"'s own mpiexec, or None and why not."""
    launcher_name, _, how = INSTALL[name]
    launcher = shutil.which(launcher_name)
    if launcher is None:
        return None, f"{name} is not installed (no {launcher_name}): {how}"
    return launcher, ""


def require_launcher(name: str) -> str:
    launcher, why = find_launcher(name)
    if launcher is None:
        pytest.skip(why)
    return launcher


def find(name: str) -> tuple[MpiKit | None, str]:
    """The kit for "MPICH" or "Open MPI", or None and why not."""
    _, python, how = INSTALL[name]
    launcher, why = find_launcher(name)
    if launcher is None:
        return None, why
    library = mpi4py_library(python)
    if not library.startswith(name):
        return None, f"{python} has no mpi4py built against {name} ({library}): {how}"
    return MpiKit(name, launcher, python), ""


def require(name: str) -> MpiKit:
    kit, why = find(name)
    if kit is None:
        pytest.skip(why)
    return kit


# ---- building the MPICH mpi4py (H6): the acceptance check's way, with its wheel cache ----------
WHEELS_MPICH = "/tmp/acceptance-wheels-mpich"  # shared with shared/acceptance/10-gpus
BUILD_TIMEOUT = 900  # seconds: mpi4py's C extension takes minutes on two cores


def ensure_mpich_mpi4py(python: str = sys.executable) -> str:
    """Install an MPICH-built mpi4py into python's environment from the cached wheel, building
    that first when there is none. '' on success, else what went wrong. For .ci/run and people:
    the tests only look (require)."""
    import glob
    import os
    if mpi4py_library(python).startswith("MPICH"):
        return ""
    pip = [python, "-m", "pip"]
    if not glob.glob(os.path.join(WHEELS_MPICH, "mpi4py-*.whl")):
        os.makedirs(WHEELS_MPICH, exist_ok=True)
        r = subprocess.run([*pip, "wheel", "-q", "--no-deps", "--no-binary", "mpi4py", "-w",
                            WHEELS_MPICH, "mpi4py"], env={**os.environ, "MPICC": "mpicc.mpich"},
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        if r.returncode != 0:
            return f"building mpi4py against MPICH failed: {r.stderr[-300:]}"
    r = subprocess.run([*pip, "install", "-q", "--force-reinstall", "--no-deps", "--no-index",
                        "--find-links", WHEELS_MPICH, "mpi4py"], capture_output=True, text=True,
                       timeout=300)
    mpi4py_library.cache_clear()
    return "" if r.returncode == 0 else f"installing mpi4py failed: {r.stderr[-300:]}"
