// embedding.cu: embedding lookup and its deterministic gradient.
// defines: sk_cuda_embedding_forward, sk_cuda_embedding_backward
#include "kernels.h"

namespace {

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

int grid_for(size_t n, int threads) {
    size_t g = (n + (size_t)threads - 1) / (size_t)threads;
    if (g < 1) g = 1;
    return g > (size_t)kMaxBlocks ? kMaxBlocks : (int)g;
}

} // namespace

extern "C" cudaError_t sk_cuda_embedding_forward(float *out, const float *weight, const int32_t *ids, int B,
                                                 int len, int E, cudaStream_t stream) {
    size_t total = (size_t)B * (size_t)len * (size_t)E;
    if (total == 0) return cudaSuccess;
    embedding_forward_kernel<<<grid_for(total, kThreads), kThreads, 0, stream>>>(out, weight, ids, total, E);
    return cudaGetLastError();
}

extern "C" cudaError_t sk_cuda_embedding_backward(float *dweight, const float *dout, const int32_t *ids, int B,
                                                  int len, int V, int E, cudaStream_t stream) {
    if (V <= 0 || E <= 0) return cudaSuccess;
    dim3 grid((unsigned)V, (unsigned)((E + kBwdThreads - 1) / kBwdThreads));
    embedding_backward_kernel<<<grid, kBwdThreads, 0, stream>>>(dweight, dout, ids, B, len, E);
    return cudaGetLastError();
}
