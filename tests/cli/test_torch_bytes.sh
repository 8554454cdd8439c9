#!/usr/bin/env bash
# test_torch_bytes.sh: a byte-vocabulary model (--vocab bytes) both ways with PyTorch
# (scripts/shakespeare_torch.py). load_checkpoint reports vocab_mode "bytes", all 256 byte values
# as its vocabulary and the start context "\n"; token_ids maps a byte text (NUL bytes, invalid
# UTF-8 and multi-byte characters, each byte a symbol) and PyTorch's mean NLL of it after a
# newline (score()) equals `shakespeare-sample --score` to 1e-4 nats/char;
# save_checkpoint(..., vocab_mode="bytes", start_context="\n") writes a file that
# shakespeare-sample scores in bytes, to the same figure as the original.
# Tolerance 1e-4 (as test_torch_score.sh): float32 LSTMs on both sides differ by rounding,
# ~1e-6; a vocabulary read as code points would not even score (bytes 0x80-0xFF as characters).
# Skipped (77) when /usr/bin/python3 cannot import torch.
. "$(dirname "$0")/lib.sh"
need_torch

gen_text words.txt 60 31
# Each line: bytes that are not UTF-8 (0xFF, 0xFE, a lone 0xC0), NUL, then a line of words
# with é and ï (two bytes each in this vocabulary).
mix() { while IFS= read -r line; do printf 'ab\000c\377\376 d\300e %s\n' "$line"; done < "$1"; }
mix words.txt > data.bin
head -n 15 words.txt | mix /dev/stdin > held.bin
expect_ok "$SK_TRAIN" --data data.bin --vocab bytes --out-dir m --embed-size 8 --hidden-size 16 --num-layers 2 \
    --batch-size 4 --seq-length 16 --max-iters 100 --lr 0.01 --eval-every 0 --device cpu --threads 1 || finish
score() { # score CHECKPOINT: the nats/char figure of held.bin
    expect_ok "$SK_SAMPLE" --checkpoint "$1" --score held.bin --device cpu --threads 1 --cache-dir sc &&
        sed -n 's/^held\.bin: \([0-9.]*\) nats\/char.*/\1/p' "$WORK/.ok.out"
}
c_nats=$(score m/last.safetensors)
[ -n "$c_nats" ] || { fail "shakespeare-sample --score of the byte model: $(cat .ok.out .ok.err)"; finish; }
PYTHONPATH=$SK_SOURCE_DIR/scripts "$TORCH_PY" - m/last.safetensors data.bin held.bin "$c_nats" resaved.safetensors << 'PY'
import sys
import torch
from shakespeare_torch import load_checkpoint, save_checkpoint, score, token_ids

torch.set_num_threads(1)
ckpt, data_path, held_path, c_nats, out = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
model, meta = load_checkpoint(ckpt)
data = open(data_path, "rb").read()
assert meta["vocab_mode"] == "bytes", f"vocab_mode {meta.get('vocab_mode')!r}, want 'bytes'"
assert meta["vocab"] == list(range(256)), f"vocab {meta['vocab']} is not all 256 byte values"
assert {0, 0xFF, 0xC3} <= set(data), "the data lacks NUL, 0xFF or 0xC3"
assert meta["start_context"] == "\n", f"start_context {meta['start_context']!r}"
held = open(held_path, "rb").read()
assert token_ids(meta, held) == list(held)                         # one id per byte: the byte itself
nll, count = score(model, meta, held)                              # after a newline: every byte predicted
assert count == len(held)
t_nats = nll / count
print(f"torch {t_nats:.6f} nats/byte, shakespeare-sample {c_nats:.6f}; |diff| {abs(t_nats - c_nats):.2e}")
if abs(t_nats - c_nats) > 1e-4:
    sys.exit("PyTorch's score of the byte model differs")
written = save_checkpoint(model, meta["vocab"], out, vocab_mode=meta["vocab_mode"], start_context=meta["start_context"])
assert written["vocab_mode"] == "bytes"
model2, meta2 = load_checkpoint(out)
assert meta2["vocab_mode"] == "bytes" and meta2["vocab"] == meta["vocab"]
try:
    save_checkpoint(model, [0, 300] + meta["vocab"][2:], "bad.safetensors", vocab_mode="bytes")
    sys.exit("a byte vocabulary with 300 in it was saved")
except ValueError as e:
    print(f"refused: {e}")
PY
[ $? = 0 ] && note "PyTorch loads the byte model (vocab_mode bytes) and scores it as shakespeare-sample does" ||
    fail "PyTorch and the byte model"
r_nats=$(score resaved.safetensors)
[ -n "$r_nats" ] && [ "$r_nats" = "$c_nats" ] &&
    note "save_checkpoint(vocab_mode=\"bytes\") scores in bytes as the original: $r_nats nats/char" ||
    fail "the re-saved byte model scores '$r_nats', the original $c_nats: $(cat .ok.err)"
finish
