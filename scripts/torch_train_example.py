"""torch_train_example.py: train shakespeare's model in PyTorch, save it for the C tools.

Trains CharLSTM (scripts/shakespeare_torch.py) on a UTF-8 text for a few Adam steps on random
windows, saves it with save_checkpoint, and with --score prints PyTorch's mean negative
log-likelihood of a file in the same form and by the same rule as `shakespeare-sample --score`
(batch 1, zero initial state, every character after the first predicted from all before it):

    /usr/bin/python3 scripts/torch_train_example.py --data data/tinyshakespeare.txt \\
        --steps 300 --out torch.safetensors --score held.txt
    build/shakespeare-sample --checkpoint torch.safetensors --score held.txt

The vocabulary is sorted(set(text)), as shakespeare-train builds it, so a text the C tool
trains on has the same token ids here.
"""

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shakespeare_torch import CharLSTM, save_checkpoint  # noqa: E402


def score(model, index, path):
    """Mean NLL in nats/char of the text at path, and the number of predicted characters."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    missing = sorted(set(text) - set(index))
    if missing:
        raise SystemExit(f"{path}: character {missing[0]!r} is not in the model's vocabulary")
    ids = torch.tensor([[index[c] for c in text]])              # (1, n)
    with torch.no_grad():
        logits, _ = model(ids[:, :-1])                          # (1, n-1, V), zero state
        nll = torch.nn.functional.cross_entropy(logits[0].double(), ids[0, 1:], reduction="sum").item()
    return nll / (ids.shape[1] - 1), ids.shape[1] - 1


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="UTF-8 training text")
    p.add_argument("--out", required=True, help="model file to write (.safetensors)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--embed-size", type=int, default=32)
    p.add_argument("--hidden-size", type=int, default=64)
    p.add_argument("--num-layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-length", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--writer", choices=("auto", "safetensors", "python"), default="auto",
                   help="the safetensors package (auto: when importable) or the pure-Python writer")
    p.add_argument("--score", metavar="FILE", help="print PyTorch's --score of FILE after saving")
    a = p.parse_args(argv)

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text])
    if len(ids) < a.seq_length + 2:
        raise SystemExit(f"{a.data}: too short for --seq-length {a.seq_length}")
    model = CharLSTM(len(vocab), a.embed_size, a.hidden_size, a.num_layers, a.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    model.train()
    for step in range(1, a.steps + 1):
        starts = torch.randint(0, len(ids) - a.seq_length - 1, (a.batch_size,)).tolist()
        x = torch.stack([ids[s:s + a.seq_length] for s in starts])          # (B, T)
        y = torch.stack([ids[s + 1:s + a.seq_length + 1] for s in starts])  # (B, T)
        logits, _ = model(x)
        loss = model.loss(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 1 or step % 100 == 0 or step == a.steps:
            print(f"step {step} train_loss {loss.item():.4f}", file=sys.stderr)
    model.eval()
    save_checkpoint(model, vocab, a.out, writer=a.writer,
                    train_config={"trained_by": "scripts/torch_train_example.py", "steps": a.steps,
                                  "batch_size": a.batch_size, "seq_length": a.seq_length, "lr": a.lr})
    print(f"wrote {a.out}: V={len(vocab)} E={a.embed_size} H={a.hidden_size} L={a.num_layers}", file=sys.stderr)
    if a.score:
        mean, n = score(model, index, a.score)
        print(f"{a.score}: {mean:.6f} nats/char, {mean / math.log(2):.6f} bits/char over {n} predicted "
              "characters (PyTorch)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
