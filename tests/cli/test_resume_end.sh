#!/usr/bin/env bash
# test_resume_end.sh: a run's end is recorded and said, and a resume keeps it (issue 50, items 2-5, 8).
#   - a run of --max-iters 400 stopped at step 6 and resumed with only --init-from ends at step 400,
#     not at the default 9 epochs (about 1000 steps here); the resume line says where it ends;
#     a resume that names --max-iters 450 ends there and says where the checkpoint's run was to end;
#   - a --max-iters named alone is the only limit: the default --max-epochs 9 does not cap it, and
#     the start line says so; with both named the nearer ends the run and the line names both;
#   - a cosine schedule keeps its recorded length when a resume goes on past it: the rate stays at
#     --min-lr (one note), and --cosine-iters 0 stretches it to the new end instead;
#   - --lr-schedule step decays with the defaults (--lr-decay-after auto: a fifth of the run's
#     epochs), and a step schedule that cannot decay in its run says so;
#   - --init-from DIR resumes DIR/last.safetensors into DIR;
#   - resuming from a best.* behind last.* says that those steps are trained again.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 40 8 # about 2000 characters: about 100 windows of 2 x 8 an epoch
R=("$SK_TRAIN" "${TINY[@]}" --data text.txt --log-every 10 --eval-every 0)
expect_ok "${R[@]}" --out-dir probe --max-epochs 1 || finish
W=$(sed -n 's/^note: the run ends at step [0-9]*: --max-epochs 1 (\([0-9]*\) steps an epoch)$/\1/p' .ok.err)
[ -n "$W" ] && [ "$W" -gt 20 ] || { fail "the start line does not say the steps an epoch: $(cat .ok.err)"; finish; }
lr_at() { sed -n "s/^{\"iter\":$2,.*\"lr\":\\([0-9.e+-]*\\),.*/\\1/p" "$1"; }

echo "== the run's end is recorded: a plain resume ends where the stopped run was to"
# SHAKESPEARE_TEST_POISON_STEP stops the run at step 7 (a NaN loss, exit 1): last.* holds step 6.
SHAKESPEARE_TEST_POISON_STEP=7 "${R[@]}" --out-dir r --max-iters 400 --checkpoint-every 1 > /dev/null 2>&1
[ "$(state_step r/last.safetensors)" = 6 ] || { fail "the stopped run left no last.* at step 6"; finish; }
expect_ok "${R[@]}" --out-dir r --init-from r/last.safetensors &&
    grep -q '^done: steps=400 ended_by=--max-iters ' .ok.out &&
    grep -qx 'note: resumed from r/last.safetensors at step 6 (epoch 0\.[0-9]*); the run ends at step 400: --max-iters 400' .ok.err &&
    note "$(grep '^note: resumed' .ok.err)" || fail "a plain resume: $(cat .ok.err; grep '^done' .ok.out)"
expect_ok "${R[@]}" --out-dir r --init-from r/last.safetensors --max-iters 450 &&
    grep -q '^done: steps=450 ended_by=--max-iters ' .ok.out && ! grep -q 'differs from the checkpoint' .ok.err &&
    grep -qx "note: resumed from r/last.safetensors at step 400 (epoch [0-9.]*); the run ends at step 450: --max-iters 450 (named; the checkpoint's run was to end at step 400: --max-iters 400)" .ok.err &&
    note "$(grep '^note: resumed' .ok.err)" || fail "a resume naming a new limit: $(cat .ok.err; grep '^done' .ok.out)"

echo "== a limit named alone is the only one; the start line names the limit that ends the run"
expect_ok "${R[@]}" --out-dir big --max-iters $((10 * W)) &&
    grep -q "^done: steps=$((10 * W)) ended_by=--max-iters " .ok.out &&
    grep -qx "note: the run ends at step $((10 * W)): --max-iters $((10 * W))" .ok.err &&
    note "--max-iters $((10 * W)) (10 epochs) alone: $(grep '^note: the run ends' .ok.err)" ||
    fail "--max-iters beyond the default --max-epochs: $(cat .ok.err; grep '^done' .ok.out)"
expect_ok "${R[@]}" --out-dir both --max-iters $((10 * W)) --max-epochs 2 &&
    grep -q "^done: steps=$((2 * W)) ended_by=--max-epochs " .ok.out &&
    grep -qx "note: the run ends at step $((2 * W)): --max-epochs 2 ($W steps an epoch), before --max-iters $((10 * W))" .ok.err &&
    note "both named: $(grep '^note: the run ends' .ok.err)" || fail "both limits named: $(cat .ok.err; grep '^done' .ok.out)"

