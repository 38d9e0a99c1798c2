"""The environment a batch script sees: the submitter's exported variables plus Slurm's.

Names and formats follow Slurm 22.05 (see shared/slurm-reference/env_sbatch.txt), plus the
PyTorch contract (MASTER_ADDR, MASTER_PORT, WORLD_SIZE ...) that distributed training reads.
"""

from __future__ import annotations

import grp
import pwd

from ..config import Config, collect
from ..model import GpuDevice, Job
from .gpu import visible_devices
from .mps import mps_view, share_environment


DEFAULT_UMASK = 0o022


def submitter_umask(environ: dict[str, str]) -> int:
    """The umask a job's processes get: SLURM_UMASK, which sbatch and srun set to the submitter's
    (as slurmstepd applies it), so a `umask 077` user's output files are theirs alone. Read
    whatever --export said, as Slurm does; anything but an octal mode 0..0777 gives 0022."""
    text = (environ.get("SLURM_UMASK") or "").strip()
    if text and len(text) <= 4 and all(c in "01234567" for c in text) and int(text, 8) <= 0o777:
        return int(text, 8)
    return DEFAULT_UMASK


def compress_counts(counts: list[int]) -> str:
    """Slurm's run-length form: [2, 2, 1] -> '2(x2),1'."""
    out, i = [], 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        out.append(f"{counts[i]}(x{j - i})" if j - i > 1 else str(counts[i]))
        i = j
    return ",".join(out)


def _name(getter, ident: int) -> str:
    try:
        return getter(ident)[0]
    except KeyError:
        return str(ident)


def batch_environment(job: Job, cfg: Config, node: str, node_addrs: dict[str, str],
                      gpu_env: dict[str, str] | None = None) -> dict[str, str]:
    spec = job.spec
    env = dict(spec.environment) if spec.export.upper() != "NONE" else {}
    names = job.node_names
    nodelist = collect(names)
    tasks = [spec.tasks_on_node(i) for i in range(len(names))]
    first_addr = node_addrs.get(names[0], names[0]) if names else ""
    here = next((a for a in job.allocations if a.node == node), None)
    env.update({
        "SLURM_JOB_ID": str(job.job_id), "SLURM_JOBID": str(job.job_id),
        "SLURM_JOB_NAME": spec.name, "SLURM_JOB_USER": spec.user or _name(pwd.getpwuid, spec.uid),
        "SLURM_JOB_UID": str(spec.uid), "SLURM_JOB_GID": str(spec.gid),
        "SLURM_JOB_PARTITION": job.partition,
        "SLURM_JOB_QOS": spec.qos or "normal",
        "SLURM_SUBMIT_DIR": spec.submit_dir or spec.work_dir,
        "SLURM_SUBMIT_HOST": spec.submit_host,
        "SLURM_JOB_NODELIST": nodelist, "SLURM_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": str(len(names)), "SLURM_NNODES": str(len(names)),
        "SLURM_NTASKS": str(spec.num_tasks), "SLURM_NPROCS": str(spec.num_tasks),
        "SLURM_TASKS_PER_NODE": compress_counts(tasks),
        "SLURM_JOB_CPUS_PER_NODE": compress_counts([a.cpus for a in job.allocations]),
        "SLURM_CPUS_ON_NODE": str(here.cpus if here else 1),
        "SLURMD_NODENAME": node, "SLURM_CLUSTER_NAME": cfg.cluster_name,
        "SLURM_CONF": cfg.path, "SLURM_NODEID": "0", "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
        "SLURM_GTIDS": "0", **topology_environment(cfg, node),
        "SLURM_WORKING_CLUSTER": working_cluster(cfg),
        "SLURM_NODE_ALIASES": "(null)",  # no cloud nodes: Slurm's own spelling of "none"
        # the submitter's scheduling priority (sbatch/srun send it, as Slurm's do)
        "SLURM_PRIO_PROCESS": env.get("SLURM_PRIO_PROCESS", "0"),
        "ENVIRONMENT": "BATCH", "SLURM_RESTART_COUNT": str(job.restart_count),
        "MASTER_ADDR": env.get("MASTER_ADDR", first_addr),
        "MASTER_PORT": env.get("MASTER_PORT", str(job.master_port)),
    })
    if spec.account:
        env["SLURM_JOB_ACCOUNT"] = spec.account
    if spec.reservation:
        env["SLURM_JOB_RESERVATION"] = spec.reservation
    if job.array_job_id:
        env.update(array_environment(job))
    if spec.submit_host == "":
        env.pop("SLURM_SUBMIT_HOST")
    if spec.cpus_per_task > 1:
        env["SLURM_CPUS_PER_TASK"] = str(spec.cpus_per_task)
    if spec.ntasks_per_node:
        env["SLURM_NTASKS_PER_NODE"] = str(spec.ntasks_per_node)
    if spec.mem_per_node:
        env["SLURM_MEM_PER_NODE"] = str(spec.mem_per_node)
    elif spec.mem_per_cpu or cfg.def_mem_per_cpu:
        env["SLURM_MEM_PER_CPU"] = str(spec.mem_per_cpu or cfg.def_mem_per_cpu)
    env.update(request_environment(spec))
    if job.time_limit > 0:
        env["SLURM_JOB_END_TIME"] = str(int(job.start_time + job.time_limit * 60))
    env["SLURM_JOB_START_TIME"] = str(int(job.start_time))
    env.update(gpu_env or {})
    share_environment(env, job, cfg, node)  # gres/shard, gres/mps (agent/mps.py)
    return env


