#!/usr/bin/env bash
# probe_persistent.sh OUT_DIR: the persistent LSTM's probes on a GPU machine, at
# most ~130 s, two files under OUT_DIR (docs/PERSISTENT_LSTM_FLOOR.md, "What the next GPU run
# decides", says what each line decides):
#   probe-persistent.txt  build/sync_bench (grid.sync, cluster barriers, flag hand-off, L2
#                         re-read, L2 and HBM round trips, DSMEM), build/plstm_cost (the model the
#                         probes check), lstm_bench at A and B, step_bench's persistent kernel for
#                         every precision with tensor cores on and off, and its layer-after-layer
#                         kernels
#   ncu-persistent.txt    ncu --clock-control none on the persistent kernels at A (the wavefront,
#                         fp32) and B (the layer-after-layer kernels with clusters, bf16, tensor
#                         cores on): SpeedOfLight, MemoryWorkloadAnalysis,
#                         SchedulerStats, WarpStateStats, SourceCounters, as text, one training
#                         step's forward and backward launch each; then what the layer-after-layer
#                         kernels at A in bf16 wait on, with clusters and with grid.sync: the
#                         warp states and the source lines the stalls sample most
#                         (WarpStateStats and SourceCounters with their details) and the warp
#                         instructions executed, for layer 0's and 1's forward and layer 1's
#                         backward
# Runs the programs of build-gpu/ (or $BUILD_DIR) under its env.sh when there is one; a
# program that is not built, or ncu missing, is logged and skipped. PROBE_A and PROBE_B
# ("B E H L T") replace the shapes, PROBE_BUDGET (s) and PROBE_STEP_LIMIT (s per step_bench)
# the limits, for a rehearsal on the emulated device (200 s, the last run cut by the budget):
#   BUILD_DIR=build-emu PROBE_A="4 8 20 2 3" PROBE_B="4 8 20 2 3" PROBE_BUDGET=200 PROBE_STEP_LIMIT=30 \
#     bash scripts/probe_persistent.sh /tmp/probe
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 1 ]; then
  echo "usage: scripts/probe_persistent.sh OUT_DIR" >&2
  exit 2
fi
out=$1
mkdir -p "$out" || { echo "error: cannot create $out" >&2; exit 2; }
build=${BUILD_DIR:-build-gpu}
shape_a=${PROBE_A:-32 128 256 2 100}
shape_b=${PROBE_B:-64 256 512 4 128}
log=$out/probe-persistent.txt
ncu_log=$out/ncu-persistent.txt
budget=${PROBE_BUDGET:-125} # seconds for everything; each step gets at most what is left
step_limit=${PROBE_STEP_LIMIT:-4} # seconds per step_bench run
: >"$log"

# run LIMIT CMD...: CMD under the build's env, at most LIMIT seconds (and what is left of
# the budget), its output appended to the log under a header line.
run() {
  local limit=$1
  shift
  local left=$((budget - SECONDS))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 2 ]; then
    echo "== $* : skipped, the ${budget} s budget is spent" >>"$log"
    return
  fi
  if [ ! -x "$1" ] && ! command -v "$1" >/dev/null; then
    echo "== $* : not built" >>"$log"
    return
  fi
  echo "== $* (at ${SECONDS} s, limit ${limit} s)" >>"$log"
  (if [ -f "$build/env.sh" ]; then source "$build/env.sh"; fi; timeout "$limit" "$@") >>"$log" 2>&1
  echo "== rc $?" >>"$log"
}

{ date -u; git rev-parse --short HEAD 2>/dev/null; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm \
    --format=csv 2>/dev/null; } >>"$log"
