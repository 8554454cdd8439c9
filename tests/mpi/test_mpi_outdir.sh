#!/usr/bin/env bash
# test_mpi_outdir.sh: the out-dir rules (src/train/outdir.h) under several ranks. Rank 0, the only
# rank that writes, takes the out-dir's lock and the --log lock and decides whether a fresh
# run may start; its refusal reaches every rank, so the job ends with one error line and
# exit 2, never a hang:
#  - a 2-rank fresh run into an out-dir that holds a run is refused, the directory byte-identical;
#  - a 2-rank run into an out-dir (or onto a --log) that another run holds is refused;
#  - --overwrite under 2 ranks replaces the old run;
#  - a metrics write that fails on rank 0 (ulimit -f) ends every rank: exit 1, one error line,
#    no hang, and the last checkpoint resumes;
#  - the other ranks never open their out-dir: in an MPMD launch where rank 1 names another
#    --out-dir, that directory is never created.
. "$(dirname "$0")/mpi_lib.sh"

gen_text text.txt 300 7
RUN=(--data text.txt "${MODEL[@]}" --max-epochs 0)

echo "== a 2-rank fresh run into an out-dir that holds a run"
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir o --max-iters 10 --eval-every 5 || finish
dir_digest o > o.before
expect_error '^error: output directory o already holds a run \(last\.safetensors at step 10, best validation loss [0-9.]+\); to continue it pass --init-from o/last\.safetensors, to start over pass --overwrite$' \
    "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir o --max-iters 3
if diff o.before <(dir_digest o) > /dev/null; then note "refused with exit 2; every file in o/ is byte-identical"
else fail "the refused 2-rank run changed o/: $(diff o.before <(dir_digest o) | tr '\n' ' ')"; fi

echo "== --overwrite under 2 ranks"
expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir o --max-iters 4 --eval-every 2 --overwrite &&
    [ "$(state_step o/last.safetensors)" = 4 ] && [ "$(grep -c '"train_loss"' o/metrics.jsonl)" = 1 ] &&
    note "the 2-rank run replaced the old one (last at step 4, its own metrics log)" ||
    fail "--overwrite under 2 ranks: last at step $(state_step o/last.safetensors), log: $(tr '\n' ' ' < o/metrics.jsonl)"

echo "== 2 ranks on an out-dir or a --log that another run holds"
"$SK_TRAIN" "${RUN[@]}" --out-dir a --log held.jsonl --max-iters 100000000 --eval-every 0 --checkpoint-every 0 \
    --log-every 1 > a.out 2> a.err &
pid=$!
if wait_for 30 has_records held.jsonl 3; then
    expect_error "^error: output directory a is in use by another run \(pid $pid\); one run writes to an out-dir at a time\$" \
        "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir a --max-iters 3
    expect_error "^error: metrics log held\.jsonl is in use by another run \(pid $pid\); choose another --log\$" \
        "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir b --log held.jsonl --max-iters 3
    [ -e b ] && fail "the refused 2-rank run left b/ behind" || note "the refused runs left nothing behind"
    kill -0 "$pid" 2> /dev/null && note "the first run trains on" || fail "the first run ended: $(cat a.err)"
else
    fail "the first run did not start: $(cat a.err)"
fi
kill -TERM "$pid" 2> /dev/null
wait "$pid" 2> /dev/null

echo "== a metrics write fails on rank 0 under 2 ranks"
expect_ok "$SK_TRAIN" "${RUN[@]}" --out-dir probe --max-iters 10 || finish
kib=$(($(stat -c %s "$(ls probe/last.*.state | head -n 1)") / 1024 + 4)) # above the checkpoint files
# The limit on the ranks alone, and no shared-memory files of MPI's own (TCP between the ranks,
# PMIx's hash store), which would exceed it in MPI_Init.
limited=(bash -c 'ulimit -f "$0" && exec "$@"' "$kib") # limited CMD...: CMD under ulimit -f KIB
OMPI_MCA_btl=self,tcp PMIX_MCA_gds=hash timeout 120 "${MPIRUN[@]}" -np 2 "${limited[@]}" "$SK_TRAIN" "${RUN[@]}" \
    --out-dir m --max-iters 100000 --log-every 1 --eval-every 0 --checkpoint-every 10 > m.out 2> m.err
rc=$?
errors=$(grep -c '^error:' m.err)
if [ "$rc" = 1 ] && [ "$errors" = 1 ] &&
    grep -Eq '^error: cannot write the metrics log m/metrics\.jsonl: File too large$' m.err; then
    note "exit 1, one line: $(grep '^error:' m.err)"
else
    fail "a failed log write under 2 ranks: exit code $rc, $errors error line(s): $(tr '\n' ' ' < m.err)"
fi
s=$(state_step m/last.safetensors)
[ -n "$s" ] && expect_ok "${MPIRUN[@]}" -np 2 "$SK_TRAIN" "${RUN[@]}" --out-dir m --max-iters $((s + 3)) \
    --init-from m/last.safetensors && note "its checkpoint at step $s resumes under 2 ranks" ||
    fail "no resume after the failed log write (last at step '$s')"

echo "== only rank 0 opens the out-dir"
TRAIN=("$SK_TRAIN" "${RUN[@]}" --max-iters 3)
expect_ok "${MPIRUN[@]}" -np 1 "${TRAIN[@]}" --out-dir r0 : -np 1 "${TRAIN[@]}" --out-dir r1 &&
    [ -s r0/last.safetensors ] && [ ! -e r1 ] && note "rank 0 wrote r0/, rank 1 never created its r1/" ||
    fail "rank 1 touched its out-dir (r1: $(ls -A r1 2>&1 | tr '\n' ' '))"
finish
