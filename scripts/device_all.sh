#!/usr/bin/env bash
# device_all.sh: everything a GPU session must run, in one command (a device machine is
# lent for minutes: one full call costs less than many small ones). From the repo root:
#
#   run(command="BENCH_COMMIT=<hash> bash scripts/device_all.sh $OUT", carry=[".carry"])
#
# (.carry: scripts/device_prep.sh's OpenBLAS, for an image without it.) Writes to DIR:
#   build.log          scripts/device_build.sh (cuDNN, OpenBLAS found; CUDA build)
#   gpu-tests.log      ctest -L gpu (CUDA vs CPU parity, 200-step training), then all tests
#   bench-gpu.txt      scripts/bench_gpu.sh: configs A and B against PyTorch, side by side
#   quality.log        the quality run (--quality SECONDS: shakespeare-train on the GPU with
#                      the README's quality configuration, stopped by SIGTERM after SECONDS)
#   metrics.jsonl      its metrics log (checkpoints stay in /tmp/sk-quality: $OUT returns 8 files at most)
# Copy the files to bench/results/ (named with the date and commit) and commit them.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: device_all.sh OUT_DIR [--quality SECONDS]}
quality=0
[ "${2:-}" = --quality ] && quality=${3:?--quality needs seconds}
mkdir -p "$out"
commit=${BENCH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
{ date -u; echo "commit $commit"; nvidia-smi 2>&1 | head -15; } > "$out/build.log"

if ! bash scripts/device_build.sh >> "$out/build.log" 2>&1; then
  echo "device_all: build failed (see build.log)"; tail -n 30 "$out/build.log"; exit 1
fi
# shellcheck disable=SC1091
source build-gpu/env.sh

{ date -u; echo "commit $commit"
  ctest --test-dir build-gpu -L gpu --output-on-failure -V
  echo "== all tests"
  ctest --test-dir build-gpu --output-on-failure -j 8
} > "$out/gpu-tests.log" 2>&1
grep -E "tests passed|tests failed|Skipped|Failed" "$out/gpu-tests.log" | tail -n 8

BENCH_COMMIT=$commit bash scripts/bench_gpu.sh --skip-build --build-dir build-gpu --out "$out/bench-gpu.txt" \
  > /dev/null 2>&1
grep -E '^config=' "$out/bench-gpu.txt" || { echo "device_all: benchmark failed"; tail -n 20 "$out/bench-gpu.txt"; }

if [ "$quality" -gt 0 ]; then
  # The README's quality configuration: on the CPU it reached 1.4199 nats/char in 10 epochs
  # (bench/results/cpu-quality-h512-*); here it measures the wall time on the GPU.
  # SIGTERM after $quality s writes a checkpoint; the log keeps every validation loss.
  timeout -s TERM "$quality" build-gpu/shakespeare-train --device cuda --out-dir /tmp/sk-quality \
    --embed-size 128 --hidden-size 512 --num-layers 2 --dropout 0.25 --batch-size 32 --seq-length 128 \
    --lr 2e-3 --lr-schedule cosine --warmup-iters 100 --min-lr 1e-4 --max-epochs 10 --eval-every 400 \
    --checkpoint-every 1000 --log "$out/metrics.jsonl" > "$out/quality.log" 2>&1
  grep -E 'val_loss' "$out/quality.log" | sort -k4 -n | head -n 3
fi
