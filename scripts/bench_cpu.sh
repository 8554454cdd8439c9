#!/usr/bin/env bash
# bench_cpu.sh: CPU training throughput of shakespeare-train against PyTorch on the same job.
#
# Both sides train E=128, H=256, L=2, B=32, T=100, dropout 0 (no dropout: masks cost time
# differently in each and are not what is measured) with Adam and clipping, on
# data/tinyshakespeare.txt batched the same way (B streams, windows of T, state carried and
# detached), with the same thread count. A timed step is a full training step (forward,
# backward, clip, Adam); each side reports the median step time over the steps after its
# warm-up as tokens/s = B*T / median. The PyTorch side is scripts/bench_cpu_torch.py.
# Beside them (throughput mode): shakespeare-train --precision bf16 (oneDNN's LSTM in bf16, where
# the CPU has bf16 dot products), PyTorch under torch.autocast('cpu', bfloat16), and the LSTM stack
# alone (bench/cpu_lstm_bench: forward + backward of one window) in each implementation the CPU
# backend has: layer_cpu.c's recurrence (libxsmm, fp32), oneDNN's LSTM primitive in fp32 and bf16.
#
# Usage: scripts/bench_cpu.sh [--threads N] [--steps N] [--warmup N] [--build-dir DIR]
#                             [--data FILE] [--skip-torch] [--skip-ours] [--as-is]
#                             [--time-to-quality [F]] [--cell lstm|gru|rnn]
#   --threads  threads for both (default: nproc)      --steps   timed steps (default 30)
#   --warmup   untimed steps first (default 5)        --build-dir  (default: build)
# Env: PYTHON (default /usr/bin/python3, Debian's python3-torch); OMP_WAIT_POLICY (default
# PASSIVE): Debian's torch runs libgomp next to OpenBLAS's own pthreads, and GOMP's
# spin-waiting threads starve OpenBLAS's on a small machine (2 cores, 2 threads: 3.5k
# instead of 19k tokens/s). shakespeare's own threads are no OpenMP ones; oneDNN's LSTM (its bf16
# row and the oneDNN rows of the LSTM stack) runs on libgomp and is affected too: spinning is
# faster on a quiet machine, PASSIVE under load (bench/results/cpu-onednn-anchor-2026-11-28-773fb49).
# --cell: the recurrent cell of both sides (default lstm; shakespeare-train's --cell, and
# nn.LSTM, nn.GRU or nn.RNN on the PyTorch side).
# --as-is: leave OMP_WAIT_POLICY and OPENBLAS_CORETYPE as the environment has them (the
# out-of-the-box comparison); by default both sides get PyTorch's best settings here.
# --time-to-quality [F]: instead of step throughput, the wall time each side needs from its
# start until its validation loss (evaluated every 100 steps, evaluations included, the
# same protocol on both sides) is <= F (default 1.60): the same model, batch, Adam, learning
# rate (2e-3), clipping (5) and PyTorch's initialization family on both, each reading the
# training text in its stream order, one after the other in one run.
# Other processes on the machine skew both numbers: run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc)
steps=30
warmup=5
build="$root/build"
data="$root/data/tinyshakespeare.txt"
run_torch=1
run_ours=1
python=${PYTHON:-/usr/bin/python3}
defaults=0
ttq=""
cell=lstm
ttq_every=100
for a in "$@"; do [ "$a" = --as-is ] && defaults=1; done
if [ "$defaults" = 1 ]; then
  # --as-is: both programs exactly as a user would run them in this environment.
  export BENCH_OMP_AS_IS=1
else
  export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
fi
# OpenBLAS picks its kernels from the CPU unless OPENBLAS_CORETYPE forces a core. Some
# images set it (this project's development machines set Haswell: AVX2 kernels on an
# AVX-512 CPU, ~40% slower). Both sides run with autodetection unless
# BENCH_OPENBLAS_CORETYPE names a core.
if [ -n "${BENCH_OPENBLAS_CORETYPE:-}" ]; then export OPENBLAS_CORETYPE=$BENCH_OPENBLAS_CORETYPE
elif [ "$defaults" = 0 ]; then unset OPENBLAS_CORETYPE; fi
openblas_core=$("$python" -c 'import ctypes; f = ctypes.CDLL("libopenblas.so.0").openblas_get_corename; f.restype = ctypes.c_char_p; print(f().decode())' 2>/dev/null || echo unknown)
cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')

