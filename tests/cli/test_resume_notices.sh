#!/usr/bin/env bash
# test_resume_notices.sh: what a user sees around resuming and starting from a model file.
#   - a resume says "resumed from FILE at step N (epoch E)";
#   - its ETA comes from this process's own steps: 20 steps after resuming at step 3000, the ETA
#     is at least half the remaining steps' time at the rate the same line reports (counting the
#     resumed steps as done in this process's time, the old formula, gives about 0.7% of it).
#     Only the lower bound is checked here: the ETA's elapsed time holds the rate's step time and
#     whatever else the process waited for, so on a loaded machine it may exceed the rate's by any
#     factor; tests/test_eta.c checks the formula itself (within 2x of the real remaining time);
#   - a resume already at --max-iters prints one line naming the flag that goes on, exits 0, and
#     changes no file;
#   - --init-from a model whose .state file is gone says the optimizer state is missing and
#     names --init-weights; --init-weights starts a new run from the weights (from this
#     program's model file and from PyTorch's save_checkpoint), refused with --init-from;
#   - shakespeare-sample --checkpoint DIR takes DIR/best.safetensors, else last; a missing
#     best.safetensors names the last.safetensors beside it.
# (--keep-checkpoints: test_epoch_checkpoints.sh.)
. "$(dirname "$0")/lib.sh"

gen_text text.txt 40 7
R=("$SK_TRAIN" "${TINY[@]}" --data text.txt --eval-every 0 --log-every 20 --max-epochs 0)
expect_ok "${R[@]}" --out-dir r --max-iters 3000 || finish
cp -r r r0 # r at step 3000, kept as it is

# The resume line and the ETA, read from the first progress line 20 steps in; then stopped.
"${R[@]}" --out-dir r --max-iters 203000 --init-from r/last.safetensors > eta.out 2> eta.err &
pid=$!
wait_for 30 grep -q '^epoch [0-9.]* iter 3020 ' eta.out || fail "no progress line at step 3020: $(cat eta.err)"
kill -INT "$pid"; wait "$pid"
grep -q '^note: resumed from r/last.safetensors at step 3000 (epoch [0-9]*\.[0-9]*); the run ends at step 203000: --max-iters 203000 (named; the checkpoint.s run was to end at step 3000: --max-iters 3000)$' eta.err &&
    note "$(grep '^note: resumed' eta.err)" || fail "no resume line: $(cat eta.err)"
line=$(grep '^epoch [0-9.]* iter 3020 ' eta.out)
# tokens_per_s T ... eta XmYYs or XhYYm: the ETA against (203000 - 3020) steps x B*T=16 tokens / T.
echo "$line" | awk '{
    for (i = 1; i < NF; i++) { if ($i == "tokens_per_s") tps = $(i + 1); if ($i == "eta") eta = $(i + 1) }
    if (match(eta, /^[0-9]+h[0-9]+m$/)) { split(eta, a, /[hm]/); s = a[1] * 3600 + a[2] * 60 }
    else if (match(eta, /^[0-9]+m[0-9]+s$/)) { split(eta, a, /[ms]/); s = a[1] * 60 + a[2] }
    else exit 2
    want = (203000 - 3020) * 16 / tps
    printf "eta %s = %d s, remaining steps at the reported rate: %.0f s\n", eta, s, want
    exit !(s >= want / 2)
}' && note "ETA after resuming: $line" || fail "ETA after resuming is off: $line"

# A resume already at its limit: one line, exit 0, nothing written.
before=$(dir_digest r0)
expect_ok "${R[@]}" --out-dir r0 --max-iters 3000 --init-from r0/last.safetensors
[ "$(cat .ok.out)" = "already at step 3000 >= --max-iters 3000; nothing to do (a larger --max-iters goes on)" ] &&
    [ ! -s .ok.err ] &&
    note "a resume past its limit: $(cat .ok.out)" || fail "a resume past its limit printed: $(cat .ok.out .ok.err)"
[ "$(dir_digest r0)" = "$before" ] && note "... and changed no file" || fail "a resume past its limit changed r0"

# A model file without its training state.
cp r0/last.safetensors alone.safetensors
expect_error '^error: alone\.safetensors: its optimizer state \./last\.0*3000(\.[0-9]+)?\.state is missing, so the run cannot resume where it stopped; to start a new run from these weights with a fresh optimizer, use --init-weights alone\.safetensors$' \
    "${R[@]}" --out-dir alone --max-iters 3010 --init-from alone.safetensors
expect_ok "${R[@]}" --out-dir w --max-iters 20 --init-weights alone.safetensors &&
    { grep -q '^note: a new run from the weights of alone.safetensors, with a fresh optimizer$' .ok.err &&
      [ "$(state_step w/last.safetensors)" = 20 ] && note "--init-weights: a new run of 20 steps from the weights" ||
      fail "--init-weights: $(cat .ok.err)"; }
expect_error '^error: --init-from resumes a run and --init-weights starts a new one' \
    "${R[@]}" --out-dir w2 --init-weights alone.safetensors --init-from alone.safetensors
expect_error '^error: --hidden-size 32 differs from the checkpoint alone.safetensors \(16\)' \
    "${R[@]}" --out-dir w2 --max-iters 5 --init-weights alone.safetensors --hidden-size 32

# The sampler's --checkpoint: a directory, and a missing best.* beside a last.*.
expect_ok "$SK_SAMPLE" --checkpoint r0 --device cpu --length 5 --argmax && cp .ok.out dir.txt
expect_ok "$SK_SAMPLE" --checkpoint r0/best.safetensors --device cpu --length 5 --argmax &&
    cmp -s .ok.out dir.txt && note "--checkpoint r0 samples r0/best.safetensors" || fail "--checkpoint DIR"
rm r0/best.*
expect_ok "$SK_SAMPLE" --checkpoint r0 --device cpu --length 5 --argmax && note "--checkpoint r0 without best: last"
expect_error '^error: --checkpoint r0/best.safetensors: No such file or directory; r0/last.safetensors exists' \
    "$SK_SAMPLE" --checkpoint r0/best.safetensors --device cpu
mkdir empty
expect_error '^error: --checkpoint empty: the directory holds no best.safetensors or last.safetensors$' \
    "$SK_SAMPLE" --checkpoint empty --device cpu

# A model saved by PyTorch's save_checkpoint starts a new run with --init-weights.
if "$TORCH_PY" -c 'import torch' 2> /dev/null; then
    "$TORCH_PY" - "$SK_SOURCE_DIR/scripts" <<'PY' || fail "save_checkpoint failed"
import sys
sys.path.insert(0, sys.argv[1])
import torch
from shakespeare_torch import CharLSTM, save_checkpoint
vocab = sorted(set(open("text.txt", encoding="utf-8").read()))
torch.manual_seed(0)
save_checkpoint(CharLSTM(len(vocab), 8, 16, 1), vocab, "torch.safetensors")
PY
    expect_ok "${R[@]}" --out-dir t --max-iters 10 --init-weights torch.safetensors &&
        [ "$(state_step t/last.safetensors)" = 10 ] && note "--init-weights from PyTorch's save_checkpoint" ||
        fail "--init-weights torch.safetensors: $(cat .ok.err)"
else
    note "no PyTorch here: the save_checkpoint case is left out"
fi
finish