expect_ok "${R[@]}" --out-dir zero --max-iters 0 && grep -q "^done: steps=$((9 * W)) ended_by=--max-epochs " .ok.out &&
    note "--max-iters 0 named alone is no limit: the default --max-epochs 9 ends the run at step $((9 * W))" ||
    fail "--max-iters 0 named alone: $(cat .ok.err; grep '^done' .ok.out)"

echo "== a cosine schedule resumed past its end keeps it, or stretches it when told"
C=("${R[@]}" --lr-schedule cosine --lr 0.01 --min-lr 0.0001 --log-every 1)
expect_ok "${C[@]}" --out-dir c --max-iters 40 || finish
cp -r c c2
expect_ok "${R[@]}" --out-dir c --init-from c --max-iters 60 --log-every 1 &&
    grep -qx 'note: the cosine schedule ends at step 40 (--cosine-iters), before the run.s end at step 60: the steps after it run at --min-lr 0.0001 (name --cosine-iters to stretch it)' .ok.err &&
    [ "$(lr_at c/metrics.jsonl 41)" = 0.0001 ] && [ "$(lr_at c/metrics.jsonl 60)" = 0.0001 ] &&
    note "kept: lr $(lr_at c/metrics.jsonl 40) at step 40, $(lr_at c/metrics.jsonl 41) at 41; $(grep cosine .ok.err)" ||
    fail "cosine resumed past its end: lr $(lr_at c/metrics.jsonl 41) at step 41: $(cat .ok.err)"
expect_ok "${R[@]}" --out-dir c2 --init-from c2 --max-iters 60 --cosine-iters 0 --log-every 1 &&
    ! grep -q 'the cosine schedule ends' .ok.err &&
    awk -v a="$(lr_at c2/metrics.jsonl 41)" 'BEGIN { exit !(a > 0.0005) }' &&
    note "--cosine-iters 0: stretched to step 60, lr $(lr_at c2/metrics.jsonl 41) at step 41" ||
    fail "--cosine-iters 0 on resume: lr $(lr_at c2/metrics.jsonl 41) at step 41: $(cat .ok.err)"

echo "== a step schedule decays with the defaults, or says that it cannot"
expect_ok "${R[@]}" --out-dir s --lr-schedule step --max-epochs 3 --log-every 1 &&
    [ "$(lr_at s/metrics.jsonl 1)" = 0.002 ] && [ "$(lr_at s/metrics.jsonl $((W + 1)))" = 0.00194 ] &&
    [ "$(lr_at s/metrics.jsonl $((2 * W + 1)))" = 0.0018818 ] && ! grep -q 'decays after' .ok.err &&
    note "3 epochs: lr $(lr_at s/metrics.jsonl 1), $(lr_at s/metrics.jsonl $((W + 1))), $(lr_at s/metrics.jsonl $((2 * W + 1))) (x 0.97 an epoch after epoch 1)" ||
    fail "--lr-schedule step with the defaults: lr $(lr_at s/metrics.jsonl $((W + 1))) in epoch 2: $(cat .ok.err)"
expect_ok "${R[@]}" --out-dir s1 --lr-schedule step --max-iters 20 &&
    grep -qx 'note: --lr-schedule step decays after --lr-decay-after 0 epochs, and this run ends in epoch 1: the learning rate stays at --lr' .ok.err &&
    note "$(grep decays .ok.err)" || fail "a step schedule that cannot decay: $(cat .ok.err)"

echo "== --init-from DIR, and a resume from behind last.*"
expect_ok "${R[@]}" --out-dir e --max-iters 20 --eval-every 10 --checkpoint-every 10 || finish
mkdir e20 && cp e/best.safetensors e/best.*.state e20/
expect_ok "${R[@]}" --init-from e --max-iters 30 &&
    grep -q '^note: resumed from e/last.safetensors at step 20 ' .ok.err && [ "$(state_step e/last.safetensors)" = 30 ] &&
    [ ! -e out ] && note "--init-from e: e/last.safetensors, continued in e" || fail "--init-from DIR: $(cat .ok.err)"
cp e20/* e/ # best.* at step 20 again, behind last.* at 30
expect_ok "${R[@]}" --init-from e/best.safetensors --out-dir e --max-iters 31 &&
    grep -qx "note: e/best.safetensors is at step 20, behind last.safetensors at step 30: steps 21 to 30 are trained again, and last.\\* is overwritten" .ok.err &&
    note "$(grep behind .ok.err)" || fail "a resume from behind last.*: $(cat .ok.err)"
finish
