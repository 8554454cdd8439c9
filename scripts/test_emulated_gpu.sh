#!/usr/bin/env bash
# The GPU tests without a GPU: builds the emulated CUDA module (-DSHAKESPEARE_CUDA_EMU=ON,
# tests/emu/backend.cmake) into build-emu/ (or $BUILD_DIR) and runs the gpu tests and the
# emulated libraries' own checks there (README, "The GPU tests without a GPU"). Extra
# arguments go to ctest (e.g. -R parity).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-emu}
BUILD_DIR=$build_dir bash scripts/build.sh -DSHAKESPEARE_CUDA=OFF -DSHAKESPEARE_CUDA_EMU=ON
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -R '^gpu_|^emu_check_libs$' "$@"
