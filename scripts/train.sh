#!/usr/bin/env bash
# Quick start: builds if needed, then trains the default model on data/tinyshakespeare.txt.
# Any arguments go to shakespeare-train (see: build/shakespeare-train --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/shakespeare-train "$@"
