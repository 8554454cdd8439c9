#!/usr/bin/env bash
# test_nccl_rank.sh (label gpu): the NCCL path of data-parallel training. One rank under
# mpirun on the GPU all-reduces its gradients in GPU memory with NCCL (a communicator of one,
# so the sum is the buffer itself) and must end 30 steps with dropout bit-identical to the
# plain CUDA backend: everything else in the step is the same code and the CUDA backend's
# reductions are deterministic. Skipped (77) without MPI or without a usable GPU.
. "$(dirname "$0")/../mpi/mpi_lib.sh"

gen_text text.txt 300 5
require_gpu
RUN=(--data text.txt --embed-size 32 --hidden-size 64 --num-layers 2 --dropout 0.3 --batch-size 8 --seq-length 32
     --device cuda --max-iters 30 --eval-every 15 --checkpoint-every 15)
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir plain || finish
expect_ok "${MPIRUN[@]}" -np 1 "$SK_TRAIN" "${RUN[@]}" --out-dir nccl || finish
grep -q 'backend=cuda' .ok.out && note "one rank trained on the GPU" || fail "the rank did not use the GPU"
if r=$("$SK_CKPT_DIFF" plain/last.safetensors nccl/last.safetensors 0); then note "NCCL rank vs plain CUDA: $r"
else fail "NCCL rank vs plain CUDA: $r"; fi
finish
