#!/usr/bin/env bash
# device_all.sh: everything a GPU session must run, in one command (a device machine is
# lent for minutes: one full call costs less than many small ones). From the repo root:
#
#   run(command="BENCH_COMMIT=<hash> bash scripts/device_all.sh $OUT", carry=[".carry"])
#
# .carry is scripts/device_prep.sh's OpenBLAS, made on this side before the first call: the
# device image has none. Plan of a 30-minute session (10 minutes a command):
#   call 1 (about 8-9 min): build, GPU tests, CPU tests, benchmark,    device_all.sh OUT --keep-going
#                           workbench
#   call 2 (about 7-8 min): the quality run, then time to quality      device_all.sh OUT --only-quality 300
#   the rest: fixes, and a re-run of what failed; after a failed GPU test, first
#     (a few minutes with the build, 7 at most; an estimate)          device_all.sh OUT --only-sanitize
# The first session to run the new code should keep going past failures (--keep-going): one
# call then shows every failing test and still measures what works. Each call must build if
# the machine is a fresh one (a machine stays warm only 30 s after a call).
#
# Steps, each logged under OUT as it goes (tee), in this order; the first that fails stops
# the script (exit 1) and prints the end of the log that explains it, unless --keep-going:
#   preflight.log      date, commit, nvidia-smi, the carried OpenBLAS (or the system's)
#   build.log          scripts/device_build.sh (CUDA build, sub-library checks)
#   gpu-tests.log      ctest -L gpu, each test at most 180 s (tests.cmake)
#   cpu-tests.log      ctest -LE gpu: everything else, once (the GPU tests do not run twice)
#   bench-gpu.txt      scripts/bench_gpu.sh: configs A and B against PyTorch, side by side, every
#                      variant (LSTM implementation / precision / CUDA graph; BENCH_VARIANTS
#                      overrides bench_gpu.sh's list)
#   sample-gpu.txt     scripts/bench_sample.sh: sampling at batch 1 and --score, characters per
#                      second of wall time on the CPU and on the GPU (with --skip-bench, not run)
#   workbench.log      the kernel workbenches at A and B (unless --skip-workbench; 150 s at
#                      most): bench/kernels/lstm_bench (every LSTM implementation and precision
#                      against the CPU layer, then timed) and bench/kernels/step_bench (a whole
#                      step eager, deferred and replayed as a CUDA graph)
#   quality.log        with --quality S / --only-quality S: shakespeare-train on the GPU, the
#                      CPU's measured H=768 recipe (QUALITY_MODEL overrides it),
#                      QUALITY_EPOCHS epochs (default 10) or as many steps as a calibration
#                      says fit in S if fewer, stopped by SIGTERM at S s
#   metrics.jsonl      its metrics log (checkpoints stay in /tmp/sk-quality: $OUT returns 8
#                      files at most)
#   ttq.txt            after the quality run (unless --skip-ttq): bench_gpu.sh --ttq-only, the
#                      seconds each side needs to validation loss <= 1.50 (BENCH_TTQ_VARIANT
#                      picks shakespeare's variant)
#   quality-more.log, metrics-more.jsonl
#                      after the time to quality, a second recipe (QUALITY_MORE; default the
#                      CPU's best, H=1024) when all its epochs fit in the command's 10 minutes
#   sanitize.log       with --sanitize / --only-sanitize: NVIDIA's compute-sanitizer, each of
#                      its four tools (memcheck: out-of-bounds and misaligned accesses;
#                      racecheck: shared-memory hazards; synccheck: barrier misuse; initcheck:
#                      reads of uninitialized global memory) over tiny shapes of our device
#                      code: plstm_dots_check, lstm_bench (every LSTM implementation and
#                      precision, forward and backward) and step_bench (whole training steps,
#                      eager, deferred and as a CUDA graph: our kernels, cuBLAS and cuDNN
#                      together). For the call after a failed GPU test: it says whether the
#                      cause is memory or synchronization (60 s per run, 420 s in all at most;
#                      each run's line is logged as it ends).
# Our programs and tests run with build-gpu/env.sh's LD_LIBRARY_PATH; PyTorch runs with the
# environment this script started with, so that it loads its own cuDNN and cuBLAS.
# Copy the files to bench/results/ (named with the date, GPU and commit) and commit them.
#
# --probe: the one call a session with 15 minutes of device time makes (under 10 minutes,
# build included, 7 files, each step under its own time limit, which add up to 560 s; it
# keeps going past failures; the H200 run of 2026-11-28 took 302 s). On the H100 of 2026-11-27 the build took 20 s and the GPU tests
# 25 s (4 at a time); the benchmark's runs are seconds each:
#   build.log       preflight and the build (45 s)
#   gpu-tests.log   ctest -L gpu, 4 at a time (60 s in all)
#   bench-gpu.txt   bench_gpu.sh at A and B, probe_variants (the default run, cuDNN fp32, the
#                   persistent kernel in fp32, tf32 and bf16 with tensor cores, its layer-after-
#                   layer kernels with clusters in tf32 and bf16; BENCH_VARIANTS overrides)
#                   against PyTorch TF32, fp32 and CUDA-graph rows, steady state on
#                   both sides; then the time to validation 1.50 over 3 seeds a side (medians);
#                   20 warm-up and 100 timed steps a run (250 s: the 2026-11-27 H100 run of all
#                   nine default variants ran out of 220 s in its third seed)
#   sample-gpu.txt  bench_sample.sh (95 s: N = 1, 16 and 256 and --score: the fused GPU sampler, the
#                   per-character loop it replaced, the CPU; ncu: the sampling kernel's device time a character)
#   probes.txt, probe-persistent.txt, ncu-persistent.txt
#                   scripts/probe_persistent.sh OUT (130 s): sync_bench, the cost model, ncu on the
#                   persistent kernels at A and B and, with source counters, on the layer-after-
#                   layer kernels at A (clusters and grid.sync), lstm_bench and step_bench with
#                   tensor cores on and off (docs/PERSISTENT_LSTM_FLOOR.md, "What the next GPU
#                   run decides"); probes.txt is its log
#
# The probe ends by checking OUT against the device tool's limits (8 files at most, none more
# than two folders deep) and fails when they are broken.
# --rehearse BUILD_DIR: --probe without a GPU, against the emulated device's build (made by
# scripts/test_emulated_gpu.sh, BUILD_DIR build-emu): the same steps, time limits and files;
# the build step only brings BUILD_DIR up to date, nvidia-smi is a stand-in that reports no
# memory, and PyTorch rows fail where torch is missing. On the emulated device most steps run
# into their time limits: the rehearsal checks the orchestration, the limits and OUT's shape.
#
# Usage: scripts/device_all.sh OUT_DIR [--probe | --rehearse BUILD_DIR | --quality SECONDS | --only-quality SECONDS]
#          [--keep-going] [--skip-bench] [--skip-ttq] [--skip-workbench] [--sanitize | --only-sanitize]
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:?usage: device_all.sh OUT_DIR [--probe | --quality SECONDS | --only-quality SECONDS] [--keep-going] [--skip-bench] [--skip-ttq] [--skip-workbench] [--sanitize | --only-sanitize]}
shift
quality=0 only_quality=0 keep_going=0 bench=1 ttq=1 workbench=1 sanitize=0 only_sanitize=0 probe=0 rehearse=""
gb=build-gpu # the build the probe runs: build-gpu, or --rehearse's emulated one
while [ $# -gt 0 ]; do
  case "$1" in
    --quality) quality=${2:?--quality needs seconds}; shift 2 ;;
    --only-quality) quality=${2:?--only-quality needs seconds}; only_quality=1; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --probe) probe=1 keep_going=1; shift ;;
    --rehearse) rehearse=${2:?--rehearse needs the emulated build folder}; gb=$rehearse probe=1 keep_going=1; shift 2 ;;
    --skip-bench) bench=0; shift ;;
    --skip-ttq) ttq=0; shift ;;
    --skip-workbench) workbench=0; shift ;;
    --sanitize) sanitize=1; shift ;;
    --only-sanitize) sanitize=1; only_sanitize=1; shift ;;
    *) echo "device_all.sh: error: unknown option \"$1\"" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
