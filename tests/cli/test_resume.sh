#!/usr/bin/env bash
# test_resume.sh: on the CPU, a run stopped after N steps and resumed with --init-from to 2N
# ends with parameters bit-identical to an uninterrupted 2N run (tensor bytes of last.safetensors
# compared; the JSON header is left out), and both continue identically, which also proves that
# the optimizer moments, data position, carried LSTM state and generator were restored.
# Two layers and dropout so that every piece of state matters; the run crosses epoch boundaries.
# A resume with another batch shape goes on from the same number of tokens into the epoch.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 14 3 # ~650 characters: about 35 windows of 2 x 8 per epoch
COMMON=("$SK_TRAIN" --data text.txt --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.2
        --batch-size 2 --seq-length 8 --device cpu --threads 1 --max-epochs 0 --warmup-iters 10
        --eval-every 10 --log-every 5 --sample-every 25 --sample-length 20)

expect_ok "${COMMON[@]}" --out-dir a --max-iters 80 --checkpoint-every 15 || finish
expect_ok "${COMMON[@]}" --out-dir b --max-iters 40 --checkpoint-every 15 || finish
mkdir b40 && cp b/last.safetensors b/last.*.state b40/ # the model and the state it names
[ "$(state_step b/last.safetensors)" = 40 ] || fail "the stopped run's checkpoint is not at step 40"
expect_ok "${COMMON[@]}" --out-dir b --max-iters 80 --checkpoint-every 15 --init-from b/last.safetensors || finish
[ "$(state_step b/last.safetensors)" = 80 ] || fail "the resumed run's checkpoint is not at step 80"
grep -q 'epoch 2\.' .ok.out || fail "the resumed run did not reach the third epoch: $(tail -n 3 .ok.out)"

if same_tensors a/last.safetensors b/last.safetensors; then
    note "40 + 40 steps == 80 steps, bit for bit"
else
    fail "resumed parameters differ from the uninterrupted run's"
fi
# The comparison can fail: the checkpoint at 40 differs from the one at 80.
if same_tensors b40/last.safetensors a/last.safetensors; then fail "the checkpoints at 40 and 80 are identical"; fi
# best.* followed the same evaluations.
same_tensors a/best.safetensors b/best.safetensors || fail "best.safetensors differs between the runs"

# Continue both by 7 steps: identical only if the whole training state was restored.
expect_ok "${COMMON[@]}" --out-dir a --max-iters 87 --init-from a/last.safetensors || finish
expect_ok "${COMMON[@]}" --out-dir b --max-iters 87 --init-from b/last.safetensors || finish
same_tensors a/last.safetensors b/last.safetensors && note "and 7 steps more stay identical" ||
    fail "the runs diverge after resuming both from step 80"

# The samples agree too (deterministic generation from identical parameters).
A=$("$SK_SAMPLE" --checkpoint a/last.safetensors --device cpu --threads 1 --length 60 --seed 5)
B=$("$SK_SAMPLE" --checkpoint b/last.safetensors --device cpu --threads 1 --length 60 --seed 5)
[ -n "$A" ] && [ "$A" = "$B" ] && note "samples agree" || fail "samples differ: '$A' vs '$B'"

# The same with two CPU threads (the backend splits work across threads deterministically).
T2=("$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size 64 --num-layers 2 --dropout 0.1 --batch-size 4
    --seq-length 16 --device cpu --threads 2 --max-epochs 0 --eval-every 0)
expect_ok "${T2[@]}" --out-dir t2a --max-iters 30 && expect_ok "${T2[@]}" --out-dir t2b --max-iters 15 &&
    expect_ok "${T2[@]}" --out-dir t2b --max-iters 30 --init-from t2b/last.safetensors &&
    same_tensors t2a/last.safetensors t2b/last.safetensors && note "--threads 2: 15 + 15 steps == 30 steps, bit for bit" ||
    fail "--threads 2: the resumed run differs from the uninterrupted one"

# Weight drop (DropConnect on W_hh, masks keyed by (seed, step) like dropout's): 15 + 15 steps
# == 30, the resumed half taking --weight-drop from the checkpoint's metadata; a run without
# it ends elsewhere (the masks had an effect).
WD=("$SK_TRAIN" --data text.txt --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.1 --batch-size 2
    --seq-length 8 --device cpu --threads 1 --max-epochs 0 --eval-every 0)
expect_ok "${WD[@]}" --weight-drop 0.3 --out-dir wa --max-iters 30 &&
    expect_ok "${WD[@]}" --weight-drop 0.3 --out-dir wb --max-iters 15 &&
    grep -q '"weight_drop":"0.3"' wb/last.safetensors &&
    expect_ok "${WD[@]}" --out-dir wb --max-iters 30 --init-from wb/last.safetensors &&
    same_tensors wa/last.safetensors wb/last.safetensors &&
    note "--weight-drop 0.3: 15 + 15 steps == 30 steps, bit for bit" ||
    fail "--weight-drop 0.3: the resumed run differs from the uninterrupted one (or the metadata lacks it)"
expect_ok "${WD[@]}" --out-dir wn --max-iters 30 || finish
if same_tensors wa/last.safetensors wn/last.safetensors; then fail "--weight-drop 0.3 changed nothing"; fi

# Resuming with another batch shape goes on from as many tokens into the epoch as the stopped run
# had consumed (its LSTM state does not fit the new shape and starts from zero): the epoch of
# the resume line is the stopped run's, within a window, not the next epoch's start.
resumed_epoch() { sed -n 's/^note: resumed from .* at step 40 (epoch \([0-9.]*\)); the run ends .*$/\1/p' .ok.err; }
expect_ok "${COMMON[@]}" --out-dir same --max-iters 41 --init-from b40/last.safetensors && was=$(resumed_epoch)
for shape in "--batch-size 3" "--seq-length 5" "--batch-size 1 --seq-length 16"; do
    d=shape-${shape// /}
    # shellcheck disable=SC2086 # the shape's two words are two arguments
    expect_ok "${COMMON[@]}" --out-dir "$d" --max-iters 45 $shape --init-from b40/last.safetensors || continue
    now=$(resumed_epoch)
    grep -q "^note: batch shape [0-9]* x [0-9]* differs from the checkpoint's 2 x 8: the epoch goes on [0-9]* tokens in," .ok.err &&
        [ "$(state_step "$d/last.safetensors")" = 45 ] &&
        awk -v a="$was" -v b="$now" 'BEGIN { d = a - b; exit !(a > 1 && d >= 0 && d < 0.05) }' &&
        note "$shape: the epoch goes on at $now (stopped at $was)" ||
        fail "$shape: resumed at epoch '$now', stopped at '$was': $(cat .ok.err)"
done
finish
