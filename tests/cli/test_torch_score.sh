#!/usr/bin/env bash
# test_torch_score.sh: a checkpoint loads into the documented PyTorch module
# (scripts/shakespeare_torch.py: CharLSTM, load_checkpoint) and its mean NLL of a text equals
# `shakespeare-sample --score` to 1e-4 nats/char, the start context (a newline fed before the
# text, which a model trained now records) included. Skipped (77) when /usr/bin/python3 cannot
# import torch. Two layers, dropout in training (inference has none), a vocabulary with
# two-byte characters, and a text longer than the sampler's 256-character scoring window, so
# that the state carried across windows and the code-point order of the vocabulary both count.
# Tolerance 1e-4: both sides run float32 LSTMs over ~1000 steps; their sums differ by rounding
# (~1e-6 relative), far below 1e-4, while any real mismatch (gate order, a transposed matrix,
# a wrong vocabulary index, a reset state) moves the mean by far more than 1e-4.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] && "$PY" -c 'import torch' 2> /dev/null || skip "$PY cannot import torch"

gen_text text.txt 80 21
gen_text held.txt 20 22 # ~1000 characters, the same vocabulary
expect_ok "$SK_TRAIN" --data text.txt --out-dir m --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.1 \
    --batch-size 4 --seq-length 16 --max-iters 150 --lr 0.01 --eval-every 0 --device cpu --threads 1 || finish
ck=m/last.safetensors
expect_ok "$SK_SAMPLE" --checkpoint "$ck" --score held.txt --device cpu --threads 1 || finish
c_line=$(cat .ok.out)
c_nats=$(sed -n 's/^held\.txt: \([0-9.]*\) nats\/char.*/\1/p' .ok.out)
[ -n "$c_nats" ] || { fail "unexpected --score output: $c_line"; finish; }
PYTHONPATH=$SK_SOURCE_DIR/scripts "$PY" - "$ck" held.txt "$c_nats" << 'EOF'
import sys
import torch
from shakespeare_torch import CharLSTM, load_checkpoint, score

torch.set_num_threads(1)
ckpt, text_path, c_nats = sys.argv[1], sys.argv[2], float(sys.argv[3])
model, meta = load_checkpoint(ckpt)
assert isinstance(model, CharLSTM) and not model.training
index = {cp: i for i, cp in enumerate(meta["vocab"])}
text = open(text_path, encoding="utf-8").read()
assert meta["start_context"] == "\n", "a model trained now begins its texts after a newline"
ids = torch.tensor([[index[10]] + [index[ord(ch)] for ch in text]])  # (1, n + 1): the start context first
with torch.no_grad():
    logits, _ = model(ids[:, :-1])                                 # (1, n, V), zero state
    nll = torch.nn.functional.cross_entropy(logits[0].double(), ids[0, 1:], reduction="sum").item()
t_nats = nll / (ids.shape[1] - 1)
s_nll, s_count = score(model, meta, text)                          # the module's own helper agrees
assert s_count == len(text) and abs(s_nll - nll) <= 1e-9 * abs(nll), (s_nll, s_count, nll)
print(f"torch {t_nats:.6f} nats/char, shakespeare-sample {c_nats:.6f}; |diff| {abs(t_nats - c_nats):.2e}")
if not any(ord(ch) > 127 for ch in text):
    sys.exit("the text has no multi-byte character: the test would miss vocabulary-order bugs")
sys.exit(0 if abs(t_nats - c_nats) <= 1e-4 else 1)
EOF
rc=$?
[ $rc = 0 ] && note "$ck: PyTorch and shakespeare-sample --score agree" || fail "$ck: PyTorch score differs ($c_line)"
finish
