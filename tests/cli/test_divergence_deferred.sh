#!/usr/bin/env bash
# test_divergence_deferred.sh: one process reads the loss and the gradient norm back only at
# log, evaluation, checkpoint and sample steps (backend.h's deferred path); a non-finite
# step between two read-backs must still stop the run as if it had been checked at once:
#   - the message names the same step as a run that reads back every step (--log-every 1
#     --checkpoint-every 1, what tests/cli/test_divergence.sh checks);
#   - the checkpoint kept is the last one written before that step (every 3 steps here),
#     bit for bit the checkpoint of a run that simply stops at that step;
#   - no progress line or metrics record names a step at or after the bad one.
# The bad step is test_divergence.sh's: a parameter made NaN just before step 8
# (SHAKESPEARE_TEST_POISON_STEP), the same on every machine; no validation split, whose loss at
# the end of the stopped run would already be nan.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 11
export SHAKESPEARE_TEST_POISON_STEP=8
R=("$SK_TRAIN" "${TINY[@]}" --data text.txt --val-frac 0 --eval-every 0)
re='^error: (training loss|gradient norm) is -?(nan|inf) at step ([0-9]+); stopping \(the last checkpoint is kept\); try a lower learning rate \(--lr\)$'

# Each run's one error line; a note before it (a machine's slow-BLAS notice) is not part of the stop.
errline() { grep -v '^note: ' "$1" | head -n 1; }
timeout 60 "${R[@]}" --out-dir every --max-iters 200 --log-every 1 --checkpoint-every 1 > every.out 2> every.err
[[ $(errline every.err) =~ $re ]] && want=${BASH_REMATCH[3]} || { fail "reference run: $(cat every.err)"; finish; }
note "read back every step: stops at step $want"
[ "$want" = 8 ] || { fail "diverged at step $want, want 8"; finish; }

timeout 60 "${R[@]}" --out-dir late --max-iters 200 --log-every 1000 --checkpoint-every 3 > late.out 2> late.err
rc=$?
[ "$rc" = 1 ] || fail "exit code $rc, want 1"
[ "$(grep -vc '^note: ' late.err)" = 1 ] || fail "want one stderr line, got: $(cat late.err)"
if [[ $(errline late.err) =~ $re ]]; then
    [ "${BASH_REMATCH[3]}" = "$want" ] && note "read back every 3 steps: the same step, $want, and the same message" ||
        fail "read back every 3 steps: step ${BASH_REMATCH[3]}, want $want"
    [ "$(errline late.err)" = "$(errline every.err)" ] || fail "messages differ: $(cat late.err) vs $(cat every.err)"
else
    fail "unexpected message: $(cat late.err)"
fi
kept=$(( (want - 1) / 3 * 3 ))
[ "$(state_step late/last.safetensors)" = "$kept" ] && note "last.* holds step $kept" ||
    fail "last.* holds step $(state_step late/last.safetensors), want $kept"
grep -q "\"iter\":$want," late/metrics.jsonl && fail "metrics.jsonl has a record of step $want"
# The kept checkpoint is the one a run that stops there writes.
expect_ok "${R[@]}" --out-dir stop --max-iters "$kept" --log-every 1000 --checkpoint-every 3 &&
    { same_tensors late/last.safetensors stop/last.safetensors && note "the kept checkpoint is bit-identical to a run stopped at $kept" ||
      fail "the kept checkpoint differs from a run stopped at step $kept"; }

finish
