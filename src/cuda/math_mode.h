// math_mode.h: what --precision (backend.h's sk_precision) asks of cuBLAS and of cuDNN's RNN
// (private to src/cuda/; one place, so that every handle of the backend agrees).
// defines: sk_cublas_math, sk_cudnn_rnn_math, sk_cudnn_rnn_precision_ok
//
//   fp32: CUBLAS_DEFAULT_MATH, which never uses TF32 for fp32 routines (TF32 needs
//         CUBLAS_TF32_TENSOR_OP_MATH; NVIDIA_TF32_OVERRIDE=0 can only turn it off), and
//         CUDNN_FMA_MATH for the RNN (CUDNN_DEFAULT_MATH would let cuDNN use TF32 tensor
//         cores for fp32 data on Ampere and later GPUs).
//   tf32: CUBLAS_TF32_TENSOR_OP_MATH, and CUDNN_DEFAULT_MATH (TF32 permitted for fp32 data;
//         what PyTorch sets for an RNN when allow_tf32 is on).
//   bf16: the recurrence's bf16 operands are the persistent kernel's (cuDNN's RNN takes one
//         dataType for x, y, the weights and the h and c states, so bf16 data there means a
//         bf16 cell state); the GEMMs around it run as in tf32.
#ifndef SK_MATH_MODE_H
#define SK_MATH_MODE_H

#include <cublas_v2.h>
#include <cudnn.h>

extern "C" {
#include "shakespeare/backend.h"
}

static inline cublasMath_t sk_cublas_math(sk_precision p) {
    return p == SK_PRECISION_FP32 ? CUBLAS_DEFAULT_MATH : CUBLAS_TF32_TENSOR_OP_MATH;
}

static inline cudnnMathType_t sk_cudnn_rnn_math(sk_precision p) {
    return p == SK_PRECISION_FP32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

// Whether cuDNN's RNN computes in precision p as defined in backend.h; else *why says why.
static inline int sk_cudnn_rnn_precision_ok(sk_precision p, const char **why) {
    if (p == SK_PRECISION_FP32 || p == SK_PRECISION_TF32) return 1;
    *why = "cuDNN's RNN takes one data type for its inputs, weights and h and c states, so bf16 operands there "
           "would mean a bf16 cell state and bf16 weights (use --rnn-impl persistent or auto)";
    return 0;
}

#endif
