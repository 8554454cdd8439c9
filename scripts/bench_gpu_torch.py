"""bench_gpu_torch.py: the PyTorch side of the GPU training benchmark (scripts/bench_gpu.sh).

Trains scripts/shakespeare_torch.py's CharLSTM on a CUDA device the way a PyTorch user
would write it: nn.LSTM on cuDNN with its defaults, TF32 allowed for matrix products and
cuDNN (torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True, or
the fp32_precision = "tf32" settings that replace them in PyTorch >= 2.9; --tf32 off forbids
it: plain fp32, which is what shakespeare's CUDA backend computes),
torch.optim.Adam(fused=True), clip_grad_norm_. Batching is shakespeare-train's: the training
split (leading 90% of the text) cut into B parallel streams, read in windows of T characters,
the LSTM state carried from window to window and detached (truncated BPTT), reset to zeros at
each epoch's start. Adam's hyperparameters are the trainer's defaults (lr 2e-3, betas 0.9 and
0.999, eps 1e-8, no weight decay, clip 5).

One timed step is a full training step (zero_grad, forward, mean cross-entropy, backward,
clip, Adam), timed on the host between torch.cuda.synchronize() calls, which is how
shakespeare-train times its steps (its step ends with a device-to-host read). After --warmup
untimed steps, --steps steps are timed one by one; the result is the median step time as
tokens/s (B*T tokens per step). Memory: torch.cuda.max_memory_reserved (the caching
allocator's peak, what the process holds from the device for tensors; the primary figure,
peak_mib) and max_memory_allocated (the peak of live tensors), both over the configuration's
whole run, model and optimizer state included; neither counts the CUDA context or cuDNN's
and cuBLAS's own allocations. bench_gpu.sh also polls nvidia-smi for this process's device
memory, the figure comparable with shakespeare-train's. Prints one line per configuration:

  torch_version=2.11.0+cu130 config=A median_tokens_per_s=... peak_mib=... peak_kind=max_memory_reserved ...

--graph on captures the whole step once as a CUDA graph (torch.cuda.graph, after three
warm-up steps on a side stream; Adam(fused=True, capturable=True)) and replays it, copying
each window and the carried state into static buffers: PyTorch's own recipe for a fixed-shape
training step. A capture that PyTorch refuses prints graph=failed with the reason.

Configurations: A = E128 H256 L2 B32 T100 dropout 0; B = E256 H512 L4 B64 T128 dropout 0.2.
Usage: python3 scripts/bench_gpu_torch.py --config A [--config B] [--steps 200] [--warmup 20]

Time to quality (--target-val F with --ttq-config "E H L B T dropout"): trains that model on
the GPU until the validation loss, evaluated every --eval-every steps with
shakespeare-train's protocol (scripts/bench_cpu_torch.py's validation_loss and
time_to_quality, here on the device, with fused Adam and TF32 as set by --tf32), is <= F,
and prints time_to_target_s= (from the first step, after the data is on the device and the
model built: PyTorch's start-up is not counted, shakespeare's is). Exits 1 if --max-steps
pass first.
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shakespeare_torch import CharLSTM  # noqa: E402

CONFIGS = {  # name: (E, H, L, B, T, dropout)
    "A": (128, 256, 2, 32, 100, 0.0),
    "B": (256, 512, 4, 64, 128, 0.2),
}


def positive_int(s):
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expects a positive integer, got {s!r}")
    return v


def set_tf32(on):
    """Allows (or forbids) TF32 in cuBLAS matrix products and cuDNN; returns a description.

    PyTorch >= 2.9 has per-backend fp32_precision settings and warns about the older
    allow_tf32 flags (and refuses to read them back once both APIs were used): the new API
    where it exists, the old one before it. cuDNN's RNNs have their own setting there.
    """
    mode = "tf32" if on else "ieee"
    # (torch.backends.cuda.matmul's __getattr__ raises AssertionError, not AttributeError, for
    # names it lacks, so hasattr() is asked of the torch.backends module only.)
    if hasattr(torch.backends, "fp32_precision"):
        try:
            torch.backends.cuda.matmul.fp32_precision = mode
            torch.backends.cudnn.conv.fp32_precision = mode
            torch.backends.cudnn.rnn.fp32_precision = mode
            return (f"matmul_fp32_precision={torch.backends.cuda.matmul.fp32_precision} "
                    f"cudnn_rnn_fp32_precision={torch.backends.cudnn.rnn.fp32_precision}")
        except (AttributeError, AssertionError, RuntimeError) as e:
            print(f"note: fp32_precision settings failed ({e}); using allow_tf32", file=sys.stderr)
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    return f"matmul_allow_tf32={torch.backends.cuda.matmul.allow_tf32} cudnn_allow_tf32={torch.backends.cudnn.allow_tf32}"


def load_train_ids(path):
    """(train split as int64 ids, vocabulary size): the vocabulary is the whole text's."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {ch: i for i, ch in enumerate(chars)}
    ids = torch.tensor([index[ch] for ch in text[: int(len(text) * 0.9)]], dtype=torch.int64)
    return ids, len(chars)


