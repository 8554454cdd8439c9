#!/usr/bin/env bash
# test_outdir_init_from.sh: a run --init-from a checkpoint of another directory is a new run for
# its out-dir. Into an out-dir that holds a run it is refused as a fresh run is (exit 2, one line
# naming the directory, the step and validation loss there, the checkpoint and the ways on, every
# file byte-identical afterwards) unless --overwrite, which replaces the old run at the new run's
# first checkpoint (metrics.jsonl anew). Into an empty out-dir it starts; --init-from the
# out-dir's own last.* or best.* continues its run, and --overwrite with that is refused.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 60 14
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --max-epochs 0 --log-every 5)
expect_ok "${RUN[@]}" --out-dir a --max-iters 20 --eval-every 10 || finish
expect_ok "${RUN[@]}" --out-dir b --max-iters 10 --eval-every 5 --seed 9 || finish
dir_digest b > b.before

echo "== --init-from a/... into b/, which holds another run"
expect_error '^error: output directory b already holds a run \(last\.safetensors at step 10, best validation loss [0-9.]+\), not the one --init-from a/last\.safetensors belongs to; to replace it pass --overwrite, or choose another --out-dir$' \
    "${RUN[@]}" --out-dir b --max-iters 25 --init-from a/last.safetensors
expect_error '^error: output directory \./b/ already holds a run \(last\.safetensors at step 10.*--init-from a/best\.safetensors belongs to' \
    "${RUN[@]}" --out-dir ./b/ --max-iters 25 --init-from a/best.safetensors
cp a/last.safetensors a/last.*.state . # the same run's files, copied elsewhere: still another directory
expect_error '^error: output directory b already holds a run .*--init-from last\.safetensors belongs to' \
    "${RUN[@]}" --out-dir b --max-iters 25 --init-from last.safetensors
if diff b.before <(dir_digest b) > /dev/null; then note "every file in b/ is byte-identical"
else fail "the refused runs changed b/: $(diff b.before <(dir_digest b) | tr '\n' ' ')"; fi

echo "== its own run: continued; --overwrite with it refused"
expect_error "^error: --overwrite starts a fresh run; it does not go with --init-from \./b/\.\./b/last\.safetensors, which continues the run in b$" \
    "${RUN[@]}" --out-dir b --max-iters 15 --overwrite --init-from ./b/../b/last.safetensors
expect_error '^error: --overwrite replaces the run in --out-dir; it does not go with --eval-only, which writes nothing$' \
    "${RUN[@]}" --out-dir b --eval-only --overwrite --init-from a/last.safetensors
expect_ok "${RUN[@]}" --out-dir b --max-iters 15 --eval-every 5 --seed 9 --init-from ./b/../b/last.safetensors &&
    [ "$(state_step b/last.safetensors)" = 15 ] && note "--init-from the out-dir's own last.* continues it" ||
    fail "continuing b/ from its own checkpoint: $(cat .ok.err)"
expect_ok "${RUN[@]}" --out-dir b --max-iters 20 --eval-every 5 --seed 9 --init-from b/best.safetensors &&
    note "--init-from the out-dir's own best.* continues it" || fail "continuing b/ from best: $(cat .ok.err)"

echo "== into an empty out-dir: a new run there"
expect_ok "${RUN[@]}" --out-dir c --max-iters 25 --eval-every 0 --init-from a/last.safetensors &&
    [ "$(state_step c/last.safetensors)" = 25 ] && note "--init-from a/ into the new c/ trains from step 20 to 25" ||
    fail "--init-from into an empty out-dir: $(cat .ok.err)"

echo "== --overwrite: the old run goes at the new run's first checkpoint"
expect_ok "${RUN[@]}" --out-dir b --max-iters 30 --eval-every 0 --checkpoint-every 5 --init-from a/last.safetensors \
    --overwrite || finish
files=$(cd b && ls -A | tr '\n' ' ')
[ "$files" = "best.000000030.state best.safetensors last.000000030.state last.safetensors metrics.jsonl " ] && note "b/ holds the new run only: $files" ||
    fail "b/ after --overwrite holds: $files"
iters=$(sed -n 's/^{"iter":\([0-9]*\),"epoch".*/\1/p' b/metrics.jsonl | tr '\n' ' ')
[ "$iters" = "25 30 " ] && note "metrics.jsonl starts anew at a's step: iters $iters" ||
    fail "metrics.jsonl after --overwrite has iters: $iters"
finish
