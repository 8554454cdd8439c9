#!/usr/bin/env bash
# test_sample_batch_exact.sh: on the CPU, --num-samples N writes, byte for byte, the texts of N
# single runs with seeds S, S+1, ... (every sampling step, the prime's too, goes through the
# batch-invariant kernel of src/cpu/matvec_cpu.h), on one thread and on two, with a prime; a
# hidden width of 12 and an embedding of 5 take the kernel's tails (not multiples of 8 or 4).
. "$(dirname "$0")/lib.sh"

gen_text text.txt 80 5
expect_ok "$SK_TRAIN" --embed-size 5 --hidden-size 12 --num-layers 2 --batch-size 2 --seq-length 8 --device cpu \
    --threads 1 --data text.txt --out-dir m --max-iters 100 --lr 0.01 --eval-every 0 || finish
S=("$SK_SAMPLE" --checkpoint m/last.safetensors --device cpu --length 150 --prime "to be")
for threads in 1 2; do
    expect_ok "${S[@]}" --threads "$threads" --seed 7 --num-samples 5 --output-dir "out$threads" || continue
    for i in 1 2 3 4 5; do
        expect_ok "${S[@]}" --threads 1 --seed $((6 + i)) && cmp -s .ok.out "out$threads/sample-000$i.txt" &&
            note "$threads thread(s): sample $i = the single run of seed $((6 + i))" ||
            fail "$threads thread(s): sample $i differs from the single run of seed $((6 + i))"
    done
done
cmp -s out1/sample-0001.txt out1/sample-0002.txt && fail "samples 1 and 2 are the same text"
finish
