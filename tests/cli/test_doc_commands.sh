#!/usr/bin/env bash
# The command blocks of README.md and docs/*.md run as written (tests/cli/doc_commands.py says
# which rewrites keep them short and which commands are skipped, and why).
source "$(dirname "$0")/lib.sh"
python3 "$SK_SOURCE_DIR/tests/cli/doc_commands.py" "$SK_SOURCE_DIR" "$(dirname "$SK_TRAIN")" || fail "a documented command failed"
finish
