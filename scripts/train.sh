#!/usr/bin/env bash
# Quick start: builds if needed, then trains the default model on data/tinyshakespeare.txt.
# Any arguments go to shakespeare-train (see: build/shakespeare-train --help). It builds the two
# programs only (scripts/test.sh builds everything); the build is quiet: one line when
# something was compiled, the whole log when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/shakespeare-train ] || echo "train.sh: building into build/ (the first time installs packages; minutes)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# the build needs no PyTorch or clang
if ! SHAKESPEARE_SETUP_MINIMAL=1 SHAKESPEARE_BUILD_TARGETS="shakespeare-train shakespeare-sample" bash scripts/build.sh \
    > "$log" 2>&1; then
    cat "$log" >&2
    echo "train.sh: the build failed (its log is above)" >&2
    exit 1
fi
compiled=$(grep -c 'Building ' "$log" || true)
[ "$compiled" = 0 ] || echo "train.sh: compiled $compiled files into build/"
rm -f "$log"
trap - EXIT
exec build/shakespeare-train "$@"
