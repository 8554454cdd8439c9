#!/usr/bin/env bash
# test_mpi_parity.sh: data-parallel training is the single-process run with the same global
# batch. 30 steps with dropout under 1, 2 and 4 ranks against one process (1 rank: bit for
# bit, also when it takes the data-parallel step; 2 and 4: within TOL, mpi_lib.sh says why);
# two 2-rank runs bit-identical; validation under N ranks equal to one process's; 15 steps
# under 2 ranks resumed under 1 (and the reverse) against the straight run.
. "$(dirname "$0")/mpi_lib.sh"

gen_text text.txt 500 11
RUN=(--data text.txt "${MODEL[@]}" --max-iters 30 --eval-every 15 --checkpoint-every 15)
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir one || finish
for n in 1 2 4; do
    expect_ok "${MPIRUN[@]}" -np $n "$SK_TRAIN" "${RUN[@]}" --out-dir dp$n || continue
    tol=$([ $n = 1 ] && echo 0 || echo $TOL)
    if r=$("$SK_CKPT_DIFF" one/last.safetensors dp$n/last.safetensors "$tol"); then
        note "$n rank(s) vs one process after 30 steps: $r"
    else
        fail "$n rank(s) vs one process after 30 steps: $r"
    fi
    # Only rank 0 writes: one metrics log with one record per report, no duplicates.
    [ "$(grep -c '"train_loss"' dp$n/metrics.jsonl)" = 6 ] || fail "$n ranks: metrics.jsonl has duplicate records"
done
# One rank taking the data-parallel step (SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1): MPI's all-reduce of
# one rank in the loop, bit for bit the one-process run.
SHAKESPEARE_TEST_DATA_PARALLEL_STEP=1 expect_ok "${MPIRUN[@]}" -np 1 "$SK_TRAIN" "${RUN[@]}" --out-dir dpstep1 &&
    { grep -q 'data-parallel over 1 rank (mpi)' .ok.err || fail "1 rank: no data-parallel notice: $(cat .ok.err)"; } &&
    if r=$("$SK_CKPT_DIFF" one/last.safetensors dpstep1/last.safetensors 0); then
        note "1 rank taking the data-parallel step vs one process: $r"
    else fail "1 rank taking the data-parallel step vs one process: $r"; fi
expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir dp2b &&
    if r=$("$SK_CKPT_DIFF" dp2/last.safetensors dp2b/last.safetensors 0); then note "two 2-rank runs: $r"
    else fail "two 2-rank runs differ: $r"; fi

# Validation: the same checkpoint scored by 1, 2 and 4 ranks (sharded streams, summed).
for n in 1 2 4; do
    expect_ok "${MPIRUN[@]}" -np $n "$SK_TRAIN" --data text.txt "${MODEL[@]}" --init-from one/last.safetensors --eval-only &&
        grep '^val_loss' .ok.out > val$n.txt
done
if [ -s val1.txt ] && cmp -s val1.txt val2.txt && cmp -s val1.txt val4.txt; then
    note "validation under 1, 2 and 4 ranks: $(cat val1.txt)"
else
    fail "validation differs: $(cat val1.txt val2.txt val4.txt 2>/dev/null | tr '\n' ' ')"
fi
vallog() { grep '"iter":30,"val_loss"' "$1" | sed 's/,"elapsed_s":[0-9.]*//'; } # the clock's field aside
grep -q '"val_loss"' dp4/metrics.jsonl && [ "$(vallog dp4/metrics.jsonl)" = "$(vallog one/metrics.jsonl)" ] && note "validation logged during training matches" ||
    fail "validation logged at step 30 differs between 4 ranks and one process"

# Resume across rank counts: 15 steps under 2 ranks then 15 under 1, and the reverse.
HALF=(--data text.txt "${MODEL[@]}" --eval-every 15 --checkpoint-every 15)
expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${HALF[@]}" --max-iters 15 --out-dir a &&
    expect_ok "$SK_TRAIN" "${HALF[@]}" --max-iters 30 --out-dir a --init-from a/last.safetensors &&
    if r=$("$SK_CKPT_DIFF" one/last.safetensors a/last.safetensors $TOL); then note "2 ranks then 1 process: $r"
    else fail "2 ranks then 1 process: $r"; fi
expect_ok "$SK_TRAIN" "${HALF[@]}" --max-iters 15 --out-dir b &&
    expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${HALF[@]}" --max-iters 30 --out-dir b --init-from b/last.safetensors &&
    if r=$("$SK_CKPT_DIFF" one/last.safetensors b/last.safetensors $TOL); then note "1 process then 2 ranks: $r"
    else fail "1 process then 2 ranks: $r"; fi

# The other cells (one state tensor a layer, gathered from the ranks as the LSTM's two are):
# 2 ranks against one process, and 15 steps under 2 ranks resumed under 1 against it.
for cell in gru rnn; do
    CELL=(--data text.txt "${MODEL[@]}" --cell $cell --eval-every 15 --checkpoint-every 15)
    expect_ok "$SK_TRAIN" "${CELL[@]}" --max-iters 30 --out-dir $cell-one &&
        expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${CELL[@]}" --max-iters 30 --out-dir $cell-dp2 &&
        expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${CELL[@]}" --max-iters 15 --out-dir $cell-half &&
        expect_ok "$SK_TRAIN" "${CELL[@]}" --max-iters 30 --out-dir $cell-half --init-from $cell-half/last.safetensors &&
        if r=$("$SK_CKPT_DIFF" $cell-one/last.safetensors $cell-dp2/last.safetensors $TOL) &&
            r2=$("$SK_CKPT_DIFF" $cell-one/last.safetensors $cell-half/last.safetensors $TOL); then
            note "$cell: 2 ranks vs one process: $r; 2 ranks then 1 process: $r2"
        else fail "$cell: 2 ranks differ from one process: $r ${r2:-}"; fi
done
finish
