// swap_major_kernels.cuh: the body of swap_major.cu's kernel (kernels.h describes what it
// computes), in a header so that tests/emu/test_kernels_emu.cpp runs the very same code.
// defines: swap_major_kernel, swap_major_blocks, kThreads (all in namespace sk_swap_major)
#ifndef SK_SWAP_MAJOR_KERNELS_CUH
#define SK_SWAP_MAJOR_KERNELS_CUH

#include <stddef.h>

#include "device_port.cuh"

namespace sk_swap_major {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

inline int swap_major_blocks(size_t n) { return (int)sk_capped_blocks(n, kThreads, kMaxBlocks); }

// One thread per output element, in output order: writes are coalesced, and reads are
// coalesced within each row of W (the vector width, 128 or more in practice).
__global__ void swap_major_kernel(float *out, const float *in, int R, int S, int W) {
    const size_t n = (size_t)R * S * W, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const size_t row = i / (size_t)W, w = i % (size_t)W; // row = s*R + r of out
        const size_t s = row / (size_t)R, r = row % (size_t)R;
        out[i] = in[(r * (size_t)S + s) * (size_t)W + w];
    }
}

} // namespace sk_swap_major

#endif
