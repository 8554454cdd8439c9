#!/usr/bin/env bash
# test_metrics.sh: the JSON Lines metrics log (OUT_DIR/metrics.jsonl or --log FILE): one record
# {"iter","epoch","train_loss","lr","tokens_per_s","elapsed_s"} per logged step and
# {"iter","val_loss","elapsed_s"} per evaluation (elapsed_s: the run's seconds, not
# decreasing; across a resume: test_epoch_checkpoints.sh), appended to on resume; the console: plain lines when stdout is not a terminal,
# one live line on a terminal (through script(1) when installed), validation loss at each
# evaluation, a closing summary with the best validation loss and the median tokens/s;
# scripts/plot_metrics.py turns the log into a PNG (when matplotlib is importable).
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -x "$PY" ] || skip "$PY is needed to parse JSON"
gen_text text.txt 60 2
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --log-every 5 --eval-every 10 --lr 0.003)
expect_ok "${RUN[@]}" --out-dir o --max-iters 20 || finish
cp .ok.out console.txt

echo "== metrics.jsonl"
# Checks the records of a log: steps are the expected ones, keys exact, values sane; prints
# the validation losses, one per line, for the console comparison below.
check_log() { # LOG TRAIN_STEPS VAL_STEPS
    "$PY" - "$@" << 'EOF'
import json, math, sys
path, want_train, want_val = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
train, val, bad = [], [], []
for n, line in enumerate(open(path, encoding="utf-8"), 1):
    r = json.loads(line)  # every line is one JSON object
    if set(r) == {"iter", "epoch", "train_loss", "lr", "tokens_per_s", "elapsed_s"}:
        ok = (isinstance(r["iter"], int) and math.isfinite(r["train_loss"]) and r["train_loss"] > 0
              and abs(r["lr"] - 0.003) < 1e-9 and r["tokens_per_s"] > 0 and 0 <= r["epoch"] < 1)
        train.append(r)
    elif set(r) == {"iter", "val_loss", "elapsed_s"}:
        ok = isinstance(r["iter"], int) and math.isfinite(r["val_loss"]) and r["val_loss"] > 0
        val.append(r)
    else:
        ok = False
    if not ok:
        bad.append(f"line {n}: {line.strip()}")
if bad:
    sys.exit("bad records: " + "; ".join(bad))
if [str(r["iter"]) for r in train] != want_train:
    sys.exit(f"train records at {[r['iter'] for r in train]}, want {want_train}")
if [str(r["iter"]) for r in val] != want_val:
    sys.exit(f"val records at {[r['iter'] for r in val]}, want {want_val}")
ep = [r["epoch"] for r in train]
if ep != sorted(ep) or len(set(ep)) != len(ep):
    sys.exit(f"epochs do not increase: {ep}")
el = [r["elapsed_s"] for r in sorted(train + val, key=lambda r: (r["iter"], "val_loss" in r))]
if path.endswith("metrics.jsonl") and (el != sorted(el) or el[0] < 0 or el[-1] > 60):
    sys.exit(f"elapsed_s is not the time since the start: {el}")
for r in val:
    print(f"{r['iter']} {r['val_loss']:.4f}")
EOF
}
if vals=$(check_log o/metrics.jsonl "5 10 15 20" "10 20"); then
    note "o/metrics.jsonl: 4 training records, 2 evaluations, exact keys"
else
    fail "o/metrics.jsonl"
fi

echo "== console (not a terminal)"
grep -q $'\r' console.txt && fail "carriage returns in non-terminal output"
[ "$(grep -c '^epoch [0-9.]* iter [0-9]* loss [0-9.]* lr ' console.txt)" = 4 ] && note "4 plain progress lines" ||
    fail "want 4 progress lines: $(cat console.txt)"
# The validation losses printed are the ones logged.
printed=$(sed -n 's/^iter \([0-9]*\) val_loss \([0-9.]*\).*/\1 \2/p' console.txt)
[ -n "$vals" ] && [ "$printed" = "$vals" ] && note "validation loss printed at each evaluation" ||
    fail "printed validation losses '$printed' differ from the log's '$vals'"
best=$(printf '%s\n' "$vals" | sort -k2,2n | head -n 1 | awk '{print $2}')
sum=$(grep '^done:' console.txt)
[[ $sum =~ best_val_loss=$best\ .*median_tokens_per_s=[1-9][0-9]* ]] && note "summary: $sum" ||
    fail "summary '$sum' lacks best_val_loss=$best or a median tokens/s"

echo "== --log FILE and resume"
expect_ok "${RUN[@]}" --out-dir p --max-iters 10 --log custom.jsonl || finish
[ -e p/metrics.jsonl ] && fail "--log given, but p/metrics.jsonl was written too"
check_log custom.jsonl "5 10" "10" > /dev/null && note "--log custom.jsonl" || fail "custom.jsonl"
cp custom.jsonl before.jsonl
expect_ok "${RUN[@]}" --out-dir p --max-iters 20 --log custom.jsonl --init-from p/last.safetensors || finish
check_log custom.jsonl "5 10 15 20" "10 20" > /dev/null && cmp -s before.jsonl <(head -n 3 custom.jsonl) &&
    note "a resumed run appends" || fail "custom.jsonl after resuming: $(cat custom.jsonl)"

