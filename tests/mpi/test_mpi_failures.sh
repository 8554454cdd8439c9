#!/usr/bin/env bash
# test_mpi_failures.sh: bad input and failures under several ranks. Ranks that read other data
# or run other options, and a batch that the ranks do not divide, end the job with one error
# line from rank 0 and exit code 2; a rank killed with SIGKILL ends the job non-zero within
# seconds and last.* still loads and resumes; SIGINT to mpirun ends every rank after a
# checkpoint.
. "$(dirname "$0")/mpi_lib.sh"

gen_text text.txt 300 5
gen_text other.txt 300 6
RUN=(--data text.txt "${MODEL[@]}" --max-iters 5 --out-dir out)
TRAIN=("$SK_TRAIN" "${MODEL[@]}" --max-iters 5 --out-dir out)

expect_error '^error: --batch-size 8 is not divisible by the 3 ranks' "${MPIRUN[@]}" -np 3 "$SK_TRAIN" "${RUN[@]}"
# MPMD launches (A : B) give the ranks different command lines.
expect_error '^error: rank 1 read other data than rank 0: other.txt has [0-9]+ characters' \
    "${MPIRUN[@]}" -np 1 "${TRAIN[@]}" --data text.txt : -np 1 "${TRAIN[@]}" --data other.txt
expect_error '^error: rank 1 runs other options than rank 0 \(--lr 0.001 vs 0.002\)' \
    "${MPIRUN[@]}" -np 1 "${TRAIN[@]}" --data text.txt : -np 1 "${TRAIN[@]}" --data text.txt --lr 0.001
expect_error '^error: rank 3 runs other options than rank 0 \(--seed 7 vs 1337\)' \
    "${MPIRUN[@]}" -np 3 "${TRAIN[@]}" --data text.txt : -np 1 "${TRAIN[@]}" --data text.txt --seed 7
# An error on one rank alone (its data file is missing) is reported by rank 0, naming the rank.
expect_error '^error: rank 1: .*missing.txt' \
    "${MPIRUN[@]}" -np 1 "${TRAIN[@]}" --data text.txt : -np 1 "${TRAIN[@]}" --data missing.txt
[ -e out/last.safetensors ] && fail "a refused job wrote a checkpoint"

LONG=(--data text.txt "${MODEL[@]}" --max-epochs 0 --max-iters 100000000 --eval-every 0 --log-every 1)
started() { [ -s "$1/metrics.jsonl" ] && [ "$(wc -l < "$1/metrics.jsonl")" -ge 20 ]; }

# SIGKILL of one rank (not mpirun) mid-run.
"${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${LONG[@]}" --checkpoint-every 3 --out-dir k > k.out 2> k.err &
job=$!
if wait_for 30 started k && [ -s k/last.safetensors ]; then
    victim=$(pgrep -P "$job" -f shakespeare-train | tail -n 1)
    kill -KILL "$victim"
    t0=$(date +%s)
    ended() { ! kill -0 "$job" 2> /dev/null; }
    if wait_for 15 ended; then
        wait "$job"; rc=$?
        [ "$rc" -ne 0 ] && note "a rank (pid $victim) killed: the job ended with exit code $rc in $(($(date +%s) - t0)) s" ||
            fail "rank killed: the job exited 0"
    else
        fail "rank killed: the job still runs 15 s later"; kill -KILL "$job"
    fi
    pgrep -f "out-dir k\b" > /dev/null && fail "rank killed: a process of the job is left over"
    step=$(state_step k/last.safetensors)
    expect_ok "$SK_SAMPLE" --checkpoint k/last.safetensors --device cpu --length 5 --argmax &&
        note "the last checkpoint (step $step) loads"
    expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" --data text.txt "${MODEL[@]}" --max-iters $((step + 3)) --out-dir k \
        --init-from k/last.safetensors && [ "$(state_step k/last.safetensors)" = $((step + 3)) ] &&
        note "and resumes under 2 ranks to step $((step + 3))"
else
    fail "the 2-rank job did not start: $(cat k.err)"; kill -KILL "$job"
fi

# SIGINT to mpirun: every rank stops at the same step and rank 0 writes last.* there.
# A report every 20 steps, not every step: OpenMPI 4.1's mpirun stops draining the ranks'
# stdout once it has SIGINT and SIGKILLs them odls_base_sigkill_timeout (1 s) later, so a rank 0
# that prints every step blocks on the full pipe and dies before its checkpoint (README).
logged() { [ -s "$1/metrics.jsonl" ] && [ "$(wc -l < "$1/metrics.jsonl")" -ge 3 ]; }
"${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${LONG[@]}" --log-every 20 --checkpoint-every 0 --out-dir s > s.out 2> s.err &
job=$!
if wait_for 30 logged s; then
    kill -INT "$job"
    wait "$job"; rc=$?
    # The checkpoint is the guarantee. Rank 0's "interrupted at step N" line is printed after
    # it, and OpenMPI's mpirun may already have stopped forwarding output by then: when the
    # line arrives it must be one line and name the checkpoint's step.
    step=$(state_step s/last.safetensors)
    said=$(sed -n 's/^interrupted at step \([0-9]*\); checkpoint saved to .*last\.safetensors$/\1/p' s.err)
    [ "$rc" -ne 0 ] && [ -n "$step" ] && [ "$step" -ge 60 ] &&
        note "SIGINT to mpirun: exit code $rc, checkpoint at step $step" ||
        fail "SIGINT to mpirun: exit code $rc, checkpoint step '${step}', stderr: $(cat s.err)"
    [ "$(grep -c '^interrupted' s.err)" -le 1 ] || fail "SIGINT: more than one 'interrupted' line (only rank 0 prints)"
    [ -z "$said" ] || [ "$said" = "$step" ] || fail "SIGINT: rank 0 says step $said, the checkpoint holds $step"
    expect_ok "$SK_TRAIN" --data text.txt "${MODEL[@]}" --max-iters $((step + 2)) --out-dir s \
        --init-from s/last.safetensors && note "and resumes in one process"
else
    fail "the 2-rank job did not start: $(cat s.err)"; kill -KILL "$job"
fi
finish
