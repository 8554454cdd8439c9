#!/usr/bin/env bash
# test_resume_best.sh: a best validation loss compares only with losses on its own validation set,
# in its own out-dir (issue 50, item 1).
#   - a resume with other data starts the best over, with one note that names where the previous
#     best is kept (best-stepN.*, the very weights of the old best.*); the first evaluation after
#     it is a best, so best.* and shakespeare-sample --checkpoint DIR hold the new data's model;
#   - a resume into another out-dir starts the best over there, the note naming the directory
#     that keeps the old one, and the done line names a best.* that the new out-dir holds;
#   - a plain resume on the same data keeps its best, without a note; --eval-tokens changed does not;
#   - a checkpoint that 773fb49 wrote (tests/data/v2: no recorded validation set) keeps its best
#     on its own data and starts it over on other data;
#   - training states that no model names (a killed checkpoint write) are removed when a run starts.
. "$(dirname "$0")/lib.sh"

gen_text a.txt 60 5
gen_text b.txt 60 6 # the same words and symbols, another text: another validation split
R=("$SK_TRAIN" "${TINY[@]}" --log-every 1000 --eval-every 20 --checkpoint-every 20)
over_note='the validation set differs from the checkpoint.s \(its data, split, --batch-size or --eval-tokens\): the best validation loss starts over'

expect_ok "${R[@]}" --data a.txt --out-dir a --max-iters 60 || finish
old_step=$(state_step a/best.safetensors)
cp -r a q

echo "== other data: the best starts over, the old best.* kept as best-stepN.*"
expect_ok "${R[@]}" --init-from q/last.safetensors --out-dir q --data b.txt --max-iters 100 &&
    [ "$(grep -Ec "^note: $over_note; the previous best \\([0-9.]+ at step $old_step\\) is kept as best-step$old_step\\.safetensors$" .ok.err)" = 1 ] &&
    grep -q '^iter 80 val_loss [0-9.]* (best)$' .ok.out && grep -q '^done: steps=100 .* best_step=\(80\|100\) ' .ok.out &&
    same_tensors a/best.safetensors "q/best-step$old_step.safetensors" && [ "$(state_step "q/best-step$old_step.safetensors")" = "$old_step" ] &&
    ! same_tensors a/best.safetensors q/best.safetensors &&
    note "$(grep -o 'the previous best.*' .ok.err); $(grep -o 'best_val_loss=[^ ]* best_step=[^ ]*' .ok.out)" ||
    fail "a resume on other data: $(cat .ok.err; grep -E 'val_loss|^done' .ok.out)"
expect_ok "$SK_SAMPLE" --checkpoint q --device cpu --length 20 --argmax && [ ! -s .ok.err ] &&
    expect_ok "$SK_SAMPLE" --checkpoint q/best.safetensors --device cpu --length 20 --argmax && cp .ok.out new.txt &&
    expect_ok "$SK_SAMPLE" --checkpoint q --device cpu --length 20 --argmax && cmp -s .ok.out new.txt &&
    note "shakespeare-sample --checkpoint q samples the new best.*" || fail "sampling q: $(cat .ok.err)"

echo "== another out-dir: the best starts over there"
expect_ok "${R[@]}" --init-from a/last.safetensors --out-dir n --max-iters 65 &&
    grep -qx "note: the best validation loss starts over in n; the resumed run's best ([0-9.]* at step $old_step) stays in a" .ok.err &&
    grep -q '^done: steps=65 .* best_step=65 ' .ok.out && [ "$(state_step n/best.safetensors)" = 65 ] &&
    note "$(grep 'starts over' .ok.err)" || fail "a resume into another out-dir: $(cat .ok.err; grep '^done' .ok.out)"

echo "== the same validation set: the best is kept"
cp -r a k
expect_ok "${R[@]}" --init-from k/last.safetensors --out-dir k --max-iters 62 &&
    ! grep -q 'starts over' .ok.err && [ "$(grep -c '^note: ' .ok.err)" = 1 ] &&
    grep -q "^done: steps=62 .* best_step=\\($old_step\\|62\\) " .ok.out &&
    note "kept: $(grep -o 'best_val_loss=[^ ]* best_step=[^ ]*' .ok.out)" || fail "a plain resume: $(cat .ok.err; grep '^done' .ok.out)"
expect_ok "${R[@]}" --init-from k/last.safetensors --out-dir k --max-iters 64 --eval-tokens 40 &&
    grep -Eq "^note: $over_note" .ok.err && note "--eval-tokens 40: the best starts over" ||
    fail "--eval-tokens changed: $(cat .ok.err)"

echo "== a checkpoint of 773fb49 (no recorded validation set)"
V2=$SK_SOURCE_DIR/tests/data/v2
cp "$V2"/text.txt text.txt
for d in v same; do mkdir $d && cp "$V2"/utf8/last.safetensors "$V2"/utf8/last.000000150.state $d/; done
expect_ok "$SK_TRAIN" --init-from same --max-iters 152 --device cpu --threads 1 --log /dev/null &&
    ! grep -q 'starts over' .ok.err &&
    grep -q "^note: resumed from same/last.safetensors at step 150 .*; the run ends at step 152: --max-iters 152 (the checkpoint records no limits: the command line's)$" .ok.err &&
    note "its own data: the best is kept; $(grep -o 'the run ends.*' .ok.err)" || fail "773fb49's checkpoint on its data: $(cat .ok.err)"
expect_ok "$SK_TRAIN" --init-from v --max-iters 152 --data b.txt --device cpu --threads 1 --log /dev/null &&
    grep -Eq "^note: $over_note; the previous best \\([0-9.]+ at step [0-9]+\\) was not in v$" .ok.err &&
    note "other data: $(grep -o 'the previous best.*' .ok.err)" || fail "773fb49's checkpoint on other data: $(cat .ok.err)"

echo "== training states that no model names are removed"
touch a/last.000000007.state a/best.000000099.state a/epoch-0001.000000001.state
cp a/last.*0060.state a/mine.state
expect_ok "${R[@]}" --init-from a/last.safetensors --out-dir a --max-iters 61 --eval-every 0 &&
    [ ! -e a/last.000000007.state ] && [ ! -e a/best.000000099.state ] && [ ! -e a/epoch-0001.000000001.state ] &&
    [ -e a/mine.state ] && [ -e "a/$(cd a && ls best.*.state)" ] && [ -e a/last.000000061.state ] &&
    note "left: $(cd a && ls ./*.state | tr '\n' ' ')" || fail "orphan states: $(cd a && ls)"
finish
