#!/usr/bin/env bash
# test_bench_gpu_script.sh: the GPU benchmark's own logic (scripts/bench_gpu.py, through its
# entry scripts/bench_gpu.sh), without a GPU. A GPU session
# has minutes, so the script must not fail there on its own bookkeeping. Stand-ins play the
# three things it drives: nvidia-smi (memory samples, GPU name), shakespeare-train (a
# throughput per variant; a refusal, exit 2 with an error: line, for bf16 at H=512; a crash,
# exit 1, for cudnn-persist; validation losses for the time to quality) and PyTorch's script.
# Checked: bad options fail before anything runs; shakespeare's rate is the median of its per-step
# log after the warm-up (not the done line's); ratios are against the best of PyTorch's three
# rows (TF32, fp32, CUDA graph), and a refused PyTorch capture is a note; every variant gets its own row and status
# (ok, refused with its line, failed); the best variant per configuration; the default
# variant's config= lines; the time to quality and its speed-up, also alone (--ttq-only); a failed run makes the
# exit status 1, and refusals alone do not; persistent-cluster variants run --rnn-impl
# persistent-cluster.
. "$(dirname "$0")/lib.sh"

bench="$SK_SOURCE_DIR/scripts/bench_gpu.sh"
mkdir -p bin build
cat > bin/nvidia-smi <<'EOF'
#!/bin/bash
case "$*" in
  *query-compute-apps*) for p in $(pgrep -f 'build/shakespeare-train|fake_torch'); do echo "$p, 700"; done ;;
  *memory.used*) echo 1000 ;;
  *name,memory.total*) echo "Stand-in GPU, 80000 MiB" ;;
  *driver_version*) echo 1.0 ;;
esac
EOF
cat > build/shakespeare-train <<'EOF'
#!/bin/bash
args="$*"
if [[ "$args" == *"--precision bf16"* && "$args" == *"--hidden-size 512"* ]]; then
  echo "error: the persistent LSTM kernel does not fit this model: stand-in reason" >&2; exit 2
fi
if [[ "$args" == *"--rnn-impl cudnn-persist"* ]]; then echo "a stand-in crash" >&2; exit 1; fi
if [[ "$args" != *"--eval-every 0"* ]]; then # time to quality
  for v in 1.70 1.55 1.49; do echo "iter 0 val_loss $v"; sleep 0.1; done; sleep 30; exit 0
fi
sleep 0.2
tps=1000; [[ "$args" == *"--rnn-impl persistent"* ]] && tps=5000
[[ "$args" == *"--precision tf32"* ]] && tps=$((tps + 500))
[[ "$args" == *"--rnn-impl persistent-cluster "* ]] && tps=7000
# The per-step log (--log-every 1): a slow first step, then the steady rate. The done line's
# median is over every step and lower, so the benchmark must read the log, not the done line.
out=$(echo "$args" | grep -o -- '--out-dir [^ ]*' | cut -d' ' -f2)
if [[ "$args" == *"--log-every 1 "* && -n "$out" ]]; then
  mkdir -p "$out"
  echo "{\"iter\":1,\"epoch\":0.01,\"train_loss\":4.1,\"lr\":0.002,\"tokens_per_s\":10.0}" > "$out/metrics.jsonl"
  for i in 2 3 4; do
    echo "{\"iter\":$i,\"epoch\":0.01,\"train_loss\":4.1,\"lr\":0.002,\"tokens_per_s\":$tps.0}" >> "$out/metrics.jsonl"
  done
fi
echo "done: steps=2 median_tokens_per_s=$((tps / 2)) final_train_loss=2.5 backend=cuda"
EOF
echo 'export LD_LIBRARY_PATH=/nonexistent' > build/env.sh
cat > bin/fake_torch <<'EOF'
#!/bin/bash
if [[ "$*" == *--target-val* ]]; then
  echo "pytorch iter 200 val_loss 1.6" >&2
  echo "torch_version=9.9 reached=1 steps=800 val_loss=1.4900 time_to_target_s=12.0"; exit 0
fi
c=$(echo "$*" | grep -o -- '--config [AB]' | cut -d' ' -f2)
echo "torch_version=9.9 cuda=13 cudnn=91900"
if [[ "$*" == *"--graph on"* ]]; then # the CUDA-graph peer: faster at A, refused at B
  [ "$c" = B ] && { echo "torch_version=9.9 config=B graph=failed reason='stand-in refusal'"; exit 0; }
  echo "torch_version=9.9 config=$c median_tokens_per_s=2500 peak_mib=300 max_memory_allocated_mib=100 graph=on"; exit 0
