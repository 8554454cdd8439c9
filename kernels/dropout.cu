// dropout.cu: inverted dropout with hash.h's stateless masks (the header the CPU backend
// uses too), so that the CUDA backend drops exactly the elements the CPU backend drops at
// the same (seed, step, site); the kernel's body is in dropout_kernels.cuh.
// defines: sk_cuda_dropout, sk_cuda_dropout_seq_major
#include "dropout_kernels.cuh"
#include "kernels.h"

using namespace sk_dropout;

extern "C" cudaError_t sk_cuda_dropout(float *out, const float *in, size_t n, uint64_t first, const uint64_t *key,
                                       float p, float scale, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    return sk_launch(dropout_kernel, dropout_blocks(n), kThreads, 0, stream, out, in, n, first, key, p, scale);
}

extern "C" cudaError_t sk_cuda_dropout_seq_major(float *out, const float *in, int t0, int tc, int B, int len, int H,
                                                 uint64_t first, const uint64_t *key, float p, float scale,
                                                 cudaStream_t stream) {
    const size_t n = (size_t)tc * B * H;
    if (n == 0) return cudaSuccess;
    return sk_launch(dropout_seq_major_kernel, dropout_blocks(n), kThreads, 0, stream, out, in, t0, tc, B, len, H,
                     first, key, p, scale);
}
