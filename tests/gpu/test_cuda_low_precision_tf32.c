// test_cuda_low_precision_tf32.c: --precision tf32 against strict fp32 on the GPU, 200
// training steps each (60 on the emulated device; rnn_pair.h's pair_low_precision, which
// states the checks and their tolerances): cuDNN with TF32 tensor cores, and the persistent kernel with its inner
// products on CUDA cores and on tensor cores (sk_tensor_cores: the same operand rounding,
// so the same tolerances). bf16: test_cuda_low_precision_bf16.c.
// Exits 77 (skipped) without a usable GPU.
#include <stdio.h>

#include "shakespeare/backend.h"
#include "rnn_pair.h"
#include "test_util.h"

int main(void) {
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    static const pair_case cases[] = {{SK_RNN_CUDNN, SK_PRECISION_TF32, SK_TENSOR_CORES_DEFAULT},
                                      {SK_RNN_PERSISTENT, SK_PRECISION_TF32, SK_TENSOR_CORES_OFF},
                                      {SK_RNN_PERSISTENT, SK_PRECISION_TF32, SK_TENSOR_CORES_ON}};
    pair_low_precision(cases, sizeof cases / sizeof cases[0]);
    return sk_test_done("test_cuda_low_precision_tf32");
}
