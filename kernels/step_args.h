// step_args.h: the structs the CUDA backend's step kernels read and write (kernels.h
// describes the launchers), in C without CUDA types, so that tests/emu runs the kernels
// on the CPU.
// defines: SK_CUDA_SUMSQ_PARTIALS, SK_CUDA_MAX_SITES, sk_cuda_step_args, sk_cuda_step_stats
#ifndef SK_CUDA_STEP_ARGS_H
#define SK_CUDA_STEP_ARGS_H

#include <stdint.h>

#include "shakespeare/step_math.h" // sk_optim_args (shared with optim.c)

#ifdef __cplusplus
extern "C" {
#endif

// Scratch doubles that sk_cuda_sumsq needs for `partials`.
#define SK_CUDA_SUMSQ_PARTIALS 1024

// Dropout sites of a step: k = 0..L-1 (hash.h); the CUDA backend refuses deeper models.
#define SK_CUDA_MAX_SITES 64

// Everything of one step that depends on the step or the learning rate, filled on the host
// and copied to the device with one cudaMemcpyAsync before the step's kernels (device copy:
// the backend's; kernels read it through pointers).
typedef struct {
    uint64_t dropout_key[SK_CUDA_MAX_SITES]; // site k: sk_dropout_key(seed, step, k)
    uint64_t weight_drop_key[SK_CUDA_MAX_SITES]; // layer k's W_hh (hash.h): site SK_WEIGHT_DROP_SITE + k
    sk_optim_args optim; // this optimizer step's scalars; optim.clip_scale: the host's (eager update)
    double grad_clip;    // sk_optim_hparams.grad_clip, for the clip scale formed on the device
    double rows;        // B * len: the divisor of the mean loss
    int64_t opt_step;   // the optimizer step (1-based), recorded if it is not finite
} sk_cuda_step_args;

// Device-side results of the step, read back only when the host asks (deferred statistics).
typedef struct {
    double loss_sum;  // the deferred step's sum over B*len of -log p(y) (sk_cuda_sum_double)
    double forward_loss_sum; // the same from the eager forward op, read back at once (an
                             // evaluation between deferred steps leaves loss_sum alone)
    double sumsq;     // squared gradient norm (sk_cuda_sumsq writes it)
    double norm;      // sqrt(sumsq), as the host forms it
    float clip_scale; // step_math.h's sk_clip_scale_of(norm, grad_clip)
    int skip;         // 1: the update is skipped (this or an earlier step was not finite)
    int64_t bad_step; // the first optimizer step whose mean loss or norm was not finite; 0: none
    int bad_is_norm;  // that step's loss was finite, its norm was not
    double bad_loss_sum, bad_norm; // that step's values
} sk_cuda_step_stats;

#ifdef __cplusplus
}
#endif

#endif
