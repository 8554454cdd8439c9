// dropout.cu: inverted dropout with rng.h's stateless masks, so that the CUDA backend
// drops exactly the elements the CPU backend drops at the same (seed, step, site).
// defines: sk_cuda_dropout
#include "kernels.h"

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

// Bit-for-bit copies of rng.h's sk_mix64 and sk_hash_uniform (host-only there).
__device__ __forceinline__ uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

__device__ __forceinline__ float hash_uniform(uint64_t key, uint64_t index) {
    // (x >> 40) < 2^24 converts exactly and the product by 2^-24 is exact.
    return (float)(mix64(key ^ mix64(index)) >> 40) * (1.0f / 16777216.0f);
}

__global__ void dropout_kernel(float *out, const float *in, size_t n, uint64_t key, float p, float scale) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float mk = hash_uniform(key, (uint64_t)i) >= p ? scale : 0.0f;
        out[i] = in[i] * mk;
    }
}

} // namespace

extern "C" cudaError_t sk_cuda_dropout(float *out, const float *in, size_t n, uint64_t key, float p, float scale,
                                       cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    size_t g = (n + kThreads - 1) / kThreads;
    int blocks = g > (size_t)kMaxBlocks ? kMaxBlocks : (int)g;
    dropout_kernel<<<blocks, kThreads, 0, stream>>>(out, in, n, key, p, scale);
    return cudaGetLastError();
}
