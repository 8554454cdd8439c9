// kernels.h: host-callable launchers of the CUDA backend's kernels, one family per .cu file.
// defines: sk_cuda_embedding_forward, sk_cuda_embedding_backward        (embedding.cu)
//          sk_cuda_softmax_xent, sk_cuda_sum_double                     (softmax_xent.cu)
//          sk_cuda_dropout, sk_cuda_dropout_seq_major                   (dropout.cu)
//          sk_cuda_swap_major                                           (swap_major.cu)
//          sk_cuda_sumsq, sk_cuda_step_finish, sk_cuda_optim_update        (optim.cu)
//          (their argument structs: step_args.h)
//
// Every launcher enqueues its work on `stream` and returns cudaGetLastError() of the launch
// (cudaSuccess when there was nothing to do). Device pointers only. Values that change from
// step to step (dropout keys, the optimizer's scalars, the clip scale) are read from device memory
// (sk_cuda_step_args, sk_cuda_step_stats) when the kernel runs, never passed by value, so
// that one captured CUDA graph replays every step. Rows of (B, len, .)
// tensors are stream-major: row p = b*len + t, the layout of the backend interface.
// No float atomics anywhere: every reduction has a fixed order, so results are bitwise
// reproducible run to run.
#ifndef SK_CUDA_KERNELS_H
#define SK_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "step_args.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- embedding.cu -------------------------------------------------------------------------
// out (B*len, E) = weight (V, E) rows ids[p]; ids (B*len) must lie in [0, V) (the backend
// checks them on the host before they reach the device).
cudaError_t sk_cuda_embedding_forward(float *out, const float *weight, const int32_t *ids, int B, int len, int E,
                                      cudaStream_t stream);
// dweight (V, E) = sum over positions with ids[p] == v of dout[p] (overwrites). Positions
// are summed in time-major order (t outer, b inner), the order of the CPU backend.
cudaError_t sk_cuda_embedding_backward(float *dweight, const float *dout, const int32_t *ids, int B, int len,
                                       int V, int E, cudaStream_t stream);

// ---- softmax_xent.cu ----------------------------------------------------------------------
// Per row r < n of logits (n, V): logits[r] += bias (in place, so the buffer then holds
// the final logits). With targets (n) non-NULL also row_loss[r] = -log softmax(logits[r])[y_r],
// and with dlogits non-NULL dlogits[r] = (softmax(logits[r]) - onehot(y_r)) * inv_n.
// The softmax normalizer is accumulated in double, as in the CPU backend.
cudaError_t sk_cuda_softmax_xent(float *logits, const float *bias, const int32_t *targets, float *row_loss,
                                 float *dlogits, float inv_n, int n, int V, cudaStream_t stream);
// *out = sum of x[0..n) in double (one block, fixed order).
cudaError_t sk_cuda_sum_double(double *out, const float *x, int n, cudaStream_t stream);

// ---- dropout.cu ---------------------------------------------------------------------------
// out[i] = in[i] * (sk_hash_uniform(*key, first + i) >= p ? scale : 0) for i < n (rng.h's
// masks; key: device pointer to the site's key, read when the kernel runs; first: the mask
// index of out[0], nonzero for a data-parallel rank's streams; in == out is allowed). The
// same call is the backward pass, applied to the gradient.
cudaError_t sk_cuda_dropout(float *out, const float *in, size_t n, uint64_t first, const uint64_t *key, float p,
                            float scale, cudaStream_t stream);
// The same masks on steps [t0, t0 + tc) of a sequence-major window: out, in (tc, B, H) are
// rows t0*B.. of a (len, B, H) tensor, and each element gets the mask of its element
// (b, t, j) in the stream-major (B, len, H) layout, so both layouts drop the same elements.
cudaError_t sk_cuda_dropout_seq_major(float *out, const float *in, int t0, int tc, int B, int len, int H,
                                      uint64_t first, const uint64_t *key, float p, float scale, cudaStream_t stream);

// ---- swap_major.cu ------------------------------------------------------------------------
// out (S, R, W) = in (R, S, W) with its first two axes swapped: stream-major (B, len, W) to
// sequence-major (len, B, W) with R = B, S = len, and back with R = len, S = B. out != in.
cudaError_t sk_cuda_swap_major(float *out, const float *in, int R, int S, int W, cudaStream_t stream);

// ---- optim.cu ------------------------------------------------------------------------------
// (SK_CUDA_SUMSQ_PARTIALS, sk_optim_args, sk_cuda_step_args, sk_cuda_step_stats: step_args.h)
// *out = sum of x[i]^2 over i < n, in double, by a fixed two-stage reduction.
cudaError_t sk_cuda_sumsq(double *out, double *partials, const float *x, size_t n, cudaStream_t stream);

// One thread: norm, the non-finite test (mean loss, then norm), the first bad step (sticky
// until the host clears bad_step), skip, and the clip scale, all from s and a.
cudaError_t sk_cuda_step_finish(sk_cuda_step_stats *s, const sk_cuda_step_args *a, cudaStream_t stream);

// One optimizer step of a->kind over n elements: step_math.h's sk_optim_element, in the same
// float operations and order as sk_optim_update (no FMA contraction), so the result is bitwise
// the CPU's. state: the kind's slots, (n_slots, n). decay_mask (n): 1 for elements of 2-D tensors
// (weight decay applies), else 0. a, clip_scale and skip are device pointers read when the
// kernel runs (clip_scale replaces a->clip_scale); skip may be NULL (never skip), else
// *skip != 0 leaves params and state untouched.
cudaError_t sk_cuda_optim_update(float *params, const float *grads, float *state, const uint8_t *decay_mask,
                                 size_t n, const sk_optim_args *a, const float *clip_scale, const int *skip,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
