#!/usr/bin/env bash
# test_torch_checkpoint.sh: PyTorch to shakespeare. A CharLSTM trained in PyTorch
# (scripts/torch_train_example.py, the README's commands) and saved by save_checkpoint samples
# and scores in shakespeare-sample, with --score equal to PyTorch's to 1e-4 nats/char, and
# shakespeare-train --init-from fine-tunes it. The same weights written by another program
# (no format, no checksum) sample and score the same with a one-line notice, and --init-from
# starts a new run from them and says so. Every malformed variant (missing metadata, missing,
# extra, transposed or F64 tensor, format without checksum, a tensor changed under the
# checksum, a bad vocabulary) is refused by both programs with one "error:" line naming it.
# Skipped (77) when /usr/bin/python3 cannot import torch.
# Tolerance 1e-4 (as tests/cli/test_torch_score.sh): both sides run float32 LSTMs over ~1000
# steps; rounding differences are ~1e-6, while any real mismatch (gate order, a transposed
# matrix, a wrong vocabulary index, a reset state) moves the mean by far more than 1e-4.
. "$(dirname "$0")/lib.sh"
need_torch

gen_text text.txt 80 41
gen_text held.txt 20 42 # ~1000 characters, the same vocabulary
PYTHONPATH=$SK_SOURCE_DIR/scripts "$TORCH_PY" "$SK_SOURCE_DIR/scripts/torch_train_example.py" --data text.txt \
    --out torch.safetensors --steps 150 --embed-size 8 --hidden-size 16 --num-layers 2 --dropout 0.1 \
    --batch-size 4 --seq-length 16 --lr 0.01 --writer python --score held.txt > torch_score.out 2> train.err ||
    { fail "torch_train_example.py failed: $(tail -n 5 train.err)"; finish; }
SA=("$SK_SAMPLE" --device cpu --threads 1)
TR=("$SK_TRAIN" --data text.txt --batch-size 4 --seq-length 16 --lr 0.01 --eval-every 0 --log-every 1
    --device cpu --threads 1)

echo "== the PyTorch-trained model samples and scores"
expect_ok "${SA[@]}" --checkpoint torch.safetensors --length 300 --prime "to be" --seed 3 &&
    { [ "$(head -c 5 .ok.out)" = "to be" ] && [ "$(wc -m < .ok.out)" -ge 300 ] && note "sampled: $(head -n 1 .ok.out)" ||
        fail "unexpected sample: $(head -c 100 .ok.out)"; }
[ -s .ok.err ] && fail "unexpected stderr for a checked file: $(cat .ok.err)"
expect_ok "${SA[@]}" --checkpoint torch.safetensors --score held.txt && mv .ok.out c_score.out
t_nats=$(sed -n 's/^held\.txt: \([0-9.]*\) nats\/char.*(PyTorch)$/\1/p' torch_score.out)
c_nats=$(sed -n 's/^held\.txt: \([0-9.]*\) nats\/char.*/\1/p' c_score.out 2> /dev/null)
if [ -n "$t_nats" ] && [ -n "$c_nats" ] && awk -v a="$t_nats" -v b="$c_nats" 'BEGIN { d = a - b; exit !(d <= 1e-4 && -d <= 1e-4) }'; then
    note "--score $c_nats nats/char, PyTorch $t_nats"
else
    fail "--score differs from PyTorch's: $(cat c_score.out 2> /dev/null) vs $(cat torch_score.out)"
fi
# The model is trained, not a fresh one: PyTorch's score is well below ln V.
awk -v s="$t_nats" -v v="$(grep -o . text.txt | sort -u | wc -l)" 'BEGIN { exit !(s < log(v) - 0.5) }' ||
    fail "PyTorch's model scores $t_nats, not below ln V - 0.5: it did not train"

echo "== the same weights from another writer, and malformed variants"
PYTHONPATH=$SK_SOURCE_DIR/scripts "$TORCH_PY" - << 'EOF' || fail "writing the variants failed"
import json
from shakespeare_torch import read_safetensors, write_safetensors

tensors, meta = read_safetensors("torch.safetensors")
base = {k: meta[k] for k in ("vocab", "vocab_size", "embed_size", "hidden_size", "num_layers")}
V = int(meta["vocab_size"])


def variant(name, m, t=None):
    write_safetensors(name + ".safetensors", tensors if t is None else t, m, writer="python")


def without(d, key):
    return {k: v for k, v in d.items() if k != key}


variant("foreign", base)                               # another writer: no format, no checksum
for key in base:
    variant("no_" + key, without(base, key))
