#!/usr/bin/env bash
# test_sample_bf16.sh: shakespeare-sample --precision bf16 on the CPU (bf16 weights, fp32 sums and
# state; runs on any CPU, so never refused here):
#  - the default samples the same text as --precision fp32, and bf16 samples (exit 0, text written);
#  - --score in bf16 agrees with fp32's mean within 0.01 nats/char: each weight is off by at most
#    2^-9 relatively (8 significant bits), which moves a tiny model's logits by about 2^-9 times
#    their size (a few units), so its log-probabilities by well under 0.01; and it differs from fp32's
#    at all (the bf16 weights ran).
. "$(dirname "$0")/lib.sh"

gen_text text.txt 30 2
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --max-iters 20 --eval-every 0 --out-dir m || finish
SA=("$SK_SAMPLE" --checkpoint m/last.safetensors --device cpu --threads 1)
"${SA[@]}" --length 200 --seed 4 > plain.txt && "${SA[@]}" --length 200 --seed 4 --precision fp32 > fp32.txt &&
    cmp -s plain.txt fp32.txt && note "the default is fp32, the same text" || fail "--precision fp32 differs from the default"
"${SA[@]}" --length 200 --seed 4 --precision bf16 > bf16.txt 2> bf16.err && [ -s bf16.txt ] &&
    note "bf16 samples on this CPU" || fail "bf16 sampling failed: $(cat bf16.err)"
"${SA[@]}" --score text.txt --precision fp32 > s32.txt && "${SA[@]}" --score text.txt --precision bf16 > s16.txt ||
    fail "scoring failed"
a=$(awk '{print $2}' s32.txt) b=$(awk '{print $2}' s16.txt)
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.01 && d > 0) }' &&
    note "bf16 scores $b nats/char, fp32 $a" || fail "bf16's score $b against fp32's $a: not within (0, 0.01)"
finish
