#!/usr/bin/env bash
# test_nccl_ranks.sh (label gpu): data-parallel training on GPUs computes the one-process run.
# Two ranks under mpirun, each on its own GPU (rank r on cuda:r), all-reduce their gradients
# in GPU memory with NCCL; after 30 steps with dropout their checkpoint matches one process
# on one GPU with the same global batch, within mpi_lib.sh's TOL (only the order of the
# gradient sums differs), and two 2-rank runs are bit-identical. With one GPU, both ranks
# would share it: the job is refused before training with one line naming the two ranks and
# the GPU (NCCL takes one GPU per rank), and the rest is skipped. Skipped (77) without MPI or
# without a usable GPU.
. "$(dirname "$0")/../mpi/mpi_lib.sh"

gen_text text.txt 300 5
require_gpu
# Strict fp32: the 1e-4 tolerance against one process is fp32's; under the default tf32 (10-bit
# operands) the ranks' other summation order grows to 1e-3 in c after 30 steps.
RUN=(--data text.txt --embed-size 32 --hidden-size 64 --num-layers 2 --dropout 0.3 --batch-size 8 --seq-length 32
     --device cuda --precision fp32 --max-iters 30 --eval-every 15 --checkpoint-every 15)
# Two ranks on one GPU: refused before training, with --device cuda and with auto.
refuses_shared_gpu() {
    for dev in cuda auto; do
        expect_error "^error: ranks 0 and 1 run on the same GPU \\(cuda:0 \\(.*\\), GPU-[0-9a-f-]{36}\\): NCCL needs a GPU per rank" \
            "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --device $dev --out-dir shared-$dev
        [ -e shared-$dev/last.safetensors ] && fail "the refused job with --device $dev wrote a checkpoint"
    done
}
if [ -n "${SK_EMULATED_DEVICE:-}" ]; then
    SK_EMU_DEVICES=1 refuses_shared_gpu # the emulated node of one GPU; the test's own has two
elif [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" = 1 ]; then
    refuses_shared_gpu
    [ "$FAILS" -gt 0 ] && finish
    skip "one GPU only: two ranks on it are refused (checked); the 2-rank comparison needs two GPUs"
fi
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir one || finish
timeout "$(hang_limit 120)" "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir two > two.out 2> two.err
rc=$?
[ "$rc" -eq 0 ] || { fail "2 ranks: exit $rc"; sed 's/^/    stderr: /' two.err >&2; finish; }
grep -q 'backend=cuda' two.out && note "2 ranks trained on GPUs" || fail "the ranks did not use GPUs"
if r=$("$SK_CKPT_DIFF" one/last.safetensors two/last.safetensors "$TOL"); then note "2 NCCL ranks vs one process: $r"
else fail "2 NCCL ranks vs one process: $r"; fi
expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir two-again &&
    if r=$("$SK_CKPT_DIFF" two/last.safetensors two-again/last.safetensors 0); then note "two 2-rank runs: $r"
    else fail "two 2-rank runs differ: $r"; fi
finish
