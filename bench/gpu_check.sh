#!/usr/bin/env bash
# The GPU machine check: everything of issues #12/#16 that only a real GPU can show, in one run
# (through the device tool when one is lent: one H200, 16 cores, root; under ~8 minutes).
#   1. NVML inventory: what the agent registers (topology fields, MIG mode) and the NVLink/PCIe
#      topology NVML reports between GPUs;
#   2. health queries: each NVML call agent/gpu_health.py makes, run once per GPU (its value or
#      NOT_SUPPORTED), then the agent's own check on the real device;
#   3. MIG: the instances when the GPU has MIG enabled, else "MIG not enabled";
#   4. device fencing on this host's cgroup version, cgroup.conf CgroupPlugin=autodetect and
#      (when the host has cgroup v2) CgroupPlugin=cgroup/v2: a --gres=gpu:1 job that unsets
#      CUDA_VISIBLE_DEVICES opens its own GPU, runs nvidia-smi, and is denied the others;
#      the healthy GPU leaves the node undrained;
#   5. shards: Gres=gpu:1,shard:4, two --gres=shard:2 jobs run at once and both see the GPU;
#   6. MPS (when nvidia-cuda-mps-control exists): a --gres=mps:50 job.
# Prints PASS/FAIL/SKIP lines and a summary; exits 1 when something failed, 0 otherwise (a
# machine without a GPU prints SKIP lines and exits 0 at once). Needs no network except pip,
# and pip only when the checkout's .venv cannot run here (offline: GPU_CHECK_WHEELS=DIR of
# wheels). GPU_CHECK_BUDGET=seconds (450). A copy of the output goes to $OUT/gpu_check.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
LOG=${OUT:-/tmp}/gpu_check.txt
exec > >(tee "$LOG") 2>&1
BUDGET=${GPU_CHECK_BUDGET:-450}  # seconds; sections that would start past it are skipped
START=$SECONDS
NPASS=0 NFAIL=0 NSKIP=0
pass() { echo "PASS $*"; NPASS=$((NPASS + 1)); }
fail() { echo "FAIL $*"; NFAIL=$((NFAIL + 1)); }
skip() { echo "SKIP $*"; NSKIP=$((NSKIP + 1)); }
finish() {
    echo "== summary: $NPASS passed, $NFAIL failed, $NSKIP skipped in $((SECONDS - START)) s"
    [ "$NFAIL" -eq 0 ]
    exit $?
}
in_budget() {  # SECTION: false (and a SKIP line) once the time budget is spent
    if [ $((SECONDS - START)) -ge "$BUDGET" ]; then skip "$1: time budget of ${BUDGET}s spent"; return 1; fi
}

# ---- 0. a GPU, and Python that runs pyslurm-lite -------------------------------------------------
if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1 || ! command -v nvidia-smi >/dev/null; then
    for what in "NVML inventory" "health queries" "MIG" "device fencing" "shards" "MPS"; do
        skip "$what: no NVIDIA GPU here (no /dev/nvidia[0-9]* or no nvidia-smi)"
    done
    finish
fi
nvidia-smi -L || { fail "nvidia-smi -L"; finish; }
# The checkout's .venv when it runs here (its scripts name their interpreter by absolute path),
# else a fresh venv: pip from the index, or from a wheel directory GPU_CHECK_WHEELS (no network).
export PYTHONPATH=$REPO  # this checkout's code, whichever environment runs it
PY=""
WHEELS=${GPU_CHECK_WHEELS:+--no-index --find-links $GPU_CHECK_WHEELS}
if "$REPO/.venv/bin/python" -c 'import pyslurm_lite, grpc, psutil, pynvml' 2>/dev/null \
        && "$REPO/.venv/bin/sbatch" --version >/dev/null 2>&1; then
    PY=$REPO/.venv/bin/python
elif python3 -m venv /tmp/gpuvenv >/dev/null && /tmp/gpuvenv/bin/pip install -q $WHEELS "$REPO"; then
    PY=/tmp/gpuvenv/bin/python
else
    fail "install: no usable .venv, and pip install . failed (offline? set GPU_CHECK_WHEELS=DIR)"; finish
fi
BIN=$(dirname "$PY")
export PATH=$BIN:$PATH
echo "python: $PY"

# ---- 1. NVML inventory -------------------------------------------------------------------------
echo "== 1. NVML inventory"
if "$PY" - <<'PY'; then pass "NVML inventory"; else fail "NVML inventory"; fi
import dataclasses, sys
import pynvml as nv
from pyslurm_lite.agent.gpu import NvmlSource
gpus = NvmlSource().devices()  # what the agent registers
nv.nvmlInit()
count = nv.nvmlDeviceGetCount()
print(f"driver {nv.nvmlSystemGetDriverVersion()}  NVML {nv.nvmlSystemGetNVMLVersion()}  GPUs {count}")
for g in gpus:
    print("  " + " ".join(f"{k}={v}" for k, v in dataclasses.asdict(g).items()))
