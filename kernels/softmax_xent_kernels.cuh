// softmax_xent_kernels.cuh: the bodies of softmax_xent.cu's kernels (softmax_xent.cu says how
// they compute, kernels.h what), in a header so that tests/emu/test_kernels_emu.cpp runs the
// very same code on the CPU; with the grid arithmetic of their launcher, which both use.
// defines: softmax_xent_kernel, sum_double_kernel, xent_blocks, kWarpsPerBlock, kSumThreads
//          (all in namespace sk_xent)
#ifndef SK_SOFTMAX_XENT_KERNELS_CUH
#define SK_SOFTMAX_XENT_KERNELS_CUH

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "block_sum.cuh"
#include "device_port.cuh"

namespace sk_xent {

constexpr int kWarpsPerBlock = 4;
constexpr int kSumThreads = 256;
constexpr unsigned kFullMask = 0xffffffffu;

// softmax_xent_kernel's grid: one warp per row, kWarpsPerBlock rows per block; n > 0.
inline int xent_blocks(int n) { return (n + kWarpsPerBlock - 1) / kWarpsPerBlock; }

__device__ float warp_max(float x) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(kFullMask, x, o));
    return x;
}

// Butterfly sum: every lane ends with the same, bitwise identical value (addition is
// commutative and each level pairs the same partial sums on both sides).
__device__ double warp_sum(double x) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(kFullMask, x, o);
    return x;
}

__global__ void softmax_xent_kernel(float *logits, const float *bias, const int32_t *targets, float *row_loss,
                                    float *dlogits, float inv_n, int n, int V) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
    if (row >= n) return; // uniform per warp: all 32 lanes share the row
    float *z = logits + (size_t)row * V;
    float mx = -INFINITY;
    for (int j = lane; j < V; j += 32) {
        float zj = z[j] + bias[j];
        z[j] = zj;
        mx = fmaxf(mx, zj);
    }
    if (!targets) return;
    __syncwarp(); // z[] written by other lanes is read below (z[y])
    mx = warp_max(mx);
    double s = 0.0;
    for (int j = lane; j < V; j += 32) s += exp((double)(z[j] - mx));
    s = warp_sum(s);
    const int y = targets[row];
    if (lane == 0 && row_loss) row_loss[row] = (float)(log(s) + (double)mx - (double)z[y]);
    if (dlogits) {
        float *d = dlogits + (size_t)row * V;
        for (int j = lane; j < V; j += 32) {
            // __fmul_rn / __fsub_rn: no FMA contraction, the CPU's rounding exactly.
            float pj = __fmul_rn((float)(exp((double)(z[j] - mx)) / s), inv_n);
            d[j] = j == y ? __fsub_rn(pj, inv_n) : pj;
        }
    }
}

__global__ void sum_double_kernel(double *out, const float *x, int n) {
    __shared__ double sh[kSumThreads];
    double acc = 0.0;
    for (int i = threadIdx.x; i < n; i += kSumThreads) acc += (double)x[i];
    const double sum = sk_block_tree_sum<kSumThreads>(acc, sh);
    if (threadIdx.x == 0) *out = sum;
}

} // namespace sk_xent

#endif