die() { echo "bench_cpu.sh: error: $*" >&2; exit 2; }
posint() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 expects a positive integer, got \"$2\""; }
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) [ $# -ge 2 ] || die "--threads needs a value"; posint "$1" "$2"; threads=$2; shift 2 ;;
    --steps) [ $# -ge 2 ] || die "--steps needs a value"; posint "$1" "$2"; steps=$2; shift 2 ;;
    --warmup) [ $# -ge 2 ] || die "--warmup needs a value"; [[ "$2" =~ ^[0-9]+$ ]] || die "--warmup expects an integer >= 0, got \"$2\""; warmup=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build=$2; shift 2 ;;
    --data) [ $# -ge 2 ] || die "--data needs a value"; data=$2; shift 2 ;;
    --skip-torch) run_torch=0; shift ;;
    --cell) [ $# -ge 2 ] || die "--cell needs a value"; cell=$2; shift 2 ;;
    --skip-ours) run_ours=0; shift ;;
    --as-is) shift ;;
    --time-to-quality)
      ttq=1.60; shift
      if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then ttq=$1; shift; fi ;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option \"$1\" (see --help)" ;;
  esac
done
[ -r "$data" ] || die "cannot read $data"

E=128 H=256 L=2 B=32 T=100 DROPOUT=0
ours_tps="" torch_tps="" torch_version="" ours_bf16_tps="" ours_bf16_why="" torch_bf16_tps="" lstm_rows=""

