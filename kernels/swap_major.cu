// swap_major.cu: stream-major <-> sequence-major copies (kernel body: swap_major_kernels.cuh).
// defines: sk_cuda_swap_major
#include "kernels.h"
#include "swap_major_kernels.cuh"

using namespace sk_swap_major;

extern "C" cudaError_t sk_cuda_swap_major(float *out, const float *in, int R, int S, int W, cudaStream_t stream) {
    const size_t n = (size_t)R * S * W;
    if (n == 0) return cudaSuccess;
    return sk_launch(swap_major_kernel, swap_major_blocks(n), kThreads, 0, stream, out, in, R, S, W);
}
