#!/usr/bin/env bash
# test_safetensors_resave.sh: a checkpoint re-saved by the official safetensors package (PyPI,
# installed into .venv by scripts/setup.sh; skipped with a message where it is missing) is the
# same model: it samples the same text, scores the same, and resumes with its training state
# bit-identically to the original. The package lays the file out its own way (metadata order,
# tensors and their data in name order), so this holds only because the checksum covers the
# content, not the layout. Also: a tensor changed under the old checksum is refused; a file
# without "format" and "checksum" (another writer's) is accepted with a one-line notice and
# --init-from starts a new run from it; "format" without "checksum" is refused.
. "$(dirname "$0")/lib.sh"
need_safetensors

gen_text text.txt 60 31
gen_text held.txt 10 32
expect_ok "$SK_TRAIN" --data text.txt --out-dir m --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.1 \
    --batch-size 4 --seq-length 16 --max-iters 40 --lr 0.01 --eval-every 20 --device cpu --threads 1 || finish
cat > resave.py << 'EOF'
# resave.py SRC DST [drop-checksum] [drop-format] [bump] [nan] [inf]: loads SRC with safetensors.numpy and
# saves it again with safetensors.numpy.save_file, the same tensors and metadata but for the options.
import sys
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

src, dst, opts = sys.argv[1], sys.argv[2], set(sys.argv[3:])
with safe_open(src, framework="np") as f:
    meta = f.metadata()
tensors = load_file(src)
if "drop-checksum" in opts:
    del meta["checksum"]
if "drop-format" in opts:
    del meta["format"]
if "bump" in opts:
    tensors["fc.bias"][0] += 0.5  # a real change of the model under the old checksum
if "nan" in opts:
    tensors["lstm.weight_hh_l1"][5, 3] = float("nan")
if "inf" in opts:
    tensors["fc.bias"][2] = -float("inf")
save_file(tensors, dst, metadata=meta)
EOF
R() { "$SAFETENSORS_PY" resave.py "$@" || fail "resave.py $*"; }
R m/last.safetensors m/resaved.safetensors
SA=("$SK_SAMPLE" --device cpu --threads 1)

echo "== the package lays the file out differently"
cmp -s m/last.safetensors m/resaved.safetensors && fail "the re-saved file is byte-identical: the test proves nothing"
cmp -s <(tensor_data m/last.safetensors) <(tensor_data m/resaved.safetensors) &&
    fail "the re-saved data section is in the same order: the test proves nothing"

echo "== the re-saved file is the same model"
for args in "--argmax --length 200 --prime to" "--length 200 --seed 5 --temperature 0.8" "--score held.txt"; do
    # shellcheck disable=SC2086 # the arguments are meant to split
    expect_ok "${SA[@]}" --checkpoint m/last.safetensors $args || continue
    mv .ok.out orig.out
    # shellcheck disable=SC2086
    expect_ok "${SA[@]}" --checkpoint m/resaved.safetensors $args || continue
    if cmp -s orig.out .ok.out && [ -s orig.out ]; then note "same output for $args"
    else fail "different output for $args: $(head -c 100 orig.out) vs $(head -c 100 .ok.out)"; fi
    [ -s .ok.err ] && fail "unexpected stderr for the re-saved file: $(cat .ok.err)"
done

echo "== resuming from it: the training state pairs with it, and the run ends bit-identical"
TR=("$SK_TRAIN" --data text.txt --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.1 --batch-size 4
    --seq-length 16 --max-iters 60 --lr 0.01 --eval-every 20 --device cpu --threads 1)
expect_ok "${TR[@]}" --out-dir r1 --init-from m/last.safetensors
expect_ok "${TR[@]}" --out-dir r2 --init-from m/resaved.safetensors
grep -q "fresh optimizer" .ok.err && fail "resuming from the re-saved file lost the training state: $(cat .ok.err)"
[ "$(state_step r2/last.safetensors)" = 60 ] || fail "the resumed run did not end at step 60"
same_tensors r1/last.safetensors r2/last.safetensors && note "resume from the re-saved file == resume from the original" ||
    fail "resuming from the re-saved file ends with other parameters than resuming from the original"

