// dropout_kernels.cuh: the body of dropout.cu's kernel (kernels.h describes what it computes,
// dropout.cu launches it), in a header so that tests/emu/test_kernels_emu.cpp runs the very
// same code on the CPU; with its launcher's grid arithmetic.
// defines: dropout_kernel, dropout_seq_major_kernel, dropout_blocks, kThreads (all in namespace sk_dropout)
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

// The same masks on a time slice of a sequence-major tensor: out and in are (tc, B, H),
// row (t - t0)*B + b of the window's (len, B, H); element j there has the mask index of
// element (b, t, j) of the stream-major (B, len, H), first + (b*len + t)*H + j.
__global__ void dropout_seq_major_kernel(float *out, const float *in, int t0, int tc, int B, int len, int H,
                                         uint64_t first, const uint64_t *key_dev, float p, float scale) {
    const uint64_t key = *key_dev;
    const size_t n = (size_t)tc * B * H, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const size_t row = i / (size_t)H, j = i % (size_t)H;
        const uint64_t b = row % (size_t)B, t = (uint64_t)t0 + row / (size_t)B;
        float mk = sk_hash_uniform(key, first + (b * (uint64_t)len + t) * (uint64_t)H + j) >= p ? scale : 0.0f;
        out[i] = in[i] * mk;
    }
}

} // namespace sk_dropout

#endif
