#!/usr/bin/env bash
# test_write_failure.sh: a checkpoint or metrics write that fails at run time ends the run with
# exit 1 (not 2: it is not bad input) and one "error:" line naming the file and the system's
# reason; the previous checkpoint stays byte-identical, loads, and resumes to the same parameters
# as a run that never failed. The metrics log keeps whole records only.
# The failures come from the file size limit (ulimit -f, in KiB here): a write past it fails with
# EFBIG, the way a full disk (ENOSPC), a quota (EDQUOT) or a failing device (EIO) fail a write.
# shakespeare-train ignores SIGXFSZ itself, so no trap is set here.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 33
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-epochs 0 --eval-every 10 --checkpoint-every 10)
limited=(bash -c 'ulimit -f "$0" && exec "$@"') # limited KIB CMD...: CMD under ulimit -f KIB

echo "== a checkpoint write fails"
expect_ok "${RUN[@]}" --out-dir w --max-iters 20 || finish
expect_ok "${RUN[@]}" --out-dir straight --max-iters 40 || finish
state=$(ls w/last.*.state)
kib=$(($(stat -c %s "$state") / 1024 - 2)) # below a state file, above the model file and the log
[ "$(stat -c %s w/last.safetensors)" -lt $((kib * 1024)) ] || fail "the test's limit does not fit: model file too large"
mkdir before && cp -p w/*.safetensors w/*.state before/
expect_exit 1 '^error: w/(last|best)\.000000030(\.[0-9]+)?\.state: write failed \(File too large\)$' \
    "${limited[@]}" "$kib" "${RUN[@]}" --out-dir w --max-iters 40 --init-from w/last.safetensors
for f in $(cd before && ls); do cmp -s "before/$f" "w/$f" || fail "w/$f changed"; done
[ "$(cd before && ls)" = "$(cd w && ls | grep -v '^metrics.jsonl$' | grep -v '^last\.000000030\..*state$')" ] ||
    fail "checkpoint files after the failure: $(cd w && ls -A | tr '\n' ' ')"
[ -z "$(find w -name '.*.tmp.*')" ] || fail "temporary files left: $(find w -name '.*.tmp.*')"
expect_ok "$SK_SAMPLE" --checkpoint w/last.safetensors --device cpu --length 5 --argmax &&
    note "the previous checkpoint (step 20) is intact and loads"
expect_ok "${RUN[@]}" --out-dir w --max-iters 40 --init-from w/last.safetensors &&
    same_tensors w/last.safetensors straight/last.safetensors &&
    note "resumed from it to step 40: bit-identical to a run that never failed" ||
    fail "the resume after the failed write differs from an uninterrupted run"

echo "== a metrics write fails"
# A limit above the checkpoint files: the log, one record a step, is the file that reaches it.
kib=$(($(stat -c %s "$(ls straight/last.*.state | head -n 1)") / 1024 + 4))
expect_exit 1 '^error: cannot write the metrics log m/metrics\.jsonl: File too large$' \
    "${limited[@]}" "$kib" "${RUN[@]}" --out-dir m --max-iters 100000 --log-every 1
s=$(state_step m/last.safetensors)
[ -n "$s" ] && [ "$s" -gt 0 ] && [ $((s % 10)) = 0 ] || fail "no checkpoint at a multiple of 10 steps: '$s'"
[ "$(tail -c 1 m/metrics.jsonl | od -An -c | tr -d ' ')" = '\n' ] &&
    ! grep -v '^{"iter":[0-9]*,.*}$' m/metrics.jsonl > /dev/null &&
    note "the log ends with a whole record ($(wc -l < m/metrics.jsonl) records, $(stat -c %s m/metrics.jsonl) bytes)" ||
    fail "the log holds a partial record: $(tail -c 100 m/metrics.jsonl)"
expect_ok "${RUN[@]}" --out-dir m --max-iters $((s + 10)) --log-every 1 --init-from m/last.safetensors &&
    [ "$(state_step m/last.safetensors)" = $((s + 10)) ] && note "the checkpoint at step $s resumes" ||
    fail "no resume from step $s after the failed log write"
finish
