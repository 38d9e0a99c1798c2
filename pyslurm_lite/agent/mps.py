"""gres/shard and gres/mps on the agent: the variables a sharing job gets, and the CUDA MPS
control daemon of each GPU that jobs using gres/mps run on.

The scheduler (sched/sharing.py) puts a sharing job on one GPU per node and names it in the
allocation's GPUs, so the devices cgroup lets it through and CUDA_VISIBLE_DEVICES names it as
for any GPU job. Beside that, as Slurm's gres/shard and gres/mps plugins set them:

    --gres=shard:3                  SLURM_SHARDS_ON_NODE=3
    --gres=mps:50, Gres=gpu:2,mps:200 (100 per GPU)
                                    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 (50 * 100 / 100, at
                                    least 1)
SLURM_JOB_GPUS still names the GPU (gres_common_gpu_set_env), but there is no
SLURM_GPUS_ON_NODE: the job holds no gres/gpu. With an MPS daemon of ours running for its GPU
and the job fenced to that GPU, CUDA_VISIBLE_DEVICES is 0, as Slurm sets it: the server sees
that one GPU only, and numbers devices for its clients (mps_view). Otherwise the job keeps the
CUDA_VISIBLE_DEVICES of any GPU job and the agent logs why.

MPS daemons (MpsControl): when slurm.conf names the control program (MpsControlProgram=, ours:
Slurm leaves this to prolog scripts), the first job using gres/mps on a GPU starts
`nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES=that GPU (its UUID when NVML gave one;
else its index, counted in PCI bus order as NVML counts, not in CUDA's default fastest-first
order) and a pipe and log directory of its own under the agent's spool; the job gets
CUDA_MPS_PIPE_DIRECTORY. When the last such job on that GPU ends, `echo quit |
nvidia-cuda-mps-control` stops it. No program there, or it fails: a warning, the job runs
without MPS. One control daemon serves one user at a time (a second user's clients would wait
for the first's to end): an mps job of another user on a GPU whose daemon serves running jobs
is refused at launch (MpsBusy).
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading

from ..config import Config
from ..model import GpuDevice, GresRequest, Job

log = logging.getLogger("pyslurm_lite.agent.mps")

SHARING = ("shard", "mps")  # as sched/sharing.py (the agent does not import the scheduler)
MPS_DIR = "mps"  # under the agent's spool: <gpu>/pipe and <gpu>/log per GPU
CONTROL_TIMEOUT = 10.0  # seconds a control command may take before it is given up on


def share_request(gres: list[GresRequest]) -> tuple[str, int]:
    """('mps', 50) for --gres=mps:50; ('', 0) when the job shares no GPU."""
    for g in gres:
        if g.name in SHARING:
            return g.name, g.count
    return "", 0


def per_gpu_count(cfg: Config, node: str, name: str) -> int:
    """How many of `name` (shard, mps) each GPU of the node has: Gres= spread evenly (the
    lowest, for a count that does not divide: what every GPU has at least)."""
    conf = cfg.nodes.get(node)
    if conf is None or not conf.gpu_count():
        return 0
    return sum(g.count for g in conf.gres if g.name == name) // conf.gpu_count()


def pipe_dir(spool: str, gpu: int) -> str:
    return os.path.join(spool, MPS_DIR, str(gpu), "pipe")


def share_environment(env: dict[str, str], job: Job, cfg: Config, node: str) -> None:
    """Set (in env) what a shard or mps job sees, and drop the gres/gpu count it must not."""
    name, count = share_request(job.spec.gres)
    if not name:
        return
    env.pop("SLURM_GPUS_ON_NODE", None)
    if name == "shard":
        env["SLURM_SHARDS_ON_NODE"] = str(count)
        return
    per_gpu = per_gpu_count(cfg, node, "mps")
    if per_gpu:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(max(count * 100 // per_gpu, 1))


def mps_view(pipe: str) -> dict[str, str]:
    """What an mps job sees once its GPU's MPS daemon runs and the job is fenced to that GPU."""
    return {"CUDA_MPS_PIPE_DIRECTORY": pipe, "CUDA_VISIBLE_DEVICES": "0",
            "GPU_DEVICE_ORDINAL": "0"}


