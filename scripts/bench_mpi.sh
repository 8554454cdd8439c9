#!/usr/bin/env bash
# bench_mpi.sh: data-parallel CPU training throughput against threads, in one run.
#
# The same job three ways, same global batch (config A of bench_gpu.sh: E=128 H=256 L=2
# B=32 T=100, dropout 0, Adam + clip, data/tinyshakespeare.txt):
#   1 process  x 1 thread     the baseline
#   1 process  x 2 threads    the backend's own threads (parallel.h)
#   2 ranks    x 1 thread     mpirun -np 2: half the streams each, gradients all-reduced
# tokens/s = B*T / median step time (shakespeare-train's median_tokens_per_s); the rounds
# alternate the three so that load from other processes falls on all of them. Then the
# all-reduce of the gradient buffer alone (bench/allreduce_bench.c through comm.h) at the
# sizes of configs A and B: the one number the cost model in docs/ALLREDUCE_COST_MODEL.md
# rests on, measured here.
#
# Usage: scripts/bench_mpi.sh [--steps N] [--rounds N] [--build-dir DIR] [--data FILE]
#   --steps  steps per run (default 40)    --rounds  alternations of the three runs (default 2)
# Needs a build with MPI (scripts/setup.sh installs OpenMPI). Output: a plain-text report on
# stdout; commit it under bench/results/ with the date, the machine and the commit.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
steps=40 rounds=2
build="$root/build"
data="$root/data/tinyshakespeare.txt"
die() { echo "bench_mpi.sh: error: $*" >&2; exit 2; }
posint() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "$1 expects a positive integer, got \"$2\""; }
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) [ $# -ge 2 ] || die "--steps needs a value"; posint "$1" "$2"; steps=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds needs a value"; posint "$1" "$2"; rounds=$2; shift 2 ;;
    --build-dir) [ $# -ge 2 ] || die "--build-dir needs a value"; build=$2; shift 2 ;;
    --data) [ $# -ge 2 ] || die "--data needs a value"; data=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option \"$1\" (see --help)" ;;
  esac
done
[ -r "$data" ] || die "cannot read $data"
mpirun=$(command -v mpirun) || die "mpirun not found: run scripts/setup.sh (OpenMPI), then scripts/build.sh"
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" > /dev/null
cmake --build "$build" -j "$(nproc)" --target shakespeare-train allreduce_bench > /dev/null \
  || die "build failed (cmake --build $build)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
MPI=("$mpirun" -q --oversubscribe --allow-run-as-root --bind-to none)

E=128 H=256 L=2 B=32 T=100 V=65
out=$(mktemp -d "${TMPDIR:-/tmp}/sk-bench-mpi-XXXXXX")
trap 'rm -rf "$out"' EXIT
JOB=(--data "$data" --embed-size $E --hidden-size $H --num-layers $L --batch-size $B --seq-length $T --dropout 0
     --max-iters "$steps" --eval-every 0 --checkpoint-every 0 --log-every 1000 --device cpu)
# run NAME CMD...: one training run; prints its median tokens/s.
run() {
  local name=$1; shift
  "$@" "${JOB[@]}" --out-dir "$out/$name" > "$out/$name.log" 2>&1 || { tail -n 5 "$out/$name.log" >&2; die "$name failed"; }
  grep -q 'data-parallel over 2 ranks' "$out/$name.log" || [ "$name" != ranks2 ] || die "mpirun did not start 2 ranks (a build without MPI?)"
  grep -o 'median_tokens_per_s=[0-9.]*' "$out/$name.log" | cut -d= -f2
}
declare -A tps
for ((r = 1; r <= rounds; r++)); do
  tps[p1t1]+="$(run p1t1 "$build/shakespeare-train" --threads 1) "
  tps[p1t2]+="$(run p1t2 "$build/shakespeare-train" --threads 2) "
  tps[ranks2]+="$(run ranks2 "${MPI[@]}" -np 2 "$build/shakespeare-train" --threads 1) "
done
best() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | tail -n 1; }

# Gradient buffer sizes (floats): embedding V*E, per layer 4H*(in + H) + 8H, fc V*H + V.
params() { local E=$1 H=$2 L=$3 n=$((V * $1 + V * $2 + V)) k in; for ((k = 0; k < L; k++)); do
  in=$([ $k = 0 ] && echo "$E" || echo "$H"); n=$((n + 4 * H * (in + H) + 8 * H)); done; echo $n; }
pa=$(params 128 256 2) pb=$(params 256 512 4)
ar1=$("${MPI[@]}" -np 1 "$build/allreduce_bench" "$pa" "$pb")
ar2=$("${MPI[@]}" -np 2 "$build/allreduce_bench" "$pa" "$pb")

cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo "MPI data-parallel CPU benchmark: E=$E H=$H L=$L B=$B (global) T=$T dropout 0, $steps steps per run, $rounds rounds, $(basename "$data")"
echo "machine: $cpu_model, $(nproc) cores; $("$mpirun" --version | head -n 1); $(date -u +%Y-%m-%dT%H:%MZ); commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%-26s %14s   %s\n' run 'best tokens/s' 'every round'
printf '%-26s %14.0f   %s\n' '1 process x 1 thread' "$(best "${tps[p1t1]}")" "${tps[p1t1]}"
printf '%-26s %14.0f   %s\n' '1 process x 2 threads' "$(best "${tps[p1t2]}")" "${tps[p1t2]}"
printf '%-26s %14.0f   %s\n' '2 ranks x 1 thread' "$(best "${tps[ranks2]}")" "${tps[ranks2]}"
awk -v a="$(best "${tps[ranks2]}")" -v b="$(best "${tps[p1t2]}")" -v c="$(best "${tps[p1t1]}")" \
  'BEGIN { printf "ratio 2 ranks / 2 threads: %.2f; 2 ranks / 1 thread: %.2f; 2 threads / 1 thread: %.2f\n", a / b, a / c, b / c }'
echo "gradient all-reduce (config A: $pa floats, config B: $pb floats), 20 timed calls after 3:"
echo "$ar1"
echo "$ar2"
