#!/usr/bin/env bash
# test_format_1.sh: a checkpoint of the previous format ("shakespeare-lstm-1", checksum over the
# data section as stored), written by the previous release (tests/data/v1, README there), still
# samples the very text and scores the very number it did then, and resumes with its training
# state; the checkpoints the resumed run writes are of the current format.
. "$(dirname "$0")/lib.sh"

V1=$SK_SOURCE_DIR/tests/data/v1
cp "$V1"/last.safetensors "$V1"/last.000000150.state "$V1"/text.txt .
SA=("$SK_SAMPLE" --checkpoint last.safetensors --device cpu --threads 1)

expect_ok "${SA[@]}" --argmax --length 80 --prime "to be" &&
    { cmp -s .ok.out "$V1/sample_argmax.txt" && note "--argmax sample as recorded" || fail "--argmax sample differs"; }
expect_ok "${SA[@]}" --length 80 --seed 3 &&
    { cmp -s .ok.out "$V1/sample_seed3.txt" && note "seeded sample as recorded" || fail "seeded sample differs"; }
expect_ok "${SA[@]}" --score text.txt &&
    { cmp -s .ok.out "$V1/score.txt" && note "score as recorded: $(cat .ok.out)" || fail "score differs: $(cat .ok.out)"; }
[ -s .ok.err ] && fail "unexpected stderr: $(cat .ok.err)"

expect_ok "$SK_TRAIN" --data text.txt --out-dir r --init-from last.safetensors --max-iters 160 --eval-every 0 \
    --batch-size 2 --seq-length 8 --lr 0.01 --device cpu --threads 1 --log-every 1 || finish
grep -q "fresh optimizer" .ok.err && fail "the resume lost the training state: $(cat .ok.err)"
[ "$(state_step r/last.safetensors)" = 160 ] && note "resumed at step 150, ended at 160" ||
    fail "the resumed run ended at step $(state_step r/last.safetensors), want 160"
[ "$(grep -c '"train_loss"' r/metrics.jsonl)" = 10 ] || fail "want 10 logged steps after the resume"
head -c 4096 r/last.safetensors | grep -q '"format":"shakespeare-lstm-2"' || fail "the new checkpoint is not of format 2"
finish
