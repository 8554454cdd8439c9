#!/usr/bin/env bash
# test_data_parallel_step.sh: SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 makes one process take the
# data-parallel step (forward, backward, the gradient sum, the norm and the update, with the
# loss and stop requests agreed every step) instead of the one-process step, so that the path
# several ranks take can be tested on one process (on a GPU: with a one-rank NCCL
# communicator, tests/gpu/test_nccl_one_process.sh). On the CPU:
#  1. 30 steps with dropout and weight drop: bit-identical to the one-process step (tolerance
#     none: a sum over one rank changes nothing, the rest is the same code), and the run says
#     it takes the data-parallel step; any other value of the variable changes nothing;
#  2. 15 steps that way resumed by the one-process step to 30: bit-identical too;
#  3. a SIGTERM mid-run still ends with a checkpoint and exit 143 (the stop request goes through
#     the per-step agreement).
. "$(dirname "$0")/lib.sh"

gen_text text.txt 300 5
RUN=(--data text.txt --embed-size 16 --hidden-size 32 --num-layers 2 --dropout 0.3 --weight-drop 0.25 --batch-size 8
     --seq-length 16 --device cpu --threads 1 --max-iters 30 --eval-every 15 --checkpoint-every 15)
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir plain || finish
grep -q 'data-parallel' .ok.out .ok.err && fail "the plain run says it is data-parallel"
SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir dp || finish
grep -q 'data-parallel over 1 rank (single): 8 of the 8 streams each' .ok.err &&
    note "$(grep -m1 'data-parallel' .ok.err)" || fail "no data-parallel notice: $(cat .ok.err)"
if r=$("$SK_CKPT_DIFF" plain/last.safetensors dp/last.safetensors 0); then note "data-parallel step vs one-process step: $r"
else fail "data-parallel step vs one-process step: $r"; fi
cmp -s <(grep -o '"train_loss":[^,]*' plain/metrics.jsonl) <(grep -o '"train_loss":[^,]*' dp/metrics.jsonl) &&
    note "the logged training losses are identical" || fail "the logged training losses differ"
SHAKESPEARE_TEST_DATA_PARALLEL_STEP=yes expect_ok "$SK_TRAIN" "${RUN[@]}" --max-iters 2 --out-dir other &&
    { grep -q 'data-parallel' .ok.out .ok.err && fail "SHAKESPEARE_TEST_DATA_PARALLEL_STEP=yes took the data-parallel step" ||
      note "only the value 1 turns it on"; }

SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 expect_ok "$SK_TRAIN" "${RUN[@]}" --max-iters 15 --out-dir half &&
    expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir half --init-from half/last.safetensors &&
    if r=$("$SK_CKPT_DIFF" plain/last.safetensors half/last.safetensors 0); then
        note "15 data-parallel steps resumed by the one-process step to 30: $r"
    else fail "15 data-parallel steps resumed by the one-process step to 30: $r"; fi

gen_text long.txt 4000 7
SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 "$SK_TRAIN" --data long.txt "${RUN[@]:2}" --max-iters 100000 --max-epochs 0 \
    --out-dir term > term.out 2> term.err &
pid=$!
wait_for 30 has_records term/metrics.jsonl 2 || fail "no progress before the signal: $(tail -n 3 term.err)"
kill -TERM $pid
wait $pid; rc=$?
[ "$rc" = 143 ] && [ -f term/last.safetensors ] && note "SIGTERM: exit 143 with a checkpoint" ||
    fail "SIGTERM: exit $rc, checkpoint $(ls term 2>&1 | tr '\n' ' ')"
finish
