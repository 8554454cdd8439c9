#!/usr/bin/env bash
# test_lstm_bench.sh (label gpu): the LSTM workbench (bench/kernels/lstm_bench.cu), which a GPU
# session runs at configurations A and B (scripts/device_all.sh), at a tiny shape so that it
# takes seconds: it ends with exit 0, and every implementation and precision it lists is
# either measured against the CPU layer within its precision's bound or skipped with a
# reason. Bounds on its measure, max |diff| / max |ref| per tensor, from
# tests/gpu/precision_tolerance.h's gradient tolerances (the looser of forward and
# gradient): fp32 1e-5 (a few ulps over a short window), tf32 7.8e-3 (16u, u = 2^-11), bf16
# 6.3e-2 (16u, u = 2^-8). Skipped (77) without a device or in a build without CUDA.
bin="$SK_BUILD_DIR/lstm_bench"
if [ ! -x "$bin" ]; then
    echo "skipped: no $bin (a build without CUDA)"
    exit 77
fi
out=$("$bin" 4 8 24 2 6 1 all 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 77 ] && exit 77
if [ "$rc" -ne 0 ]; then
    echo "FAIL: lstm_bench exited $rc"
    exit 1
fi
printf '%s\n' "$out" | awk '
    / max \|diff\| \/ max \|ref\|: / {
        bound = $1 == "fp32" ? 1e-5 : $1 == "tf32" ? 7.8e-3 : 6.3e-2
        over = 0
        for (i = 1; i <= NF; i++)
            if ($i ~ /^[0-9.]+e[-+][0-9]+$/ && $i + 0 > bound) over = 1
        if (over) { print "FAIL: " $0 " (bound " bound ")"; bad = 1 }
        measured++
    }
    / skipped: / { skipped++ }
    / forward .* ms, forward\+backward / { timed++ }
    END {
        # fp32, tf32 and bf16 persistent on CUDA cores and tf32, bf16 on tensor cores, cuDNN
        # STANDARD in fp32 and tf32: at least those seven are measured and timed.
        if (measured < 7 || timed != measured) { print "FAIL: " measured " measured, " timed " timed"; bad = 1 }
        printf "lstm_bench: %d measured, %s, %d skipped with a reason\n", measured, bad ? "NOT all within bounds" : "all within bounds", skipped
        exit bad
    }'
