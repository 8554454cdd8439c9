// optim.h: Adam with decoupled weight decay, global-norm clipping, learning-rate schedules.
// defines: sk_adam_update, sk_adam_update_range, sk_grad_norm, sk_clip_scale,
//          sk_lr_kind, sk_lr_schedule, sk_lr_at, sk_lr_kind_words, sk_lr_kind_name, sk_lr_kind_parse
#ifndef SHAKESPEARE_OPTIM_H
#define SHAKESPEARE_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/model.h"
#include "shakespeare/status.h"
#include "shakespeare/step_math.h" // sk_adam_hparams
#include "shakespeare/words.h"

// L2 norm of g[0..n), accumulated in double in index order (deterministic).
double sk_grad_norm(const float *g, size_t n);

// One Adam step, step = 1, 2, ... (bias correction uses it). If clip_scale != 1 the
// gradient is multiplied by it first. m, v: moments in the parameter layout.
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   p -= lr * (wd * p  [matrices only])  +  lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
// (PyTorch's AdamW: p *= 1 - lr*wd, then the Adam update.)
void sk_adam_update(float *params, const float *grads, float *m, float *v, const sk_param_layout *layout,
                    const sk_adam_hparams *h, float lr, float clip_scale, int64_t step);

// The same update restricted to elements [begin, end) of the buffer (for splitting one
// step over threads; each element's arithmetic is identical).
void sk_adam_update_range(float *params, const float *grads, float *m, float *v, const sk_param_layout *layout,
                          const sk_adam_hparams *h, float lr, float clip_scale, int64_t step, size_t begin,
                          size_t end);

// The clip multiplier for a gradient of global norm `norm`: min(1, clip / (norm + 1e-6)),
// or 1 when clip <= 0.
float sk_clip_scale(double norm, double clip);

typedef enum {
    SK_LR_CONSTANT,
    SK_LR_STEP_DECAY, // char-rnn: lr * decay^(epochs completed past decay_after), per epoch
    SK_LR_COSINE,     // linear warm-up over warmup_iters, then cosine from lr to min_lr at max_iters
} sk_lr_kind;

typedef struct {
    sk_lr_kind kind;
    float lr;           // base learning rate
    float min_lr;       // cosine floor
    int64_t warmup_iters;
    int64_t max_iters;  // cosine horizon
    float decay;        // step decay factor per epoch (char-rnn: 0.97)
    int decay_after;    // epochs before decay starts (char-rnn: 10)
} sk_lr_schedule;

// Learning rate for optimizer step `iter` (0-based) taken during epoch `epoch` (0-based).
// Warm-up (any kind, when warmup_iters > 0): lr * (iter + 1) / warmup_iters.
float sk_lr_at(const sk_lr_schedule *s, int64_t iter, int64_t epoch);

// The schedules' words (words.h): constant, step, cosine.
extern const sk_words sk_lr_kind_words;
const char *sk_lr_kind_name(sk_lr_kind k);
// Parses "constant", "step", "cosine"; SK_ERR_ARG otherwise.
sk_status sk_lr_kind_parse(const char *s, sk_lr_kind *out, sk_error *err);

#endif
