#!/usr/bin/env bash
# test_concurrent.sh: one writer per out-dir, with runs at the same time.
#  - While a run trains, a second run on its out-dir (fresh, overwriting, resuming, or the same
#    directory spelled another way) exits 2 at once, naming the directory and the first run's pid.
#    The first run ends exactly as an undisturbed run of the same length does: every file
#    byte-identical but for the --max-iters each records, so metrics.jsonl holds its records only.
#  - A --log file outside the out-dir is locked the same way.
#  - The sampler takes no lock: reading last.safetensors in a loop while a run rewrites it every
#    step never fails.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 21
# No validation split: a run stopped by SIGTERM at step N and one told to stop at N then write
# the same files (the stopped run skips the final evaluation).
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-epochs 0 --val-frac 0)
LONG=(--max-iters 100000000 --checkpoint-every 1 --log-every 1)

echo "== a second run on an out-dir in use"
"${RUN[@]}" --out-dir a "${LONG[@]}" > a.out 2> a.err &
pid=$!
wait_for 20 has_records a/metrics.jsonl 3 || fail "the first run did not start: $(cat a.err)"
in_use="is in use by another run \(pid $pid\); one run writes to an out-dir at a time"
expect_error "^error: output directory a $in_use\$" "${RUN[@]}" --out-dir a --max-iters 3
expect_error "output directory a $in_use" "${RUN[@]}" --out-dir a --max-iters 3 --overwrite
expect_error "output directory a $in_use" "${RUN[@]}" --out-dir a --max-iters 100000000 --init-from a/last.safetensors
expect_error "output directory \./a/ $in_use" "${RUN[@]}" --out-dir ./a/ --max-iters 3
ln -s a alias
expect_error "output directory alias $in_use" "${RUN[@]}" --out-dir alias --max-iters 3
# The refusals came while the first run was training (not after it ended), or they prove nothing.
kill -0 "$pid" 2> /dev/null && note "the first run (pid $pid) was training all along" ||
    fail "the first run ended before the second runs were tried: $(cat a.err)"
kill -TERM "$pid"
wait "$pid"; rc=$?
[ "$rc" = 143 ] || fail "the first run ended with exit code $rc, want 143: $(cat a.err)"
steps=$(state_step a/last.safetensors)
# The same run, undisturbed, to the same step.
expect_ok "${RUN[@]}" --out-dir ref --max-iters "$steps" --checkpoint-every 1 --log-every 1 || finish
strip_speed() { sed 's/,"tokens_per_s":[0-9.e+-]*//; s/,"elapsed_s":[0-9.e+-]*//' "$1"; } # the clock's fields
[ "$(cd a && ls -A)" = "$(cd ref && ls -A)" ] || fail "the file names differ: $(cd a && ls -A | tr '\n' ' ') vs $(cd ref && ls -A | tr '\n' ' ')"
# The options record holds each run's --max-iters, and the model's checksum covers the record (the
# state names that checksum, and its CRC covers it), and the state holds the run's elapsed seconds
# (the clock's, 8 bytes after the optimizer record at 140 + 16 * slots): those bytes aside, every
# byte is the same.
header_but_end() { header "$1" | sed 's/max_iters\\":[0-9]*/max_iters/; s/crc32:[0-9a-f]*/crc32/g; s/ *$//'; }
header() { head -c "$(($(od -An -t u8 -N 8 "$1" | tr -d ' ') + 8))" "$1" | tail -c +9; }
state_but_end() {
    local t=$((140 + 16 * $(od -An -t u4 -j 136 -N 4 "$1" | tr -d ' ')))
    head -c 12 "$1"; head -c "$t" "$1" | tail -c +17; head -c -4 "$1" | tail -c +$((t + 9))
}
for f in $(cd ref && ls -A); do
    case $f in
    metrics.jsonl) cmp -s <(strip_speed a/$f) <(strip_speed ref/$f) || fail "a/metrics.jsonl differs from an undisturbed run's" ;;
    *.safetensors) same_tensors a/$f ref/$f && cmp -s <(header_but_end a/$f) <(header_but_end ref/$f) ||
        fail "a/$f differs from an undisturbed run's" ;;
    *.state) cmp -s <(state_but_end a/$f) <(state_but_end ref/$f) || fail "a/$f differs from an undisturbed run's" ;;
    *) cmp -s a/$f ref/$f || fail "a/$f differs from an undisturbed run's" ;;
    esac
done
iters=$(sed -n 's/^{"iter":\([0-9]*\),.*/\1/p' a/metrics.jsonl | awk '$1 != NR { bad = 1 } END { print (bad ? "bad" : NR) }')
[ "$iters" = "$steps" ] && note "a/ after $steps steps: byte-identical to an undisturbed run (but its recorded --max-iters), metrics.jsonl iters 1..$steps once each" ||
    fail "a/metrics.jsonl does not hold iters 1..$steps once each ($iters)"

echo "== a --log outside the out-dir, and the sampler while a run writes"
"${RUN[@]}" --out-dir s --log shared.jsonl "${LONG[@]}" > s.out 2> s.err &
pid=$!
wait_for 20 has_records shared.jsonl 3 || fail "the run with --log shared.jsonl did not start: $(cat s.err)"
expect_error "^error: metrics log shared\.jsonl is in use by another run \(pid $pid\); choose another --log\$" \
    "${RUN[@]}" --out-dir other --log shared.jsonl --max-iters 3
[ -e other ] && fail "the refused run left other/ behind" || note "the refused run left nothing behind"
[ -e other/last.safetensors ] && fail "the refused run trained"
# Every sample must load a whole checkpoint; count those during which last.safetensors was replaced
# (at least 30 samples, and on until 10 of them overlapped a replacement, however slow the disk).
loads=0 overlapped=0 i=0
while [ "$i" -lt 30 ] || { [ "$overlapped" -lt 10 ] && [ "$i" -lt 300 ]; }; do
    i=$((i + 1))
    before=$(stat -c %i s/last.safetensors)
    if timeout 20 "$SK_SAMPLE" --checkpoint s/last.safetensors --device cpu --threads 1 --length 10 --seed "$i" \
        > smp.out 2> smp.err && [ -s smp.out ]; then
        loads=$((loads + 1))
    else
        fail "sample $i failed while the run wrote: $(cat smp.err)"
    fi
    [ "$(stat -c %i s/last.safetensors)" != "$before" ] && overlapped=$((overlapped + 1))
done
kill -0 "$pid" 2> /dev/null || fail "the run ended during the sampler loop: $(cat s.err)"
kill -TERM "$pid"
wait "$pid"; rc=$?
[ "$rc" = 143 ] || fail "the run with --log ended with exit code $rc, want 143: $(cat s.err)"
[ "$loads" = "$i" ] && [ "$overlapped" -ge 10 ] &&
    note "$loads of $i samples loaded; last.safetensors was replaced during $overlapped of them" ||
    fail "$loads of $i samples loaded, $overlapped overlapped a checkpoint write (want >= 10)"
finish
