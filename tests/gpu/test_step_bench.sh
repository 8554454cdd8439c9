#!/usr/bin/env bash
# test_step_bench.sh (label gpu): the training step's workbench (bench/kernels/step_bench.c),
# which a GPU session runs at configurations A and B (scripts/device_all.sh), at a tiny shape
# so that it takes seconds: its argument handling, and each run's three ways to step (eager,
# deferred, replayed as a CUDA graph) ending with bit-identical parameters, for cuDNN in
# fp32, the persistent kernel in fp32, and in bf16 on CUDA cores and on tensor cores, with
# dropout. Skipped (77) without a device or in a build without CUDA.
bin="$SK_BUILD_DIR/step_bench"
if [ ! -x "$bin" ]; then
    echo "skipped: no $bin (a build without CUDA)"
    exit 77
fi
fail=0
# Bad arguments: exit 2 and one line, before any device is looked for.
for args in "4 8 16 2 8 2 persistent 0 bf16 maybe" "4 8 16 2 8 2 persistent 0 fp64" "4 8 16"; do
    out=$("$bin" $args 2>&1)
    rc=$?
    if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ]; then
        echo "FAIL: step_bench $args: exit $rc, expected 2 and one line: $out"
        fail=1
    fi
done
# B E H L T steps rnn-impl dropout precision tensor-cores
for args in "4 8 16 2 8 2 cudnn 0.2 fp32 default" "4 8 16 2 8 2 persistent 0.2 fp32 default" \
            "4 8 24 2 8 2 persistent 0.2 bf16 off" "4 8 24 2 8 2 persistent 0.2 bf16 on"; do
    echo "== step_bench $args"
    "$bin" $args
    rc=$?
    [ "$rc" -eq 77 ] && exit 77
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: step_bench $args: exit $rc"
        fail=1
    fi
done
exit "$fail"