commit=${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
t0=$SECONDS
failed=0

# step NAME LOG CMD...: runs CMD with its output tee'd to OUT/LOG; on failure prints the end
# of that log and stops the script (or notes the failure with --keep-going).
step() {
  local name=$1 logname=$2 log="$out/$2"
  shift 2
  echo "== $name ($((SECONDS - t0)) s since start)"
  { echo "# $name: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $commit"; "$@"; } 2>&1 | tee -a "$log" | grep -E "$filter"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "device_all: $name FAILED (exit $rc); the end of $logname:"
    tail -n 40 "$log"
    [ "$keep_going" = 1 ] || { echo "device_all: stopped at the first failure ($((SECONDS - t0)) s)"; exit 1; }
    failed=1
  fi
}
# with_env CMD...: CMD under the build's run-time library path (our programs and tests only).
# (The emulated build has no env.sh: its programs need no library path.)
with_env() { if [ -f "$gb/env.sh" ]; then (source "$gb/env.sh" && "$@"); else "$@"; fi; }

preflight() {
  nvidia-smi || return 1
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  echo "cmake: $(cmake --version | head -n 1); make: $(command -v make || echo none); ninja: $(command -v ninja || echo none)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' || true
  # OpenBLAS: the system's, or the carried copy; without either the build cannot link.
  if compgen -G "/usr/lib/x86_64-linux-gnu/libopenblas.so*" >/dev/null || compgen -G "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so*" >/dev/null; then
    echo "OpenBLAS: the system's"
  elif [ -f .carry/root/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h ] || compgen -G ".carry/debs/*.deb" >/dev/null; then
    echo "OpenBLAS: carried (.carry)"
  else
    echo "error: no OpenBLAS on this machine and no .carry: run scripts/device_prep.sh on the apt side and carry .carry"
    return 1
  fi
}

# The workbenches at A and B (B E H L T ...), tensor cores on and off; each prints its own table.
workbenches() {
  local rc=0
  local gb=${gb:-build-gpu}
  "$gb"/lstm_bench 32 128 256 2 100 20 all || rc=1
  "$gb"/lstm_bench 64 256 512 4 128 20 all || rc=1
  "$gb"/step_bench 32 128 256 2 100 100 cudnn 0 || rc=1
  "$gb"/step_bench 64 256 512 4 128 100 cudnn 0 || rc=1
  "$gb"/step_bench 32 128 256 2 100 100 persistent 0 || rc=1
  "$gb"/step_bench 32 128 256 2 100 100 persistent 0 tf32 on || rc=1
  "$gb"/step_bench 32 128 256 2 100 100 persistent 0 tf32 off || rc=1
  "$gb"/step_bench 64 256 512 4 128 100 persistent 0 bf16 off || rc=1
  "$gb"/step_bench 64 256 512 4 128 100 persistent 0 bf16 on || rc=1
  return "$rc"
}

filter='^(NVIDIA|OpenBLAS|error|torch|device_build: (ok|cuDNN|OpenBLAS|generator)|.*tests passed|.*tests failed|.*\*\*\*Failed|.*Timeout|config=|variant |best |ttq |build-gpu +(sample|score) |lstm_bench|step_bench|iter .* val_loss|done:|sanitize: )'
if [ "$probe" = 1 ]; then
  build_all() { preflight && bash scripts/device_build.sh; }
  # The persistent kernel's probes (sync_bench, the cost model, ncu, and lstm_bench and
  # step_bench for every precision with tensor cores on and off: the workbenches' runs) into
  # OUT/probe-persistent.txt and OUT/ncu-persistent.txt; without the script, the workbenches.
  probes() {
    if [ -f scripts/probe_persistent.sh ]; then
      BUILD_DIR=$gb timeout 130 bash scripts/probe_persistent.sh "$out"
    else
      timeout 75 bash -c "$(declare -f workbenches); workbenches"
    fi
  }
  if [ -n "$rehearse" ]; then
    [ -x "$gb/shakespeare-train" ] ||
      { echo "device_all.sh: error: no $gb/shakespeare-train: run scripts/test_emulated_gpu.sh first" >&2; exit 2; }
    stand_in=$(mktemp -d "${TMPDIR:-/tmp}/sk-rehearse-XXXXXX")
    trap 'rm -rf "$stand_in"' EXIT
    printf '#!/bin/sh\ncase "$*" in *name*) echo "Emulated device (rehearsal), 0 MiB" ;; esac\n' > "$stand_in/nvidia-smi"
    chmod +x "$stand_in/nvidia-smi"
    export PATH="$stand_in:$PATH"
    build_all() { echo "rehearsal: the emulated build $gb"; cmake --build "$gb" -j 2 >/dev/null && echo "device_build: ok"; }
  fi
  export gb
  step "preflight and build" build.log timeout 45 bash -c "$(declare -f preflight build_all); build_all"
  step "GPU tests" gpu-tests.log with_env timeout 60 ctest --test-dir "$gb" -L gpu --output-on-failure -j 4 \
    --timeout 55
  probe_variants=auto/auto/auto,cudnn/fp32/on,persistent/fp32/on,persistent/tf32/on/on,persistent/bf16/on/on
  probe_variants+=,persistent-cluster/tf32/on/on,persistent-cluster/bf16/on/on
  step "benchmark and time to quality" bench-gpu.txt env BENCH_COMMIT="$commit" timeout 250 bash scripts/bench_gpu.sh \
    --skip-build --build-dir "$gb" --out "$out/bench-gpu.raw" --steps 100 --timeout 40 --time-to-quality --ttq-seeds 3 \
    --variants "${BENCH_VARIANTS:-$probe_variants}"
  rm -f "$out/bench-gpu.raw"
  step sampling sample-gpu.txt with_env env BENCH_COMMIT="$commit" timeout 95 bash scripts/bench_sample.sh "$gb"
  step probes probes.txt with_env bash -c "$(declare -f workbenches probes); out=\"\$1\"; probes" _ "$out"
  # The device tool returns 8 files from OUT at most, none more than two folders deep.
  files=$(find "$out" -type f | wc -l) deep=$(find "$out" -mindepth 4 | wc -l)
  echo "device_all: $out holds $files files, $deep entries more than two folders deep (limits: 8, 0)"
  [ "$files" -le 8 ] && [ "$deep" = 0 ] || { echo "device_all: OUT breaks the device tool's limits"; failed=1; }
  echo "device_all: finished in $((SECONDS - t0)) s$([ "$failed" = 1 ] && echo ', with failures (see above)')"
  exit "$failed"
fi

if [ "$only_quality" = 0 ] && [ "$only_sanitize" = 0 ]; then
  step preflight preflight.log preflight
  step build build.log bash scripts/device_build.sh
  step "GPU tests" gpu-tests.log with_env ctest --test-dir build-gpu -L gpu --output-on-failure -V --timeout 180
  step "CPU tests" cpu-tests.log with_env ctest --test-dir build-gpu -LE gpu --output-on-failure -j 16
  if [ "$bench" = 1 ]; then
    # bench_gpu.sh gives our trainer env.sh's library path itself and PyTorch this environment.
    step benchmark bench-gpu.txt env BENCH_COMMIT="$commit" bash scripts/bench_gpu.sh --skip-build \
      --build-dir build-gpu --out "$out/bench-gpu.raw" ${BENCH_VARIANTS:+--variants "$BENCH_VARIANTS"}
    rm -f "$out/bench-gpu.raw" # the same text is in bench-gpu.txt
    # Sampling at batch 1 and --score, on the CPU and the GPU (--device auto), side by side
    # (the GPU figures the README is to report).
    step sampling sample-gpu.txt with_env env BENCH_COMMIT="$commit" timeout 120 bash scripts/bench_sample.sh build-gpu
  fi
  if [ "$workbench" = 1 ]; then
    step workbench workbench.log with_env timeout 150 bash -c "$(declare -f workbenches); workbenches"
  fi
elif [ ! -x build-gpu/shakespeare-train ]; then
  step build build.log bash scripts/device_build.sh
fi

if [ "$sanitize" = 1 ]; then
  # Each tool over each program at a tiny shape (H = 40: not a multiple of 32; two layers with
  # dropout between them), 60 s per run at most (a tool that cannot follow a cooperative grid
  # would hang it). A report names the kernel and, from the build's -lineinfo, the source
  # line; one line per run says what was found. The libraries' own kernels (cuBLAS, cuDNN)
  # run under the tools too: a report naming one of theirs is theirs to weigh, not a fault
  # of ours.
  sanitize_all() { # $1: the folder for the tools' output
    local out=$1 cs rc=0 tool cmd r n
    cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    [ -x "$cs" ] || { echo "error: no compute-sanitizer on this machine (looked on PATH and in /usr/local/cuda/bin)"; return 1; }
    for tool in memcheck racecheck synccheck initcheck; do
      for cmd in "build-gpu/plstm_dots_check 20" "build-gpu/lstm_bench 3 8 40 2 5 1 all" \
        "build-gpu/step_bench 3 8 40 2 5 2 persistent 0.2 bf16 on" "build-gpu/step_bench 3 8 40 2 5 2 cudnn 0.2"; do
        echo "-- $tool: $cmd"
        # shellcheck disable=SC2086 # cmd is a program and its arguments
        timeout -k 10 60 "$cs" --tool "$tool" --error-exitcode 3 --print-limit 10 $cmd >"$out/sanitize.run" 2>&1
        r=$?
        cat "$out/sanitize.run"
        n=$(grep -Eo '(ERROR SUMMARY|RACECHECK SUMMARY): [0-9]+' "$out/sanitize.run" | tail -n 1 | grep -Eo '[0-9]+$')
        case $r in
          0) echo "sanitize: $tool ${cmd#build-gpu/}: clean (${n:-0} reported)" ;;
          3) echo "sanitize: $tool ${cmd#build-gpu/}: FOUND ${n:-some} (the reports above name the kernels)"; rc=1 ;;
          124) echo "sanitize: $tool ${cmd#build-gpu/}: TIMED OUT after 60 s"; rc=1 ;;
          *) echo "sanitize: $tool ${cmd#build-gpu/}: the program failed (exit $r)"; rc=1 ;;
        esac
      done
    done
    rm -f "$out/sanitize.run"
    return "$rc"
  }
  step compute-sanitizer sanitize.log with_env timeout 420 bash -c "$(declare -f sanitize_all); sanitize_all \"\$1\"" _ "$out"
