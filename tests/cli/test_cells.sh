#!/usr/bin/env bash
# test_cells.sh: every cell --help lists for --cell (lstm, gru, rnn: include/shakespeare/cell.h)
# trains on the CPU with two layers, dropout and weight drop; a run stopped after 15 steps and
# resumed to 30 ends bit-identical to an uninterrupted 30-step run (tensor bytes compared); it
# samples and scores; a resume or fine-tune naming another cell is refused with one line; its
# checkpoint loads strictly into plain PyTorch (scripts/shakespeare_torch.py builds nn.LSTM,
# nn.GRU or nn.RNN from the file), whose mean NLL of a held-out text equals --score's to 1e-4;
# and a model saved from that PyTorch module samples, scores and fine-tunes here.
# Tolerance 1e-4: both sides run float32 over ~600 steps; their sums differ by rounding (~1e-6
# relative), while a wrong gate order, a misplaced bias or a dropped state moves the mean by far more.
# The PyTorch half is skipped (the rest runs) when /usr/bin/python3 cannot import torch.
. "$(dirname "$0")/lib.sh"

# The words listed under --cell: the indented "word: equations" lines that follow its line.
cells=$("$SK_TRAIN" --help | awk '/^  --cell /{on=1; next} on && /^     +[a-z]+: /{sub(/^ +/, ""); sub(/:.*/, ""); print; next} {on=0}' | tr '\n' ' ')
[ -n "$cells" ] || { fail "--help lists no --cell choices"; finish; }
note "cells: $cells"
PY=/usr/bin/python3
has_torch=1
[ -x "$PY" ] && "$PY" -c 'import torch' 2> /dev/null || has_torch=0

gen_text text.txt 14 3
gen_text held.txt 12 4 # ~600 characters, the same vocabulary
COMMON=("$SK_TRAIN" --data text.txt --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.2 --weight-drop 0.2
        --batch-size 2 --seq-length 8 --device cpu --threads 1 --max-epochs 0 --eval-every 10)
for cell in $cells; do
    other=lstm; [ "$cell" = lstm ] && other=gru
    expect_ok "${COMMON[@]}" --cell "$cell" --out-dir "$cell-a" --max-iters 30 || continue
    expect_ok "${COMMON[@]}" --cell "$cell" --out-dir "$cell-b" --max-iters 15 || continue
    expect_ok "${COMMON[@]}" --out-dir "$cell-b" --max-iters 30 --init-from "$cell-b/last.safetensors" || continue
    same_tensors "$cell-a/last.safetensors" "$cell-b/last.safetensors" &&
        note "$cell: 15 + 15 steps == 30 steps, bit for bit" || fail "$cell: the resumed run differs"
    [ "$cell" = lstm ] || grep -q "\"cell\":\"$cell\"" "$cell-a/last.safetensors" ||
        fail "$cell: the model file does not record its cell"
    expect_error "keeps its cell" "${COMMON[@]}" --cell "$other" --out-dir "$cell-b" --max-iters 40 \
        --init-from "$cell-b/last.safetensors"
    expect_error "keeps its cell" "${COMMON[@]}" --cell "$other" --out-dir "$cell-ft" --max-iters 40 \
        --init-weights "$cell-b/last.safetensors"
    A=$("$SK_SAMPLE" --checkpoint "$cell-a/last.safetensors" --device cpu --threads 1 --length 40 --seed 5)
    B=$("$SK_SAMPLE" --checkpoint "$cell-b/last.safetensors" --device cpu --threads 1 --length 40 --seed 5)
    [ ${#A} -ge 40 ] && [ "$A" = "$B" ] && note "$cell: samples agree" || fail "$cell: samples differ: '$A' vs '$B'"
    expect_ok "$SK_SAMPLE" --checkpoint "$cell-a/last.safetensors" --score held.txt --device cpu --threads 1 || continue
    c_nats=$(sed -n 's/^held\.txt: \([0-9.]*\) nats\/char.*/\1/p' .ok.out)
    [ -n "$c_nats" ] || { fail "$cell: unexpected --score output: $(cat .ok.out)"; continue; }
    [ $has_torch = 1 ] || continue
    PYTHONPATH=$SK_SOURCE_DIR/scripts "$PY" - "$cell-a/last.safetensors" held.txt "$c_nats" "$cell" "$cell-t" \
        > py.out 2>&1 << 'PYEOF'
import os
import sys
import torch
from shakespeare_torch import CELLS, load_checkpoint, save_checkpoint

torch.set_num_threads(1)
ckpt, text_path, c_nats, cell, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
model, meta = load_checkpoint(ckpt)  # strict
module = getattr(model, CELLS[cell][1])
want = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[cell]
assert meta["cell"] == cell and type(module) is want, (meta["cell"], type(module))
assert cell != "rnn" or module.nonlinearity == "tanh"
index = {cp: i for i, cp in enumerate(meta["vocab"])}
text = open(text_path, encoding="utf-8").read()
start = [index[ord(ch)] for ch in meta["start_context"]]  # "\n" for a model trained now: fed first, unscored
ids = torch.tensor([start + [index[ord(ch)] for ch in text]])
with torch.no_grad():
    logits, _ = model(ids[:, :-1])
    nll = torch.nn.functional.cross_entropy(logits[0].double(), ids[0, 1:], reduction="sum").item()
t_nats = nll / len(text)
assert ids.shape[1] - 1 == len(text), "one start context character"
print(f"torch {t_nats:.6f} nats/char, shakespeare-sample {c_nats:.6f}; |diff| {abs(t_nats - c_nats):.2e}")
# The other way: the same weights moved by PyTorch, saved from the torch.nn module.
with torch.no_grad():
    for p in model.parameters():
        p.mul_(0.9)
os.makedirs(out, exist_ok=True)
save_checkpoint(model, meta["vocab"], os.path.join(out, "torch.safetensors"), vocab_mode=meta.get("vocab_mode"),
                start_context=meta["start_context"] or None)
sys.exit(0 if abs(t_nats - c_nats) <= 1e-4 else 1)
PYEOF
    rc=$?
    [ $rc = 0 ] && note "$cell: PyTorch and --score agree: $(tail -n 1 py.out)" ||
        { fail "$cell: PyTorch's score differs or the load failed: $(tail -n 3 py.out)"; continue; }
    t="$cell-t/torch.safetensors"
    expect_ok "$SK_SAMPLE" --checkpoint "$t" --device cpu --threads 1 --length 20 --seed 2 &&
        expect_ok "$SK_SAMPLE" --checkpoint "$t" --score held.txt --device cpu --threads 1 &&
        expect_ok "${COMMON[@]}" --out-dir "$cell-t/ft" --max-iters 5 --init-weights "$t" &&
        note "$cell: the PyTorch-saved model samples, scores and fine-tunes" ||
        fail "$cell: the PyTorch-saved model does not sample, score or fine-tune"
done
finish
