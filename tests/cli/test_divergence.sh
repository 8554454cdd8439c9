#!/usr/bin/env bash
# test_divergence.sh: a non-finite loss stops training with exit code 1 and one message naming
# the step and suggesting a lower learning rate; the last checkpoint written before it (one
# step earlier: --checkpoint-every 1) is kept and loads.
# How it diverges: SHAKESPEARE_TEST_POISON_STEP=7 makes a parameter NaN just before step 7, so
# that step's loss is NaN on every machine (a recipe that overflows by itself diverges at a step
# that moves with the BLAS kernel's rounding).
# A finite loss far above ln(V) after warm-up: a warning, and no best.* from it; a run that ends so
# exits 3.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 11
bad=7
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --out-dir out --max-iters 200 --checkpoint-every 1
     --eval-every 0 --log-every 1)
SHAKESPEARE_TEST_POISON_STEP=$bad timeout 60 "${RUN[@]}" > run.out 2> run.err; rc=$?
[ "$rc" = 1 ] && note "exit code 1" || fail "exit code $rc, want 1"
# One error line; a note before it (a machine's slow-BLAS notice) is not part of the stop.
[ "$(grep -vc '^note: ' run.err)" = 1 ] || fail "want one stderr line, got: $(cat run.err)"
msg=$(grep -v '^note: ' run.err | head -n 1)
re='^error: training loss is -?(nan|inf) at step ([0-9]+); stopping \(the last checkpoint is kept\); try a lower learning rate \(--lr\)$'
if [[ $msg =~ $re ]]; then
    step=${BASH_REMATCH[2]}
    note "message: $msg"
    [ "$step" = "$bad" ] || fail "stopped at step $step, want $bad"
else
    fail "unexpected message: $msg"
    step=
fi
grep -q '^done:' run.out && fail "a diverged run printed the normal summary"

if [ -n "$step" ]; then
    # The progress lines (one per step) stop before the bad step.
    last_logged=$(grep -o '^epoch [0-9.]* iter [0-9]*' run.out | tail -n 1 | awk '{print $4}')
    [ "$last_logged" = $((step - 1)) ] || fail "last progress line at step ${last_logged:-none}, want $((step - 1))"
    if [ "$step" -gt 1 ]; then
        ck=$(state_step out/last.safetensors)
        [ "$ck" = $((step - 1)) ] && note "last.* holds step $ck, the one before the bad step" ||
            fail "last.* holds step ${ck:-none}, want $((step - 1))"
        expect_ok "$SK_SAMPLE" --checkpoint out/last.safetensors --device cpu --length 5 --argmax &&
            note "the kept checkpoint loads"
        # The metrics log has no record of the bad step.
        grep -q "\"iter\":$step," out/metrics.jsonl && fail "metrics.jsonl has a record of step $step"
    fi
fi

# A loss that stays finite but far above ln(V) (--lr 10 with Adam moves every weight by about 10
# a step): one warning line when it starts, after the warm-up, and no evaluation saved as best.
# The same run at the default learning rate warns of nothing and keeps a best.
W=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-iters 40 --eval-every 10 --log-every 10 --grad-clip 0)
# Such a run still ends with its done line and last.*, but exits 3 (CLI_EXIT_DIVERGED) with one
# error line after the warning: a script must not take it for a finished model. Sampling its
# directory, which holds no best.*, says that it samples last.*.
timeout 60 "${W[@]}" --out-dir far --lr 10 --warmup-iters 15 > .ok.out 2> .ok.err; rc=$?
[ "$rc" = 3 ] && grep -Eq '^warning: the run is diverging: training loss [0-9.]+ at step 20 is far above ln\(V\) = [0-9.]+, what a model that has learnt nothing scores; best\.\* keeps the last state below it \(try a lower --lr\)$' .ok.err &&
    [ "$(grep -m 1 '^warning:' .ok.err | grep -o 'at step [0-9]*')" = "at step 20" ] && [ ! -e far/best.safetensors ] && ! grep -q '(best)' .ok.out &&
    grep -q 'best_val_loss=none best_step=none' .ok.out && [ "$(grep -c '^error: ' .ok.err)" = 1 ] &&
    grep -Eq '^error: the run ended diverging \(training loss [0-9.]+ at step 40, far above what a model that has learnt nothing scores\); last\.\* holds that state, and no best\.\* was written; try a lower --lr$' .ok.err &&
    [ "$(tail -n 1 .ok.err | cut -c1-6)" = "error:" ] && note "exit $rc: $(grep -m 1 '^warning:' .ok.err); $(grep '^error:' .ok.err)" ||
    fail "a run far above ln(V): exit $rc: $(cat .ok.err; grep -E 'val_loss|^done' .ok.out)"
expect_ok "$SK_SAMPLE" --checkpoint far --device cpu --length 5 --argmax &&
    [ "$(cat .ok.err)" = "note: --checkpoint far holds no best.safetensors (a run writes it when an evaluation finds a model that is not diverging): sampling last.safetensors" ] &&
    note "sampling its directory: $(cat .ok.err)" || fail "sampling a diverged run's directory: $(cat .ok.err)"
expect_ok "${W[@]}" --out-dir near &&
    ! grep -q '^warning:' .ok.err && [ -e near/best.safetensors ] && note "at the default --lr: no warning, a best.*" ||
    fail "a converging run: $(cat .ok.err; grep -E 'val_loss|^done' .ok.out)"

finish
