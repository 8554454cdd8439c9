// step_math.h: the scalar formulas of a training step that the host (optim.c, the trainer)
// and the CUDA backend's device code must compute identically, in one __host__ __device__
// header (like hash.h), so that a clip scale or a non-finite test formed on the GPU is
// bitwise the one the CPU forms. Double arithmetic, IEEE division only (correctly rounded
// on both sides; nothing in the device functions can be contracted into an FMA). AdamW's
// scalars are host-only: the CPU optimizer and the CUDA backend both take them from here.
// defines: sk_adam_hparams, sk_clip_scale_of, sk_mean_loss, sk_adamw_args, sk_adamw_args_of
#ifndef SHAKESPEARE_STEP_MATH_H
#define SHAKESPEARE_STEP_MATH_H

#include <math.h>
#include <stdint.h>

#include "shakespeare/hash.h" // SK_HOST_DEVICE

// AdamW's hyperparameters (optim.h's optimizer and the CUDA backend's both take them). Doubles,
// as PyTorch's hyperparameters are Python floats: coefficients such as 1 - beta2 are formed in
// double and rounded to float once (1 - 0.999f in float is off by 1.3e-5).
typedef struct {
    double beta1, beta2, eps;
    double weight_decay; // decoupled (AdamW); applied to 2-D tensors (matrices) only
    double grad_clip;    // clip by global L2 norm when > 0
} sk_adam_hparams;

// The clip multiplier for a gradient of global norm `norm`: min(1, clip / (norm + 1e-6)),
// or 1 when clip <= 0 (optim.h's sk_clip_scale).
static inline SK_HOST_DEVICE float sk_clip_scale_of(double norm, double clip) {
    if (clip <= 0.0) return 1.0f;
    double scale = clip / (norm + 1e-6);
    return scale < 1.0 ? (float)scale : 1.0f;
}

// The training loss the trainer reports and checks: the mean over `rows` (B*len) of a
// loss sum, rounded to float once.
static inline SK_HOST_DEVICE float sk_mean_loss(double loss_sum, double rows) {
    return (float)(loss_sum / rows);
}

// Scalars of one AdamW step. Each is formed in double from the double hyperparameters and
// rounded to float once, as PyTorch's Adam does on the host: 1.0f - (float)0.999 would be
// off by 1.3e-5 relative, and lr / (float)bc1 by an ulp.
typedef struct {
    float beta1, beta2, eps;
    float one_minus_beta1, one_minus_beta2; // (float)(1.0 - beta): NOT 1.0f - (float)beta
    float clip_scale; // gradients are multiplied by it first
    float step_size;  // (float)(lr / (1 - beta1^t)), the division in double
    float bc2_sqrt;   // (float)sqrt(1 - beta2^t)
    float decay;      // (float)(1 - lr * weight_decay), for matrices (2-D tensors) only
} sk_adamw_args;

// The scalars of optimizer step opt_step (1-based) at lr, for sk_adam_update (optim.c) and
// the CUDA backend's AdamW kernel (which receives them in sk_cuda_step_args). Host code:
// the device's pow is not glibc's, so the GPU is handed these values rather than forming them.
static inline sk_adamw_args sk_adamw_args_of(const sk_adam_hparams *h, float lr, float clip_scale,
                                             int64_t opt_step) {
    sk_adamw_args w;
    w.beta1 = (float)h->beta1, w.beta2 = (float)h->beta2, w.eps = (float)h->eps;
    w.one_minus_beta1 = (float)(1.0 - h->beta1), w.one_minus_beta2 = (float)(1.0 - h->beta2);
    w.clip_scale = clip_scale;
    w.bc2_sqrt = (float)sqrt(1.0 - pow(h->beta2, (double)opt_step));
    w.step_size = (float)((double)lr / (1.0 - pow(h->beta1, (double)opt_step)));
    w.decay = (float)(1.0 - (double)lr * h->weight_decay);
    return w;
}

#endif
