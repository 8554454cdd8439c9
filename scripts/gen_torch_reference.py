"""gen_torch_reference.py: writes tests/data/torch_reference*.bin, PyTorch's answer for a tiny model of each cell.

The C test tests/test_torch_reference.c feeds the same parameters, inputs and initial state
to the CPU backend and compares every output with these tensors. PyTorch computes in
float64 (model.double()); tensors are stored as float32, so the reference is exact to
fp32 rounding and the test's tolerance measures only the backend's own fp32 error.

Case: V=11, E=5, H=7, L=2, B=3, T=6, dropout 0, every parameter ~ U(-0.5, 0.5), nonzero
initial state (h0, and the LSTM's c0) ~ U(-0.5, 0.5); the cell nn.LSTM (torch_reference.bin),
nn.GRU (torch_reference_gru.bin) or nn.RNN with tanh (torch_reference_rnn.bin). One forward (batch_first) and the mean
cross-entropy over B*T, backward, then from the same gradients two optimizer steps, each
from the same starting parameters and zero moments, at step 1:
  adam.*   torch.optim.Adam  (lr, betas, eps, no weight decay)
  adamw.*  torch.optim.AdamW with weight decay on the 2-D tensors only (param groups),
           as the C optimizer decays matrices only
both after clip_grad_norm_(clip) with clip = half the gradient norm, so clipping acts.
Then (the LSTM's file) two steps of torch.optim.RMSprop (alpha, eps, momentum, weight decay on the 2-D tensors
only, as the C optimizer decays matrices only) from the starting parameters and zero state,
each after a forward and backward from (h0, c0) on the parameters of the moment and the same
clip, so that the momentum buffer and the squared average both carry into step 2. Then (the
LSTM's file) two steps of torch.optim.SGD the same way (lr, momentum, dampening 0, weight decay on
the 2-D tensors only), plain and with nesterov=True.
All hyperparameters are float32-representable (the C side takes floats).

File format (little-endian):
  magic   8 bytes "SKREF001"
  config  6 x u32: V, E, H, L, B, T
  count   u32: number of records
  record  u32 name length, name bytes (no NUL), u32 ndim, ndim x u32 dims,
          u32 dtype (0 = f32, 1 = i32), data (prod(dims) x 4 bytes)
Records: every parameter by its PyTorch name (before any step); x, y (B, T) i32; h0, and the
LSTM's c0 (L, B, H); logits (B, T, V); loss (1) mean; hn, and the LSTM's cn (L, B, H); grad.<name>; grad_norm (1)
before clipping; lr, beta1, beta2, eps, weight_decay (0), clip (1 each); adam.<name>,
adam_m.<name>, adam_v.<name> (parameters and moments after the Adam step);
adamw.weight_decay (1); adamw.<name> (parameters after the AdamW step); the LSTM's only: rmsprop.alpha,
rmsprop.eps, rmsprop.momentum, rmsprop.weight_decay (1 each); rmsprop1.<name> (parameters after
RMSprop's step 1), rmsprop.<name>, rmsprop_sq.<name>, rmsprop_buf.<name> (parameters,
square_avg and momentum_buffer after step 2); sgd.lr, sgd.momentum, sgd.weight_decay (1 each);
sgd1.<name>, sgd.<name>, sgd_buf.<name> (parameters after step 1, parameters and momentum_buffer
after step 2), and the same of Nesterov's as sgdn1.<name>, sgdn.<name>, sgdn_buf.<name>.

Usage: /usr/bin/python3 scripts/gen_torch_reference.py [--cell lstm|gru|rnn] [OUT]
       (default OUT: tests/data/torch_reference.bin for the LSTM, torch_reference_<cell>.bin else)
"""

import copy
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shakespeare_torch import CELLS, CharRNN  # noqa: E402

V, E, H, L, B, T = 11, 5, 7, 2, 3, 6
SEED = 20240601


def f32(x):
    """x rounded to the nearest float32, as a Python float (the value the C side sees)."""
    return float(np.float32(x))


