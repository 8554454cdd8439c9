// step_math.h: the scalar formulas of a training step that the host (optim.c, the trainer)
// and the CUDA backend's device code must compute identically, in one __host__ __device__
// header (like hash.h), so that a clip scale or a non-finite test formed on the GPU is
// bitwise the one the CPU forms. Double arithmetic, IEEE division only (correctly rounded
// on both sides; nothing in the device functions can be contracted into an FMA). The
// optimizers' scalars are formed on the host only; their element updates run on both sides.
// defines: sk_clip_scale_of, sk_mean_loss, sk_optim_kind, SK_OPTIM_MAX_SLOTS, sk_optim_hparams,
//          sk_adamw_args, sk_rmsprop_args, sk_sgd_args, sk_optim_args, sk_adamw_args_of,
//          sk_rmsprop_args_of, sk_sgd_args_of, SK_MUL, SK_ADD, SK_SUB, SK_DIV, SK_SQRT,
//          sk_adam_element, sk_rmsprop_element, sk_sgd_element, sk_optim_element
#ifndef SHAKESPEARE_STEP_MATH_H
#define SHAKESPEARE_STEP_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "shakespeare/hash.h" // SK_HOST_DEVICE

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

// ---- the optimizers (optim.h's table names them; optim.c's loop and optim.cu's kernel run them) ----
// An optimizer is a kind, its hyperparameters (sk_optim_hparams), the scalars of one step formed
// on the host from them (sk_optim_args, by a function per kind below), and an element update
// that both the CPU loop and the CUDA kernel call (sk_optim_element). Its state is n_slots
// tensors in the parameters' canonical layout, slot k of element i at state[k * n + i].

typedef enum {
    SK_OPTIM_ADAM = 0, // Adam with decoupled weight decay (PyTorch's AdamW; Adam when it is 0)
    SK_OPTIM_RMSPROP,  // torch.optim.RMSprop (not centered): char-rnn's default
    SK_OPTIM_SGD,      // torch.optim.SGD (momentum, Nesterov's or not; dampening 0)
    SK_OPTIM_COUNT
} sk_optim_kind;

#define SK_OPTIM_MAX_SLOTS 2

// The optimizers' hyperparameters, each read by the kinds that name it. Doubles, as PyTorch's
// hyperparameters are Python floats: coefficients such as 1 - beta2 are formed in double and
// rounded to float once (1 - 0.999f in float is off by 1.3e-5).
typedef struct {
    sk_optim_kind kind;
    double beta1, beta2; // adam: the moments' decay rates
    double alpha;        // rmsprop: the squared average's decay rate (torch's alpha)
    double momentum;     // rmsprop, sgd: the momentum buffer's factor; 0: none (the buffer stays 0)
    int nesterov;        // sgd: 1: Nesterov's momentum (torch's nesterov=True; needs momentum > 0)
    double eps;          // adam, rmsprop: added to the denominator's square root
    // Applied to 2-D tensors (matrices) only (sk_param_decays): adam decoupled (p *= 1 - lr wd);
    // rmsprop and sgd as torch.optim's, an L2 term added to the gradient (g += wd p).
    double weight_decay;
    double grad_clip;    // clip by global L2 norm when > 0 (before any kind's update)
} sk_optim_hparams;

// Scalars of one Adam step. Each is formed in double from the double hyperparameters and
// rounded to float once, as PyTorch's Adam does on the host: 1.0f - (float)0.999 would be
// off by 1.3e-5 relative, and lr / (float)bc1 by an ulp.
typedef struct {
    float beta1, beta2, eps;
    float one_minus_beta1, one_minus_beta2; // (float)(1.0 - beta): NOT 1.0f - (float)beta
    float step_size;  // (float)(lr / (1 - beta1^t)), the division in double
    float bc2_sqrt;   // (float)sqrt(1 - beta2^t)
    float decay;      // (float)(1 - lr * weight_decay), for matrices (2-D tensors) only
} sk_adamw_args;

// Scalars of one RMSprop step, rounded to float once from the double hyperparameters.
typedef struct {
    float lr, alpha, one_minus_alpha, eps, momentum;
    float weight_decay; // the L2 coefficient, for matrices only
} sk_rmsprop_args;

// Scalars of one SGD step, rounded to float once from the double hyperparameters.
typedef struct {
    float lr, momentum;
    int nesterov;
    float weight_decay; // the L2 coefficient, for matrices only
} sk_sgd_args;

// One optimizer step's scalars: the CPU loop's and, inside sk_cuda_step_args, the kernel's.
typedef struct {
    int kind;         // sk_optim_kind
    float clip_scale; // gradients are multiplied by it first
    union {
        sk_adamw_args adam;
        sk_rmsprop_args rmsprop;
        sk_sgd_args sgd;
    };
} sk_optim_args;

// The host's functions form the scalars (the device's pow is not glibc's, so the GPU is handed
// these values rather than forming them); opt_step is 1-based.
static inline void sk_adamw_args_of(const sk_optim_hparams *h, float lr, int64_t opt_step, sk_optim_args *out) {
    sk_adamw_args *w = &out->adam;
    w->beta1 = (float)h->beta1, w->beta2 = (float)h->beta2, w->eps = (float)h->eps;
    w->one_minus_beta1 = (float)(1.0 - h->beta1), w->one_minus_beta2 = (float)(1.0 - h->beta2);
    w->bc2_sqrt = (float)sqrt(1.0 - pow(h->beta2, (double)opt_step));
    w->step_size = (float)((double)lr / (1.0 - pow(h->beta1, (double)opt_step)));
    w->decay = (float)(1.0 - (double)lr * h->weight_decay);
}

