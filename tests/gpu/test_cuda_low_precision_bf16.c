// test_cuda_low_precision_bf16.c: --precision bf16 (bf16 LSTM operands, fp32 accumulation
// and cell state) against strict fp32 on the GPU, 200 training steps each (60 on the emulated
// device; rnn_pair.h's pair_low_precision, which states the checks and their tolerances): the
// persistent kernel with its inner products on CUDA cores and on tensor cores (sk_tensor_cores: the same
// operand rounding, so the same tolerances), and --rnn-impl auto, which takes the
// persistent kernel for bf16. tf32: test_cuda_low_precision_tf32.c.
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
    static const pair_case cases[] = {{SK_RNN_PERSISTENT, SK_PRECISION_BF16, SK_TENSOR_CORES_OFF},
                                      {SK_RNN_PERSISTENT, SK_PRECISION_BF16, SK_TENSOR_CORES_ON},
                                      {SK_RNN_AUTO, SK_PRECISION_BF16, SK_TENSOR_CORES_DEFAULT}};
    pair_low_precision(cases, sizeof cases / sizeof cases[0]);
    return sk_test_done("test_cuda_low_precision_bf16");
}
