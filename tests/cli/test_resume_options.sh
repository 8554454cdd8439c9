#!/usr/bin/env bash
# test_resume_options.sh: a resume takes the options its checkpoint records unless the command
# line names them.
#   - a run of 30 steps resumed to 60 with only --init-from, --out-dir and --max-iters ends
#     bit-identical to an uninterrupted 60-step run of a custom --data, learning rate (one that
#     %g's 6 digits do not round-trip), step schedule, warm-up, Adam, clipping, weight decay,
#     batch shape, evaluation and dropout: none of them falls back to its default, and the
#     resumed run's lr and validation records are the uninterrupted run's;
#   - such a resume prints no line about options; a named option that differs from the record
#     prints one ("--lr 0.001 differs from the checkpoint's ...: the command line's value is
#     used"); a named option equal to the record prints nothing;
#   - --eval-only with only --init-from evaluates the recorded data, split and batching: the
#     validation loss of the run's last evaluation;
#   - a recorded value the device cannot run (a GPU run's --precision tf32, resumed on the
#     CPU) gives way to the command line's choice, with a note.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 14 3 # ~650 characters: 16 windows of 3 x 12 per epoch, so the step schedule decays
R=(--data text.txt --embed-size 8 --hidden-size 16 --num-layers 1 --dropout 0.1 --batch-size 3 --seq-length 12
   --lr 0.0012345678 --lr-schedule step --lr-decay 0.5 --lr-decay-after 1 --warmup-iters 4 --beta2 0.99
   --grad-clip 1 --weight-decay 0.01 --eval-every 10 --eval-tokens 30 --log-every 5 --max-epochs 0)
M=(--device cpu --threads 1) # the machine's, never recorded

expect_ok "$SK_TRAIN" "${R[@]}" "${M[@]}" --out-dir a --max-iters 60 || finish
expect_ok "$SK_TRAIN" "${R[@]}" "${M[@]}" --out-dir b --max-iters 30 || finish
cp -r b b30
expect_ok "$SK_TRAIN" "${M[@]}" --init-from b/last.safetensors --out-dir b --max-iters 60 || finish
grep -v '^note: resumed from ' .ok.err | grep -q . && fail "a plain resume printed: $(cat .ok.err)"
same_tensors a/last.safetensors b/last.safetensors &&
    note "30 + 30 steps with only --init-from == 60 steps, bit for bit: every recorded option was kept" ||
    fail "the resumed run differs from the uninterrupted one: a recorded option fell back to its default"
# The comparison can fail: the checkpoints at 30 and 60 differ.
if same_tensors b30/last.safetensors a/last.safetensors; then fail "the checkpoints at 30 and 60 are identical"; fi
records() { grep -E "\"iter\":(3[5-9]|[4-6][0-9])," "$1" | sed 's/,"tokens_per_s":[0-9.]*//; s/,"elapsed_s":[0-9.]*//'; }
[ -n "$(records a/metrics.jsonl)" ] && [ "$(records a/metrics.jsonl)" = "$(records b/metrics.jsonl)" ] &&
    note "steps 35 to 60 log the same lr, losses and validation: $(records b/metrics.jsonl | grep -c val_loss) evaluations" ||
    fail "the resumed run's records differ: $(diff <(records a/metrics.jsonl) <(records b/metrics.jsonl) | head -n 4)"

# Named options: one line for each that differs from the record, none for one that does not.
cp -r b30 c
expect_ok "$SK_TRAIN" "${M[@]}" --init-from c/last.safetensors --out-dir c --max-iters 35 --lr 1e-3 --batch-size 3 \
    --eval-every 10 || finish
[ "$(grep -c differs .ok.err)" = 1 ] &&
    grep -qx "note: --lr 0.001 differs from the checkpoint's 0.0012345678: the command line's value is used" .ok.err &&
    note "$(grep differs .ok.err)" || fail "named options on resume: $(cat .ok.err)"

# --eval-only: the recorded data, fractions, batch shape and --eval-tokens.
last_val=$(grep val_loss a/metrics.jsonl | tail -n 1 | sed 's/.*"val_loss":\([0-9.]*\).*/\1/')
expect_ok "$SK_TRAIN" "${M[@]}" --init-from a/last.safetensors --eval-only &&
    grep -qx "val_loss $last_val nats/char .*" .ok.out && note "--eval-only: $(cat .ok.out)" ||
    fail "--eval-only does not evaluate the recorded data and batching: $(cat .ok.out .ok.err) (want $last_val)"

# A GPU run's precision on the CPU: the checkpoint's header made to say tf32 (another program's
# file, so without the checksum that would refuse the edit, and without a training state).
python3 - a/last.safetensors gpu.safetensors <<'PY' || fail "could not write gpu.safetensors"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
meta = header["__metadata__"]
for key in ("format", "checksum", "state_file"):
    meta.pop(key, None)
meta["train_config"] = meta["train_config"].replace('"precision":"fp32"', '"precision":"tf32"')
text = json.dumps(header, separators=(",", ":")).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
expect_ok "$SK_TRAIN" "${M[@]}" --init-from gpu.safetensors --out-dir g --max-iters 3 &&
    grep -q "^note: the checkpoint's --precision tf32 cannot run on this device (.*): this run takes the command line's choice and computes in fp32$" .ok.err &&
    grep -q 'precision=fp32' .ok.out && note "$(grep "checkpoint's --precision" .ok.err)" ||
    fail "a recorded tf32 on the CPU: $(cat .ok.err)"
expect_error '^error: --precision tf32 needs a CUDA device' \
    "$SK_TRAIN" "${M[@]}" --init-from gpu.safetensors --out-dir g2 --max-iters 3 --precision tf32
finish
