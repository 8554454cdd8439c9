#!/usr/bin/env bash
# test_format_2.sh: checkpoints as 773fb49 wrote them (tests/data/v2, README there), one per
# vocabulary mode, still sample the very text and score the very number they did then, and a
# resume from them to step 160 ends on the model that 773fb49's resume ended on (its argmax
# sample, which the weights, Adam's moments, the data position and the dropout stream all shape).
. "$(dirname "$0")/lib.sh"

V2=$SK_SOURCE_DIR/tests/data/v2
cp "$V2"/text.txt .
for mode in utf8 bytes; do
    mkdir "$mode" && cp "$V2/$mode"/last.safetensors "$V2/$mode"/last.000000150.state "$mode"/
    SA=("$SK_SAMPLE" --checkpoint "$mode/last.safetensors" --device cpu --threads 1)
    expect_ok "${SA[@]}" --argmax --length 80 --prime "to be" &&
        { cmp -s .ok.out "$V2/$mode/sample_argmax.txt" && note "$mode: --argmax sample as recorded" ||
              fail "$mode: --argmax sample differs"; }
    expect_ok "${SA[@]}" --length 80 --seed 3 &&
        { cmp -s .ok.out "$V2/$mode/sample_seed3.txt" && note "$mode: seeded sample as recorded" ||
              fail "$mode: seeded sample differs"; }
    expect_ok "${SA[@]}" --score text.txt &&
        { cmp -s .ok.out "$V2/$mode/score.txt" && note "$mode: score as recorded: $(cat .ok.out)" ||
              fail "$mode: score differs: $(cat .ok.out), recorded $(cat "$V2/$mode/score.txt")"; }

    expect_ok "$SK_TRAIN" --init-from "$mode/last.safetensors" --out-dir "r-$mode" --max-iters 160 --device cpu \
        --threads 1 --log /dev/null || finish
    grep -q "fresh optimizer" .ok.err && fail "$mode: the resume lost the training state: $(cat .ok.err)"
    [ "$(state_step "r-$mode/last.safetensors")" = 160 ] || fail "$mode: the resume ended at step $(state_step "r-$mode/last.safetensors"), want 160"
    expect_ok "$SK_SAMPLE" --checkpoint "r-$mode/last.safetensors" --device cpu --threads 1 --argmax --length 80 \
        --prime "to be" &&
        { cmp -s .ok.out "$V2/$mode/resumed160_sample_argmax.txt" && note "$mode: resumed model as recorded" ||
              fail "$mode: the resumed model differs from 773fb49's resume"; }
done
finish
