#!/usr/bin/env bash
# test_sample_bytes.sh: the samples shakespeare-train prints during training (--sample-every) of a
# byte-vocabulary model whose data is mostly NUL bytes: each sample is written whole, its
# --sample-length bytes with their NULs, between its header line and the closing "----" line.
# (The model knows all 256 byte values, so a sample 20 steps in may hold bytes the data lacks.)
. "$(dirname "$0")/lib.sh"

for i in $(seq 1 200); do printf 'a\000\000b\000\377\000\000c\n'; done > nul.dat
L=300
expect_ok "$SK_TRAIN" "${TINY[@]}" --data nul.dat --vocab bytes --out-dir m --max-iters 20 --eval-every 0 \
    --sample-every 10 --sample-length $L --log-every 1000 --lr 0.01 || finish
for step in 10 20; do
    header="---- sample at iter $step ----"
    at=$(grep -abo -- "$header" .ok.out | head -n 1 | cut -d: -f1)
    [ -n "$at" ] || { fail "no sample at iter $step in the output"; continue; }
    tail -c +$((at + ${#header} + 2)) .ok.out | head -c $L > s$step.bin
    tail -c +$((at + ${#header} + 2 + L)) .ok.out | head -c 6 > s$step.end
    nuls=$(tr -dc '\000' < s$step.bin | wc -c)
    if [ "$(stat -c %s s$step.bin)" = $L ] && cmp -s s$step.end <(printf '\n----\n') && [ "$nuls" -gt 0 ]; then
        note "sample at iter $step: $L bytes, $nuls of them NUL, then the closing line"
    else
        fail "sample at iter $step: $(stat -c %s s$step.bin) bytes, $nuls NUL, followed by '$(od -An -c s$step.end)'"
    fi
done
finish
