#!/usr/bin/python3
"""plot_metrics.py: the loss curves of a shakespeare-train metrics log, as a PNG.

    /usr/bin/python3 scripts/plot_metrics.py out/metrics.jsonl [-o out/loss.png] [--title T] [--x step|time]

The log is JSON Lines, one record per logged step and one per evaluation:

    {"iter": 10, "epoch": 0.08, "train_loss": 3.31, "lr": 0.002, "tokens_per_s": 51000.0, "elapsed_s": 0.4}
    {"iter": 10, "val_loss": 3.30, "elapsed_s": 0.5}

A resumed run appends to the same log, so a step can appear twice (a run killed after its
last checkpoint logged steps that the resumed run repeats); the later record wins. A line
that is not a JSON object (a run killed in the middle of a write) is skipped with a warning.
The figure shows training and validation loss (nats/char) against the step, or with --x time
against elapsed_s, the run's wall-clock seconds (a resumed run counts on from the time its
checkpoint recorded, so time-to-loss reads across resumes; records without elapsed_s, from logs
written before it, are left out), with the learning rate on a second axis when it varies.
Needs matplotlib (Debian: python3-matplotlib).
Exit codes: 0 written, 2 bad input (missing or empty log, unwritable output), 1 no matplotlib.
"""

import argparse
import json
import math
import os
import sys


def fail(code, msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(code)


def read_log(path):
    """(train, val): dicts iter -> record, the later record winning; exits on bad input."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        fail(2, f"cannot read {path}: {e.strerror}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(2, f"{path}: invalid UTF-8 at byte {e.start}")
    train, val, skipped = {}, {}, 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            rec = None
        if not isinstance(rec, dict) or not isinstance(rec.get("iter"), int):
            skipped += 1
            print(f"warning: {path}:{lineno}: not a metrics record, skipped", file=sys.stderr)
            continue
        step = rec["iter"]
        if isinstance(rec.get("train_loss"), (int, float)):
            train[step] = rec
        elif isinstance(rec.get("val_loss"), (int, float)):
            val[step] = rec
        else:
            print(f"warning: {path}:{lineno}: a record without train_loss or val_loss, skipped", file=sys.stderr)
    if not train and not val:
        fail(2, f"{path} has no metrics records" + (f" ({skipped} unreadable lines)" if skipped else ""))
    return train, val


def series(records, key, x="iter"):
    """(xs, ys) of key over the records in step order; x is "iter" or "elapsed_s" (records without it left out)."""
    steps = sorted(s for s, r in records.items()
                   if math.isfinite(float(r[key])) and isinstance(r.get(x), (int, float)))
    return [records[s][x] for s in steps], [float(records[s][key]) for s in steps]


def main(argv):
    ap = argparse.ArgumentParser(description="Plot the loss curves of a shakespeare-train metrics log.")
    ap.add_argument("log", help="metrics.jsonl written by shakespeare-train")
    ap.add_argument("-o", "--output", help="PNG to write (default: the log's name with .png)")
    ap.add_argument("--title", default=None, help="figure title (default: the log's path)")
    ap.add_argument("--x", choices=("step", "time"), default="step",
                    help="the horizontal axis: the step, or elapsed_s, the run's seconds (default: step)")
    args = ap.parse_args(argv)
    out = args.output or os.path.splitext(args.log)[0] + ".png"
    x = "elapsed_s" if args.x == "time" else "iter"

    train, val = read_log(args.log)
    if x == "elapsed_s" and not any("elapsed_s" in r for r in list(train.values()) + list(val.values())):
        fail(2, f"{args.log} has no elapsed_s (written before the log recorded it): plot it with --x step")
    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        fail(1, "matplotlib is not importable (Debian: apt-get install python3-matplotlib)")

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    if train:
        s, y = series(train, "train_loss", x)
        ax.plot(s, y, label="train", color="tab:blue", linewidth=1)
    if val:
        s, y = series(val, "val_loss", x)
        ax.plot(s, y, label="validation", color="tab:orange", marker="o", markersize=3, linewidth=1.5)
        if y:
            best = min(range(len(y)), key=y.__getitem__)
            at = f"{s[best]:.1f} s" if x == "elapsed_s" else s[best]
            ax.annotate(f"best {y[best]:.4f} @ {at}", (s[best], y[best]), textcoords="offset points",
                        xytext=(0, 10), ha="center", fontsize=8)
    ax.set_xlabel("elapsed (s)" if x == "elapsed_s" else "step")
    ax.set_ylabel("loss (nats/char)")
    ax.grid(True, alpha=0.3)
    lr_steps, lrs = series(train, "lr", x) if train and all("lr" in r for r in train.values()) else ([], [])
    if lrs and max(lrs) > min(lrs):
        ax2 = ax.twinx()
        ax2.plot(lr_steps, lrs, color="tab:gray", linewidth=0.8, linestyle="--", label="learning rate")
        ax2.set_ylabel("learning rate")
        lines = ax.get_legend_handles_labels()
        lines2 = ax2.get_legend_handles_labels()
        ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper right")
    else:
        ax.legend(loc="upper right")
    ax.set_title(args.title if args.title is not None else args.log, fontsize=10)
    fig.tight_layout()
    tmp = f"{out}.{os.getpid()}.tmp"  # written whole, then renamed: never a partial PNG
    try:
        fig.savefig(tmp, format="png")
        os.replace(tmp, out)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail(2, f"cannot write {out}: {e.strerror}")
    print(f"wrote {out} ({len(train)} training records, {len(val)} evaluations)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
