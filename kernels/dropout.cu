// dropout.cu: inverted dropout with hash.h's stateless masks (the header the CPU backend
// uses too), so that the CUDA backend drops exactly the elements the CPU backend drops at
// the same (seed, step, site).
// defines: sk_cuda_dropout
#include "kernels.h"
#include "shakespeare/hash.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

__global__ void dropout_kernel(float *out, const float *in, size_t n, uint64_t first, const uint64_t *key_dev,
                               float p, float scale) {
    const uint64_t key = *key_dev;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float mk = sk_hash_uniform(key, first + (uint64_t)i) >= p ? scale : 0.0f;
        out[i] = in[i] * mk;
    }
}

} // namespace

extern "C" cudaError_t sk_cuda_dropout(float *out, const float *in, size_t n, uint64_t first, const uint64_t *key,
                                       float p, float scale, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    size_t g = (n + kThreads - 1) / kThreads;
    int blocks = g > (size_t)kMaxBlocks ? kMaxBlocks : (int)g;
    dropout_kernel<<<blocks, kThreads, 0, stream>>>(out, in, n, first, key, p, scale);
    return cudaGetLastError();
}