fi

if [ "$quality" -gt 0 ]; then
  # The README's quality configuration. SIGTERM after $quality s writes a checkpoint; the
  # log keeps every validation loss and the done: line.
  # On tiny Shakespeare the best validation loss comes from regularization and from when the
  # learning rate anneals, not from how many steps fit (docs/benchmarks.md, "Training quality
  # on the CPU", has the measurements). So the run's cosine schedule spans QUALITY_EPOCHS
  # epochs (default 10), or as many steps as fit in S - 30 s if fewer, and the default model
  # (QUALITY_MODEL overrides it) is the best measured 10-epoch recipe (H=768, dropout 0.3,
  # weight drop 0.25 on W_hh, weight decay 0.1), whose 10 epochs need about 40k tokens/s to
  # fit in 300 s. QUALITY_MORE's default is the H=1024 recipe with dropout 0.35 and weight
  # drop 0.3, run in the same call when it fits. A 40-step calibration run measures this
  # GPU's speed for the time cap (evaluations included, 10% margin).
  # SIGTERM at S seconds still writes a checkpoint and the done: line.
  # QUALITY_MORE (default: the H=1024 recipe; "" for none) runs after the time to quality
  # when its whole schedule, as its own calibration predicts, fits in what is left of a
  # 10-minute command (570 s from the script's start); its log and metrics are
  # quality-more.log and metrics-more.jsonl (7 files in all: $OUT returns 8 at most).
  read -r -a quality_model <<<"${QUALITY_MODEL:---embed-size 128 --hidden-size 768 --num-layers 2 --dropout 0.3 --weight-drop 0.25 --weight-decay 0.1 --batch-size 32 --seq-length 128}"
  read -r -a quality_more <<<"${QUALITY_MORE---embed-size 128 --hidden-size 1024 --num-layers 2 --dropout 0.35 --weight-drop 0.3 --weight-decay 0.1 --batch-size 32 --seq-length 128}"
  # quality_run LIMIT_S METRICS NEED_ALL MODEL...: calibrates, then trains MODEL for
  # QUALITY_EPOCHS epochs or as many steps as fit in LIMIT_S if fewer (NEED_ALL=1: skips the
  # run, exit 0, when not every epoch fits), stopped by SIGTERM at LIMIT_S.
  quality_run() {
    local limit=$1 metrics=$2 need_all=$3 B=32 T=100 i tps iters windows cap
    shift 3
    local model=("$@")
    for ((i = 0; i < ${#model[@]} - 1; i++)); do
      case "${model[i]}" in --batch-size) B=${model[i + 1]} ;; --seq-length) T=${model[i + 1]} ;; esac
    done
    rm -rf /tmp/sk-quality /tmp/sk-quality-cal
    build-gpu/shakespeare-train --device cuda --out-dir /tmp/sk-quality-cal "${model[@]}" --max-iters 40 \
      --eval-every 0 --checkpoint-every 0 --log-every 20 >/tmp/sk-quality-cal.log 2>&1 || { cat /tmp/sk-quality-cal.log; return 1; }
    tps=$(grep -o 'median_tokens_per_s=[0-9.]*' /tmp/sk-quality-cal.log | tail -n 1 | cut -d= -f2)
    [ -n "$tps" ] || { cat /tmp/sk-quality-cal.log; return 1; }
    # Windows per epoch of the default 90% training split (the batcher's B streams of
    # (n - 1) / B characters, T at a time; the corpus is ASCII, so bytes are characters).
    windows=$(awk -v n="$(wc -c <data/tinyshakespeare.txt)" -v b="$B" -v t="$T" 'BEGIN { print int(int((int(0.9 * n) - 1) / b) / t) }')
    cap=$((windows * ${QUALITY_EPOCHS:-10}))
    iters=$(awk -v s="$limit" -v tps="$tps" -v bt=$((B * T)) -v cap=$cap \
      'BEGIN { n = int((s - 30) * tps / bt * 0.9); if (n > cap) n = cap; if (n < 100) n = 100; print n }')
    echo "quality: calibration ${tps} tokens/s at B=$B T=$T -> --max-iters $iters (cosine to the end; $windows steps an epoch," \
      "QUALITY_EPOCHS ${QUALITY_EPOCHS:-10}), ${limit} s limit"
    if [ "$need_all" = 1 ] && [ "$iters" -lt "$cap" ]; then
      echo "quality: skipped: $cap steps do not fit in ${limit} s at this speed"
      return 0
    fi
    timeout --preserve-status -s TERM "$limit" build-gpu/shakespeare-train --device cuda --out-dir /tmp/sk-quality \
      "${model[@]}" --lr 2e-3 --lr-schedule cosine --warmup-iters 200 --min-lr 1e-4 --max-epochs 0 \
      --max-iters "$iters" --eval-every $(((iters + 19) / 20)) --checkpoint-every 1000 --log "$metrics"
    local rc=$?
    [ "$rc" -eq 143 ] && return 0 # stopped by the time limit, after a checkpoint
    return "$rc"
  }
  step "quality run ($quality s)" quality.log with_env quality_run "$quality" "$out/metrics.jsonl" 0 "${quality_model[@]}"
  if [ "$ttq" = 1 ]; then
    step "time to quality" ttq.txt env BENCH_COMMIT="$commit" bash scripts/bench_gpu.sh --skip-build --build-dir build-gpu \
      --ttq-only --timeout 150 --out "$out/ttq.raw" ${BENCH_TTQ_VARIANT:+--ttq-variant "$BENCH_TTQ_VARIANT"}
    rm -f "$out/ttq.raw"
  fi
  left=$((570 - (SECONDS - t0)))
  if [ "${#quality_more[@]}" -gt 0 ] && [ "$left" -gt 90 ]; then
    step "second quality run (${left} s left)" quality-more.log with_env quality_run "$left" "$out/metrics-more.jsonl" 1 \
      "${quality_more[@]}"
  fi
fi
echo "device_all: finished in $((SECONDS - t0)) s$([ "$failed" = 1 ] && echo ', with failures (see above)')"
exit "$failed"