def topology_environment(cfg: Config, node: str) -> dict[str, str]:
    """SLURM_TOPOLOGY_ADDR(_PATTERN): the node's place among topology.conf's switches under
    topology/tree ("s0.s1.node1", "switch.switch.node"), else the node alone."""
    if cfg.topology is not None:
        return cfg.topology.environment(node)
    return {"SLURM_TOPOLOGY_ADDR": node, "SLURM_TOPOLOGY_ADDR_PATTERN": "node"}


# Slurm 22.05's protocol version and the id of select/cons_tres: the last two fields of
# SLURM_WORKING_CLUSTER, which tools split on ':' and expect five of.
PROTOCOL_VERSION, SELECT_PLUGIN_ID = 9728, 109


def working_cluster(cfg: Config) -> str:
    return (f"{cfg.cluster_name}:{cfg.controller_addr or cfg.controller_host}:"
            f"{cfg.controller_port}:{PROTOCOL_VERSION}:{SELECT_PLUGIN_ID}")


def request_environment(spec) -> dict[str, str]:
    """Variables that echo what the job asked for, set only when it asked (as Slurm does)."""
    env = {}
    if spec.dependency:
        env["SLURM_JOB_DEPENDENCY"] = spec.dependency
    if spec.gpus_per_node:
        env["SLURM_GPUS_PER_NODE"] = _typed(spec.gpu_type, spec.gpus_per_node)
    if spec.gpus_per_task:
        env["SLURM_GPUS_PER_TASK"] = _typed(spec.gpu_type, spec.gpus_per_task)
    elif spec.gpus:
        env["SLURM_GPUS"] = _typed(spec.gpu_type, spec.gpus)
    if spec.gpu_bind:  # Slurm sets it only when asked; srun inside reads it as --gpu-bind
        env["SLURM_GPU_BIND"] = spec.gpu_bind
    if spec.cpus_per_gpu:
        env["SLURM_CPUS_PER_GPU"] = str(spec.cpus_per_gpu)
    if spec.mem_per_gpu:
        env["SLURM_MEM_PER_GPU"] = str(spec.mem_per_gpu)
    return env


def _typed(gpu_type: str, count: int) -> str:
    return f"{gpu_type}:{count}" if gpu_type else str(count)


def gpu_environment(gpus: list[int], fence: list[int] | None = None,
                    devices: list[GpuDevice] | None = None, share: str = "",
                    mps_pipe: str = "") -> dict[str, str]:
    """GPU variables. SLURM_JOB_GPUS names the node's GPU indices. When the devices cgroup
    fences the job to `fence` (its GPUs here, in order), the job sees only those, numbered from
    0 in that order, so CUDA_VISIBLE_DEVICES gives each GPU's place among them, as Slurm does
    with ConstrainDevices: a step or task with part of the job's GPUs gets its own places, not
    the first ones. Unfenced, it names the indices. A MIG instance among `devices` is named by
    its UUID (CUDA knows MIG instances by UUID only). A job sharing its GPU (`share`: shard,
    mps) holds no gres/gpu, so no SLURM_GPUS_ON_NODE; with `mps_pipe` (its GPU's MPS daemon
    runs) it sees the daemon's view (mps.mps_view)."""
    if not gpus:
        return {}
    ids = ",".join(str(g) for g in gpus)
    visible = ",".join(str(fence.index(g)) for g in gpus) if fence else ids
    env = {"CUDA_VISIBLE_DEVICES": visible, "GPU_DEVICE_ORDINAL": visible, "SLURM_JOB_GPUS": ids,
           "SLURM_STEP_GPUS": ids, "SLURM_GPUS_ON_NODE": str(len(gpus)),
           "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "ROCR_VISIBLE_DEVICES": visible,
           "ZE_AFFINITY_MASK": visible}
    mig = visible_devices(devices or [], gpus)
    if mig is not None:
        env["CUDA_VISIBLE_DEVICES"] = mig
    if share:
        del env["SLURM_GPUS_ON_NODE"]
    if mps_pipe:
        env.update(mps_view(mps_pipe))
    return env