variant("no_metadata", None)
variant("missing_tensor", base, without(tensors, "lstm.bias_hh_l1"))
variant("transposed", base, {**tensors, "fc.weight": tensors["fc.weight"].t().contiguous()})
variant("extra_tensor", base, {**tensors, "fc.extra": tensors["fc.bias"][:1].clone()})
variant("f64", base, {**tensors, "fc.bias": tensors["fc.bias"].double()})
variant("format_no_checksum", {**base, "format": meta["format"]})
changed = {**tensors, "fc.bias": tensors["fc.bias"].clone()}
changed["fc.bias"][0] += 0.25
variant("changed_tensor", meta, changed)               # with the checksum of the original
vocab = json.loads(meta["vocab"])
variant("vocab_unsorted", {**base, "vocab": json.dumps(vocab[1:2] + vocab[:1] + vocab[2:])})
variant("vocab_size_off", {**base, "vocab_size": str(V + 1)})
variant("embed_size_bad", {**base, "embed_size": "8x"})
EOF

for args in "--argmax --length 200 --prime to" "--score held.txt"; do
    # shellcheck disable=SC2086 # the arguments are meant to split
    expect_ok "${SA[@]}" --checkpoint torch.safetensors $args && mv .ok.out checked.out
    # shellcheck disable=SC2086
    expect_ok "${SA[@]}" --checkpoint foreign.safetensors $args || continue
    cmp -s checked.out .ok.out && note "another writer's file: same output for $args" ||
        fail "another writer's file gives other output for $args"
    [ "$(wc -l < .ok.err)" = 1 ] && grep -q '^note: foreign\.safetensors carries no checksum (written by another program)' .ok.err ||
        fail "want one notice line about the missing checksum, got: $(cat .ok.err)"
done

# Every malformed variant: one error line naming the problem, from both programs.
while IFS='|' read -r file re; do
    expect_error "$file\\.safetensors: .*$re" "${SA[@]}" --checkpoint "$file.safetensors"
    expect_error "$file\\.safetensors: .*$re" "${TR[@]}" --out-dir "bad_$file" --init-from "$file.safetensors" --max-iters 5
    [ -e "bad_$file" ] && fail "a refused --init-from left bad_$file behind"
done << 'EOF'
no_vocab|missing metadata "vocab"
no_vocab_size|missing metadata "vocab_size"
no_embed_size|missing metadata "embed_size"
no_hidden_size|missing metadata "hidden_size"
no_num_layers|missing metadata "num_layers"
no_metadata|no __metadata__; a model file needs the metadata vocab, vocab_size, embed_size, hidden_size and num_layers
missing_tensor|missing tensor lstm\.bias_hh_l1
transposed|tensor fc\.weight has shape "\[16,[0-9]+\]", expected \[[0-9]+,16\]
extra_tensor|unexpected tensor "fc\.extra"
f64|tensor fc\.bias has dtype "F64", expected F32
format_no_checksum|missing metadata "checksum", which format "shakespeare-lstm-2" requires
changed_tensor|checksum mismatch \(file is corrupt\)
vocab_unsorted|bad metadata vocab: entry 1 is not a code point above the previous one
vocab_size_off|vocab has [0-9]+ entries, vocab_size says [0-9]+
embed_size_bad|bad metadata embed_size = "8x"
EOF

echo "== --init-from: fine-tuning the PyTorch model, a new run from another writer's file"
# The first training loss of a run from the trained weights is far below a fresh model's.
first_loss() { sed -n 's/.*"train_loss":\([0-9.]*\).*/\1/p' "$1" | head -n 1; }
expect_ok "${TR[@]}" --out-dir fresh --max-iters 3 --embed-size 8 --hidden-size 16 --num-layers 2
for src in torch foreign; do
    expect_ok "${TR[@]}" --out-dir "ft_$src" --init-from "$src.safetensors" --max-iters 20 || continue
    if [ "$src" = torch ]; then
        grep -q "no training state: fine-tuning from its weights with a fresh optimizer" .ok.err ||
            fail "no fine-tuning notice: $(cat .ok.err)"
    else
        grep -q "^note: foreign\.safetensors carries no checksum.*a new run starts from its weights with a fresh optimizer" .ok.err &&
            note "$(grep 'carries no checksum' .ok.err)" || fail "no new-run notice: $(cat .ok.err)"
    fi
    [ "$(state_step "ft_$src/last.safetensors")" = 20 ] || fail "--init-from $src.safetensors did not train 20 steps"
    a=$(first_loss "ft_$src/metrics.jsonl") b=$(first_loss fresh/metrics.jsonl)
    awk -v a="$a" -v b="$b" 'BEGIN { exit !(a != "" && b != "" && a < b - 0.5) }' &&
        note "--init-from $src.safetensors: first train loss $a, a fresh model's $b" ||
        fail "--init-from $src.safetensors: first train loss $a is not far below a fresh model's $b"
    expect_ok "${SA[@]}" --checkpoint "ft_$src/last.safetensors" --score held.txt || fail "the fine-tuned model does not score"
done
expect_ok "${TR[@]}" --init-from foreign.safetensors --eval-only &&
    { grep -q "carries no checksum" .ok.err && ! grep -q "new run" .ok.err || fail "--eval-only notice: $(cat .ok.err)"; }
finish
