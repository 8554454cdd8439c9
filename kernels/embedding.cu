// embedding.cu: embedding lookup and its deterministic gradient (kernel bodies:
// embedding_kernels.cuh).
// defines: sk_cuda_embedding_forward, sk_cuda_embedding_backward
#include "embedding_kernels.cuh"
#include "kernels.h"

using namespace sk_embedding;

extern "C" cudaError_t sk_cuda_embedding_forward(float *out, const float *weight, const int32_t *ids, int B,
                                                 int len, int E, cudaStream_t stream) {
    size_t total = (size_t)B * (size_t)len * (size_t)E;
    if (total == 0) return cudaSuccess;
    return sk_launch(embedding_forward_kernel, grid_for(total, kThreads), kThreads, 0, stream, out, weight, ids, total,
                     E);
}

extern "C" cudaError_t sk_cuda_embedding_backward(float *dweight, const float *dout, const int32_t *ids, int B,
                                                  int len, int V, int E, cudaStream_t stream) {
    if (V <= 0 || E <= 0) return cudaSuccess;
    dim3 grid((unsigned)V, (unsigned)bwd_column_blocks(E));
    return sk_launch(embedding_backward_kernel, grid, kBwdThreads, 0, stream, dweight, dout, ids, B, len, E);
}
