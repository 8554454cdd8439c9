// optim.h: the optimizers as objects (a kind, its state slots, its hyperparameters), global-norm
// clipping, learning-rate schedules.
// defines: sk_optim_info, sk_optim_of, sk_optim_kind_name, sk_optim_kind_parse, sk_optim_check,
//          sk_param_decays, sk_optim_update, sk_optim_update_range, sk_grad_norm, sk_clip_scale,
//          sk_lr_kind, sk_lr_schedule, sk_lr_at, sk_lr_kind_words, sk_lr_kind_name, sk_lr_kind_parse
//          (and step_math.h's sk_optim_kind, sk_optim_hparams, sk_optim_args)
#ifndef SHAKESPEARE_OPTIM_H
#define SHAKESPEARE_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/model.h"
#include "shakespeare/status.h"
#include "shakespeare/step_math.h" // sk_optim_kind, sk_optim_hparams, sk_optim_args, the element updates
#include "shakespeare/words.h"

// One row per optimizer (optim.c's table): what the CLI, the backends' allocations, the memory
// estimates and the state file ask of it. Its element update is step_math.h's.
typedef struct {
    sk_optim_kind kind;
    const char *name;                            // --optimizer's word and the state file's record
    const char *help;                            // its phrase under --optimizer in --help ('\n': a
                                                 // new line, which must not begin with a flag: help2man
                                                 // would read an option there)
    int n_slots;                                 // state tensors, each in the parameters' layout
    const char *slot_names[SK_OPTIM_MAX_SLOTS];  // in slot order: the state file's names
    float default_lr;                            // the learning rate of a run that names none (the
                                                 // trainer's lr 0), which the options record then holds
    // What the kind requires of h beyond each option's own range (sk_optim_check); NULL: nothing.
    sk_status (*check)(const sk_optim_hparams *h, sk_error *err);
    // The step's scalars (step_math.h), formed on the host for the CPU loop and the GPU kernel.
    void (*args_of)(const sk_optim_hparams *h, float lr, int64_t opt_step, sk_optim_args *out);
} sk_optim_info;

// The row of kind k; NULL for a value outside the enumeration.
const sk_optim_info *sk_optim_of(sk_optim_kind k);
const char *sk_optim_kind_name(sk_optim_kind k); // "?" outside the enumeration
// Parses a name of the table (adam, ...); SK_ERR_ARG naming them all otherwise.
sk_status sk_optim_kind_parse(const char *s, sk_optim_kind *out, sk_error *err);

// The row's check of h (SK_ERR_ARG naming the setting and what to do), SK_OK without one;
// SK_ERR_ARG for a kind outside the table.
sk_status sk_optim_check(const sk_optim_hparams *h, sk_error *err);

// 1 when weight decay applies to tensor t: matrices (2-D tensors), not biases. Both backends
// ask it (the CUDA backend uploads it as a mask).
static inline int sk_param_decays(const sk_tensor_info *t) { return t->ndim == 2; }

// L2 norm of g[0..n), accumulated in double in index order (deterministic).
double sk_grad_norm(const float *g, size_t n);

// One step of h->kind at optimizer step `step` = 1, 2, ... (Adam's bias correction uses it),
// with the gradient multiplied by clip_scale first. state: the kind's n_slots slots,
// (n_slots, layout->total) floats, slot k at state + k * total (Adam: m, v; RMSprop: square_avg,
// momentum_buffer). Each element is step_math.h's sk_optim_element.
void sk_optim_update(float *params, const float *grads, float *state, const sk_param_layout *layout,
                     const sk_optim_hparams *h, float lr, float clip_scale, int64_t step);

// The same update restricted to elements [begin, end) of the buffer (for splitting one
// step over threads; each element's arithmetic is identical).
void sk_optim_update_range(float *params, const float *grads, float *state, const sk_param_layout *layout,
                           const sk_optim_hparams *h, float lr, float clip_scale, int64_t step, size_t begin,
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
    float lr;           // base learning rate; in sk_train_options, 0: the optimizer's default_lr
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