def query(what, call):
    try:
        return call()
    except nv.NVMLError as e:
        return f"NOT_SUPPORTED ({e})"
for i in range(count):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    links = []
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            if nv.nvmlDeviceGetNvLinkState(h, link):
                links.append(link)
        except nv.NVMLError:
            break
    print(f"  GPU {i}: MIG mode (current, pending) {query('mig', lambda: nv.nvmlDeviceGetMigMode(h))}; "
          f"active NVLinks {links or 'none'}; NUMA {query('numa', lambda: nv.nvmlDeviceGetNumaNodeId(h))}")
    for j in range(i + 1, count):
        hj = nv.nvmlDeviceGetHandleByIndex(j)
        print(f"  GPU {i}-{j}: common ancestor {query('topo', lambda: nv.nvmlDeviceGetTopologyCommonAncestor(h, hj))}")
ok = len(gpus) == count and all(g.uuid and g.pci_bus_id and g.memory_mb > 0 and not g.simulated for g in gpus)
print("agent's devices match NVML's count and carry uuid, PCI bus, memory" if ok else "agent's devices incomplete")
sys.exit(0 if ok else 1)
PY

# ---- 2. health queries -------------------------------------------------------------------------
echo "== 2. health queries"
in_budget "health queries" && {
if "$PY" - <<'PY'; then pass "health queries (every call answered or NOT_SUPPORTED; agent check ran)"; else fail "health queries"; fi
import sys
import pynvml as nv
from pyslurm_lite.agent.gpu_health import GpuHealth, NvmlHealth
nv.nvmlInit()
count = nv.nvmlDeviceGetCount()
def show(name, call):
    try:
        value = call()
    except nv.NVMLError as e:
        value = f"NOT_SUPPORTED ({e})" if e.value == nv.NVML_ERROR_NOT_SUPPORTED else f"ERROR ({e})"
    print(f"  {name}: {value}")
    return value
for i in range(count):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    print(f"GPU {i}")
    show("ECC mode (current, pending)", lambda: nv.nvmlDeviceGetEccMode(h))
    for label, etype, counter in (("uncorrected volatile", nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC),
                                  ("uncorrected aggregate", nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_AGGREGATE_ECC),
                                  ("corrected volatile", nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_VOLATILE_ECC)):
        show(f"nvmlDeviceGetTotalEccErrors {label}", lambda: nv.nvmlDeviceGetTotalEccErrors(h, etype, counter))
    show("nvmlDeviceGetRetiredPagesPendingStatus", lambda: nv.nvmlDeviceGetRetiredPagesPendingStatus(h))
    for label, cause in (("double-bit", nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR),
                         ("multiple single-bit", nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)):
        show(f"nvmlDeviceGetRetiredPages {label} (count)", lambda: len(nv.nvmlDeviceGetRetiredPages(h, cause)))
    show("nvmlDeviceGetRemappedRows (corrected, uncorrected, pending, failure)", lambda: nv.nvmlDeviceGetRemappedRows(h))
    events = nv.nvmlEventSetCreate()
    show("nvmlDeviceRegisterEvents XidCriticalError",
         lambda: nv.nvmlDeviceRegisterEvents(h, nv.nvmlEventTypeXidCriticalError, events) or "registered")
    wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
    try:
        data = wait(events, 0)
        print(f"  nvmlEventSetWait(0 ms): XID {data.eventData} pending")
    except nv.NVMLError as e:
        print(f"  nvmlEventSetWait(0 ms): {'no event (NVML_ERROR_TIMEOUT)' if e.value == nv.NVML_ERROR_TIMEOUT else e}")
    nv.nvmlEventSetFree(events)
faults = GpuHealth(NvmlHealth(nv, list(range(count)))).run_once()
print("agent's check:", "; ".join(f"gpu {f.index}: {f.detail}" for f in faults) or "no fault")
PY
}