def report(name, times, loss, a, dev, extra):
    """The configuration's line: tokens/s of the median timed step, quantiles, memory."""
    E, H, L, B, T, p = CONFIGS[name]
    med = statistics.median(times)
    q = statistics.quantiles(times, n=10) if len(times) >= 10 else [min(times)] * 9
    reserved = torch.cuda.max_memory_reserved(dev) / 2**20
    allocated = torch.cuda.max_memory_allocated(dev) / 2**20
    print(f"torch_version={torch.__version__} config={name} median_tokens_per_s={B * T / med:.1f} "
          f"peak_mib={reserved:.1f} peak_kind=max_memory_reserved max_memory_allocated_mib={allocated:.1f} "
          f"median_step_ms={med * 1e3:.3f} p10_step_ms={q[0] * 1e3:.3f} p90_step_ms={q[-1] * 1e3:.3f} "
          f"steps={len(times)} warmup={a.warmup} tf32={a.tf32} {extra}last_loss={loss.item():.4f} "
          f"E={E} H={H} L={L} B={B} T={T} dropout={p}", flush=True)


def setup(name, ids, V, a, dev, capturable):
    """The configuration's streams on the device, (B, S) inputs and targets, its number of
    windows, and a fresh seeded CharLSTM with fused Adam (capturable for a CUDA graph); the
    device's peak-memory counters start over."""
    E, H, L, B, T, p = CONFIGS[name]
    S = (len(ids) - 1) // B  # positions per stream
    n_windows = S // T
    if n_windows < 1:
        raise SystemExit(f"error: {a.data} is too short for B={B} T={T}")
    xs = ids[: B * S].reshape(B, S).to(dev)       # (B, S) inputs of each stream
    ys = ids[1: B * S + 1].reshape(B, S).to(dev)  # (B, S) targets
    torch.manual_seed(a.seed)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    model = CharLSTM(V, E, H, L, p).to(dev)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                           fused=True, capturable=capturable)
    return xs, ys, n_windows, model, opt


def run_config(name, ids, V, a, dev):
    E, H, L, B, T, p = CONFIGS[name]
    xs, ys, n_windows, model, opt = setup(name, ids, V, a, dev, capturable=False)
    state = None
    times = []
    loss = None
    for it in range(a.warmup + a.steps):
        w = it % n_windows
        x = xs[:, w * T:(w + 1) * T]
        y = ys[:, w * T:(w + 1) * T]
        if w == 0:
            state = None  # a new epoch starts from zeros
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits, state = model(x, state)
        loss = model.loss(logits, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        state = tuple(s.detach() for s in state)
        torch.cuda.synchronize(dev)
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)
    report(name, times, loss, a, dev, "")
    del model, opt, state, xs, ys, logits, loss


def time_to_quality_gpu(a, dev):
    """--target-val mode: bench_cpu_torch's time-to-quality loop on the device."""
    import types

    from bench_cpu_torch import time_to_quality

    E, H, L, B, T, p = a.ttq_config
    with open(a.data, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {ch: i for i, ch in enumerate(chars)}
    all_ids = torch.tensor([index[ch] for ch in text], dtype=torch.int64)
    n_train = int(len(text) * 0.9)
    ids, val_ids = all_ids[:n_train], all_ids[n_train:].to(dev)
    S = (len(ids) - 1) // B
    n_windows = S // T
    if n_windows < 1:
        raise SystemExit(f"error: {a.data} is too short for B={B} T={T}")
    xs = ids[: B * S].reshape(B, S).to(dev)
    ys = ids[1: B * S + 1].reshape(B, S).to(dev)
    torch.manual_seed(a.seed)
    model = CharLSTM(len(chars), E, H, L, p).to(dev)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                           fused=dev.type == "cuda")
    loop = types.SimpleNamespace(batch_size=B, seq_length=T, grad_clip=5.0, eval_every=a.eval_every,
                                 max_steps=a.max_steps, target_val=a.target_val)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return time_to_quality(loop, model, opt, xs, ys, n_windows, val_ids, len(chars))


