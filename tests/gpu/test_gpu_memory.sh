#!/usr/bin/env bash
# test_gpu_memory.sh: a CUDA run that cannot fit in the GPU's memory is refused before anything
# is allocated, in one line saying how much it needs of the GPU's memory and which flags to
# lower (exit 2, nothing written): 64 layers of width 256 over a window of 16 x 32000 keep
# about 270 GB for backprop through time (8 H floats a row and layer), more than any GPU has
# (the emulated device's is the host's); its weights take under 1 GB of host memory, so it is
# the GPU's check that refuses it. Then a run that fits starts. Skipped (77) without a GPU.
. "$(dirname "$0")/../cli/lib.sh"

require_gpu
gen_text big.txt 18000 4 # ~650,000 characters: the training split holds 16 streams of 32000
expect_error '^error: --seq-length 32000 with --batch-size 16 needs about [0-9.]+ [GT]B of GPU memory \([0-9.]+ [GT]B of it the activations kept for backprop through time\), more than 90% of the [0-9.]+ [MGT]B available: lower --seq-length or --batch-size$' \
    "$SK_TRAIN" --data big.txt --device cuda --embed-size 16 --hidden-size 256 --num-layers 64 --batch-size 16 \
    --seq-length 32000 --out-dir m1
[ ! -e m1 ] && note "the refused run wrote nothing" || fail "the refused run wrote: $(ls m1 2>&1)"
expect_ok "$SK_TRAIN" --data big.txt --device cuda --embed-size 8 --hidden-size 16 --num-layers 1 --batch-size 2 \
    --seq-length 8 --out-dir ok --max-iters 2 &&
    note "a run that fits starts" || fail "a run that fits: $(cat .ok.err)"
finish
