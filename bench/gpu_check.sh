#!/usr/bin/env bash
# The GPU machine check (run through the device tool when one is lent), one prepared script:
#  1. NVML discovery through pynvml: what the agent would register;
#  2. a 1-node local cluster on the real GPU(s): a --gres=gpu:1 job that prints its variables,
#     what nvidia-smi shows it, and whether it can open the device files of GPUs it was not given;
#  3. (issue 4) the DDP example with the NCCL backend when torch with CUDA is importable.
# Prints everything; writes a copy to $OUT/gpu_check.txt when $OUT is set.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp}/gpu_check.txt
exec > >(tee "$LOG") 2>&1
python3 -m venv /tmp/gpuvenv >/dev/null && /tmp/gpuvenv/bin/pip install -q . || { echo "install failed"; exit 1; }
export PATH=/tmp/gpuvenv/bin:$PATH
echo "== NVML discovery"
python - <<'PY'
from pyslurm_lite.agent.gpu import NvmlSource
for g in NvmlSource().devices():
    print(f"index={g.index} type={g.type} name={g.name!r} uuid={g.uuid} minor={g.minor} "
          f"mem={g.memory_mb}MiB pci={g.pci_bus_id} numa={g.numa_node} file={g.file}")
PY
n=$(python -c "import pynvml as n; n.nvmlInit(); print(n.nvmlDeviceGetCount())")
echo "== local cluster with $n GPU(s)"
D=/tmp/gpu-cluster; rm -rf $D
pyslurm-lite cluster up --nodes 1 --cpus 4 --mem 8000 --gpus "$n" --dir $D || exit 1
export PYSLURM_LITE_CONF=$D/slurm.conf
scontrol show node node1 | grep -iE "gres|simulated|State"
mkdir -p $D/work && cd $D/work
j=$(sbatch --parsable --gres=gpu:1 --wrap 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_JOB_GPUS=$SLURM_JOB_GPUS"; nvidia-smi -L; for f in /dev/nvidia[0-9]*; do (exec 3<"$f") 2>/dev/null && echo "open $f: ok" || echo "open $f: denied"; done')
for _ in $(seq 60); do s=$(squeue -h -j $j -o %T); case $s in COMPLETED|FAILED|CANCELLED|TIMEOUT) break;; esac; sleep 0.5; done
echo "job $j: $s"; cat slurm-$j.out
pyslurm-lite cluster down --dir $D
