// embedding_kernels.cuh: the bodies of embedding.cu's kernels (kernels.h describes what they
// compute, embedding.cu launches them), in a header so that tests/emu/test_kernels_emu.cpp
// runs the very same code on the CPU; with the grid arithmetic of their launchers.
// defines: embedding_forward_kernel, embedding_backward_kernel, grid_for, bwd_column_blocks,
//          kThreads, kBwdThreads, kIdChunk (all in namespace sk_embedding)
#ifndef SK_EMBEDDING_KERNELS_CUH
#define SK_EMBEDDING_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#include "device_port.cuh"

namespace sk_embedding {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr int kIdChunk = 1024; // ids staged in shared memory per pass
constexpr int kBwdThreads = 128;

// out (N, E) = weight[ids[p]]: one thread per output element (grid-stride).
__global__ void embedding_forward_kernel(float *out, const float *weight, const int32_t *ids, size_t total,
                                         int E) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t p = i / (size_t)E, e = i % (size_t)E;
        out[i] = weight[(size_t)ids[p] * E + e];
    }
}

// Block (v, chunk of E): every thread owns one column e of row v of dweight and walks all
// positions in time-major order r = t*B + b (position p = b*len + t), adding dout[p][e]
// where ids[p] == v. Ids are staged through shared memory, kIdChunk rows at a time.
// Work is O(V * N * E / threads); V is a character vocabulary (tens to hundreds).
__global__ void embedding_backward_kernel(float *dweight, const float *dout, const int32_t *ids, int B, int len,
                                          int E) {
    __shared__ int32_t sid[kIdChunk];
    const int v = blockIdx.x;
    const int e = blockIdx.y * blockDim.x + threadIdx.x;
    const int n = B * len;
    float acc = 0.0f;
    for (int r0 = 0; r0 < n; r0 += kIdChunk) {
        const int cnt = n - r0 < kIdChunk ? n - r0 : kIdChunk;
        __syncthreads(); // the previous chunk is fully consumed
        for (int k = threadIdx.x; k < cnt; k += blockDim.x) {
            int r = r0 + k, t = r / B, b = r % B;
            sid[k] = ids[(size_t)b * len + t];
        }
        __syncthreads();
        if (e < E) {
            for (int k = 0; k < cnt; k++) {
                if (sid[k] == v) {
                    int r = r0 + k, t = r / B, b = r % B;
                    acc += dout[((size_t)b * len + t) * E + e];
                }
            }
        }
    }
    if (e < E) dweight[(size_t)v * E + e] = acc;
}

// The forward's grid: blocks of `threads`, grid-stride past kMaxBlocks.
inline int grid_for(size_t n, int threads) {
    const size_t g = sk_capped_blocks(n, (size_t)threads, kMaxBlocks);
    return g < 1 ? 1 : (int)g;
}

// The backward's grid: (V, E in chunks of kBwdThreads) blocks of kBwdThreads.
inline int bwd_column_blocks(int E) { return (E + kBwdThreads - 1) / kBwdThreads; }

} // namespace sk_embedding

#endif
