// dropout_kernels.cuh: the body of dropout.cu's kernel (kernels.h describes what it computes,
// dropout.cu launches it), in a header so that tests/emu/test_kernels_emu.cpp runs the very
// same code on the CPU; with its launcher's grid arithmetic.
// defines: dropout_kernel, dropout_blocks, kThreads (all in namespace sk_dropout)
#ifndef SK_DROPOUT_KERNELS_CUH
#define SK_DROPOUT_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#include "device_port.cuh"
#include "shakespeare/hash.h"

namespace sk_dropout {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

// The kernel's grid: blocks of kThreads, grid-stride past kMaxBlocks; n > 0.
inline int dropout_blocks(size_t n) { return (int)sk_capped_blocks(n, kThreads, kMaxBlocks); }

__global__ void dropout_kernel(float *out, const float *in, size_t n, uint64_t first, const uint64_t *key_dev,
                               float p, float scale) {
    const uint64_t key = *key_dev;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float mk = sk_hash_uniform(key, first + (uint64_t)i) >= p ? scale : 0.0f;
        out[i] = in[i] * mk;
    }
}

} // namespace sk_dropout

#endif
