#!/usr/bin/env bash
# test_nccl_one_process.sh (label gpu): the data-parallel step with NCCL, on the one process
# and one GPU that every GPU session has (no MPI, no second GPU). SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1
# makes the trainer take the data-parallel step with a single rank: forward, backward, the
# gradients summed in GPU memory by a one-rank NCCL communicator (ncclGetUniqueId,
# ncclCommInitRank on the gradients' device, ncclAllReduce polled for asynchronous errors),
# then the norm and the update; at the end the communicator is destroyed while CUDA is alive.
#  1. 30 steps with dropout and weight drop: bit-identical to the plain CUDA run (a sum over
#     one rank is the buffer itself, the rest is the same code; the backend's reductions are
#     deterministic), and NCCL ran (NCCL_DEBUG=VERSION prints its version; so does the
#     emulated NCCL).
#  2. 15 steps that way, resumed plainly to 30: bit-identical too (the paths share checkpoints).
#  3. --cuda-graph on is refused with the data-parallel step, as with several ranks.
# Skipped (77) without a usable GPU or without NCCL in the build (--version names it).
. "$(dirname "$0")/../cli/lib.sh"

gen_text text.txt 300 5
require_gpu
"$SK_TRAIN" --version > version.txt 2>&1
grep -q 'NCCL [0-9]' version.txt || skip "no NCCL in this build: $(grep '^backends' version.txt)"
RUN=(--data text.txt --embed-size 32 --hidden-size 64 --num-layers 2 --dropout 0.3 --weight-drop 0.25 --batch-size 8
     --seq-length 32 --device cuda --max-iters 30 --eval-every 15 --checkpoint-every 15)
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir plain || finish
SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 NCCL_DEBUG=VERSION expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir dp || finish
cat .ok.out .ok.err > dp.txt
grep -q 'data-parallel over 1 rank (single)' dp.txt && note "the data-parallel step ran: $(grep -m1 'data-parallel' dp.txt)" ||
    fail "no data-parallel notice: $(head -c 400 dp.txt)"
grep -q 'NCCL version' dp.txt && note "NCCL ran: $(grep -m1 'NCCL version' dp.txt)" || fail "NCCL_DEBUG=VERSION printed nothing"
if r=$("$SK_CKPT_DIFF" plain/last.safetensors dp/last.safetensors 0); then note "NCCL data-parallel step vs plain: $r"
else fail "NCCL data-parallel step vs plain: $r"; fi

SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 expect_ok "$SK_TRAIN" "${RUN[@]}" --max-iters 15 --out-dir half &&
    expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir half --init-from half/last.safetensors &&
    if r=$("$SK_CKPT_DIFF" plain/last.safetensors half/last.safetensors 0); then
        note "15 data-parallel steps resumed plainly to 30 vs plain: $r"
    else fail "15 data-parallel steps resumed plainly to 30 vs plain: $r"; fi

SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 expect_exit 2 '^error: --cuda-graph on is for one process; 1 data-parallel rank all-reduces' \
    "$SK_TRAIN" "${RUN[@]}" --out-dir graph --cuda-graph on
finish
