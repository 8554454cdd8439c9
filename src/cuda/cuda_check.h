// cuda_check.h: error checks of the CUDA backend (private to src/cuda/*.cu).
// defines: CUDA_CHECK, CUBLAS_CHECK, CUDNN_CHECK, SK_TRY, sk_cuda_call_failed
//
// Each macro evaluates a CUDA runtime / cuBLAS / cuDNN call and, when it fails, returns
// SK_ERR_DEVICE from the enclosing function (which must return sk_status) after writing
// "cudnnRNNForward failed: CUDNN_STATUS_BAD_PARAM at cudnn_rnn.cu:123" into the sk_error
// named `err` in scope. The library never aborts or prints: the caller decides.
#ifndef SK_CUDA_CHECK_H
#define SK_CUDA_CHECK_H

#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

extern "C" {
#include "shakespeare/status.h"
}

// "cudnnRNNForward(handle, ...)" -> prints "cudnnRNNForward"; "/a/b/x.cu" -> "x.cu".
// detail (may be NULL or empty) is the library's own explanation, in parentheses.
static inline sk_status sk_cuda_call_failed(sk_error *err, const char *call, const char *what, const char *detail,
                                            const char *file, int line) {
    const char *base = strrchr(file, '/');
    const int has = detail && detail[0];
    return sk_fail(err, SK_ERR_DEVICE, "%.*s failed: %s%s%.200s%s at %s:%d", (int)strcspn(call, "("), call,
                         what, has ? " (" : "", has ? detail : "", has ? ")" : "", base ? base + 1 : file, line);
}

static inline sk_status sk_cudnn_call_failed(sk_error *err, const char *call, cudnnStatus_t s, const char *file,
                                             int line) {
    char detail[256];
    detail[0] = '\0';
    cudnnGetLastErrorString(detail, sizeof detail);
    detail[sizeof detail - 1] = '\0';
    for (char *c = detail; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' '; // sk_error holds one line
    return sk_cuda_call_failed(err, call, cudnnGetErrorString(s), detail, file, line);
}

#define CUDA_CHECK(call)                                                                               \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            (void)cudaGetLastError(); /* reported here: must not resurface at a later launch */       \
            return sk_cuda_call_failed(err, #call, cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, \
                                       __LINE__);                                                      \
        }                                                                                              \
    } while (0)

#define CUBLAS_CHECK(call)                                                                             \
    do {                                                                                               \
        cublasStatus_t s_ = (call);                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                               \
            return sk_cuda_call_failed(err, #call, cublasGetStatusName(s_), NULL, __FILE__, __LINE__); \
    } while (0)

#define CUDNN_CHECK(call)                                                                              \
    do {                                                                                               \
        cudnnStatus_t s_ = (call);                                                                     \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                                \
            return sk_cudnn_call_failed(err, #call, s_, __FILE__, __LINE__);                          \
    } while (0)

// Propagates a failed sk_status (err already filled by the callee).
#define SK_TRY(call)                                                                                   \
    do {                                                                                               \
        sk_status t_ = (call);                                                                         \
        if (t_ != SK_OK) return t_;                                                                    \
    } while (0)

#endif
