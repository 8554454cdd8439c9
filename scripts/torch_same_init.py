#!/usr/bin/env python3
"""Trains PyTorch's CharLSTM from the weights it writes for shakespeare-train, step for step.

Usage: torch_same_init.py OUT.safetensors --steps N [model options]

Writes the freshly initialized model to OUT.safetensors (save_checkpoint), then trains it for N
steps exactly as shakespeare-train does without dropout (streams, windows, carried and detached
state, mean cross-entropy, clip_grad_norm_, Adam) and prints one line per step,
"iter K loss X". Run shakespeare-train --init-from OUT.safetensors --dropout 0 --log-every 1 with
the same model options and --max-iters N, and compare the two columns: a difference beyond
float rounding is a difference in how the programs train, not in their initializations.
"""
import argparse
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from shakespeare_torch import CharLSTM, save_checkpoint  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--data", default="data/tinyshakespeare.txt")
    ap.add_argument("--embed-size", type=int, default=128)
    ap.add_argument("--hidden-size", type=int, default=256)
    ap.add_argument("--num-layers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--seq-length", type=int, default=100)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--grad-clip", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text[: int(len(text) * 0.9)]])  # the training split
    B, T = a.batch_size, a.seq_length
    S = (len(ids) - 1) // B
    xs, ys = ids[: B * S].reshape(B, S), ids[1: B * S + 1].reshape(B, S)
    model = CharLSTM(len(chars), a.embed_size, a.hidden_size, a.num_layers, 0.0)
    save_checkpoint(model, chars, a.out)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    state = None
    for it in range(a.steps):
        w = it % (S // T)
        if w == 0:
            state = None  # a new epoch starts from zeros
        opt.zero_grad(set_to_none=True)
        logits, state = model(xs[:, w * T:(w + 1) * T], state)
        loss = model.loss(logits, ys[:, w * T:(w + 1) * T])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
        opt.step()
        state = tuple(s.detach() for s in state)
        print(f"iter {it + 1} loss {loss.item():.6f}", flush=True)


if __name__ == "__main__":
    main()
