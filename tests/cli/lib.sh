# lib.sh: helpers shared by the CLI tests (sourced by tests/cli/test_*.sh).
# defines: WORK, TINY, fail, note, finish, skip, gen_text, expect_error, expect_exit, expect_ok,
#          tensor_data, same_tensors, state_step, wait_for, dir_digest, TORCH_PY, need_torch, SAFETENSORS_PY,
#          need_safetensors
# The tests run the real binaries named by SK_TRAIN and SK_SAMPLE (tests/tests.cmake sets them,
# with SK_SOURCE_DIR), each in its own temporary directory, and exit 0 (pass), 1 (fail) or 77 (skip).
set -u

: "${SK_TRAIN:?SK_TRAIN must name the shakespeare-train binary}"
: "${SK_SAMPLE:?SK_SAMPLE must name the shakespeare-sample binary}"
: "${SK_SOURCE_DIR:?SK_SOURCE_DIR must name the source tree}"
export OPENBLAS_NUM_THREADS=1 LC_ALL=C

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sk_cli.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
# The programs' per-user cache (--cache-dir's default) inside the test's directory, never the
# user's ~/.cache.
export XDG_CACHE_HOME=$WORK/.xdg-cache

# A model small enough that a training step takes well under a millisecond.
TINY=(--embed-size 8 --hidden-size 16 --num-layers 1 --batch-size 2 --seq-length 8 --device cpu --threads 1)

FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
note() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 77; }
finish() {
    if [ "$FAILS" -gt 0 ]; then echo "$FAILS check(s) failed" >&2; exit 1; fi
    echo "all checks passed"; exit 0
}

# gen_text FILE LINES SEED: deterministic lowercase text (plus two non-ASCII letters, é and ï),
# about 50 characters a line. No uppercase letters, digits or '€': tests use them as characters
# outside the vocabulary.
gen_text() {
    awk -v n="$2" -v seed="$3" 'BEGIN {
        nw = split("to be or not that is the question whether tis nobler in mind suffer slings " \
                   "and arrows of outrageous fortune café naïve sea troubles end them sleep dream", w, " ");
        srand(seed);
        for (i = 0; i < n; i++) {
            line = "";
            k = 4 + int(rand() * 6);
            for (j = 0; j < k; j++) line = line (j ? " " : "") w[1 + int(rand() * nw)];
            p = rand();
            print line (p < 0.3 ? "," : p < 0.5 ? "." : p < 0.6 ? ";" : "");
        }
    }' > "$1"
}

# hang_limit SECONDS: a command's timeout, which catches hangs, times SK_TIMEOUT_SCALE (default 1;
# the emulated GPU build sets it, tests/emu/backend.cmake: one CPU core plays the GPU there).
hang_limit() { echo $(($1 * ${SK_TIMEOUT_SCALE:-1})); }

# expect_error REGEX CMD...: CMD must fail as bad input: exit code 2 (not a crash: no signal, no
# core file), exactly one line on stderr starting "error: " and matching the extended REGEX,
# and nothing on stdout (no partial result). Runs under a 20 s timeout (a hang fails).
expect_error() { expect_exit 2 "$@"; }

# expect_exit CODE REGEX CMD...: as expect_error, for exit code CODE (1: a failure that is not
# bad input, which may come after progress lines on stdout and the run's notes on stderr; the stdout
# check is for code 2 only).
# Runs under a 60 s timeout.
LAST_STDERR=
expect_exit() {
    local code=$1 re=$2; shift 2
    local out="$WORK/.expect.out" errf="$WORK/.expect.err" rc
    rm -f "$WORK"/core "$WORK"/core.*
    timeout "$(hang_limit "$([ "$code" = 2 ] && echo 20 || echo 60)")" "$@" > "$out" 2> "$errf"; rc=$?
    LAST_STDERR=$(cat "$errf")
    local what="$*"
    if [ "$rc" -ne "$code" ]; then
        fail "exit code $rc (want $code) from: $what"; sed 's/^/    stderr: /' "$errf" >&2; return 1
    fi
    # A failure during a run (code 1) may follow the run's own notes ("note: resumed from ...").
    local lines; lines=$(if [ "$code" = 2 ]; then cat "$errf"; else grep -v '^note: ' "$errf"; fi | wc -l)
    if [ "$lines" -ne 1 ]; then
        fail "$lines stderr lines (want exactly 1) from: $what"; sed 's/^/    stderr: /' "$errf" >&2; return 1
    fi
    if ! grep -v '^note: ' "$errf" | head -n 1 | grep -q '^error: '; then
        fail "stderr does not start with 'error: ' from: $what: $LAST_STDERR"; return 1
    fi
    if ! grep -Eq -- "$re" "$errf"; then
        fail "stderr does not match /$re/ from: $what: $LAST_STDERR"; return 1
    fi
    if [ "$code" = 2 ] && [ -s "$out" ]; then
        fail "stdout is not empty from: $what: $(head -c 200 "$out")"; return 1
    fi
    if ls "$WORK"/core "$WORK"/core.* > /dev/null 2>&1; then fail "core dump from: $what"; return 1; fi
    note "$LAST_STDERR"
    return 0
}