echo "== console (terminal)"
if command -v script > /dev/null 2>&1; then
    # script -e: its exit status is the command's. The live line is rewritten with \r ESC[K.
    if TERM=xterm script -qec "$(printf '%q ' "${RUN[@]}" --out-dir t --max-iters 20)" /dev/null > tty.txt 2>&1; then
        live=$(grep -o $'\r\033\\[Kepoch [0-9.]*  iter [0-9]*/20' tty.txt | wc -l)
        [ "$live" = 4 ] && note "4 live-line updates on a terminal" || fail "$live live-line updates, want 4: $(cat -v tty.txt)"
        grep -q 'checkpoint t/' tty.txt && fail "checkpoint lines on a terminal"
        grep -q 'iter 10 val_loss' tty.txt && grep -q '^done:' tty.txt || fail "terminal output lacks evaluations or summary"
    else
        fail "training under script(1) failed: $(cat -v tty.txt)"
    fi
else
    note "script(1) is not installed: terminal output not checked"
fi

echo "== scripts/plot_metrics.py"
PLOT=$SK_SOURCE_DIR/scripts/plot_metrics.py
"$PY" "$PLOT" missing.jsonl -o x.png > /dev/null 2> plot.err; rc=$?
[ "$rc" = 2 ] && grep -q '^error: cannot read missing.jsonl' plot.err && note "plot: a missing log is an error" ||
    fail "plot of a missing log: exit $rc, $(cat plot.err)"
if "$PY" -c 'import matplotlib' 2> /dev/null; then
    # The resumed log repeats nothing here; add a torn line as a killed run could leave.
    printf '{"iter":2' >> custom.jsonl
    if "$PY" "$PLOT" custom.jsonl -o curves.png > plot.out 2> plot.err; then
        [ "$(head -c 8 curves.png | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] && [ "$(wc -c < curves.png)" -gt 5000 ] &&
            note "plot: $(cat plot.out)" || fail "curves.png is not a PNG"
        grep -q 'warning: custom.jsonl:7: not a metrics record' plot.err || fail "no warning for the torn line: $(cat plot.err)"
        ls curves.png.*.tmp > /dev/null 2>&1 && fail "plot left a temporary file"
    else
        fail "plot_metrics.py failed: $(cat plot.err)"
    fi
    : > empty.jsonl
    "$PY" "$PLOT" empty.jsonl -o e.png > /dev/null 2> plot.err; rc=$?
    [ "$rc" = 2 ] && [ ! -e e.png ] && note "plot: an empty log is an error" || fail "plot of an empty log: exit $rc"
else
    note "matplotlib is not importable by $PY: the plot is not checked"
fi

echo "== cosine over the run's length"
# The cosine reaches --min-lr at the run's end, whichever limit ends it: over a run of n steps
# the learning rate logged at the last one (step n - 1 counted from 0) is
# min + (lr - min)(1 + cos(pi (n - 1) / n)) / 2, to the log's 6 significant digits (1e-5 relative). An
# anneal over the other limit would still be near 3e-3 there.
cosine_end() { # LOG: prints "n lr"; fails unless the last record's lr is the formula's
    "$PY" - "$1" << 'EOF'
import json, math, sys
r = [r for r in map(json.loads, open(sys.argv[1])) if "lr" in r][-1]
n, lr, lo, hi = r["iter"], r["lr"], 1e-4, 3e-3
want = lo + (hi - lo) * (1 + math.cos(math.pi * (n - 1) / n)) / 2
print(n, lr)
sys.exit(abs(lr - want) > 1e-5 * want)
EOF
}
for limits in "--max-epochs 1 --max-iters 1000000" "--max-epochs 50 --max-iters 20"; do
    # shellcheck disable=SC2086
    expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --lr 0.003 --lr-schedule cosine --min-lr 1e-4 \
        --log-every 1 --eval-every 0 --out-dir cos --log cos.jsonl $limits || finish
    if end=$(cosine_end cos.jsonl); then note "$limits: last step and lr $end"
    else fail "$limits: the cosine does not end at --min-lr after the run's last step (step and lr: $end)"; fi
    rm -rf cos cos.jsonl
done

echo "== test split"
grep -q '^test_loss' console.txt && fail "a test loss was printed without a test split" || note "no test split, no test loss"
expect_ok "${RUN[@]}" --out-dir split --max-iters 10 --train-frac 0.7 --val-frac 0.15 || finish
tl=$(awk '/^test_loss/ {print $2}' .ok.out)
[ -n "$tl" ] && awk -v x="$tl" 'BEGIN { exit !(x > 0 && x < 10) }' && note "test_loss $tl printed with a test split" ||
    fail "no sane test_loss line: $(tail -n 3 .ok.out)"
expect_ok "$SK_TRAIN" "${TINY[@]}" --data text.txt --train-frac 0.7 --val-frac 0.15 --eval-only \
    --init-from split/last.safetensors || finish
grep -q '^val_loss' .ok.out && grep -q '^test_loss' .ok.out && note "--eval-only prints validation and test loss" ||
    fail "--eval-only output: $(cat .ok.out)"
finish
