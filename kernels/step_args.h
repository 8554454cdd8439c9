// step_args.h: the structs the CUDA backend's step kernels read and write (kernels.h
// describes the launchers), in C without CUDA types, so that tests/emu runs the kernels
// on the CPU.
// defines: SK_CUDA_SUMSQ_PARTIALS, sk_adamw_args, sk_adamw_args_of, SK_CUDA_MAX_SITES,
//          sk_cuda_step_args, sk_cuda_step_stats
#ifndef SK_CUDA_STEP_ARGS_H
#define SK_CUDA_STEP_ARGS_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "shakespeare/optim.h" // sk_adam_hparams (a C header without its own linkage block)

// Scratch doubles that sk_cuda_sumsq needs for `partials`.
#define SK_CUDA_SUMSQ_PARTIALS 1024

// Scalars of one AdamW step, computed on the host exactly as sk_adam_update does: each is
// formed in double from the double hyperparameters and rounded to float once.
typedef struct {
    float beta1, beta2, eps;
    float one_minus_beta1, one_minus_beta2; // (float)(1.0 - beta): NOT 1.0f - (float)beta
    float clip_scale; // gradients are multiplied by it first (the eager update's; see sk_cuda_adamw)
    float step_size;  // (float)(lr / (1 - beta1^t)), the division in double
    float bc2_sqrt;   // (float)sqrt(1 - beta2^t)
    float decay;      // (float)(1 - lr * weight_decay), for elements whose decay_mask is 1
} sk_adamw_args;

// The scalars of optimizer step opt_step (1-based) at lr, as sk_adam_update (optim.c) forms
// them: in double from the double hyperparameters, rounded to float once (1.0f - (float)0.999
// would be off by 1.3e-5 relative, and lr / (float)bc1 by an ulp). Host code.
static inline sk_adamw_args sk_adamw_args_of(const sk_adam_hparams *h, float lr, float clip_scale, int64_t opt_step) {
    sk_adamw_args w;
    w.beta1 = (float)h->beta1, w.beta2 = (float)h->beta2, w.eps = (float)h->eps;
    w.one_minus_beta1 = (float)(1.0 - h->beta1), w.one_minus_beta2 = (float)(1.0 - h->beta2);
    w.clip_scale = clip_scale;
    w.bc2_sqrt = (float)sqrt(1.0 - pow(h->beta2, (double)opt_step));
    w.step_size = (float)((double)lr / (1.0 - pow(h->beta1, (double)opt_step)));
    w.decay = (float)(1.0 - (double)lr * h->weight_decay);
    return w;
}

// Dropout sites of a step: k = 0..L-1 (hash.h); the CUDA backend refuses deeper models.
#define SK_CUDA_MAX_SITES 64

// Everything of one step that depends on the step or the learning rate, filled on the host
// and copied to the device with one cudaMemcpyAsync before the step's kernels (device copy:
// the backend's; kernels read it through pointers).
typedef struct {
    uint64_t dropout_key[SK_CUDA_MAX_SITES]; // site k: sk_dropout_key(seed, step, k)
    uint64_t weight_drop_key[SK_CUDA_MAX_SITES]; // layer k's W_hh (hash.h): site SK_WEIGHT_DROP_SITE + k
    sk_adamw_args adam; // this optimizer step's scalars; adam.clip_scale: the host's (eager update)
    double grad_clip;   // sk_adam_hparams.grad_clip, for the clip scale formed on the device
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
