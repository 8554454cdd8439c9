#!/usr/bin/env bash
# test_plstm_dots.sh (label gpu): the persistent LSTM kernel's inner products alone on the
# device (bench/kernels/plstm_dots_check.cu): block_dots in fp32 and bf16, mma_dots on tensor
# cores in bf16 (m16n8k16) and TF32 (m16n8k8), called as the forward and backward kernels
# call them at this device's plans, must equal the plain product exactly (integer operands),
# write nothing outside their results and let no padding row leak. Skipped (77) without a
# device or in a build without CUDA.
bin="$SK_BUILD_DIR/plstm_dots_check"
if [ ! -x "$bin" ]; then
    echo "skipped: no $bin (a build without CUDA)"
    exit 77
fi
exec "$bin" 400
