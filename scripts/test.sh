#!/usr/bin/env bash
# Builds and runs the whole test suite (CTest). GPU tests report "skipped" where no GPU is usable.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
