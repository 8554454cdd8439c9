#!/usr/bin/env bash
# bench_sample.sh: memory, CPU time and wall-clock speed of shakespeare-sample at config A
# (E=128, H=256, L=2; a checkpoint trained 5 steps: speed and memory do not depend on the
# weights), one thread, for each build directory given (default: build), side by side in
# one run: sampling with --num-samples N = 1, 16 and 256 (WHAT sample/N; N streams; 20,000,
# 64,000 and 128,000 characters in all, ten times that on the fused GPU sampler) and scoring
# the first 100,000 characters of the corpus, on each device (below), and --help (what loading
# the program alone costs).
# Each line: BUILD  WHAT  DEVICE  max resident (KB) and user s (/usr/bin/time %M %U; "-"
# where the machine has no /usr/bin/time, as the GPU image)  characters per user second
# (CPU time: steady on a shared machine, meaningless for a GPU)  wall s  characters per wall
# second after start-up (the wall time of the same command on 1 character subtracted: the
# program's start, the checkpoint load and the device's initialization; the GPU's figure).
# Usage: scripts/bench_sample.sh [BUILD_DIR...]   (the first one trains the checkpoint)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$root/build"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$1/shakespeare-train" --data "$root/data/tinyshakespeare.txt" --embed-size 128 --hidden-size 256 --num-layers 2 \
    --max-iters 5 --eval-every 0 --device cpu --threads 1 --out-dir "$tmp/ck" > "$tmp/train.log" 2>&1 ||
    { cat "$tmp/train.log" >&2; exit 1; }
head -c 100000 "$root/data/tinyshakespeare.txt" > "$tmp/score.txt"
head -c 2 "$root/data/tinyshakespeare.txt" > "$tmp/score1.txt" # one prediction: start-up alone
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: ${BENCH_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'
timer=(); [ -x /usr/bin/time ] && timer=(/usr/bin/time -o "$tmp/t" -f "%M %U")
row='%-28s %-10s %-6s %12s %8s %12s %8s %12s\n'
printf "$row" build what device resident_KB user_s chars_per_s wall_s chars_per_wall_s
# wall ARGS...: runs build $b's shakespeare-sample with ARGS (under /usr/bin/time where there is
# one) and prints its wall seconds.
wall() {
    local t0 t1
    t0=$(date +%s%N)
    env "${envs[@]}" "${timer[@]}" "$b/shakespeare-sample" "$@" > /dev/null 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}
measure() { # WHAT DEVICE CHARS STARTUP_ARGS -- ARGS...: one row; CHARS 0: no rates; the start-up run makes 1
    local what=$1 dev=$2 chars=$3 startup=() w0=0 w kb=- user=- rate=- wrate=-
    shift 3
    while [ "$1" != -- ]; do startup+=("$1"); shift; done
    shift
    [ ${#startup[@]} -gt 0 ] && w0=$(wall "${startup[@]}")
    w=$(wall "$@")
    [ ${#timer[@]} -gt 0 ] && read -r kb user < "$tmp/t"
    if [ "$chars" -gt 0 ]; then
        [ "$user" != - ] && rate=$(awk -v c="$chars" -v u="$user" 'BEGIN { printf "%.0f", (u > 0 ? c / u : 0) }')
        # The start-up run made 1 character: the rest came in w - w0.
        wrate=$(awk -v c="$chars" -v w="$w" -v w0="$w0" 'BEGIN { printf "%.0f", (w > w0 ? (c - 1) / (w - w0) : 0) }')
    fi
    printf "$row" "$(basename "$b")" "$what" "$dev" "$kb" "$user" "$rate" "$w" "$wrate"
}
# Devices: with a GPU (nvidia-smi answers), first the fused sampler (cuda: one kernel per chunk
# of characters), then the per-character forward loop it replaced (cuda-loop: the same program
# with --no-fused-sampler), then the CPU; without one, the CPU alone. The fused rows
# draw ten times the characters: at their speed the smaller counts end in a fraction of a second.
# cpu-bf16: the CPU with --precision bf16 (bf16 weights, fp32 sums), beside fp32 in the same run.
devices=(cpu cpu-bf16) envs=()
nvidia-smi -L > /dev/null 2>&1 && devices=(cuda cuda-loop cpu cpu-bf16)
for b in "$@"; do
    measure help - 0 -- --help
    for dev in "${devices[@]}"; do
        sizes="1:20000 16:4000 256:500" # --num-samples N : --length (N x length characters)
        loop=() envs=() prec=()
        case $dev in
            cpu-bf16) prec=(--precision bf16) ;;
            cuda) sizes="1:200000 16:40000 256:5000" ;;
            cuda-loop) loop=(--no-fused-sampler) # builds older than the flag read the environment
                "$b/shakespeare-sample" --no-fused-sampler --help > /dev/null 2>&1 ||
                    { loop=(); envs=(SHAKESPEARE_FUSED_SAMPLER=0); } ;;
        esac
        base=${dev%-loop}
        common=(--checkpoint "$tmp/ck/last.safetensors" --threads 1 --device "${base%-bf16}" "${loop[@]}" "${prec[@]}")
        for nl in $sizes; do
            ns=${nl%%:*} len=${nl##*:}
            measure "sample/$ns" "$dev" $((ns * len)) "${common[@]}" --num-samples "$ns" --length 1 -- \
                "${common[@]}" --num-samples "$ns" --length "$len"
        done
        measure score "$dev" 99999 "${common[@]}" --score "$tmp/score1.txt" -- "${common[@]}" --score "$tmp/score.txt"
    done
done
# The fused sampler's device time a character at batch 1: ncu's gpu__time_duration of every
# sampling-kernel launch of an 8,000-character sample, summed, over the characters (the wall
# figure above less the host's share; the cost model's prediction is per character on the device).
if [ "${devices[0]}" = cuda ] && command -v ncu > /dev/null; then
    for b in "$@"; do
        ncu --clock-control none -k regex:sample_kernel --metrics gpu__time_duration.sum --csv "$b/shakespeare-sample" \
            --checkpoint "$tmp/ck/last.safetensors" --device cuda --num-samples 1 --length 8000 > "$tmp/ncu.csv" 2> /dev/null ||
            { echo "$(basename "$b") ncu on the sampling kernel failed"; continue; }
        python3 - "$tmp/ncu.csv" "$(basename "$b")" <<'PY'
import csv, sys
scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
us = sum(float(r["Metric Value"].replace(",", "")) * scale[r["Metric Unit"]] for r in rows)
print(f"{sys.argv[2]} sampling kernel, batch 1: {len(rows)} launches, {us:.0f} us on the device, "
      f"{us / 8000:.2f} us a character ({8000 / us * 1e6:.0f} characters/s of device time)")
PY
    done
fi
