#!/usr/bin/env python3
"""fresh_prime.py: how well a checkpoint predicts the first characters of held-out lines when
it starts from a zero state (what shakespeare-sample did with a prime, and --score with a file),
against the same characters after a start context (a newline, as nanoGPT samples from "\n") and
after the real text before them (the state a training stream carries).

usage: fresh_prime.py CHECKPOINT DATA [--val-frac 0.1] [--chars 100] [--context 1000]

The held-out lines are those of the validation split (the last --val-frac of DATA, as
shakespeare-train splits it) that start after a newline with a character other than a newline
and have --chars characters before the split's end. Every figure is a mean negative
log-likelihood in nats per character, over the same characters of every line:
  zero state       the line fed from h = c = 0 (its first character is the first input)
  after "\\n"       a newline fed first (needs '\\n' in the vocabulary)
  after context    the --context characters before the line fed first (a stream's steady state)
Positions are 1-based within the line; position 1 has no prediction from a zero state, so the
comparisons are over positions 2..N, and "after \\n" is also given over 1..N (what --score
counts with a start context). The model runs in float64 PyTorch (scripts/shakespeare_torch.py).
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from shakespeare_torch import load_checkpoint, token_ids  # noqa: E402

BATCH = 128
BUCKETS = ((2, 2), (3, 5), (6, 10), (11, 25), (26, 50), (51, 100))


def nll(model, inputs, targets, state=None):
    """Per-position NLL (B, T) of targets after inputs, from state (None: zeros)."""
    with torch.no_grad():
        logits, _ = model(inputs, state)
        return torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")


def greedy(model, meta, prime, n):
    ids = torch.tensor([token_ids(meta, prime)])
    with torch.no_grad():
        logits, state = model(ids)
        out = []
        for _ in range(n):
            nxt = int(logits[0, -1].argmax())
            out.append(nxt)
            logits, state = model(torch.tensor([[nxt]]), state)
    return "".join(chr(meta["vocab"][i]) for i in out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("data")
    ap.add_argument("--val-frac", type=float, default=0.1)
    ap.add_argument("--chars", type=int, default=100)
    ap.add_argument("--context", type=int, default=1000)
    a = ap.parse_args()
    torch.set_num_threads(1)
    model, meta = load_checkpoint(a.checkpoint)
    model = model.double()
    text = open(a.data, encoding="utf-8").read()
    n = len(text)
    val0 = n - int(n * a.val_frac)  # the split's first character (train + val = the whole text here)
    N, C = a.chars, a.context
    starts = [p for p in range(max(val0, C), n - N) if text[p - 1] == "\n" and text[p] != "\n"]
    lines = torch.tensor([token_ids(meta, text[p:p + N]) for p in starts])            # (B, N)
    nl = torch.tensor([token_ids(meta, "\n")] * len(starts))                          # (B, 1)
    ctx = torch.tensor([token_ids(meta, text[p - C:p]) for p in starts])              # (B, C)

    zero, after_nl, after_ctx = [], [], []
    for b in range(0, len(starts), BATCH):  # in batches: the context pass holds (B, C, 4H) gates
        ln, n1, cx = lines[b:b + BATCH], nl[b:b + BATCH], ctx[b:b + BATCH]
        zero.append(nll(model, ln[:, :-1], ln[:, 1:]))                             # positions 2..N
        after_nl.append(nll(model, torch.cat([n1, ln[:, :-1]], 1), ln))            # positions 1..N
        with torch.no_grad():
            _, state = model.lstm(model.embedding(cx))                             # no logits needed
        after_ctx.append(nll(model, ln[:, :-1], ln[:, 1:], state))
    zero, after_nl, after_ctx = torch.cat(zero), torch.cat(after_nl), torch.cat(after_ctx)

    print(f"checkpoint {a.checkpoint}: V={meta['vocab_size']} H={meta['hidden_size']} L={meta['num_layers']}")
    print(f"held-out lines: {len(starts)} of the validation split of {a.data} (from character {val0}), "
          f"the first {N} characters of each; context {C} characters")
    print("%12s %11s %9s %10s" % ("positions", "zero state", "after \\n", "after ctx"))
    for lo, hi in BUCKETS:
        if hi > N:
            break
        z = zero[:, lo - 2:hi - 1].mean().item()
        s = after_nl[:, lo - 1:hi].mean().item()
        c = after_ctx[:, lo - 2:hi - 1].mean().item()
        print(f"{f'{lo}-{hi}':>12} {z:11.4f} {s:9.4f} {c:10.4f}")
    z, s, c = zero.mean().item(), after_nl[:, 1:].mean().item(), after_ctx.mean().item()
    print(f"{f'2-{N}':>12} {z:11.4f} {s:9.4f} {c:10.4f}   <- mean over the same characters")
    print("%12s %11s %9.4f %10s   <- what --score counts after \\n" % (f"1-{N}", "-", after_nl.mean().item(), "-"))
    print("position 1 after \\n: %.4f" % after_nl[:, 0].mean().item())
    for prime in ("KING", "ROMEO:", "to be"):
        print(f"argmax, {prime!r} from a zero state: {prime + greedy(model, meta, prime, 40)!r}")
        print("argmax, %r after \\n:         %r" % (prime, prime + greedy(model, meta, chr(10) + prime, 40)))


if __name__ == "__main__":
    main()
