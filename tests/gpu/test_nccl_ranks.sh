#!/usr/bin/env bash
# test_nccl_ranks.sh (label gpu): data-parallel training on GPUs computes the one-process run.
# Two ranks under mpirun, each on its own GPU (rank r on cuda:r), all-reduce their gradients
# in GPU memory with NCCL; after 30 steps with dropout their checkpoint matches one process
# on one GPU with the same global batch, within mpi_lib.sh's TOL (only the order of the
# gradient sums differs), and two 2-rank runs are bit-identical. Skipped (77) without MPI,
# without a usable GPU, or with one GPU only (rank 1 then finds no cuda:1).
. "$(dirname "$0")/../mpi/mpi_lib.sh"

gen_text text.txt 300 5
require_gpu
RUN=(--data text.txt --embed-size 32 --hidden-size 64 --num-layers 2 --dropout 0.3 --batch-size 8 --seq-length 32
     --device cuda --max-iters 30 --eval-every 15 --checkpoint-every 15)
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir one || finish
timeout "$(hang_limit 120)" "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir two > two.out 2> two.err
rc=$?
if [ "$rc" -ne 0 ] && grep -q 'CUDA device 1 does not exist' two.err; then
    skip "one GPU only: $(grep -m1 'does not exist' two.err)"
fi
[ "$rc" -eq 0 ] || { fail "2 ranks: exit $rc"; sed 's/^/    stderr: /' two.err >&2; finish; }
grep -q 'backend=cuda' two.out && note "2 ranks trained on GPUs" || fail "the ranks did not use GPUs"
if r=$("$SK_CKPT_DIFF" one/last.safetensors two/last.safetensors "$TOL"); then note "2 NCCL ranks vs one process: $r"
else fail "2 NCCL ranks vs one process: $r"; fi
expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir two-again &&
    if r=$("$SK_CKPT_DIFF" two/last.safetensors two-again/last.safetensors 0); then note "two 2-rank runs: $r"
    else fail "two 2-rank runs differ: $r"; fi
finish