# ---- 3. MIG ------------------------------------------------------------------------------------
echo "== 3. MIG"
mig=$("$PY" - <<'PY'
import pynvml as nv
nv.nvmlInit()
found = 0
for i in range(nv.nvmlDeviceGetCount()):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    try:
        current, _ = nv.nvmlDeviceGetMigMode(h)
    except nv.NVMLError:
        continue
    if not current:
        continue
    for k in range(nv.nvmlDeviceGetMaxMigDeviceCount(h)):
        try:
            m = nv.nvmlDeviceGetMigDeviceHandleByIndex(h, k)
        except nv.NVMLError:
            continue
        found += 1
        uuid = nv.nvmlDeviceGetUUID(m)
        mem = nv.nvmlDeviceGetMemoryInfo(m).total // 2**20
        print(f"  GPU {i} MIG {k}: {uuid} {mem} MiB gi={nv.nvmlDeviceGetGpuInstanceId(m)} ci={nv.nvmlDeviceGetComputeInstanceId(m)}")
print(f"instances={found}")
PY
) || mig="instances=error"
echo "$mig"
case $mig in
    *instances=error*) fail "MIG: NVML queries failed" ;;
    *instances=0) echo "MIG not enabled"; skip "MIG: not enabled on this GPU (nvidia-smi -mig 1 needs a GPU reset)" ;;
    *) pass "MIG: instances listed"; "$PY" -c 'from pyslurm_lite.agent.gpu import NvmlSource
for g in NvmlSource().devices(): print("  agent registers", g.index, g.type, g.file)' ;;
esac

# ---- clusters on the real GPU(s) ---------------------------------------------------------------
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
CPUS=4 MEM=8000
UP=()
cleanup() { for d in "${UP[@]}"; do pyslurm-lite cluster down --dir "$d" >/dev/null 2>&1; done; }
trap cleanup EXIT

