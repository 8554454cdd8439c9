// optim_kernels.cuh: the bodies of optim.cu's kernels (kernels.h describes what they compute,
// optim.cu launches them), in a header so that tests/emu/test_kernels_emu.cpp runs the very
// same code on the CPU; with the grid arithmetic of their launchers, which both use.
// defines: sumsq_stage1, sumsq_stage2, step_finish_kernel, optim_kernel, sumsq_blocks,
//          optim_blocks, kThreads (all in namespace sk_optim_gpu)
#ifndef SK_OPTIM_KERNELS_CUH
#define SK_OPTIM_KERNELS_CUH

#include <stddef.h>
#include <stdint.h>

#include "block_sum.cuh"
#include "device_port.cuh"
#include "shakespeare/step_math.h"
#include "step_args.h"

namespace sk_optim_gpu {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;
constexpr size_t kPerBlock = 8 * kThreads; // elements per stage-1 block before the grid caps

// Stage 1's grid (G blocks of kThreads): a function of n only, at most SK_CUDA_SUMSQ_PARTIALS.
inline int sumsq_blocks(size_t n) {
    const size_t g = sk_capped_blocks(n, kPerBlock, SK_CUDA_SUMSQ_PARTIALS);
    return g < 1 ? 1 : (int)g;
}

// optim_kernel's grid (blocks of kThreads, grid-stride past kMaxBlocks); n > 0.
inline int optim_blocks(size_t n) { return (int)sk_capped_blocks(n, kThreads, kMaxBlocks); }

// Stage 1: block b sums x[i]^2 (in double) over i = b*256 + tid + k*(G*256), then reduces
// its 256 partial sums by a fixed tree. G depends on n only, so the whole reduction order
// is a function of n: the same gradients always give the same norm, bit for bit.
__global__ void sumsq_stage1(double *partials, const float *x, size_t n) {
    __shared__ double sh[kThreads];
    double acc = 0.0;
    size_t stride = (size_t)gridDim.x * kThreads;
    for (size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += stride) {
        double g = (double)x[i];
        acc += g * g;
    }
    const double sum = sk_block_tree_sum<kThreads>(acc, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// Stage 2: one block adds the G partials in a fixed order.
__global__ void sumsq_stage2(double *out, const double *partials, int G) {
    __shared__ double sh[kThreads];
    double acc = 0.0;
    for (int i = threadIdx.x; i < G; i += kThreads) acc += partials[i];
    const double sum = sk_block_tree_sum<kThreads>(acc, sh);
    if (threadIdx.x == 0) *out = sum;
}

// The host's sequence (trainer.c, backend.c's sk_backend_step) on one thread: the mean loss
// and the norm are tested in that order; sqrt and the division are IEEE correctly rounded
// in double on the device as on the host, so norm and clip scale are the host's bits.
__global__ void step_finish_kernel(sk_cuda_step_stats *s, const sk_cuda_step_args *a) {
    const double norm = sqrt(s->sumsq);
    s->norm = norm;
    const int loss_ok = isfinite(sk_mean_loss(s->loss_sum, a->rows)), norm_ok = isfinite(norm);
    if (s->bad_step == 0 && !(loss_ok && norm_ok)) {
        s->bad_step = a->opt_step;
        s->bad_is_norm = loss_ok;
        s->bad_loss_sum = s->loss_sum, s->bad_norm = norm;
    }
    s->skip = s->bad_step != 0;
    s->clip_scale = s->skip ? 0.0f : sk_clip_scale_of(norm, a->grad_clip);
}

// sk_optim_update's loop body (step_math.h's sk_optim_element, whose operations are explicit
// round-to-nearest intrinsics on the device), for every kind: state holds the kind's slots,
// (n_slots, n), and the clip scale is read from clip_scale (the host's, or the device's).
__global__ void optim_kernel(float *params, const float *grads, float *state, const uint8_t *decay_mask, size_t n,
                             const sk_optim_args *args, const float *clip_scale, const int *skip) {
    if (skip && *skip) return;
    sk_optim_args a = *args;
    a.clip_scale = *clip_scale;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        sk_optim_element(&a, params, grads, state, n, i, decay_mask[i]);
}

} // namespace sk_optim_gpu

#endif
