#!/usr/bin/env bash
# test_gpu_resume.sh (label gpu): on the GPU, through the real binaries,
#   - a run stopped after N steps and resumed with --init-from to 2N ends with parameters
#     bit-identical to an uninterrupted 2N run (tensor bytes of last.safetensors; the JSON
#     header is left out), with --dropout 0 and with --dropout 0.3 between two layers (the
#     inter-layer masks are hash.h's, keyed by (seed, step): nothing about them needs saving);
#   - the same command twice gives bit-identical parameters (deterministic cuDNN algorithms
#     and kernels, no float atomics);
#   - the comparison can fail: the checkpoint at N differs from the one at 2N (that masks
#     depend on the seed alone, not on the initialization, is test_cuda_determinism.c's);
#   - --precision tf32 and bf16: N/2 + N/2 == N bit for bit too, the checkpoint records the
#     precision, and resuming a bf16 checkpoint in fp32 goes on with a note naming both.
# The runs cross an epoch boundary and evaluate in between. Skipped (77) where no GPU is usable.
# On the emulated device (SK_EMULATED_DEVICE, where every step of bf16's persistent kernels costs
# its fibers) N = 16 instead of 50 on half the text, with H = 40: the runs still cross an epoch
# boundary (about 10 windows an epoch), evaluate before and after the stop, and stop mid-epoch.
. "$(dirname "$0")/../cli/lib.sh"

if [ -n "${SK_EMULATED_DEVICE:-}" ]; then
    lines=30 H=40 N=16 eval=4
else
    lines=60 H=72 N=50 eval=10
fi
half=$((N / 2))
gen_text text.txt "$lines" 7 # ~50 characters a line: 60 lines make about 20 windows of 4 x 32 an epoch
require_gpu

for dropout in 0 0.3; do
    C=("$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size "$H" --num-layers 2 --dropout "$dropout"
       --batch-size 4 --seq-length 32 --device cuda --max-epochs 0 --warmup-iters 5 --eval-every "$eval"
       --log-every 5 --lr 0.004)
    d=d$dropout
    expect_ok "${C[@]}" --out-dir "$d/a" --max-iters "$N" || continue
    grep -q 'backend=cuda' .ok.out || fail "dropout $dropout: the run did not use the GPU: $(tail -n 1 .ok.out)"
    expect_ok "${C[@]}" --out-dir "$d/twice" --max-iters "$N" || continue
    same_tensors "$d/a/last.safetensors" "$d/twice/last.safetensors" &&
        note "dropout $dropout: the same run twice, bit for bit" || fail "dropout $dropout: the same run twice differs"
    expect_ok "${C[@]}" --out-dir "$d/b" --max-iters "$half" || continue
    mkdir "$d/bhalf" && cp "$d"/b/last.safetensors "$d"/b/last.*.state "$d/bhalf/"
    [ "$(state_step "$d/b/last.safetensors")" = "$half" ] || fail "dropout $dropout: the stopped run is not at step $half"
    expect_ok "${C[@]}" --out-dir "$d/b" --max-iters "$N" --init-from "$d/b/last.safetensors" || continue
    [ "$(state_step "$d/b/last.safetensors")" = "$N" ] || fail "dropout $dropout: the resumed run is not at step $N"
    if same_tensors "$d/a/last.safetensors" "$d/b/last.safetensors"; then
        note "dropout $dropout: $half + $half steps == $N steps on the GPU, bit for bit"
    else
        fail "dropout $dropout: resumed parameters differ from the uninterrupted run's"
    fi
    same_tensors "$d/a/best.safetensors" "$d/b/best.safetensors" || fail "dropout $dropout: best.safetensors differs"
    if same_tensors "$d/bhalf/last.safetensors" "$d/a/last.safetensors"; then
        fail "dropout $dropout: the checkpoints at $half and $N are identical"
    fi
done

# The JSON header of a safetensors file (train_config sits in it, its quotes escaped).
header() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1"; }
for prec in tf32 bf16; do
    C=("$SK_TRAIN" --data text.txt --embed-size 16 --hidden-size "$H" --num-layers 2 --dropout 0.3 --batch-size 4
       --seq-length 32 --device cuda --max-epochs 0 --warmup-iters 5 --eval-every "$eval" --log-every 5 --lr 0.004)
    d=p$prec
    expect_ok "${C[@]}" --precision "$prec" --out-dir "$d/a" --max-iters "$N" || continue
    expect_ok "${C[@]}" --precision "$prec" --out-dir "$d/b" --max-iters "$half" || continue
    header "$d/b/last.safetensors" | grep -qF "\\\"precision\\\":\\\"$prec\\\"" ||
        fail "$prec: the checkpoint's train_config does not record the precision"
    cp -r "$d/b" "$d/c"
    expect_ok "${C[@]}" --precision "$prec" --out-dir "$d/b" --max-iters "$N" --init-from "$d/b/last.safetensors" ||
        continue
    grep -q 'differs from the checkpoint' .ok.err &&
        fail "$prec: resuming in the same precision printed: $(cat .ok.err)"
    same_tensors "$d/a/last.safetensors" "$d/b/last.safetensors" &&
        note "$prec: $half + $half steps == $N steps, bit for bit" || fail "$prec: resumed parameters differ"
    expect_ok "${C[@]}" --precision fp32 --out-dir "$d/c" --max-iters "$((half + 5))" --init-from "$d/c/last.safetensors" ||
        continue
    grep -q "note: --precision fp32 differs from the checkpoint's $prec" .ok.err &&
        note "$prec checkpoint resumed in fp32, with the note" || fail "$prec -> fp32: no note: $(cat .ok.err)"
done
finish