if [ "$run_ours" = 1 ]; then
  # Build (incremental: a no-op when up to date).
  blog=$(mktemp "${TMPDIR:-/tmp}/sk-bench-build-XXXXXX")
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" >"$blog" 2>&1 || { tail -n 30 "$blog" >&2; die "cmake configure failed"; }
  fi
  cmake --build "$build" -j "$(nproc)" --target shakespeare-train cpu_lstm_bench >"$blog" 2>&1 \
    || { tail -n 30 "$blog" >&2; die "build failed (cmake --build $build --target shakespeare-train cpu_lstm_bench)"; }
  rm -f "$blog"
  train="$build/shakespeare-train"
  [ -x "$train" ] || die "$train was not built"
  out=$(mktemp -d "${TMPDIR:-/tmp}/sk-bench-XXXXXX")
  trap 'rm -rf "$out"' EXIT
  log="$out/train.log"
  if [ -n "$ttq" ]; then
    # Time to quality: run until an evaluation prints a loss <= ttq, then stop the trainer.
    echo "shakespeare-train: until val_loss <= $ttq, $threads thread(s)..." >&2
    t0=$(date +%s.%N)
    : >"$log" # exists before the poll reads it (the background job's redirection may come later)
    "$train" --data "$data" --embed-size $E --hidden-size $H --num-layers $L --batch-size $B \
      --seq-length $T --dropout $DROPOUT --cell "$cell" --threads "$threads" --max-epochs 0 --max-iters 20000 \
      --eval-every $ttq_every --checkpoint-every 0 --log-every $ttq_every --out-dir "$out/run" --device cpu \
      >"$log" 2>&1 &
    pid=$!
    hit=""
    while [ -z "$hit" ] && kill -0 $pid 2>/dev/null; do
      hit=$(awk -v f="$ttq" '$1 == "iter" && $3 == "val_loss" && $4 <= f { print $2, $4; exit }' "$log")
      [ -n "$hit" ] || sleep 0.2
    done
    t1=$(date +%s.%N)
    kill $pid 2>/dev/null || true
    wait $pid 2>/dev/null || true
    [ -n "$hit" ] || { tail -n 20 "$log" >&2; die "shakespeare-train ended before val_loss <= $ttq"; }
    ours_ttq=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    ours_ttq_at=$hit
    grep -E '^iter [0-9]+ val_loss' "$log" | sed 's/^/shakespeare /' >&2
  fi
  if [ -z "$ttq" ]; then
  echo "shakespeare-train: $((warmup + steps)) steps, $threads thread(s)..." >&2
  "$train" --data "$data" --embed-size $E --hidden-size $H --num-layers $L --batch-size $B \
    --seq-length $T --dropout $DROPOUT --cell "$cell" --threads "$threads" --max-iters $((warmup + steps)) \
    --eval-every 0 --checkpoint-every 0 --out-dir "$out/run" --device cpu >"$log" 2>&1 \
    || { tail -n 20 "$log" >&2; die "shakespeare-train failed"; }
  ours_tps=$(grep -o 'median_tokens_per_s=[0-9.eE+-]*' "$log" | tail -n 1 | cut -d= -f2)
  [ -n "$ours_tps" ] || { tail -n 20 "$log" >&2; die "no median_tokens_per_s= in shakespeare-train's output"; }
  echo "shakespeare-train --precision bf16: $((warmup + steps)) steps, $threads thread(s)..." >&2
  if "$train" --data "$data" --embed-size $E --hidden-size $H --num-layers $L --batch-size $B \
      --seq-length $T --dropout $DROPOUT --cell "$cell" --threads "$threads" --max-iters $((warmup + steps)) --precision bf16 \
      --eval-every 0 --checkpoint-every 0 --out-dir "$out/run-bf16" --device cpu >"$log" 2>&1; then
    ours_bf16_tps=$(grep -o 'median_tokens_per_s=[0-9.eE+-]*' "$log" | tail -n 1 | cut -d= -f2)
  else
    ours_bf16_why=$(grep -m1 '^error:' "$log" || tail -n 1 "$log")
  fi
  echo "the LSTM stack alone (bench/cpu_lstm_bench), $threads thread(s)..." >&2
  lstm_rows=$("$build/cpu_lstm_bench" $B $T $E $H $L "$threads" "$steps") || die "cpu_lstm_bench failed"
  fi
fi

if [ "$run_torch" = 1 ] && [ -n "$ttq" ]; then
  echo "pytorch: until val_loss <= $ttq, $threads thread(s)..." >&2
  tline=$("$python" "$root/scripts/bench_cpu_torch.py" --data "$data" --embed-size $E --hidden-size $H \
    --num-layers $L --batch-size $B --seq-length $T --dropout $DROPOUT --cell "$cell" --threads "$threads" \
    --target-val "$ttq" --eval-every $ttq_every) || die "scripts/bench_cpu_torch.py did not reach $ttq"
  torch_ttq=$(grep -o 'time_to_target_s=[0-9.]*' <<<"$tline" | cut -d= -f2)
  torch_ttq_at="$(grep -o ' steps=[0-9]*' <<<"$tline" | cut -d= -f2) $(grep -o 'val_loss=[0-9.]*' <<<"$tline" | cut -d= -f2)"
  torch_version=$(grep -o 'torch_version=[^ ]*' <<<"$tline" | cut -d= -f2)
elif [ "$run_torch" = 1 ]; then
  echo "pytorch: $warmup + $steps steps, $threads thread(s)..." >&2
  tline=$("$python" "$root/scripts/bench_cpu_torch.py" --data "$data" --embed-size $E --hidden-size $H \
    --num-layers $L --batch-size $B --seq-length $T --dropout $DROPOUT --cell "$cell" --threads "$threads" \
    --warmup "$warmup" --steps "$steps") || die "scripts/bench_cpu_torch.py failed"
  torch_tps=$(grep -o 'median_tokens_per_s=[0-9.eE+-]*' <<<"$tline" | cut -d= -f2)
  torch_version=$(grep -o 'torch_version=[^ ]*' <<<"$tline" | cut -d= -f2)
  echo "pytorch, autocast bf16: $warmup + $steps steps, $threads thread(s)..." >&2
  tline=$("$python" "$root/scripts/bench_cpu_torch.py" --data "$data" --embed-size $E --hidden-size $H \
    --num-layers $L --batch-size $B --seq-length $T --dropout $DROPOUT --cell "$cell" --threads "$threads" \
    --warmup "$warmup" --steps "$steps" --autocast-bf16) || die "scripts/bench_cpu_torch.py --autocast-bf16 failed"
  torch_bf16_tps=$(grep -o 'median_tokens_per_s=[0-9.eE+-]*' <<<"$tline" | cut -d= -f2)
