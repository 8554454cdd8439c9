#!/usr/bin/env python3
"""probe_precision.py: whether bf16 operands train as well as tf32, on a GPU, over several seeds.

Runs shakespeare-train with the quality recipe (the CPU's measured H=768 model, the README's
1.39 recipe) for --epochs epochs once per seed and precision (--precision tf32, then bf16: bf16
LSTM operands, fp32 accumulation, cell state and master weights), each with rnn-impl auto, and
prints one line per run and a verdict line:

  run precision=bf16 seed=1 best_val_loss=1.4240 wall_s=22.3 rnn_impl=persistent-layerwise
  verdict tf32_median=1.4240 bf16_median=1.4251 diff=0.0011 agree=yes (|diff| <= 0.01)

`--precision auto` becomes bf16 on GPUs with bf16 tensor cores only where agree=yes (the
project's rule: validation losses within 0.01 of tf32's, medians over the seeds). Usage, from
the repo root after scripts/device_build.sh:

  python3 scripts/probe_precision.py --build-dir build-gpu --seeds 3 --epochs 6 --timeout 60
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

RECIPE = ("--embed-size 128 --hidden-size 768 --num-layers 2 --dropout 0.3 --weight-drop 0.25 "
          "--weight-decay 0.1 --batch-size 32 --seq-length 128")
AGREE = 0.01  # nats/char: the largest gap in validation loss that still counts as the same quality


def field(name, text):
    """The value of the last NAME=value in text, or ''."""
    found = re.findall(r"(?:^|\s)" + re.escape(name) + r"=(\S*)", text)
    return found[-1] if found else ""


def run(train, data, precision, seed, a, tmp):
    out_dir = os.path.join(tmp, f"{precision}-{seed}")
    cmd = [train, "--data", data, "--device", "cuda", "--precision", precision, "--seed", str(seed),
           "--max-epochs", str(a.epochs), "--out-dir", out_dir] + (a.recipe or RECIPE).split()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
        text, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired:
        text, rc = "", "timeout"
    loss = field("best_val_loss", text)
    choice = re.findall(r"^note: --rnn-impl auto: (\S+)", text, re.M)
    print(f"run precision={precision} seed={seed} best_val_loss={loss or 'none'} wall_s={field('wall_s', text) or '?'} "
          f"rnn_impl={choice[0].rstrip(',') if choice else '?'} rc={rc}", flush=True)
    if rc != 0:
        print("  " + "\n  ".join(text.strip().splitlines()[-3:]), flush=True)
    return float(loss) if loss and rc == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default="build-gpu")
    ap.add_argument("--data", default="data/tinyshakespeare.txt")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--timeout", type=int, default=60, help="seconds per run")
    ap.add_argument("--recipe", default="", help="the model and training flags (default: the H=768 recipe)")
    a = ap.parse_args()
    if a.seeds < 1 or a.epochs < 1 or a.timeout < 1:
        sys.exit("probe_precision.py: error: --seeds, --epochs and --timeout must be positive")
    train = os.path.join(a.build_dir, "shakespeare-train")
    if not os.access(train, os.X_OK):
        sys.exit(f"probe_precision.py: error: {train} is not built (scripts/device_build.sh)")
    losses = {"tf32": [], "bf16": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, a.seeds + 1):
            for precision in losses:
                loss = run(train, a.data, precision, seed, a, tmp)
                if loss is not None:
                    losses[precision].append(loss)
    if not losses["tf32"] or not losses["bf16"]:
        print("verdict agree=unknown (a precision has no finished run)")
        return 1
    t, b = statistics.median(losses["tf32"]), statistics.median(losses["bf16"])
    print(f"verdict tf32_median={t:.4f} bf16_median={b:.4f} diff={b - t:.4f} "
          f"agree={'yes' if abs(b - t) <= AGREE else 'no'} (|diff| <= {AGREE}) "
          f"runs={len(losses['tf32'])}+{len(losses['bf16'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