# expect_ok CMD...: CMD must exit 0 within 60 s; its stdout is in $WORK/.ok.out, stderr in .ok.err.
expect_ok() {
    local rc
    timeout "$(hang_limit 60)" "$@" > "$WORK/.ok.out" 2> "$WORK/.ok.err"; rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "exit code $rc (want 0) from: $*"; sed 's/^/    stderr: /' "$WORK/.ok.err" >&2; return 1
    fi
    return 0
}

# tensor_data FILE: the tensor bytes of a safetensors file (everything after the u64 LE header
# length and the JSON header), on stdout. The header (metadata) is left out on purpose.
tensor_data() {
    local n
    n=$(od -An -t u8 -N 8 "$1" | tr -d ' ') || return 1
    tail -c +"$((n + 9))" "$1"
}

# same_tensors A B: whether two checkpoints hold bit-identical parameters.
same_tensors() {
    [ -s "$1" ] && [ -s "$2" ] && cmp -s <(tensor_data "$1") <(tensor_data "$2")
}

# state_step MODEL: the step of the training state a model file names (its "state_file" metadata,
# <name>.<step, 9 digits>.state), without leading zeros; empty when it names none.
state_step() {
    local n s
    n=$(od -An -t u8 -N 8 "$1" | tr -d ' ') || return 1
    s=$(head -c "$((n + 8))" "$1" | grep -ao '[a-z]*\.[0-9]\{9\}\(\.[0-9]*\)\?\.state' | head -n 1)
    [ -n "$s" ] || return 0
    s=${s#*.}; s=${s%%.*}
    echo $((10#$s))
}

# require_gpu: skip (77) unless shakespeare-train can run a one-step CUDA job here (the
# GPU tests' common first check); the skip line says why, in the trainer's words. The probe keeps its
# caches (tokens, its rnn-impl auto choice) to itself, out of the per-user cache the tests count.
require_gpu() {
    gen_text .gpu_probe.txt 20 1
    if ! "$SK_TRAIN" --data .gpu_probe.txt --out-dir .gpu_probe --cache-dir .gpu_probe.cache --max-iters 1 \
        --device cuda --embed-size 8 --hidden-size 16 --num-layers 1 --batch-size 2 --seq-length 8 \
        > .gpu_probe.out 2>&1; then
        skip "no usable GPU: $(tail -n 1 .gpu_probe.out)"
    fi
}

# wait_for SECONDS CMD...: polls CMD every 20 ms until it succeeds; fails after SECONDS.
wait_for() {
    local deadline=$(($(date +%s) + $1)); shift
    until "$@"; do
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.02
    done
}

# has_records FILE N: FILE (a metrics log) has at least N lines; for wait_for.
has_records() { [ -s "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }

# The Pythons of the PyTorch tests: Debian's python3 with python3-torch, and the virtual
# environment scripts/setup.sh makes for the safetensors package from PyPI (which also sees
# Debian's torch and numpy). need_X skips the test (exit 77) with a message when X is missing.
TORCH_PY=/usr/bin/python3
SAFETENSORS_PY=$SK_SOURCE_DIR/.venv/bin/python3
need_torch() {
    [ -x "$TORCH_PY" ] && "$TORCH_PY" -c 'import torch' 2> /dev/null || skip "$TORCH_PY cannot import torch"
}
need_safetensors() {
    [ -x "$SAFETENSORS_PY" ] && "$SAFETENSORS_PY" -c 'import safetensors.numpy, torch' 2> /dev/null ||
        skip "the safetensors package is not installed in $SK_SOURCE_DIR/.venv (scripts/setup.sh installs it from PyPI)"
}

# dir_digest DIR: one line per file below DIR, hidden ones included: its SHA-256 and its path
# relative to DIR, sorted; equal digests mean the same names with byte-identical contents.
dir_digest() {
    (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}