fi
echo "torch_version=9.9 config=$c median_tokens_per_s=2000 peak_mib=300 max_memory_allocated_mib=100 last_loss=2.6"
EOF
chmod +x bin/* build/*
export PATH="$WORK/bin:$PATH" PYTHON="$WORK/bin/fake_torch"
run_bench() { bash "$bench" --skip-build --build-dir "$WORK/build" --steps 1 --warmup 0 --poll-ms 20 "$@"; }

# Bad options: one line, exit 2, before any run.
for bad in "--variants persistent/fp16/on" "--variants cudnn" "--ttq-config 1,2" "--steps 0" "--configs C"; do
    # shellcheck disable=SC2086
    run_bench $bad > bad.out 2>&1 </dev/null; rc=$?
    [ "$rc" = 2 ] && [ "$(grep -c 'error:' bad.out)" = 1 ] && ! grep -q '== config' bad.out &&
        note "bench_gpu.sh $bad: refused ($(grep error: bad.out | cut -c1-80)...)" ||
        fail "bench_gpu.sh $bad: exit $rc, $(tail -n 1 bad.out)"
done

V="auto/fp32/auto,persistent/bf16/on/on,cudnn-persist/fp32/on,persistent/tf32/on"
run_bench --variants "$V" --time-to-quality --ttq-variant persistent/tf32/on --timeout 20 --out all.txt \
    > all.out 2>&1; rc=$?
[ "$rc" = 1 ] && note "a crashed variant makes the exit status 1" || fail "exit status $rc with a crashed variant"
line() { grep -E "^$1" all.txt | head -n 1; }
check() { # check NAME REGEX: the first line of all.txt starting with NAME matches REGEX
    line "$1" | grep -Eq "$2" && note "$1 ... $(line "$1" | cut -c1-100)" || fail "no line '$1' matching $2 in all.txt"
}
# Ratios against the best PyTorch row: A's CUDA-graph peer (2500), B's TF32 row (its capture failed).
check "variant config=A variant=auto/fp32/auto " "status=ok tokens_per_s=1000.0 ratio=0.400 peak_mib=700"
check "variant config=A variant=persistent/bf16/on/on " "status=ok tokens_per_s=5000.0 ratio=2.000"
check "variant config=B variant=persistent/bf16/on/on " "status=refused tokens_per_s=na"
check "variant config=A variant=cudnn-persist/fp32/on " "status=failed tokens_per_s=na"
check "variant config=B variant=persistent/tf32/on " "status=ok tokens_per_s=5500.0 ratio=2.750"
check "best config=A " "variant=persistent/tf32/on tokens_per_s=5500.0 ratio=2.200"
check "note: config B pytorch's CUDA graph capture failed" "stand-in refusal"
check "note: config B persistent/bf16/on/on refused" "stand-in reason"
check "ttq target=1.50 " "shakespeare_s=[0-9.]+ pytorch_s=12.0 speedup=[0-9.]+"
check "config=A " "shakespeare_tokens_per_s=1000.0 pytorch_tokens_per_s=2500 ratio=0.400 shakespeare_peak_mib=700"
check "config=B " "shakespeare_tokens_per_s=1000.0 pytorch_tokens_per_s=2000 ratio=0.500"
grep -q -- '--rnn-impl persistent --precision tf32 --cuda-graph on' all.out 2>/dev/null ||
    grep -q 'shakespeare (persistent/tf32/on)' all.txt && note "time to quality ran --ttq-variant" ||
    fail "time to quality did not run the --ttq-variant"
[ "$(grep -c '^config=' all.txt)" = 2 ] && note "exactly one config= line per configuration" ||
    fail "$(grep -c '^config=' all.txt) config= lines"

# --ttq-only: the time to quality alone, PyTorch named by its own version line.
run_bench --ttq-only --timeout 20 --out q.txt > q.out 2>&1; rc=$?
[ "$rc" = 0 ] && grep -Eq '^pytorch 9\.9 +800 +1\.4900 +12\.0$' q.txt && ! grep -q '^variant ' q.txt &&
    grep -q '^ttq target=1.50 ' q.txt && note "--ttq-only: the time to quality alone" ||
    fail "--ttq-only: exit $rc, $(grep -E '^pytorch|^ttq' q.txt | tr '\n' '|')"

# --ttq-seeds 3: three runs a side, the medians on the ttq line with every seed's seconds.
run_bench --ttq-only --ttq-seeds 3 --timeout 20 --out s.txt > s.out 2>&1; rc=$?
[ "$rc" = 0 ] && grep -Eq '^ttq target=1.50 shakespeare_s=[0-9.]+ pytorch_s=12.0 speedup=[0-9.]+ seeds=3 shakespeare_each=[0-9.]+,[0-9.]+,[0-9.]+ pytorch_each=12.0,12.0,12.0$' s.txt &&
    note "--ttq-seeds 3: $(grep '^ttq ' s.txt)" ||
    fail "--ttq-seeds 3: exit $rc, $(grep '^ttq ' s.txt)"

# persistent-cluster: --rnn-impl persistent-cluster (the stand-in's 7000).
run_bench --variants "persistent-cluster/bf16/on/on,persistent/bf16/on/on" --configs A --skip-torch --out c.txt \
    > c.out 2>&1; rc=$?
[ "$rc" = 0 ] && grep -q 'variant config=A variant=persistent-cluster/bf16/on/on status=ok tokens_per_s=7000.0' c.txt &&
    grep -q 'variant config=A variant=persistent/bf16/on/on status=ok tokens_per_s=5000.0' c.txt &&
    note "persistent-cluster runs --rnn-impl persistent-cluster" ||
    fail "persistent-cluster: exit $rc, $(grep '^variant' c.txt | tr '\n' '|')"
bash "$bench" --dry-run --variants persistent-cluster/bf16/on --configs A --skip-torch > d.out 2>&1
grep -q -- '--rnn-impl persistent-cluster ' d.out && note "--dry-run shows the implementation" ||
    fail "--dry-run does not show --rnn-impl persistent-cluster: $(grep -- '--rnn-impl' d.out | head -n 1)"

# Refusals alone are not failures.
run_bench --variants "auto/fp32/auto,persistent/bf16/on" --configs B --skip-torch --out r.txt > r.out 2>&1; rc=$?
[ "$rc" = 0 ] && grep -q 'status=refused' r.txt && note "a refused variant alone leaves exit status 0" ||
    fail "refusal only: exit $rc"
finish
