"""bench_cpu_torch.py: the PyTorch side of the CPU training benchmark (scripts/bench_cpu.sh).

Trains scripts/shakespeare_torch.py's CharLSTM on the CPU exactly as shakespeare-train
batches: the training text cut into B parallel streams, read in windows of T characters,
the LSTM state carried from window to window and detached (truncated BPTT). One timed step
is a full training step: forward, mean cross-entropy, backward, clip_grad_norm_, Adam.
After --warmup untimed steps, --steps steps are timed one by one; the result is the median
step time as tokens/s (B*T tokens per step). Prints one summary line:

  torch_version=1.13.0 threads=2 OMP_WAIT_POLICY=PASSIVE steps=30 ... median_tokens_per_s=20000.0

With --target-val F (time-to-quality mode) it trains instead until the validation loss,
evaluated every --eval-every steps as shakespeare-train does (the last 10% of the text, the
same B streams from a zero state, every prediction counted once), is <= F, and prints

  torch_version=... time_to_target_s=123.4 steps=900 val_loss=1.5987

where the time is the wall time from the first step to that evaluation, evaluations included.

Usage: /usr/bin/python3 scripts/bench_cpu_torch.py --data data/tinyshakespeare.txt --threads 2
"""

import argparse
import os
import statistics
import sys
import time

# Debian's torch runs its pointwise loops on libgomp and its matrix products on OpenBLAS's
# own pthreads. With GOMP's default spin-waiting, its idle threads keep the cores busy while
# OpenBLAS computes: on a 2-core machine a step took 0.9 s instead of 0.16 s. Passive
# waiting is PyTorch's best configuration here; read by libgomp when torch loads it.
if os.environ.get("BENCH_OMP_AS_IS") != "1":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shakespeare_torch import CELLS, CharLSTM  # noqa: E402


def positive_int(s):
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expects a positive integer, got {s!r}")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data/tinyshakespeare.txt")
    ap.add_argument("--embed-size", type=positive_int, default=128)
    ap.add_argument("--hidden-size", type=positive_int, default=256)
    ap.add_argument("--num-layers", type=positive_int, default=2)
    ap.add_argument("--batch-size", type=positive_int, default=32)
    ap.add_argument("--seq-length", type=positive_int, default=100)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--cell", choices=sorted(CELLS), default="lstm", help="nn.LSTM, nn.GRU or nn.RNN (tanh)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--grad-clip", type=float, default=5.0)
    ap.add_argument("--threads", type=positive_int, default=os.cpu_count() or 1)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--steps", type=positive_int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--autocast-bf16", action="store_true",
                    help="forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    ap.add_argument("--target-val", type=float, default=0.0, help="time-to-quality mode: stop at this val loss")
    ap.add_argument("--eval-every", type=positive_int, default=100)
    ap.add_argument("--max-steps", type=positive_int, default=20000)
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {ch: i for i, ch in enumerate(chars)}
    all_ids = [index[ch] for ch in text]
    n_train = int(len(text) * 0.9)
    ids = torch.tensor(all_ids[:n_train], dtype=torch.int64)
    val_ids = torch.tensor(all_ids[n_train:], dtype=torch.int64)

    B, T = a.batch_size, a.seq_length
    S = (len(ids) - 1) // B  # positions per stream
    n_windows = S // T
    if n_windows < 1:
        print(f"error: {a.data} is too short for B={B} T={T}", file=sys.stderr)
        return 2
    xs = ids[: B * S].reshape(B, S)        # (B, S) inputs of each stream
    ys = ids[1: B * S + 1].reshape(B, S)   # (B, S) targets

    model = CharLSTM(len(chars), a.embed_size, a.hidden_size, a.num_layers, a.dropout, cell=a.cell)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    if a.target_val > 0:
        return time_to_quality(a, model, opt, xs, ys, n_windows, val_ids, len(chars))
    state = None
    times = []
    for it in range(a.warmup + a.steps):
        w = it % n_windows
        x = xs[:, w * T:(w + 1) * T]
        y = ys[:, w * T:(w + 1) * T]
        if w == 0:
            state = None  # a new epoch starts from zeros
        t0 = time.perf_counter()
        loss, state = step(a, model, opt, x, y, state)
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)
    med = statistics.median(times)
    print(f"torch_version={torch.__version__} threads={torch.get_num_threads()} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} steps={len(times)} "
          f"V={len(chars)} E={a.embed_size} H={a.hidden_size} L={a.num_layers} B={B} T={T} dropout={a.dropout} "
          f"autocast_bf16={int(a.autocast_bf16)} last_loss={loss.item():.4f} median_step_s={med:.6f} median_tokens_per_s={B * T / med:.1f}")
    return 0


def step(a, model, opt, x, y, state):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast_bf16):
        logits, state = model(x, state)
        loss = model.loss(logits, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
    opt.step()
    # The LSTM's state is (h, c); the GRU's and the RNN's is h alone.
    return loss, state.detach() if torch.is_tensor(state) else tuple(s.detach() for s in state)


@torch.no_grad()
def validation_loss(a, model, val_ids):
    """shakespeare-train's protocol: B streams of S = (n-1)//B positions, zero state, all
    ceil(S/T) windows (the last shorter), mean NLL over the B*S predictions."""
    B, T = a.batch_size, a.seq_length
    S = (len(val_ids) - 1) // B
    xs = val_ids[: B * S].reshape(B, S)
    ys = val_ids[1: B * S + 1].reshape(B, S)
    model.eval()
    state, total = None, 0.0
    for t0 in range(0, S, T):
        logits, state = model(xs[:, t0:t0 + T], state)
        total += torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                   ys[:, t0:t0 + T].reshape(-1), reduction="sum").item()
    model.train()
    return total / (B * S)


def time_to_quality(a, model, opt, xs, ys, n_windows, val_ids, V):
    T = a.seq_length
    state, val = None, float("inf")
    t_start = time.perf_counter()
    it = 0
    while it < a.max_steps:
        w = it % n_windows
        if w == 0:
            state = None
        _, state = step(a, model, opt, xs[:, w * T:(w + 1) * T], ys[:, w * T:(w + 1) * T], state)
        it += 1
        if it % a.eval_every == 0:
            val = validation_loss(a, model, val_ids)
            elapsed = time.perf_counter() - t_start
            print(f"pytorch iter {it} val_loss {val:.4f} elapsed_s {elapsed:.1f}", file=sys.stderr, flush=True)
            if val <= a.target_val:
                break
    reached = val <= a.target_val
    print(f"torch_version={torch.__version__} threads={torch.get_num_threads()} "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} V={V} target_val={a.target_val} "
          f"reached={int(reached)} steps={it} val_loss={val:.4f} time_to_target_s={time.perf_counter() - t_start:.1f}")
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
