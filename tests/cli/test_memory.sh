#!/usr/bin/env bash
# test_memory.sh: a run that cannot fit in memory is refused before anything is allocated, in
# one line saying how much it needs and which flags to lower (exit 2, within the 20 s of
# expect_error, nothing written):
#   - a window of a million steps (--seq-length 1000000 --batch-size 1) of a model whose
#     activations for backprop through time take terabytes: lower --seq-length or --batch-size;
#   - weights and the optimizer's slots of terabytes: lower --hidden-size or --num-layers;
#   - on a machine with less than 23 GB available, the default model with --seq-length 1000000
#     --batch-size 1 (about 21 GB);
#   - a run that fits starts.
# Every run here is held to 8 GB of address space, so an estimate that let one through would
# fail its allocation instead of taking the machine's memory (not in a sanitized build, whose
# shadow memory alone reserves terabytes of address space: SK_SANITIZED, tests.cmake).
. "$(dirname "$0")/lib.sh"

gen_text big.txt 36000 4 # ~1.3 million characters: the training split holds one window of 10^6
head -c 5000 big.txt > small.txt
LIMITED=(bash -c 'ulimit -v 8000000 && exec "$@"' limited) # a command under the limit
[ -n "${SK_SANITIZED:-}" ] && LIMITED=()

expect_error '^error: --seq-length 1000000 with --batch-size 1 needs about [0-9.]+ TB of memory \([0-9.]+ TB of it the activations kept for backprop through time\), more than 90% of the [0-9.]+ [MGT]B available: lower --seq-length or --batch-size$' \
    "${LIMITED[@]}" "$SK_TRAIN" --data big.txt --seq-length 1000000 --batch-size 1 --hidden-size 16384 --num-layers 16 \
    --device cpu --out-dir m1
expect_error '^error: --hidden-size 65536 with --num-layers 64 needs about [0-9.]+ TB of memory \(the weights, their gradients, adam.s 2 state slots and [0-9.]+ [MGT]B of activations\), more than 90% of the [0-9.]+ [MGT]B available: lower --hidden-size or --num-layers$' \
    "${LIMITED[@]}" "$SK_TRAIN" --data small.txt --hidden-size 65536 --num-layers 64 --device cpu --out-dir m2
[ ! -e m1 ] && [ ! -e m2 ] && note "the refused runs wrote nothing" || fail "a refused run wrote: $(ls m1 m2 2>&1)"

avail_kb=$(sed -n 's/^MemAvailable: *\([0-9]*\) kB$/\1/p' /proc/meminfo)
if [ -n "$avail_kb" ] && [ "$avail_kb" -lt 23000000 ]; then
    expect_error '^error: --seq-length 1000000 with --batch-size 1 needs about 2[0-9]\.[0-9] GB of memory .*: lower --seq-length or --batch-size$' \
        "${LIMITED[@]}" "$SK_TRAIN" --data big.txt --seq-length 1000000 --batch-size 1 --device cpu --out-dir m3
else
    note "$((avail_kb / 1000000)) GB available: the default model's window of 10^6 (about 21 GB) may fit here"
fi

expect_ok "${LIMITED[@]}" "$SK_TRAIN" "${TINY[@]}" --data small.txt --out-dir ok --max-iters 2 &&
    note "a run that fits starts" || fail "a run that fits: $(cat .ok.err)"
finish
expect_error '^error: --seq-length 1000000 with --batch-size 1 needs about [0-9.]+ TB of memory' \
    "${LIMITED[@]}" "$SK_TRAIN" --device cpu --init-from ok/last.safetensors --eval-only --data big.txt --seq-length 1000000 \
    --batch-size 1 --train-frac 0.05 --val-frac 0.95 --hidden-size 16 --embed-size 8 --num-layers 1
finish