LR, BETA1, BETA2, EPS, WD = f32(0.01), f32(0.9), f32(0.999), f32(1e-8), f32(0.1)
# RMSprop: torch's default alpha; eps 1e-4, not 1e-8: a first RMSprop step moves each parameter
# by lr g / (sqrt(1 - alpha) |g| + eps), nearly lr * 10 sign(g), and with eps 1e-8 a gradient of
# 1e-6 would make the step a steep function of the gradient's last fp32 bits.
RMS_ALPHA, RMS_EPS, RMS_MOMENTUM, RMS_WD = f32(0.99), f32(1e-4), f32(0.9), f32(0.1)
# SGD: a learning rate of SGD's scale (lr 0.01 would move a parameter by 1e-3 at most), with
# momentum and L2 decay, both plain and Nesterov's.
SGD_LR, SGD_MOMENTUM, SGD_WD = f32(0.5), f32(0.9), f32(0.1)


class Writer:
    def __init__(self):
        self.records = []

    def add(self, name, t, dtype=0):
        t = torch.as_tensor(t)
        if t.dim() == 0:
            t = t.reshape(1)
        arr = t.detach().cpu().numpy().astype("<f4" if dtype == 0 else "<i4")
        rec = struct.pack("<I", len(name)) + name.encode("ascii")
        rec += struct.pack("<I", arr.ndim) + struct.pack(f"<{arr.ndim}I", *arr.shape)
        rec += struct.pack("<I", dtype) + arr.tobytes(order="C")
        self.records.append(rec)

    def bytes(self):
        head = b"SKREF001" + struct.pack("<6I", V, E, H, L, B, T) + struct.pack("<I", len(self.records))
        return head + b"".join(self.records)


def optimizer_step(model, grads, clip, decoupled_wd):
    """Copy of model after clip + one (Adam or AdamW) step from grads; returns (model, opt)."""
    m = copy.deepcopy(model)
    for name, p in m.named_parameters():
        p.grad = grads[name].clone()
    torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
    if decoupled_wd is None:
        opt = torch.optim.Adam(m.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPS, weight_decay=0.0)
    else:
        mats = [p for p in m.parameters() if p.dim() == 2]
        vecs = [p for p in m.parameters() if p.dim() != 2]
        opt = torch.optim.AdamW([{"params": mats, "weight_decay": decoupled_wd},
                                 {"params": vecs, "weight_decay": 0.0}],
                                lr=LR, betas=(BETA1, BETA2), eps=EPS)
    opt.step()
    return m, opt


def two_steps(model, x, y, state0, clip, make_opt):
    """Copy of model after two clipped steps of the optimizer make_opt(mats, vecs) makes (weight
    decay on the 2-D tensors only, as the C optimizer decays matrices only), each from its own
    forward and backward; returns (model after step 1's parameters, model after step 2, opt)."""
    m = copy.deepcopy(model)
    mats = [p for p in m.parameters() if p.dim() == 2]
    vecs = [p for p in m.parameters() if p.dim() != 2]
    opt = make_opt(mats, vecs)
    first = None
    for _ in range(2):
        logits, _ = m(x, state0)
        opt.zero_grad()
        m.loss(logits, y).backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
        opt.step()
        if first is None:
            first = copy.deepcopy(m)
    return first, m, opt


def rmsprop_steps(model, x, y, state0, clip):
    return two_steps(model, x, y, state0, clip, lambda mats, vecs: torch.optim.RMSprop(
        [{"params": mats, "weight_decay": RMS_WD}, {"params": vecs, "weight_decay": 0.0}],
        lr=LR, alpha=RMS_ALPHA, eps=RMS_EPS, momentum=RMS_MOMENTUM))


