// softmax_xent.cu: fc bias + softmax + cross-entropy per row, fused, and the loss sum.
// defines: sk_cuda_softmax_xent, sk_cuda_sum_double
//
// One warp per row: V is a character vocabulary (tens to hundreds of columns), so a warp
// covers a row in a few strides and the reductions are register shuffles. The arithmetic
// mirrors the CPU backend's row_losses / dlogits loops: max in float, the normalizer
// s = sum exp((double)(z - max)) in double, loss = log(s) + max - z_y in double, and
// dlogits = (float)(exp(z - max) / s) * inv_n, minus inv_n at the target.
#include <math.h>

#include "kernels.h"

namespace {

constexpr int kWarpsPerBlock = 4;
constexpr int kSumThreads = 256;
constexpr unsigned kFullMask = 0xffffffffu;

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
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kSumThreads / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = sh[0];
}

} // namespace

extern "C" cudaError_t sk_cuda_softmax_xent(float *logits, const float *bias, const int32_t *targets,
                                            float *row_loss, float *dlogits, float inv_n, int n, int V,
                                            cudaStream_t stream) {
    if (n <= 0 || V <= 0) return cudaSuccess;
    int blocks = (n + kWarpsPerBlock - 1) / kWarpsPerBlock;
    softmax_xent_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(logits, bias, targets, row_loss, dlogits,
                                                                      inv_n, n, V);
    return cudaGetLastError();
}

extern "C" cudaError_t sk_cuda_sum_double(double *out, const float *x, int n, cudaStream_t stream) {
    sum_double_kernel<<<1, kSumThreads, 0, stream>>>(out, x, n);
    return cudaGetLastError();
}