static inline void sk_rmsprop_args_of(const sk_optim_hparams *h, float lr, int64_t opt_step, sk_optim_args *out) {
    (void)opt_step; // RMSprop has no bias correction
    sk_rmsprop_args *r = &out->rmsprop;
    r->lr = lr, r->alpha = (float)h->alpha, r->one_minus_alpha = (float)(1.0 - h->alpha);
    r->eps = (float)h->eps, r->momentum = (float)h->momentum, r->weight_decay = (float)h->weight_decay;
}

static inline void sk_sgd_args_of(const sk_optim_hparams *h, float lr, int64_t opt_step, sk_optim_args *out) {
    (void)opt_step; // SGD has no bias correction
    sk_sgd_args *s = &out->sgd;
    s->lr = lr, s->momentum = (float)h->momentum, s->nesterov = h->nesterov;
    s->weight_decay = (float)h->weight_decay;
}

// Round-to-nearest float operations that no compiler contracts into an FMA: nvcc would fuse
// products and sums in device code, which the CPU build (ISO C, -ffp-contract=off) does not.
#ifdef __CUDA_ARCH__
#define SK_MUL(a, b) __fmul_rn((a), (b))
#define SK_ADD(a, b) __fadd_rn((a), (b))
#define SK_SUB(a, b) __fsub_rn((a), (b))
#define SK_DIV(a, b) __fdiv_rn((a), (b))
#define SK_SQRT(a) __fsqrt_rn(a)
#else
#define SK_MUL(a, b) ((a) * (b))
#define SK_ADD(a, b) ((a) + (b))
#define SK_SUB(a, b) ((a) - (b))
#define SK_DIV(a, b) ((a) / (b))
#define SK_SQRT(a) sqrtf(a)
#endif

// Adam's element update (g already clipped; decays: the element is in a matrix):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p = p (1 - lr wd) - (lr / (1-b1^t)) m / (sqrt(v) / sqrt(1-b2^t) + eps)
static inline SK_HOST_DEVICE void sk_adam_element(const sk_adamw_args *a, float *p, float g, float *m, float *v,
                                                  int decays) {
    const float mi = SK_ADD(SK_MUL(a->beta1, *m), SK_MUL(a->one_minus_beta1, g));
    const float vi = SK_ADD(SK_MUL(a->beta2, *v), SK_MUL(SK_MUL(a->one_minus_beta2, g), g));
    const float denom = SK_ADD(SK_DIV(SK_SQRT(vi), a->bc2_sqrt), a->eps);
    *m = mi, *v = vi;
    *p = SK_SUB(SK_MUL(*p, decays ? a->decay : 1.0f), SK_MUL(a->step_size, SK_DIV(mi, denom)));
}

// RMSprop's element update, torch.optim.RMSprop's order (sq: square_avg, buf: momentum_buffer):
//   g += wd p [matrices];  sq = alpha sq + (1-alpha) g^2;  d = g / (sqrt(sq) + eps)
//   momentum > 0: buf = momentum buf + d, p -= lr buf;  else p -= lr d (buf untouched)
static inline SK_HOST_DEVICE void sk_rmsprop_element(const sk_rmsprop_args *a, float *p, float g, float *sq,
                                                     float *buf, int decays) {
    if (decays && a->weight_decay != 0.0f) g = SK_ADD(g, SK_MUL(a->weight_decay, *p));
    const float s = SK_ADD(SK_MUL(a->alpha, *sq), SK_MUL(SK_MUL(a->one_minus_alpha, g), g));
    const float d = SK_DIV(g, SK_ADD(SK_SQRT(s), a->eps));
    *sq = s;
    if (a->momentum > 0.0f) {
        const float b = SK_ADD(SK_MUL(a->momentum, *buf), d);
        *buf = b;
        *p = SK_SUB(*p, SK_MUL(a->lr, b));
    } else {
        *p = SK_SUB(*p, SK_MUL(a->lr, d));
    }
}

// SGD's element update, torch.optim.SGD's order with dampening 0 (buf: momentum_buffer):
//   g += wd p [matrices];  momentum > 0: buf = momentum buf + g, then d = g + momentum buf
//   (nesterov) or d = buf;  else d = g (buf untouched);  p -= lr d
// torch's first step sets buf = g; the zero buffer that a fresh state holds gives momentum 0 + g
// = g, the same value (only a zero's sign may differ), so no step count is kept.
static inline SK_HOST_DEVICE void sk_sgd_element(const sk_sgd_args *a, float *p, float g, float *buf, int decays) {
    if (decays && a->weight_decay != 0.0f) g = SK_ADD(g, SK_MUL(a->weight_decay, *p));
    float d = g;
    if (a->momentum > 0.0f) {
        const float b = SK_ADD(SK_MUL(a->momentum, *buf), g);
        *buf = b;
        d = a->nesterov ? SK_ADD(g, SK_MUL(a->momentum, b)) : b;
    }
    *p = SK_SUB(*p, SK_MUL(a->lr, d));
}

// Element i of n: the clip, then the kind's update of params[i] and its slots.
static inline SK_HOST_DEVICE void sk_optim_element(const sk_optim_args *a, float *params, const float *grads,
                                                   float *state, size_t n, size_t i, int decays) {
    const float g = SK_MUL(grads[i], a->clip_scale);
    switch (a->kind) {
    case SK_OPTIM_ADAM: sk_adam_element(&a->adam, &params[i], g, &state[i], &state[n + i], decays); break;
    case SK_OPTIM_RMSPROP: sk_rmsprop_element(&a->rmsprop, &params[i], g, &state[i], &state[n + i], decays); break;
    case SK_OPTIM_SGD: sk_sgd_element(&a->sgd, &params[i], g, &state[i], decays); break;
    default: break;
    }
}

#endif