def ttq_config(s):
    f = s.split()
    try:
        E, H, L, B, T = (int(x) for x in f[:5])
        p = float(f[5])
        if len(f) != 6 or min(E, H, L, B, T) < 1 or not 0.0 <= p < 1.0:
            raise ValueError
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f'expects "E H L B T dropout", got {s!r}')
    return E, H, L, B, T, p


def run_config_graph(name, ids, V, a, dev):
    """The same step captured once as a CUDA graph (torch.cuda.graph) and replayed: the
    strongest PyTorch a performance-minded user writes for a fixed shape. Inputs, targets and
    the carried state live in static buffers that each step copies into; Adam is fused and
    capturable. Prints the same line as run_config with graph=on, or graph=failed and why."""
    E, H, L, B, T, p = CONFIGS[name]
    xs, ys, n_windows, model, opt = setup(name, ids, V, a, dev, capturable=True)
    static_x, static_y = xs[:, :T].clone(), ys[:, :T].clone()
    static_h = torch.zeros(L, B, H, device=dev)
    static_c = torch.zeros(L, B, H, device=dev)

    def step():
        logits, (hn, cn) = model(static_x, (static_h, static_c))
        loss = model.loss(logits, static_y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        return loss, hn, cn

    try:
        side = torch.cuda.Stream(dev)  # warm-up on a side stream, as the capture needs
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                step()
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)  # the captured backward then writes the gradients afresh each replay
        with torch.cuda.graph(graph):
            static_loss, static_hn, static_cn = step()
    except Exception as e:  # noqa: BLE001 - any refusal of the capture is the row's result
        reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        print(f"torch_version={torch.__version__} config={name} graph=failed reason={reason!r}", flush=True)
        return
    times = []
    for it in range(a.warmup + a.steps):
        w = it % n_windows
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        static_x.copy_(xs[:, w * T:(w + 1) * T])
        static_y.copy_(ys[:, w * T:(w + 1) * T])
        if w == 0:  # a new epoch starts from zeros; otherwise the state carried (detached)
            static_h.zero_(), static_c.zero_()
        else:
            static_h.copy_(static_hn), static_c.copy_(static_cn)
        graph.replay()
        torch.cuda.synchronize(dev)
        if it >= a.warmup:
            times.append(time.perf_counter() - t0)
    report(name, times, static_loss, a, dev, "graph=on ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data/tinyshakespeare.txt")
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS),
                    help="configuration to run (repeatable; default: all)")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=positive_int, default=200)
    ap.add_argument("--tf32", choices=["on", "off"], default="on")
    ap.add_argument("--graph", choices=["on", "off"], default="off",
                    help="capture the training step as one CUDA graph and replay it (torch.cuda.graph)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--target-val", type=float, default=0.0, help="time-to-quality mode: stop at this val loss")
    ap.add_argument("--ttq-config", type=ttq_config, default=(128, 512, 2, 64, 128, 0.2))
    ap.add_argument("--eval-every", type=positive_int, default=200)
    ap.add_argument("--max-steps", type=positive_int, default=20000)
    a = ap.parse_args()
    if a.warmup < 0:
        ap.error(f"--warmup expects an integer >= 0, got {a.warmup}")
    if not torch.cuda.is_available():
        print("error: torch.cuda.is_available() is False: this benchmark needs a CUDA GPU", file=sys.stderr)
        return 1
    precision = set_tf32(a.tf32 == "on")
    dev = torch.device(a.device)
    print(f"torch_version={torch.__version__} cuda={torch.version.cuda} cudnn={torch.backends.cudnn.version()} "
          f"gpu={torch.cuda.get_device_name(dev).replace(' ', '_')} pid={os.getpid()} {precision} "
          f"cudnn_enabled={torch.backends.cudnn.enabled}", flush=True)
    if a.target_val > 0:
        return time_to_quality_gpu(a, dev)
    ids, V = load_train_ids(a.data)
    for name in a.config or sorted(CONFIGS):
        (run_config_graph if a.graph == "on" else run_config)(name, ids, V, a, dev)
    return 0


if __name__ == "__main__":
    sys.exit(main())
