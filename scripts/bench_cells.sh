#!/usr/bin/env bash
# bench_cells.sh: each recurrent cell (lstm, gru, rnn) at config A on the CPU, for the same wall
# time: its training throughput and the validation loss it reached.
#
# Config A: E=128, H=256, L=2, B=32, T=100, dropout 0, Adam at 2e-3 with a constant rate,
# clipping 5, on data/tinyshakespeare.txt (the 90/10 split every run uses). Each cell trains
# for SECONDS of wall time (the run is stopped by SIGTERM, which ends it cleanly), evaluating
# every EVAL steps on 65,536 validation tokens; the cells run one after the other in one
# invocation. Reported per cell: the median tokens/s of its logged steps, its steps, and the
# last validation loss evaluated within the budget, read from its metrics.jsonl (the time of
# an evaluation counts against the budget, the same for every cell).
#
# Usage: scripts/bench_cells.sh [--seconds N] [--threads N] [--eval-every N] [--build-dir DIR]
#                               [--out DIR] [--cells "lstm gru rnn"]
# Other processes on the machine skew the figures: run it on an idle machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=180 threads=$(nproc) eval_every=100 build="$root/build" out="" cells="lstm gru rnn"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --eval-every) eval_every=$2; shift 2 ;;
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    *) echo "bench_cells.sh: unknown argument '$1' (see the usage at the top of the script)" >&2; exit 2 ;;
  esac
done
train="$build/shakespeare-train"
[ -x "$train" ] || { echo "bench_cells.sh: $train not found: run scripts/build.sh first" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp -d)
mkdir -p "$out"

echo "# bench_cells.sh: config A (E=128 H=256 L=2 B=32 T=100), $threads threads, ${seconds}s a cell"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores;" \
     "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); $(date -u +%FT%TZ)"
printf '%-5s %12s %8s %14s %10s\n' cell tokens/s steps val_loss@iter val_at_s
for cell in $cells; do
  dir="$out/$cell"
  rm -rf "$dir"
  timeout -s TERM -k 30 "$seconds" "$train" --cell "$cell" --embed-size 128 --hidden-size 256 --num-layers 2 \
    --batch-size 32 --seq-length 100 --dropout 0 --lr 2e-3 --lr-schedule constant --grad-clip 5 \
    --max-epochs 0 --max-iters 1000000 --eval-every "$eval_every" --eval-tokens 65536 --checkpoint-every 0 \
    --sample-every 0 --log-every 10 --threads "$threads" --seed 1 --out-dir "$dir" >"$out/$cell.log" 2>&1 || true
  python3 - "$dir/metrics.jsonl" "$cell" "$seconds" <<'EOF'
import json, statistics, sys
path, cell, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
rows = [json.loads(l) for l in open(path) if l.strip()]
steps = [r for r in rows if "tokens_per_s" in r]
vals = [r for r in rows if "val_loss" in r and r["elapsed_s"] <= budget]
tps = statistics.median(r["tokens_per_s"] for r in steps[len(steps) // 10:]) if steps else float("nan")
v = vals[-1] if vals else {"val_loss": float("nan"), "iter": -1, "elapsed_s": float("nan")}
print(f'{cell:<5} {tps:12.0f} {steps[-1]["iter"] if steps else 0:8d} {v["val_loss"]:8.4f}@{v["iter"]:<5d} {v["elapsed_s"]:10.1f}')
EOF
done
echo "# raw logs and metrics: $out"