run 10 "$build/sync_bench" 128 64
run 3 "$build/plstm_cost"
# The layer-after-layer kernels (kernels/lstm_layerwise.h: W_hh alone on the chain, batch-group
# tiles), before the budget runs out, with thread-block clusters first (the issue's targets in
# the model), then with grid.sync: A in fp32 (CUDA cores), tf32 and bf16 (tensor cores), beside
# the wavefront's runs below; B in bf16 on tensor cores (in fp32 its tile does not fit).
for impl in persistent-cluster persistent-layerwise; do
  for pt in "tf32 on" "bf16 on" "fp32 off"; do
    run "$step_limit" "$build/step_bench" $shape_a 10 $impl 0 $pt
  done
  run "$step_limit" "$build/step_bench" $shape_b 10 $impl 0 bf16 on
done

# ncu replays each kernel once per metric pass: at most PROBE_NCU_LIMIT s (default 20) per shape.
: >"$ncu_log"
if ! command -v ncu >/dev/null; then
  echo "ncu: not found, no profile" >>"$ncu_log"
else
  # profile LABEL IMPL "SHAPE" PREC TC KERNELS LAUNCHES NCU_ARGS...: ncu over step_bench's kernels
  # with --rnn-impl IMPL, the first LAUNCHES launches whose names match KERNELS, at most
  # PROBE_NCU_LIMIT s (default 20; ncu replays each kernel once per metric pass).
  profile() {
    local label=$1 impl=$2 shape=$3 prec=$4 tc=$5 kernels=$6 launches=$7 left
    shift 7
    left=$((budget - SECONDS))
    [ "$left" -gt "${PROBE_NCU_LIMIT:-20}" ] && left=${PROBE_NCU_LIMIT:-20}
    if [ "$left" -le 5 ]; then echo "== ncu $label: skipped, budget spent" >>"$ncu_log"; return; fi
    echo "== ncu $label: step_bench $shape 2 $impl 0 $prec $tc (limit ${left} s)" >>"$ncu_log"
    (if [ -f "$build/env.sh" ]; then source "$build/env.sh"; fi
     timeout "$left" ncu --clock-control none "$@" -k "regex:$kernels" \
       --launch-count "$launches" "$build/step_bench" $shape 2 "$impl" 0 "$prec" "$tc") >>"$ncu_log" 2>&1
    echo "== rc $?" >>"$ncu_log"
  }
  sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats
            --section WarpStateStats --section SourceCounters)
  # A: the wavefront kernels in fp32; B: the layer-after-layer kernels with clusters in bf16
  # with grid.sync (their names start lw_, the wavefront's plstm_; B's cluster plan is refused).
  profile "A fp32 off persistent" persistent "$shape_a" fp32 off 'plstm_|lw_' 2 "${sections[@]}"
  profile "B bf16 on persistent-layerwise" persistent-layerwise "$shape_b" bf16 on 'plstm_|lw_' 2 "${sections[@]}"
  # What the layer-after-layer kernels wait on, at A in bf16 (the cost model's issue and round-trip
  # terms): the stall reasons, the source lines that collect the most stall samples (-lineinfo),
  # and the warp instructions a launch executes (over blocks x 8 warps x len steps: a warp's
  # instructions a step, against plstm_cost's "inst"); layer 0's and 1's forward, layer 1's backward.
  details=(--section WarpStateStats --section SourceCounters --print-details all
           --metrics smsp__inst_executed.sum,sm__cycles_active.avg,smsp__warps_active.avg.per_cycle_active)
  profile "stalls A bf16 persistent-cluster" persistent-cluster "$shape_a" bf16 on lw_ 3 "${details[@]}"
  profile "stalls A bf16 persistent-layerwise" persistent-layerwise "$shape_a" bf16 on lw_ 3 "${details[@]}"
fi

run 8 "$build/lstm_bench" $shape_a 5 all
run 8 "$build/lstm_bench" $shape_b 3 all
for shape in "$shape_a" "$shape_b"; do
  run "$step_limit" "$build/step_bench" $shape 10 persistent 0 fp32 off
  for p in tf32 bf16; do
    for tc in off on; do run "$step_limit" "$build/step_bench" $shape 10 persistent 0 $p $tc; done
  done
done

echo "probe_persistent: ${SECONDS} s; $log, $ncu_log"
