#!/usr/bin/env bash
# Quick start: builds if needed, then trains the default model on data/tinyshakespeare.txt.
# Any arguments go to shakespeare-train (see: build/shakespeare-train --help).
set -euo pipefail
cd "$(dirname "$0")/.."
SHAKESPEARE_SETUP_MINIMAL=1 bash scripts/build.sh # the build needs no PyTorch or clang
exec build/shakespeare-train "$@"
