// optim.c: the optimizers' table, their update over the single parameter buffer, global-norm
// clipping, LR schedules.
#include "shakespeare/optim.h"
#include "shakespeare/step_math.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// torch.optim.SGD's rule: Nesterov's momentum needs a momentum (dampening is always 0 here).
static sk_status sgd_check(const sk_optim_hparams *h, sk_error *err) {
    if (h->nesterov && h->momentum <= 0.0)
        return sk_fail(err, SK_ERR_ARG, "nesterov needs --momentum above 0 (torch.optim.SGD's rule), got %g",
                       h->momentum);
    return SK_OK;
}

// A new optimizer is one row here, and in step_math.h its kind, its element function and args
// function (and its case in sk_optim_element), plus its tests.
static const sk_optim_info optimizers[SK_OPTIM_COUNT] = {
    [SK_OPTIM_ADAM] = {.kind = SK_OPTIM_ADAM, .name = "adam", .n_slots = 2, .slot_names = {"m", "v"},
                       .default_lr = 2e-3f, .help = "AdamW (torch.optim.AdamW: --beta1, --beta2, --eps\n"
                                   "and --weight-decay)",
                       .args_of = sk_adamw_args_of},
    [SK_OPTIM_RMSPROP] = {.kind = SK_OPTIM_RMSPROP, .name = "rmsprop", .n_slots = 2,
                          .slot_names = {"square_avg", "momentum_buffer"}, .default_lr = 2e-3f, // char-rnn's
                          .help = "char-rnn's (torch.optim.RMSprop: --alpha, --momentum, --eps\n"
                                  "and --weight-decay)",
                          .args_of = sk_rmsprop_args_of},
    // lr 1: docs/model.md (300 steps: with momentum 0.9 near Adam's default run, and 5x below a
    // rate that falls far behind; plain SGD trains at it, and diverges at 10)
    [SK_OPTIM_SGD] = {.kind = SK_OPTIM_SGD, .name = "sgd", .n_slots = 1, .slot_names = {"momentum_buffer"},
                      .default_lr = 1.0f, .check = sgd_check,
                      .help = "torch.optim.SGD (--momentum, --nesterov, --weight-decay)", .args_of = sk_sgd_args_of},
};

const sk_optim_info *sk_optim_of(sk_optim_kind k) {
    return (int)k >= 0 && k < SK_OPTIM_COUNT ? &optimizers[k] : NULL;
}

const char *sk_optim_kind_name(sk_optim_kind k) {
    const sk_optim_info *o = sk_optim_of(k);
    return o ? o->name : "?";
}

sk_status sk_optim_kind_parse(const char *s, sk_optim_kind *out, sk_error *err) {
    char names[128] = "";
    for (int k = 0; k < SK_OPTIM_COUNT; k++) {
        if (strcmp(s, optimizers[k].name) == 0) {
            *out = (sk_optim_kind)k;
            return SK_OK;
        }
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", k ? (k + 1 < SK_OPTIM_COUNT ? ", " : " or ") : "",
                 optimizers[k].name);
    }
    return sk_fail(err, SK_ERR_ARG, "optimizer expects %s, got \"%s\"", names, s);
}

sk_status sk_optim_check(const sk_optim_hparams *h, sk_error *err) {
    const sk_optim_info *o = sk_optim_of(h->kind);
    if (!o) return sk_fail(err, SK_ERR_ARG, "optimizer %d is not one of optim.h's table", (int)h->kind);
    return o->check ? o->check(h, err) : SK_OK;
}

double sk_grad_norm(const float *g, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

float sk_clip_scale(double norm, double clip) { return sk_clip_scale_of(norm, clip); } // step_math.h

void sk_optim_update(float *params, const float *grads, float *state, const sk_param_layout *layout,
                     const sk_optim_hparams *h, float lr, float clip_scale, int64_t step) {
    sk_optim_update_range(params, grads, state, layout, h, lr, clip_scale, step, 0, layout->total);
}

void sk_optim_update_range(float *params, const float *grads, float *state, const sk_param_layout *layout,
                           const sk_optim_hparams *h, float lr, float clip_scale, int64_t step, size_t begin,
                           size_t end) {
    const sk_optim_info *info = sk_optim_of(h->kind);
    if (!info) return;
    sk_optim_args a = {.kind = h->kind, .clip_scale = clip_scale}; // as the GPU gets them (fill_args)
    info->args_of(h, lr, step, &a);
    for (int ti = 0; ti < layout->n_tensors; ti++) {
        const sk_tensor_info *t = &layout->tensors[ti];
        size_t lo = t->offset > begin ? t->offset : begin, hi = t->offset + t->numel < end ? t->offset + t->numel : end;
        const int decays = sk_param_decays(t);
        for (size_t i = lo; i < hi; i++) sk_optim_element(&a, params, grads, state, layout->total, i, decays);
    }
}

float sk_lr_at(const sk_lr_schedule *s, int64_t iter, int64_t epoch) {
    if (s->warmup_iters > 0 && iter < s->warmup_iters)
        return s->lr * (float)(iter + 1) / (float)s->warmup_iters;
    switch (s->kind) {
    case SK_LR_CONSTANT: return s->lr;
    case SK_LR_STEP_DECAY: {
        int64_t past = epoch - s->decay_after;
        return past > 0 ? s->lr * (float)pow((double)s->decay, (double)past) : s->lr;
    }
    case SK_LR_COSINE: {
        if (iter >= s->max_iters) return s->min_lr;
        int64_t span = s->max_iters - s->warmup_iters;
        double progress = span > 0 ? (double)(iter - s->warmup_iters) / (double)span : 1.0;
        double coeff = 0.5 * (1.0 + cos(3.141592653589793 * progress));
        return (float)(s->min_lr + coeff * (s->lr - s->min_lr));
    }
    }
    return s->lr;
}

static const sk_word lr_kind_rows[] = {
    {.value = SK_LR_CONSTANT, .word = "constant", .help = NULL},
    {.value = SK_LR_STEP_DECAY, .word = "step", .help = NULL},
    {.value = SK_LR_COSINE, .word = "cosine", .help = NULL},
};
const sk_words sk_lr_kind_words = SK_WORDS("lr-schedule", lr_kind_rows);

SK_WORDS_FNS(sk_lr_kind_parse, sk_lr_kind_name, sk_lr_kind, sk_lr_kind_words)
