#!/usr/bin/env bash
# bench_gpu.sh: the entry of the GPU benchmark, scripts/bench_gpu.py (run it with --help for
# what it measures and how). The program needs only python3; $PYTHON names the interpreter
# with CUDA PyTorch, which it runs for the PyTorch peer.
exec python3 "$(dirname "$0")/bench_gpu.py" "$@"
