// optim.cu: global gradient norm (deterministic), the step's finish on the device (norm,
// non-finite test, clip scale) and the fused clip + optimizer step (every kind's); the kernels' bodies are in
// optim_kernels.cuh.
// defines: sk_cuda_sumsq, sk_cuda_step_finish, sk_cuda_optim_update
#include "optim_kernels.cuh"
#include "kernels.h"

using namespace sk_optim_gpu;

extern "C" cudaError_t sk_cuda_sumsq(double *out, double *partials, const float *x, size_t n,
                                     cudaStream_t stream) {
    const int G = sumsq_blocks(n);
    cudaError_t e = sk_launch(sumsq_stage1, G, kThreads, 0, stream, partials, x, n);
    if (e != cudaSuccess) return e;
    return sk_launch(sumsq_stage2, 1, kThreads, 0, stream, out, partials, G);
}

extern "C" cudaError_t sk_cuda_step_finish(sk_cuda_step_stats *s, const sk_cuda_step_args *a, cudaStream_t stream) {
    return sk_launch(step_finish_kernel, 1, 1, 0, stream, s, a);
}

extern "C" cudaError_t sk_cuda_optim_update(float *params, const float *grads, float *state,
                                            const uint8_t *decay_mask, size_t n, const sk_optim_args *a,
                                            const float *clip_scale, const int *skip, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    return sk_launch(optim_kernel, optim_blocks(n), kThreads, 0, stream, params, grads, state, decay_mask, n, a,
                     clip_scale, skip);
}
