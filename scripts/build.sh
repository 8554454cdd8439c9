#!/usr/bin/env bash
# Installs missing Debian packages (scripts/setup.sh), configures and builds into build/
# (or $BUILD_DIR). Extra arguments go to CMake's configure step. SHAKESPEARE_BUILD_TARGETS (e.g.
# "shakespeare-train shakespeare-sample") builds only those targets; unset, everything (the
# tests, the emulated GPU, the benches).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${SHAKESPEARE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
