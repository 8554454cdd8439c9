#!/usr/bin/env bash
# test_probe_precision_script.sh: scripts/probe_precision.py's own logic, without a GPU. A stand-in
# shakespeare-train prints a done line whose best_val_loss depends on the precision and seed.
# Checked: one run line per seed and precision, with the loss, the wall time and auto's choice;
# the verdict's medians and agree=yes within 0.01, agree=no beyond; a failed run is reported
# with its last lines and left out of the medians; bad arguments are refused.
. "$(dirname "$0")/lib.sh"

probe="$SK_SOURCE_DIR/scripts/probe_precision.py"
mkdir -p b
cat > b/shakespeare-train <<'STUB'
#!/bin/bash
args="$*"
seed=$(grep -o -- '--seed [0-9]*' <<<"$args" | cut -d' ' -f2)
gap=${STUB_GAP:-0.004}
if [[ "$args" == *"--precision bf16"* ]]; then
  [ "${STUB_FAIL_SEED:-}" = "$seed" ] && { echo "error: a stand-in failure" >&2; exit 1; }
  loss=$(awk -v s="$seed" -v g="$gap" 'BEGIN { printf "%.4f", 1.42 + s / 100 + g }')
  echo "note: --rnn-impl auto: persistent-layerwise (tensor cores), the fastest of 4 measured in 1.1 s" >&2
else
  loss=$(awk -v s="$seed" 'BEGIN { printf "%.4f", 1.42 + s / 100 }')
  echo "note: --rnn-impl auto: cudnn, the fastest of 5 measured in 1.3 s" >&2
fi
echo "done: steps=10 best_val_loss=$loss best_step=10 wall_s=2.5 backend=cuda"
STUB
chmod +x b/shakespeare-train

python3 "$probe" --build-dir b --seeds 3 --epochs 1 --timeout 10 > a.out 2>&1; rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '^run ' a.out)" = 6 ] &&
    grep -q '^run precision=bf16 seed=2 best_val_loss=1.4440 wall_s=2.5 rnn_impl=persistent-layerwise rc=0$' a.out &&
    grep -q '^verdict tf32_median=1.4400 bf16_median=1.4440 diff=0.0040 agree=yes ' a.out &&
    note "$(grep '^verdict' a.out)" || fail "agreeing runs: exit $rc, $(cat a.out)"

STUB_GAP=0.02 python3 "$probe" --build-dir b --seeds 3 --epochs 1 --timeout 10 > n.out 2>&1
grep -q '^verdict .* diff=0.0200 agree=no ' n.out && note "$(grep '^verdict' n.out)" || fail "a 0.02 gap: $(cat n.out)"

STUB_FAIL_SEED=2 python3 "$probe" --build-dir b --seeds 3 --epochs 1 --timeout 10 > f.out 2>&1
grep -q '^run precision=bf16 seed=2 best_val_loss=none .* rc=1$' f.out && grep -q 'a stand-in failure' f.out &&
    grep -q '^verdict tf32_median=1.4400 bf16_median=1.4440 .* runs=3+2$' f.out &&
    note "a failed run is reported and left out" || fail "failed run: $(cat f.out)"

python3 "$probe" --build-dir b --seeds 0 > z.out 2>&1 && fail "--seeds 0 accepted" ||
    { grep -q 'must be positive' z.out && note "--seeds 0 refused"; }
python3 "$probe" --build-dir nowhere > z.out 2>&1 && fail "a missing build accepted" ||
    { grep -q 'is not built' z.out && note "a missing build refused"; }
finish