echo "== a tensor changed under the old checksum is refused"
R m/last.safetensors m/bumped.safetensors bump
expect_error 'm/bumped\.safetensors: checksum mismatch \(file is corrupt\)' "${SA[@]}" --checkpoint m/bumped.safetensors
expect_error 'm/bumped\.safetensors: checksum mismatch' "${SA[@]}" --checkpoint m/bumped.safetensors --score held.txt
expect_error 'm/bumped\.safetensors: checksum mismatch' "${TR[@]}" --out-dir r3 --init-from m/bumped.safetensors
[ -e r3 ] && fail "a refused --init-from left r3 behind"

echo "== another writer's file without format and checksum: accepted, with a notice"
R m/last.safetensors m/foreign.safetensors drop-checksum drop-format
for args in "--argmax --length 200 --prime to" "--score held.txt"; do
    # shellcheck disable=SC2086
    expect_ok "${SA[@]}" --checkpoint m/last.safetensors $args || continue
    mv .ok.out orig.out
    # shellcheck disable=SC2086
    expect_ok "${SA[@]}" --checkpoint m/foreign.safetensors $args || continue
    cmp -s orig.out .ok.out || fail "different output for $args from the checksum-less file"
    if [ "$(wc -l < .ok.err)" = 1 ] && grep -q '^note: m/foreign\.safetensors carries no checksum' .ok.err; then
        note "$(cat .ok.err)"
    else
        fail "want one notice line about the missing checksum, got: $(cat .ok.err)"
    fi
done
# Its state_file metadata names m's state, but nothing ties that state to unverified weights:
# --init-from starts a new run (step 0, fresh optimizer) and says so.
expect_ok "${TR[@]}" --out-dir r4 --init-from m/foreign.safetensors --max-iters 10
grep -q "m/foreign.safetensors carries no checksum.*a new run starts from its weights with a fresh optimizer" .ok.err &&
    note "$(grep 'carries no checksum' .ok.err)" || fail "no new-run notice: $(cat .ok.err)"
[ "$(state_step r4/last.safetensors)" = 10 ] || fail "the new run from the checksum-less file did not count from 0"

echo "== non-finite weights are refused by both programs, with the tensor and element named"
R m/last.safetensors m/nan.safetensors drop-checksum drop-format nan
R m/last.safetensors m/inf.safetensors drop-checksum drop-format inf
nan_line='m/nan\.safetensors: lstm\.weight_hh_l1\[5, 3\] is NaN; a model with non-finite weights cannot be used'
expect_error "$nan_line" "${SA[@]}" --checkpoint m/nan.safetensors
expect_error "$nan_line" "${SA[@]}" --checkpoint m/nan.safetensors --score held.txt
expect_error 'm/inf\.safetensors: fc\.bias\[2\] is -inf' "${SA[@]}" --checkpoint m/inf.safetensors
expect_error "$nan_line" "${TR[@]}" --out-dir r5 --init-from m/nan.safetensors
expect_error "$nan_line" "${TR[@]}" --eval-only --init-from m/nan.safetensors
[ -e r5 ] && fail "a refused --init-from left r5 behind"

echo "== format without checksum is refused"
R m/last.safetensors m/nochecksum.safetensors drop-checksum
expect_error 'm/nochecksum\.safetensors: missing metadata "checksum", which format "shakespeare-lstm-2" requires' \
    "${SA[@]}" --checkpoint m/nochecksum.safetensors

echo "== the package's reader verifies this module's checksum, and writes through save_checkpoint"
PYTHONPATH=$SK_SOURCE_DIR/scripts "$SAFETENSORS_PY" - << 'EOF' || fail "load_checkpoint / save_checkpoint with the package"
from shakespeare_torch import load_checkpoint, save_checkpoint
model, meta = load_checkpoint("m/resaved.safetensors")  # verifies the content checksum
save_checkpoint(model, meta["vocab"], "pkg.safetensors", writer="safetensors")
save_checkpoint(model, meta["vocab"], "pure.safetensors", writer="python")
try:
    load_checkpoint("m/bumped.safetensors")
    raise SystemExit("load_checkpoint accepted a tensor changed under the old checksum")
except ValueError as e:
    assert "checksum mismatch" in str(e), e
EOF
expect_ok "${SA[@]}" --checkpoint pkg.safetensors --score held.txt && mv .ok.out pkg.out
expect_ok "${SA[@]}" --checkpoint pure.safetensors --score held.txt
cmp -s pkg.out .ok.out && note "save_checkpoint with either writer scores the same" ||
    fail "the package's and the pure writer's files score differently"
finish