def sgd_steps(model, x, y, state0, clip, nesterov):
    return two_steps(model, x, y, state0, clip, lambda mats, vecs: torch.optim.SGD(
        [{"params": mats, "weight_decay": SGD_WD}, {"params": vecs, "weight_decay": 0.0}],
        lr=SGD_LR, momentum=SGD_MOMENTUM, dampening=0.0, nesterov=nesterov))


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = argv[1:]
    cell = "lstm"
    if len(args) >= 2 and args[0] == "--cell":
        cell, args = args[1], args[2:]
    if cell not in CELLS:
        print(f"--cell expects one of {', '.join(CELLS)}, got {cell!r}", file=sys.stderr)
        return 2
    name = "torch_reference.bin" if cell == "lstm" else f"torch_reference_{cell}.bin"
    out = args[0] if args else os.path.join(root, "tests", "data", name)
    g = torch.Generator().manual_seed(SEED)
    model = CharRNN(V, E, H, L, dropout=0.0, cell=cell).double()
    with torch.no_grad():
        for p in model.parameters():
            # Round to float32 first: the C side gets exactly these values.
            p.copy_((torch.rand(p.shape, generator=g, dtype=torch.float64) - 0.5).float().double())
    x = torch.randint(0, V, (B, T), generator=g)
    y = torch.randint(0, V, (B, T), generator=g)
    h0 = (torch.rand(L, B, H, generator=g, dtype=torch.float64) - 0.5).float().double()
    states = {"h0": h0}
    if cell == "lstm":
        states["c0"] = (torch.rand(L, B, H, generator=g, dtype=torch.float64) - 0.5).float().double()

    model.train()
    state0 = (states["h0"], states["c0"]) if cell == "lstm" else h0
    logits, final = model(x, state0)
    finals = {"hn": final[0], "cn": final[1]} if cell == "lstm" else {"hn": final}
    loss = model.loss(logits, y)
    model.zero_grad()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    grad_norm = torch.sqrt(sum((gr * gr).sum() for gr in grads.values())).item()
    clip = f32(0.5 * grad_norm)

    adam, adam_opt = optimizer_step(model, grads, clip, None)
    adamw, _ = optimizer_step(model, grads, clip, WD)
    # RMSprop's records: the LSTM's file only (test_torch_reference checks them there)
    rms = rmsprop_steps(model, x, y, state0, clip) if cell == "lstm" else None
    sgd = [sgd_steps(model, x, y, state0, clip, nesterov) for nesterov in (False, True)] if cell == "lstm" else None

    w = Writer()
    for name, p in model.named_parameters():
        w.add(name, p)
    w.add("x", x, 1)
    w.add("y", y, 1)
    for name, t in states.items():
        w.add(name, t)
    w.add("logits", logits)
    w.add("loss", loss)
    for name, t in finals.items():
        w.add(name, t)
    for name in grads:
        w.add("grad." + name, grads[name])
    w.add("grad_norm", torch.tensor(grad_norm))
    for name, val in (("lr", LR), ("beta1", BETA1), ("beta2", BETA2), ("eps", EPS), ("weight_decay", 0.0),
                      ("clip", clip)):
        w.add(name, torch.tensor(val))
    for name, p in adam.named_parameters():
        st = adam_opt.state[p]
        w.add("adam." + name, p)
        w.add("adam_m." + name, st["exp_avg"])
        w.add("adam_v." + name, st["exp_avg_sq"])
    w.add("adamw.weight_decay", torch.tensor(WD))
    for name, p in adamw.named_parameters():
        w.add("adamw." + name, p)
    if rms is not None:
        rms1, rms_model, rms_opt = rms
        for name, val in (("alpha", RMS_ALPHA), ("eps", RMS_EPS), ("momentum", RMS_MOMENTUM),
                          ("weight_decay", RMS_WD)):
            w.add("rmsprop." + name, torch.tensor(val))
        for name, p in rms1.named_parameters():
            w.add("rmsprop1." + name, p)
        for name, p in rms_model.named_parameters():
            st = rms_opt.state[p]
            w.add("rmsprop." + name, p)
            w.add("rmsprop_sq." + name, st["square_avg"])
            w.add("rmsprop_buf." + name, st["momentum_buffer"])
    if sgd is not None:  # after RMSprop's, so that the earlier records keep their bytes and places
        for name, val in (("lr", SGD_LR), ("momentum", SGD_MOMENTUM), ("weight_decay", SGD_WD)):
            w.add("sgd." + name, torch.tensor(val))
        for prefix, (first, after, opt) in zip(("sgd", "sgdn"), sgd):
            for name, p in first.named_parameters():
                w.add(prefix + "1." + name, p)
            for name, p in after.named_parameters():
                w.add(prefix + "." + name, p)
                w.add(prefix + "_buf." + name, opt.state[p]["momentum_buffer"])

    blob = w.bytes()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "wb") as f:
        f.write(blob)
    nz = torch.cat([gr.flatten() for gr in grads.values()])
    nz = nz[nz != 0].abs()
    print(f"wrote {out}: {len(blob)} bytes, {len(w.records)} records; torch {torch.__version__}")
    print(f"  loss {loss.item():.9f}  grad_norm {grad_norm:.9f}  clip {clip:.9f}  "
          f"smallest nonzero |grad| {nz.min().item():.3g}  largest {nz.max().item():.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
