#!/usr/bin/env bash
# test_console.sh: what shakespeare-train writes where (issue 50, low items): with stdout and
# stderr in one file, the lines keep their order (the checkpoint of step 10 before the error at
# step 12: stdout goes line by line, not in 4 KB blocks that a crash or a stop flushes last);
# the live line ('\r', ESC[K) only on an interactive terminal (a pty from script(1)), not for
# TERM=dumb nor under an MPI launcher (OMPI_COMM_WORLD_SIZE set), which gives every rank a pty
# whose output ends in a log file; --threads above the cores the process may use warns; a run
# starts with one line that says what it is: parameters, vocabulary, corpus, splits, steps per
# epoch and where it ends.
. "$(dirname "$0")/lib.sh"

gen_text text.txt 80 4
RUN=("$SK_TRAIN" "${TINY[@]}" --data text.txt --eval-every 0)

SHAKESPEARE_TEST_POISON_STEP=12 timeout 60 "${RUN[@]}" --out-dir p --max-iters 50 --checkpoint-every 5 \
    --log-every 1 > both.log 2>&1
ck=$(grep -n '^checkpoint p/last.safetensors' both.log | tail -n 1 | cut -d: -f1)
er=$(grep -n '^error: training loss is nan at step 12' both.log | cut -d: -f1)
[ -n "$ck" ] && [ -n "$er" ] && [ "$ck" -lt "$er" ] && [ "$er" = "$(wc -l < both.log)" ] &&
    note "one file for both streams: the checkpoint (line $ck) before the error (line $er, the last)" ||
    fail "out of order: $(cat both.log)"

if command -v script > /dev/null; then
    live() { # ENV...: the run's output on a pseudo-terminal, with the environment given
        env "$@" script -qec "$(printf '%q ' "${RUN[@]}" --max-iters 20 --out-dir "t$#$RANDOM")" /dev/null > pty.log 2>&1
    }
    live TERM=xterm && grep -q $'\r\033\\[K' pty.log && note "a terminal gets the live line" ||
        fail "no live line on a terminal: $(od -c pty.log | head -n 3)"
    for e in TERM=dumb "TERM=xterm OMPI_COMM_WORLD_SIZE=1"; do
        live $e && grep -q '^epoch 0\.[0-9]* iter 10 loss' pty.log && ! grep -q $'\033' pty.log &&
            note "$e: plain lines, no escape sequences" || fail "$e: $(od -c pty.log | head -n 3)"
    done
else
    note "script(1) not found: the terminal checks are left out"
fi

n=$(LC_ALL=C.UTF-8 wc -m < text.txt)
expect_ok "${RUN[@]}" --out-dir s --max-iters 3 --train-frac 0.8 --val-frac 0.1 &&
    # E=8, H=16, L=1, V symbols: V*E + 4H*(E+H) + 8H + H*V + V
    V=$(head -c 2000 s/last.safetensors | grep -ao '"vocab_size":"[0-9]*"' | tr -cd 0-9) &&
    P=$((V * 8 + 64 * 24 + 128 + 16 * V + V)) && tr=$((n * 8 / 10)) && va=$((n / 10)) &&
    grep -qx "run: $P parameters, vocabulary $V, corpus $n characters (train $tr, val $va, test $((n - tr - va))), $(((tr - 1) / 2 / 8)) steps per epoch; ends at step 3 (--max-iters)" .ok.out &&
    note "$(head -n 1 .ok.out)" || fail "the run's first line: $(head -n 1 .ok.out); V=$V P=$P n=$n"

cores=$(nproc)
expect_ok "${RUN[@]}" --out-dir w --max-iters 2 --threads $((cores + 1)) &&
    grep -q "^warning: --threads $((cores + 1)) exceeds the $cores cores\? this process may use" .ok.err &&
    note "$(grep warning .ok.err)" || fail "no --threads warning: $(cat .ok.err)"
expect_ok "${RUN[@]}" --out-dir w1 --max-iters 2 --threads "$cores" && ! grep -q warning .ok.err &&
    note "--threads $cores: no warning" || fail "--threads $cores warns: $(cat .ok.err)"
finish
