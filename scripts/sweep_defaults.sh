#!/usr/bin/env bash
# The sweep that picks shakespeare-train's defaults on a CPU: each variant trains the model
# of the quick start (E=128, H=256, L=2, B=32, T=100) for 10 epochs, so the same steps and
# about the same work per step, with its own dropout and schedule, to the end, on one thread
# per run, as many runs at a time as there are cores. A variant's training curve does not
# depend on the load, only its wall time does: time the winner alone afterwards
# (scripts/train.sh), and each option's cost per step in paired short runs.
#
#   bash scripts/sweep_defaults.sh OUT_DIR ["NAME|OPTIONS" ...]
#
# Without variants it runs the ones below. Writes OUT_DIR/NAME.{log,metrics.jsonl} and prints
# one line per variant: best and final validation loss, final training loss, wall seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: sweep_defaults.sh OUT_DIR [\"NAME|OPTIONS\" ...]}
shift
train=${SK_TRAIN:-$root/build/shakespeare-train}
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(
    "d20-cosine|--dropout 0.2 --lr-schedule cosine"
    "d30-cosine|--dropout 0.3 --lr-schedule cosine")
mkdir -p "$out"
jobs_max=$(nproc)
for v in "${variants[@]}"; do
    name=${v%%|*} opts=${v#*|}
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    # shellcheck disable=SC2086 # opts is a list of options
    "$train" --device cpu --threads 1 --data "$root/data/tinyshakespeare.txt" --embed-size 128 --hidden-size 256 \
        --num-layers 2 --batch-size 32 --seq-length 100 --max-epochs 10 $opts \
        --out-dir "$out/$name.run" --overwrite --log "$out/$name.metrics.jsonl" > "$out/$name.log" 2>&1 &
done
wait
for v in "${variants[@]}"; do
    name=${v%%|*}
    final_val=$(grep '"val_loss"' "$out/$name.metrics.jsonl" | tail -n 1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
    done_line=$(grep '^done:' "$out/$name.log" || echo "done: (no done line: see $out/$name.log)")
    echo "$name  final_val_loss=$final_val  ${done_line#done: }  options: ${v#*|}"
    rm -rf "$out/$name.run"
done
