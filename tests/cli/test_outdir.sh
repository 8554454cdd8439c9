#!/usr/bin/env bash
# test_outdir.sh: one run per out-dir, the cases one after another (test_concurrent.sh has the
# simultaneous ones).
#  - A fresh run into an out-dir that holds a run is refused: exit 2, one line naming the
#    directory, the step and validation loss of what is there and the two ways on, and every
#    file byte-identical afterwards (300 steps, then a fresh 3-step run).
#  - --overwrite replaces nothing before the new run's first checkpoint (killed before it, the
#    old run is intact); after it only the new run's files remain (its epoch-NNNN checkpoints
#    gone too), with a metrics log of its own; a resumed run appends to it. --overwrite with --init-from the out-dir's own run is refused
#    (test_outdir_init_from.sh: --init-from another directory's checkpoint).
#  - A run killed with SIGKILL leaves no lock behind: the next run starts at once.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 12
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-epochs 0)
visible_digest() { dir_digest "$1" | grep -v '  \./\.'; } # without hidden files (.lock, temporaries)

echo "== a fresh run into an out-dir that holds a run"
expect_ok "${RUN[@]}" --out-dir o --max-iters 300 --eval-every 100 --checkpoint-every 100 || finish
dir_digest o > o.before
best=$(sed -n 's/.*"val_loss":\([0-9.]*\).*/\1/p' o/metrics.jsonl | sort -g | head -n 1)
expect_error '^error: output directory o already holds a run \(last\.safetensors at step 300, best validation loss [0-9.]+\); to continue it pass --init-from o/last\.safetensors, to start over pass --overwrite$' \
    "${RUN[@]}" --out-dir o --max-iters 3
said=$(sed -n 's/.*best validation loss \([0-9.]*\)).*/\1/p' <<< "$LAST_STDERR")
awk -v a="$said" -v b="$best" 'BEGIN { exit !(a != "" && b != "" && a - b < 6e-5 && b - a < 6e-5) }' &&
    note "the message gives the best validation loss in metrics.jsonl ($best)" ||
    fail "the message says validation loss '$said', metrics.jsonl's best is '$best'"
# Spelled another way, and with other options: the same refusal.
expect_error 'output directory \./o/ already holds a run .*--init-from \./o/last\.safetensors' \
    "${RUN[@]}" --out-dir ./o/ --max-iters 3 --hidden-size 32 --eval-every 1
if diff o.before <(dir_digest o) > /dev/null; then note "every file in o/ is byte-identical"
else fail "the refused runs changed o/: $(diff o.before <(dir_digest o) | tr '\n' ' ')"; fi

# A run without a validation split has no validation loss to report.
expect_ok "${RUN[@]}" --out-dir nv --max-iters 5 --val-frac 0 || finish
expect_error 'output directory nv already holds a run \(last\.safetensors at step 5, no validation loss yet\)' \
    "${RUN[@]}" --out-dir nv --max-iters 5 --val-frac 0
# A refused start into a new directory leaves no directory behind.
expect_error 'cannot open missing\.txt' "$SK_TRAIN" "${TINY[@]}" --data missing.txt --out-dir new/sub --max-iters 3
[ -e new/sub ] && fail "a run that failed to start left new/sub behind" || note "no directory left by a failed start"
expect_error '--overwrite starts a fresh run; it does not go with --init-from' \
    "${RUN[@]}" --out-dir o --max-iters 310 --overwrite --init-from o/last.safetensors

echo "== --overwrite: nothing replaced before the new run's first checkpoint"
visible_digest o > o.visible
"${RUN[@]}" --out-dir o --overwrite --max-iters 100000000 --checkpoint-every 0 --eval-every 0 --log-every 1 \
    > ow.out 2> ow.err &
pid=$!
new_log_grows() { [ "$(cat o/.metrics.jsonl.tmp.* 2> /dev/null | wc -l)" -ge 20 ]; }
wait_for 20 new_log_grows || fail "the overwriting run logs nowhere: $(ls -A o) $(cat ow.err)"
diff o.visible <(visible_digest o) > /dev/null && note "while it trains, the old run's files are untouched" ||
    fail "the overwriting run changed the old files before its first checkpoint"
kill -KILL "$pid"
wait "$pid" 2> /dev/null
diff o.visible <(visible_digest o) > /dev/null && note "killed before its first checkpoint, it leaves the old run intact" ||
    fail "the killed overwriting run changed the old files: $(diff o.visible <(visible_digest o) | tr '\n' ' ')"

echo "== --overwrite: the first checkpoint replaces the old run"
# Without a validation split the new run writes no best.*: the old one must go all the same.
# The old run's --keep-checkpoints files go too (two planted as a run with them leaves them).
for e in 0003 0004; do
  cp o/last.safetensors "o/epoch-$e.safetensors" && cp o/last.*.state "o/epoch-$e.000000300.state"
done
expect_ok "${RUN[@]}" --out-dir o --overwrite --max-iters 30 --val-frac 0 --checkpoint-every 10 --log-every 5 || finish
files=$(cd o && ls -A | tr '\n' ' ')
[ "$files" = "last.000000030.state last.safetensors metrics.jsonl " ] && note "o/ holds the new run only: $files" ||
    fail "o/ after --overwrite holds: $files"
[ "$(state_step o/last.safetensors)" = 30 ] || fail "last.safetensors is not the new run's step 30"
iters=$(sed -n 's/^{"iter":\([0-9]*\),.*/\1/p' o/metrics.jsonl | tr '\n' ' ')
[ "$iters" = "5 10 15 20 25 30 " ] && note "metrics.jsonl starts anew: iters $iters" ||
    fail "metrics.jsonl after --overwrite has iters: $iters"
expect_ok "${RUN[@]}" --out-dir o --max-iters 40 --val-frac 0 --log-every 5 --init-from o/last.safetensors || finish
iters=$(sed -n 's/^{"iter":\([0-9]*\),.*/\1/p' o/metrics.jsonl | tr '\n' ' ')
[ "$iters" = "5 10 15 20 25 30 35 40 " ] && note "a resumed run appends: iters $iters" ||
    fail "metrics.jsonl after the resume has iters: $iters"
# --overwrite where there is nothing to replace is an ordinary fresh run.
expect_ok "${RUN[@]}" --out-dir empty --overwrite --max-iters 5 && [ "$(state_step empty/last.safetensors)" = 5 ] &&
    note "--overwrite into an empty out-dir trains" || fail "--overwrite into an empty out-dir"

echo "== SIGKILL leaves no lock behind"
"${RUN[@]}" --out-dir k --max-iters 100000000 --checkpoint-every 1 --eval-every 0 > k.out 2> k.err &
pid=$!
wait_for 20 test -e k/last.safetensors || fail "no checkpoint in k/ after 20 s: $(cat k.err)"
kill -KILL "$pid"
wait "$pid" 2> /dev/null
[ -e k/.lock ] && note "the killed run's lock file is still there (unlocked)"
s=$(state_step k/last.safetensors)
expect_ok "${RUN[@]}" --out-dir k --max-iters $((s + 5)) --init-from k/last.safetensors &&
    [ "$(state_step k/last.safetensors)" = $((s + 5)) ] && note "the next run on k/ started at once and resumed from $s" ||
    fail "the run after the SIGKILL did not resume"
[ ! -e k/.lock ] && note "a run that ends removes its lock file" || fail "k/.lock is left after a clean end"
finish
