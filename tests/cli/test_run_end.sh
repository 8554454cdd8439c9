#!/usr/bin/env bash
# test_run_end.sh: how a run ends, as the user reads it.
#   - the done line names the limit that ended the run: ended_by=--max-iters, ended_by=--max-epochs;
#   - last.* is written once when the last step is also a checkpoint step (with an evaluation
#     at that step, and with the end's own evaluation), and holds the last step;
#   - --val-frac 0 says at the start that the run is not evaluated, and the done line says
#     best_val_loss=none best_step=none, not inf and -1;
#   - a resume already at --max-epochs names the flag that goes on.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 40 8
R=("$SK_TRAIN" "${TINY[@]}" --data text.txt --log-every 5)
last_writes() { grep -c "^checkpoint $1/last.safetensors$" .ok.out; }

expect_ok "${R[@]}" --out-dir a --max-iters 10 --checkpoint-every 5 --eval-every 5 &&
    grep -q '^done: steps=10 ended_by=--max-iters best_val_loss=[0-9.]* best_step=10 ' .ok.out &&
    [ "$(last_writes a)" = 2 ] && [ "$(state_step a/last.safetensors)" = 10 ] &&
    note "--max-iters 10, checkpoints every 5: last.* written at 5 and 10, once each; $(grep '^done:' .ok.out | cut -d' ' -f2-3)" ||
    fail "--max-iters 10 --checkpoint-every 5: $(last_writes a) writes of last.*: $(cat .ok.out)"
expect_ok "${R[@]}" --out-dir b --max-iters 10 --checkpoint-every 5 --eval-every 0 &&
    [ "$(last_writes b)" = 2 ] && grep -q '^iter 10 val_loss' .ok.out &&
    note "with the end's own evaluation: last.* written at 5 and 10, once each" ||
    fail "--eval-every 0: $(last_writes b) writes of last.*: $(cat .ok.out)"

expect_ok "${R[@]}" --out-dir e --max-iters 0 --max-epochs 2 --eval-every 0 &&
    grep -q '^done: steps=[0-9]* ended_by=--max-epochs ' .ok.out && note "$(grep '^done:' .ok.out | cut -d' ' -f2-3)" ||
    fail "--max-epochs 2: $(grep '^done:' .ok.out)"
expect_ok "${R[@]}" --out-dir e --max-iters 0 --max-epochs 2 --init-from e/last.safetensors &&
    grep -qx 'already at epoch 2 >= --max-epochs 2 (step [0-9]*); nothing to do (a larger --max-epochs goes on)' .ok.out &&
    note "$(cat .ok.out)" || fail "a resume at --max-epochs: $(cat .ok.out)"

expect_ok "${R[@]}" --out-dir v --max-iters 10 --val-frac 0 &&
    grep -qx 'note: --val-frac 0 leaves no validation split: the run is not evaluated and writes no best\.\*' .ok.err &&
    grep -q '^done: steps=10 ended_by=--max-iters best_val_loss=none best_step=none final_train_loss=' .ok.out &&
    [ ! -e v/best.safetensors ] && note "--val-frac 0: $(grep -o 'best_val_loss=none best_step=none' .ok.out)" ||
    fail "--val-frac 0: $(cat .ok.err .ok.out)"
finish
