// softmax_xent.cu: fc bias + softmax + cross-entropy per row, fused, and the loss sum.
// defines: sk_cuda_softmax_xent, sk_cuda_sum_double (kernel bodies: softmax_xent_kernels.cuh)
//
// One warp per row: V is a character vocabulary (tens to hundreds of columns), so a warp
// covers a row in a few strides and the reductions are register shuffles. The arithmetic
// mirrors the CPU backend's row_losses / dlogits loops: max in float, the normalizer
// s = sum exp((double)(z - max)) in double, loss = log(s) + max - z_y in double, and
// dlogits = (float)(exp(z - max) / s) * inv_n, minus inv_n at the target.
#include "kernels.h"
#include "softmax_xent_kernels.cuh"

using namespace sk_xent;

extern "C" cudaError_t sk_cuda_softmax_xent(float *logits, const float *bias, const int32_t *targets,
                                            float *row_loss, float *dlogits, float inv_n, int n, int V,
                                            cudaStream_t stream) {
    if (n <= 0 || V <= 0) return cudaSuccess;
    return sk_launch(softmax_xent_kernel, xent_blocks(n), kWarpsPerBlock * 32, 0, stream, logits, bias, targets,
                     row_loss, dlogits, inv_n, n, V);
}

extern "C" cudaError_t sk_cuda_sum_double(double *out, const float *x, int n, cudaStream_t stream) {
    return sk_launch(sum_double_kernel, 1, kSumThreads, 0, stream, out, x, n);
}
