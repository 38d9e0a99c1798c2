#!/usr/bin/env bash
# The README's first command: install pyslurm-lite into .venv, bring up a local 2-node cluster in
# /tmp/pyslurm-lite-demo, run examples/hello.sbatch, and show squeue and the job's output.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${DEMO_DIR:-/tmp/pyslurm-lite-demo}
[ -x .venv/bin/pyslurm-lite ] || { python3 -m venv .venv && .venv/bin/pip install -q .; }
export PATH="$PWD/.venv/bin:$PATH"
eval "$(pyslurm-lite cluster up --nodes 2 --cpus 2 --mem 2000 --gpus 2 --dir "$DIR")"
echo "cluster up: PYSLURM_LITE_CONF=$PYSLURM_LITE_CONF"
sinfo || true
mkdir -p "$DIR/work" && cd "$DIR/work"
id=$(sbatch --parsable "$OLDPWD/examples/hello.sbatch")
echo "Submitted batch job $id"
sleep 0.5
squeue
for _ in $(seq 1 60); do
  state=$(squeue -h -j "$id" -o %T)
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break;; esac
  sleep 0.5
done
echo "job $id: $state"
echo "---- $DIR/work/hello-$id.out"
cat "hello-$id.out"
echo
rest=$(sed -n 's/^RestPort=\([0-9]*\).*/\1/p' "$PYSLURM_LITE_CONF" | tail -1)
[ -z "$rest" ] || [ "$rest" = 0 ] || echo "Dashboard and slurmrestd's API: http://127.0.0.1:$rest/ (log in with the output of: scontrol token)"
echo "The cluster keeps running. Try:  export PYSLURM_LITE_CONF=$PYSLURM_LITE_CONF PATH=$PATH"
echo "Stop it with:                   pyslurm-lite cluster down --dir $DIR"
[ "$state" = COMPLETED ]