class MpsBusy(RuntimeError):
    """The GPU's MPS control daemon serves another user's running jobs."""


class MpsControl:
    """One MPS control daemon per GPU while jobs using gres/mps run on it."""

    def __init__(self, program: str, spool: str, devices: list[GpuDevice] | None = None):
        self.program = program  # from slurm.conf (root's file): trusted
        self.spool = spool
        self.uuids = {g.index: g.uuid for g in devices or [] if g.uuid}  # real GPUs' (NVML)
        self.users: dict[int, set[int]] = {}  # GPU index -> ids of the mps jobs on it
        self.owner: dict[int, int] = {}  # GPU index -> the uid its daemon serves
        self.running: set[int] = set()  # GPUs whose daemon started (its program exited 0)
        self.lock = threading.Lock()
        self._warned = False

    def job_started(self, job: Job, node: str) -> None:
        """A job started here: if it uses gres/mps, its GPU's daemon runs (started if need be).
        MpsBusy, with nothing changed, when a GPU's daemon serves another user's jobs."""
        name, _ = share_request(job.spec.gres)
        here = next((a for a in job.allocations if a.node == node), None)
        if name != "mps" or here is None or not self.program:
            return
        uid = job.spec.uid
        with self.lock:
            for gpu in here.gpus:
                if self.users.get(gpu) and self.owner.get(gpu, uid) != uid:
                    raise MpsBusy(f"the MPS control daemon of GPU {gpu} serves the running jobs "
                                  f"of uid {self.owner[gpu]}; one daemon serves one user at a "
                                  f"time: job {job.job_id} (uid {uid}) cannot use MPS there now")
            for gpu in here.gpus:
                if not self.users.get(gpu):
                    self.owner[gpu] = uid
                    if self._start(gpu):
                        self.running.add(gpu)
                self.users.setdefault(gpu, set()).add(job.job_id)

    def ready(self, gpu: int) -> bool:
        """Is the daemon of this GPU running (so its pipe directory leads somewhere)?"""
        with self.lock:
            return gpu in self.running

    def job_ended(self, job_id: int) -> None:
        """A job ended here: the daemons of the GPUs no mps job uses any more stop."""
        with self.lock:
            for gpu, jobs in list(self.users.items()):
                if job_id in jobs:
                    jobs.discard(job_id)
                    if not jobs:
                        del self.users[gpu]
                        self.owner.pop(gpu, None)
                        if gpu in self.running:
                            self.running.discard(gpu)
                            self._stop(gpu)

    def _env(self, gpu: int) -> dict[str, str]:
        base = os.path.join(self.spool, MPS_DIR, str(gpu))
        for sub in ("pipe", "log"):
            os.makedirs(os.path.join(base, sub), mode=0o755, exist_ok=True)
        # the daemon runs outside any job's cgroup and sees every GPU: name ours unambiguously
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "CUDA_VISIBLE_DEVICES": self.uuids.get(gpu, str(gpu)),
                "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                "CUDA_MPS_PIPE_DIRECTORY": os.path.join(base, "pipe"),
                "CUDA_MPS_LOG_DIRECTORY": os.path.join(base, "log")}

    def _start(self, gpu: int) -> bool:
        return self._run(gpu, ["-d"], None, "start")

    def _stop(self, gpu: int) -> None:
        self._run(gpu, [], b"quit\n", "stop")

    def _run(self, gpu: int, args: list[str], stdin: bytes | None, what: str) -> bool:
        try:
            done = subprocess.run([self.program, *args], input=stdin, env=self._env(gpu),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=CONTROL_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError) as e:
            if not self._warned or what == "stop":
                log.warning("cannot %s the MPS control daemon of GPU %d with %s: %s; jobs run "
                            "without MPS", what, gpu, self.program, e)
                self._warned = True
            return False
        if done.returncode:
            log.warning("%s: %s of the MPS control daemon of GPU %d exited %d: %s", self.program,
                        what, gpu, done.returncode, done.stderr.decode(errors="replace")[:200])
        return done.returncode == 0