cluster_up() {  # DIR GPUS [slurm.conf sed expression] [slurm.conf lines] [gres.conf line] [cgroup.conf]
    local d=$1 g=$2
    rm -rf "$d" && mkdir -p "$d/out"
    "$PY" -c 'import sys; from pyslurm_lite.cli.cluster import write_config; write_config(sys.argv[1], 1, int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))' \
        "$d" "$CPUS" "$MEM" "$g" 2>/dev/null || return 1
    [ -n "${3:-}" ] && sed -i "$3" "$d/slurm.conf"
    [ -n "${4:-}" ] && echo "$4" >>"$d/slurm.conf"
    [ -n "${5:-}" ] && echo "$5" >>"$d/gres.conf"
    [ -n "${6:-}" ] && echo "$6" >"$d/cgroup.conf"
    UP+=("$d")
    timeout 90 pyslurm-lite cluster up --nodes 1 --cpus $CPUS --mem $MEM --gpus "$g" --dir "$d" >/dev/null \
        || { tail -20 "$d"/*.log; return 1; }
    export PYSLURM_LITE_CONF=$d/slurm.conf
}

cluster_down() { pyslurm-lite cluster down --dir "$1" >/dev/null 2>&1; }

wait_job() {  # JOB [seconds]: its final state ("" for no job: sbatch refused it)
    local s="" i
    [ -n "$1" ] || return 0
    for i in $(seq $((${2:-60} * 2))); do
        s=$(squeue -h -j "$1" -o %T 2>/dev/null)
        case $s in COMPLETED*|FAILED*|CANCELLED*|TIMEOUT*|OUT_OF_MEMORY*|NODE_FAIL*) break ;; esac
        sleep 0.5
    done
    echo "${s%% *}"
}

minor_of() { "$PY" -c 'import sys, pynvml as nv; nv.nvmlInit(); print(nv.nvmlDeviceGetMinorNumber(nv.nvmlDeviceGetHandleByIndex(int(sys.argv[1]))))' "$1"; }

# ---- 4. device fencing -------------------------------------------------------------------------
echo "== 4. device fencing (cgroup: $(stat -fc %T /sys/fs/cgroup))"
PLUGINS=(autodetect)
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] || grep -q ' cgroup2 ' /proc/mounts; then PLUGINS+=(cgroup/v2); fi
PROBE='unset CUDA_VISIBLE_DEVICES; echo "GPUS=$SLURM_JOB_GPUS"
for f in /dev/nvidia[0-9]*; do (exec 3<"$f") 2>/dev/null && echo "open $f: ok" || echo "open $f: denied"; done
nvidia-smi -L && echo "nvidia-smi: ok" || echo "nvidia-smi: failed"'
for plugin in "${PLUGINS[@]}"; do
    in_budget "fencing CgroupPlugin=$plugin" || continue
    D=/tmp/gpu-check-fence-${plugin//\//-}
    if ! cluster_up "$D" "$NGPU" "" "" "" "CgroupPlugin=$plugin"; then fail "fencing CgroupPlugin=$plugin: cluster up"; continue; fi
    grep -ihE "cgroup|process tracking|fenc" "$D"/agent-node1.log | tail -5
    j=$(sbatch --parsable -o "$D/out/%j.out" --gres=gpu:1 --wrap "$PROBE")
    st=$(wait_job "$j" 60)
    cat "$D/out/$j.out" 2>/dev/null
    gpu=$(sed -n 's/^GPUS=//p' "$D/out/$j.out" 2>/dev/null | cut -d, -f1)
    if [ "$st" != COMPLETED ] || [ -z "$gpu" ]; then
        fail "fencing CgroupPlugin=$plugin: job $j ended $st"
    else
        own=/dev/nvidia$(minor_of "$gpu")
        bad=""
        grep -q "open $own: ok" "$D/out/$j.out" || bad+=" own GPU $own not opened;"
        grep -q "nvidia-smi: ok" "$D/out/$j.out" || bad+=" nvidia-smi failed inside;"
        others=$(grep "^open /dev/nvidia" "$D/out/$j.out" | grep -v "open $own:" | grep -c ": ok")
        [ "$others" -eq 0 ] || bad+=" $others other GPU(s) opened;"
        [ -z "$bad" ] && pass "fencing CgroupPlugin=$plugin: own GPU $own opens, nvidia-smi works, $((NGPU - 1)) other GPU(s) denied" \
                      || fail "fencing CgroupPlugin=$plugin:$bad"
    fi
    sleep 2  # two heartbeats: a fault on a healthy GPU would have drained the node by now
    node=$(scontrol show node node1)
    if echo "$node" | grep -q "Reason="; then fail "health: node drained on a healthy GPU: $(echo "$node" | grep Reason=)"
    else pass "health: a healthy GPU leaves the node undrained (CgroupPlugin=$plugin)"; fi
    cluster_down "$D"
done

# ---- 5. shards ---------------------------------------------------------------------------------
echo "== 5. shards"
if in_budget shards; then
    D=/tmp/gpu-check-shard
    if ! cluster_up "$D" 1 "s/Gres=gpu:1\b/Gres=gpu:1,shard:4/" "GresTypes=gpu,shard" "NodeName=node1 Name=shard Count=4"; then
        fail "shards: cluster up with Gres=gpu:1,shard:4"
    else
        SHARD='echo "SHARDS=$SLURM_SHARDS_ON_NODE CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 8; nvidia-smi -L && echo "nvidia-smi: ok"'
        a=$(sbatch --parsable -o "$D/out/%j.out" --gres=shard:2 --wrap "$SHARD")
        b=$(sbatch --parsable -o "$D/out/%j.out" --gres=shard:2 --wrap "$SHARD")
        together=no
        [ -n "$a" ] && [ -n "$b" ] && for _ in $(seq 40); do
            [ "$(squeue -h -j "$a,$b" -o %T | grep -c RUNNING)" -eq 2 ] && { together=yes; break; }
            sleep 0.5
        done
        sa=$(wait_job "$a" 60) sb=$(wait_job "$b" 60)
        cat "$D/out/$a.out" "$D/out/$b.out" 2>/dev/null
        seen=$(cat "$D/out/$a.out" "$D/out/$b.out" 2>/dev/null | grep -c "nvidia-smi: ok")
        if [ "$together" = yes ] && [ "$sa$sb" = COMPLETEDCOMPLETED ] && [ "$seen" -eq 2 ]; then
            pass "shards: two --gres=shard:2 jobs ran at once on one GPU and both saw it"
        else
            fail "shards: concurrent=$together states=$sa,$sb saw-GPU=$seen/2"
        fi
    fi
    cluster_down "$D"
fi

# ---- 6. MPS ------------------------------------------------------------------------------------
echo "== 6. MPS"
if ! command -v nvidia-cuda-mps-control >/dev/null; then
    skip "MPS: nvidia-cuda-mps-control not installed"
elif in_budget MPS; then
    D=/tmp/gpu-check-mps
    if ! cluster_up "$D" 1 "s/Gres=gpu:1\b/Gres=gpu:1,mps:100/" \
            "GresTypes=gpu,mps
MpsControlProgram=$(command -v nvidia-cuda-mps-control)" "NodeName=node1 Name=mps Count=100"; then
        fail "MPS: cluster up with Gres=gpu:1,mps:100"
    else
        j=$(sbatch --parsable -o "$D/out/%j.out" --gres=mps:50 --wrap 'echo "MPS=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE PIPE=${CUDA_MPS_PIPE_DIRECTORY:-}"; nvidia-smi -L && echo "nvidia-smi: ok"; pgrep -a nvidia-cuda-mps || true')
        st=$(wait_job "$j" 60)
        cat "$D/out/$j.out" 2>/dev/null
        if [ "$st" = COMPLETED ] && grep -q "^MPS=50 PIPE=/" "$D/out/$j.out" && grep -q "nvidia-smi: ok" "$D/out/$j.out"; then
            pass "MPS: --gres=mps:50 job ran with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 and the agent's MPS daemon's pipe"
        else
            fail "MPS: job $j ended $st (see its output above)"
        fi
    fi
    cluster_down "$D"
fi

finish
