#!/usr/bin/env bash
# test_cross_backend.sh (label gpu): checkpoints move between backends through the real
# binaries. A model trained on the GPU
#   - samples the same text on the CPU and on the GPU with --argmax (greedy decoding: the
#     same unless two logits tie within fp32 rounding, which 120 characters of a trained
#     model do not come near),
#   - scores a text to the same loss on both (to 1e-4 nats/char: fp32 with different
#     summation orders over a few hundred characters),
#   - resumes training on the CPU from its checkpoint (state and all);
# and its done line's median tokens/s agrees with its progress lines' rate.
# Skipped (77) where no GPU is usable.
. "$(dirname "$0")/../cli/lib.sh"

gen_text text.txt 200 5
require_gpu
MODEL=(--data text.txt --embed-size 32 --hidden-size 64 --num-layers 2 --batch-size 8 --seq-length 32 --lr 0.005)
expect_ok "$SK_TRAIN" "${MODEL[@]}" --device cuda --out-dir g --max-iters 150 --eval-every 50 || finish
grep -q 'backend=cuda' .ok.out && note "trained on the GPU" || fail "the run did not use the GPU: $(tail -n 1 .ok.out)"
# The done line's median tokens/s is the device's rate, not the host's enqueue rate: within 3x
# of the progress lines' (each the tokens of a log interval over its wall time). The median
# of per-step host times once read 8.1M tokens/s for a run doing 86.
prog=$(grep -o 'tokens_per_s [0-9.]*' .ok.out | awk '{print $2}' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
med=$(grep -o 'median_tokens_per_s=[0-9.]*' .ok.out | cut -d= -f2)
awk -v m="$med" -v p="$prog" 'BEGIN { exit !(m > 0 && p > 0 && m <= 3 * p && p <= 3 * m) }' &&
    note "median tokens/s $med, progress lines' median $prog" ||
    fail "the done line's median_tokens_per_s=$med is not the progress lines' rate ($prog)"

SAMPLE=("$SK_SAMPLE" --checkpoint g/last.safetensors --prime "to be" --length 120 --argmax)
expect_ok "${SAMPLE[@]}" --device cuda && cp .ok.out gpu.txt
expect_ok "${SAMPLE[@]}" --device cpu --threads 1 && cp .ok.out cpu.txt
cmp -s gpu.txt cpu.txt && note "--argmax text identical on GPU and CPU" ||
    fail "--argmax text differs: GPU '$(head -c 80 gpu.txt)' CPU '$(head -c 80 cpu.txt)'"

head -n 40 text.txt > score.txt
gs=$("$SK_SAMPLE" --checkpoint g/last.safetensors --score score.txt --device cuda | awk '{print $2}')
cs=$("$SK_SAMPLE" --checkpoint g/last.safetensors --score score.txt --device cpu | awk '{print $2}')
awk -v a="$gs" -v b="$cs" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-4) }' &&
    note "--score GPU $gs, CPU $cs" || fail "--score differs: GPU $gs, CPU $cs"

expect_ok "$SK_TRAIN" "${MODEL[@]}" --device cpu --threads 1 --out-dir g --max-iters 160 --init-from g/last.safetensors &&
    grep -q 'steps=160' .ok.out && note "a GPU checkpoint resumes on the CPU" || fail "CPU resume of a GPU checkpoint"
finish