_ = grp  # group names are resolved by the submitter; kept for SLURM_JOB_GROUP later


def step_environment(job: Job, cfg: Config, node: str, base: dict[str, str], step_id: int,
                     step_nodes: list[str], tasks_per_node: list[int], node_addrs: dict[str, str],
                     cpus_per_task: int, label: bool, distribution: str = "",
                     srun_host: str = "") -> dict[str, str]:
    """What every task of a step on this node shares: the job's variables (as a batch script
    sees them), the caller's environment over them, then the step's."""
    env = batch_environment(job, cfg, node, node_addrs)
    for k in ("ENVIRONMENT", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_GTIDS"):
        env.pop(k, None)
    env.update(base)  # srun's own environment (inside sbatch it already holds the job's)
    nodelist = collect(step_nodes)
    ntasks = sum(tasks_per_node)
    env.update({
        "SLURM_STEP_ID": str(step_id), "SLURM_STEPID": str(step_id),
        "SLURM_STEP_NODELIST": nodelist, "SLURM_STEP_NUM_NODES": str(len(step_nodes)),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_STEP_TASKS_PER_NODE": compress_counts(tasks_per_node),
        "SLURM_TASKS_PER_NODE": compress_counts(tasks_per_node),
        "SLURM_NNODES": str(len(step_nodes)), "SLURM_NTASKS": str(ntasks), "SLURM_NPROCS": str(ntasks),
        "SLURM_NODELIST": env.get("SLURM_JOB_NODELIST", nodelist),
        "SLURM_DISTRIBUTION": distribution or "block",
        "SLURMD_NODENAME": node, **topology_environment(cfg, node),
        # where srun runs (it reaches the tasks through this agent: no port of its own)
        "SLURM_LAUNCH_NODE_IPADDR": srun_host or "127.0.0.1",
        "SLURM_SRUN_COMM_HOST": srun_host or "127.0.0.1",
    })
    if cpus_per_task > 1 or "SLURM_CPUS_PER_TASK" in base:  # only when -c was given
        env["SLURM_CPUS_PER_TASK"] = str(cpus_per_task)
    if label:
        env["SLURM_LABELIO"] = "1"
    # The PyTorch contract: one rendezvous for the whole step, on its first node. A MASTER_ADDR
    # or MASTER_PORT the user set (not ours from the batch environment) wins.
    # (Inside a batch script the caller's MASTER_* are the batch environment's own: the job's
    # first node and port, which is where a step over the whole job meets too.)
    if not base.get("MASTER_ADDR"):
        env["MASTER_ADDR"] = node_addrs.get(step_nodes[0], step_nodes[0])
    if not base.get("MASTER_PORT"):
        env["MASTER_PORT"] = str(job.master_port)
    env["WORLD_SIZE"] = str(ntasks)
    return env


def task_environment(step_env: dict[str, str], rank: int, local_rank: int, node_index: int,
                     local_tasks: list[int], gpus: list[int] | None = None,
                     fence: list[int] | None = None, **gpu_options) -> dict[str, str]:
    """One task's variables; gpu_options: gpu_environment's devices, share, mps_pipe (what
    StepManager.gpu_options says of the job)."""
    env = dict(step_env)
    env.update({
        "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(local_rank), "SLURM_NODEID": str(node_index),
        "SLURM_GTIDS": ",".join(map(str, local_tasks)),
        "RANK": str(rank), "LOCAL_RANK": str(local_rank), "LOCAL_WORLD_SIZE": str(len(local_tasks)),
        "NODE_RANK": str(node_index), "GROUP_RANK": str(node_index),
    })
    if gpus is not None:
        env.update(gpu_environment(gpus, fence, **gpu_options))
        if gpu_options.get("share"):  # srun's own environment may carry a GPU job's count
            env.pop("SLURM_GPUS_ON_NODE", None)
    return env


def array_environment(job: Job) -> dict[str, str]:
    from ..arrays import parse
    indices, _ = parse(job.array_tasks or str(job.array_task_id))
    gaps = {b - a for a, b in zip(indices, indices[1:])}
    return {"SLURM_ARRAY_JOB_ID": str(job.array_job_id), "SLURM_ARRAY_TASK_ID": str(job.array_task_id),
            "SLURM_ARRAY_TASK_COUNT": str(len(indices)), "SLURM_ARRAY_TASK_MIN": str(indices[0]),
            "SLURM_ARRAY_TASK_MAX": str(indices[-1]),
            "SLURM_ARRAY_TASK_STEP": str(gaps.pop() if len(gaps) == 1 else 1)}