fi

if [ -n "$ttq" ]; then
  echo "CPU time to quality: wall time until validation loss <= $ttq (evaluated every $ttq_every steps), E=$E H=$H L=$L B=$B T=$T dropout=$DROPOUT, Adam lr 2e-3 + clip 5, PyTorch's initialization, $(basename "$data")"
  echo "machine: $cpu_model, $(nproc) cores; OpenBLAS kernels: $openblas_core; OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; $(date -u +%Y-%m-%dT%H:%MZ); commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf '%-24s %8s %10s %10s %12s\n' implementation threads step val_loss seconds
  [ -n "${ours_ttq:-}" ] && printf '%-24s %8s %10s %10s %12s\n' shakespeare "$threads" $ours_ttq_at "$ours_ttq"
  [ -n "${torch_ttq:-}" ] && printf '%-24s %8s %10s %10s %12s\n' "pytorch $torch_version" "$threads" $torch_ttq_at "$torch_ttq"
  if [ -n "${ours_ttq:-}" ] && [ -n "${torch_ttq:-}" ]; then
    awk -v a="$ours_ttq" -v b="$torch_ttq" 'BEGIN { printf "speed-up shakespeare/pytorch (time to quality): %.2f\n", b / a }'
  fi
  exit 0
fi
echo "CPU training benchmark: E=$E H=$H L=$L B=$B T=$T dropout=$DROPOUT, Adam + clip, $steps timed steps after $warmup warm-up, $(basename "$data")"
echo "machine: $cpu_model, $(nproc) cores; OpenBLAS kernels: $openblas_core; OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; $(date -u +%Y-%m-%dT%H:%MZ); commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%-24s %8s %14s\n' implementation threads tokens/s
[ -n "$ours_tps" ] && printf '%-24s %8s %14.1f\n' shakespeare "$threads" "$ours_tps"
[ -n "$torch_tps" ] && printf '%-24s %8s %14.1f\n' "pytorch $torch_version" "$threads" "$torch_tps"
[ -n "${ours_bf16_tps:-}" ] && printf '%-24s %8s %14.1f\n' "shakespeare bf16" "$threads" "$ours_bf16_tps"
[ -n "${ours_bf16_why:-}" ] && printf '%-24s %8s %14s  %s\n' "shakespeare bf16" "$threads" - "$ours_bf16_why"
[ -n "${torch_bf16_tps:-}" ] && printf '%-24s %8s %14.1f\n' "pytorch autocast bf16" "$threads" "$torch_bf16_tps"
[ -n "${lstm_rows:-}" ] && echo "$lstm_rows"
if [ -n "${ours_bf16_tps:-}" ] && [ -n "$ours_tps" ]; then
  awk -v a="$ours_bf16_tps" -v b="$ours_tps" 'BEGIN { printf "ratio shakespeare bf16/fp32: %.2f\n", a / b }'
fi
if [ -n "${ours_bf16_tps:-}" ] && [ -n "$torch_tps" ]; then
  awk -v a="$ours_bf16_tps" -v b="$torch_tps" 'BEGIN { printf "ratio shakespeare bf16/pytorch fp32: %.2f\n", a / b }'
fi
if [ -n "$ours_tps" ] && [ -n "$torch_tps" ]; then
  awk -v a="$ours_tps" -v b="$torch_tps" 'BEGIN { printf "ratio shakespeare/pytorch: %.2f\n", a / b }'
fi
