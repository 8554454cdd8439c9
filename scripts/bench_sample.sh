#!/usr/bin/env bash
# bench_sample.sh: resident memory and CPU time of shakespeare-sample at config A (E=128,
# H=256, L=2; a checkpoint trained 5 steps: speed and memory do not depend on the weights),
# one thread, for each build directory given (default: build), side by side in one run:
#   sampling 20,000 characters and scoring the first 100,000 characters of the corpus, with
#   --device cpu and --device auto, and --help (what loading the program alone costs).
# Each line: BUILD  WHAT  DEVICE  max resident (KB, /usr/bin/time %M)  user s  characters/s.
# Usage: scripts/bench_sample.sh [BUILD_DIR...]   (the first one trains the checkpoint)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$root/build"
[ -x /usr/bin/time ] || { echo "bench_sample.sh: error: /usr/bin/time not found (Debian package time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$1/shakespeare-train" --data "$root/data/tinyshakespeare.txt" --embed-size 128 --hidden-size 256 --num-layers 2 \
    --max-iters 5 --eval-every 0 --device cpu --threads 1 --out-dir "$tmp/ck" > "$tmp/train.log" 2>&1 ||
    { cat "$tmp/train.log" >&2; exit 1; }
head -c 100000 "$root/data/tinyshakespeare.txt" > "$tmp/score.txt"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
printf '%-28s %-8s %-6s %12s %8s %12s\n' build what device resident_KB user_s chars_per_s
measure() { # BUILD WHAT DEVICE CHARS ARGS...
    local b=$1 what=$2 dev=$3 chars=$4; shift 4
    /usr/bin/time -o "$tmp/t" -f "%M %U" "$b/shakespeare-sample" "$@" > /dev/null 2> "$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    read -r kb user < "$tmp/t"
    local rate=-
    [ "$chars" -gt 0 ] && rate=$(awk -v c="$chars" -v u="$user" 'BEGIN { printf "%.0f", (u > 0 ? c / u : 0) }')
    printf '%-28s %-8s %-6s %12s %8s %12s\n' "$(basename "$b")" "$what" "$dev" "$kb" "$user" "$rate"
}
for b in "$@"; do
    measure "$b" help - 0 --help
    for dev in cpu auto; do
        measure "$b" sample "$dev" 20000 --checkpoint "$tmp/ck/last.safetensors" --length 20000 --threads 1 --device "$dev"
        measure "$b" score "$dev" 99999 --checkpoint "$tmp/ck/last.safetensors" --score "$tmp/score.txt" --threads 1 --device "$dev"
    done
done
