#!/usr/bin/env bash
# test_gpu_sample_batch.sh (label gpu): shakespeare-sample --num-samples on the CUDA backend:
# a batch of 3 streams (B = 3 through the backend's batched forward), each under its header
# with its seed, each the prime and exactly --length characters of the model's vocabulary;
# --num-samples 1 into a directory equals a plain run on the GPU (the same batch of one);
# the same batch twice is the same text (the GPU's sampling is deterministic).
# Skipped (77) where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

gen_text text.txt 60 4
require_gpu
expect_ok "$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size 32 --num-layers 2 --batch-size 4 --seq-length 16 \
    --device cpu --threads 1 --eval-every 0 --max-iters 40 --out-dir m || finish
S=("$SK_SAMPLE" --checkpoint m/last.safetensors --device cuda --prime "th" --length 50)
nchars() { LC_ALL=C.UTF-8 wc -m < "$1" | tr -d ' '; }

expect_ok "${S[@]}" --num-samples 3 --seed 4 --output-dir three || finish
for i in 1 2 3; do
  f=three/sample-000$i.txt
  [ "$(nchars "$f")" = 53 ] && head -c 2 "$f" | grep -q '^th' || fail "$f: $(nchars "$f") characters: $(cat "$f")"
done
note "three samples of the prime and 50 characters"
expect_ok "${S[@]}" --num-samples 3 --seed 4 || finish
grep -c '^==> sample [123] of 3 (seed [456]) <==$' .ok.out | grep -qx 3 && note "three headers, seeds 4 to 6" ||
    fail "headers: $(grep '^==>' .ok.out)"
expect_ok "${S[@]}" --num-samples 3 --seed 4 --output-dir again || finish
for i in 1 2 3; do cmp -s three/sample-000$i.txt again/sample-000$i.txt || fail "sample $i differs on a second run"; done
note "the same batch twice: the same text"
expect_ok "${S[@]}" --seed 9 || finish
cp .ok.out plain.txt
expect_ok "${S[@]}" --seed 9 --num-samples 1 --output-dir one || finish
cmp -s plain.txt one/sample-0001.txt && note "--num-samples 1 = the plain run" || fail "--num-samples 1 differs"
finish
