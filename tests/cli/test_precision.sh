#!/usr/bin/env bash
# test_precision.sh: --precision in both programs, on the CPU.
#  - a value other than fp32, tf32, bf16 is one "error:" line and exit 2 (train and sample);
#  - tf32 on the CPU is refused the same way, naming the flag and the reason; bf16 too where
#    the CPU or the build lacks it, else it runs, is recorded, and a resume keeps it;
#  - the default, --precision auto, is fp32 on the CPU: a run with --precision fp32 is
#    bit-identical to one without, and the done line says precision=fp32;
#  - the checkpoint's train_config records the precision computed in ("precision":"fp32", not
#    "auto"), and resuming with the same precision, or auto, says nothing about it.
# (A resume that changes the precision needs a GPU: tests/gpu/test_gpu_resume.sh.)
. "$(dirname "$0")/lib.sh"

gen_text text.txt 30 2
# The JSON of train_config sits inside the header's JSON, its quotes escaped.
header() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1"; }
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-iters 4 --eval-every 2)
expect_ok "${RUN[@]}" --out-dir plain || finish
SA=("$SK_SAMPLE" --checkpoint plain/last.safetensors --device cpu --threads 1 --length 5)

for bad in fp16 FP32 "" " bf16" tf32x; do
    expect_error "^error: --precision expects fp32, tf32, bf16 or auto, got \"$bad\"" "${RUN[@]}" --out-dir fresh \
        --precision "$bad"
    expect_error "^error: --precision expects fp32, tf32, bf16 or auto, got \"$bad\"" "${SA[@]}" --precision "$bad"
done
expect_error '^error: option --precision needs a value' "${RUN[@]}" --out-dir fresh --precision
expect_error "^error: --precision tf32 needs a CUDA device; the CPU backend computes in fp32 or bf16" \
    "${RUN[@]}" --out-dir fresh --device cpu --precision tf32
expect_error "^error: --precision tf32 needs a CUDA device; the CPU backend computes in fp32 or bf16" \
    "${SA[@]}" --precision tf32
# bf16 on the CPU needs oneDNN and bf16 dot products (AVX512_BF16 or AMX): without them one line
# says which is missing; with them a run computes in bf16, records it, and a resume keeps it.
if "${RUN[@]}" --out-dir b16 --device cpu --precision bf16 >b16.out 2>b16.err; then
    grep -q 'precision=bf16' b16.out && header b16/last.safetensors | grep -qF '\"precision\":\"bf16\"' &&
        note "bf16 on this CPU: the run and its record say bf16" || fail "a bf16 run: $(tail -n 1 b16.out)"
    expect_ok "$SK_TRAIN" --init-from b16/last.safetensors --out-dir b16 --max-iters 6 &&
        grep -q 'precision=bf16' .ok.out && note "a resume keeps bf16" || fail "a resume of bf16: $(tail -n 1 .ok.out)"
else
    [ "$(wc -l <b16.err)" = 1 ] &&
        grep -Eq '^error: --precision bf16 on the CPU: (this CPU has no bf16 dot products|this build has no oneDNN \(install libdnnl-dev)' b16.err &&
        note "$(cat b16.err)" || fail "bf16 refused without one line naming why: $(cat b16.err)"
    rm -rf b16
fi
[ ! -e fresh ] || [ -z "$(ls -A fresh)" ] || fail "a refused run left files in its out-dir: $(ls fresh)"

expect_ok "${RUN[@]}" --out-dir explicit --precision fp32 || finish
same_tensors plain/last.safetensors explicit/last.safetensors && note "--precision fp32 is the CPU's default, bit for bit" ||
    fail "--precision fp32 trains differently from the default"
grep -q '^done: .* backend=cpu precision=fp32 cuda_graph_steps=0$' .ok.out && note "the done line names fp32" ||
    fail "the done line does not name fp32: $(tail -n 1 .ok.out)"

header plain/last.safetensors | grep -qF '\"precision\":\"fp32\"' &&
    note "train_config records the precision" || fail "no precision in train_config: $(header plain/last.safetensors)"

expect_ok "${RUN[@]}" --out-dir plain --max-iters 6 --precision fp32 --init-from plain/last.safetensors || finish
grep -q 'differs from the checkpoint' .ok.err && fail "resuming in the same precision printed: $(cat .ok.err)"
expect_ok "${RUN[@]}" --out-dir plain --max-iters 8 --init-from plain/last.safetensors || finish
grep -q 'differs from the checkpoint' .ok.err && fail "resuming with auto (fp32 here) printed: $(cat .ok.err)"
expect_ok "${SA[@]}" --precision fp32 && note "shakespeare-sample --precision fp32 samples on the CPU" ||
    fail "sample --precision fp32"
finish
