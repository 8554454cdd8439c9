// optim.c: AdamW over the single parameter buffer, global-norm clipping, LR schedules.
#include "shakespeare/optim.h"
#include "shakespeare/step_math.h"

#include <math.h>
#include <string.h>

double sk_grad_norm(const float *g, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

float sk_clip_scale(double norm, double clip) { return sk_clip_scale_of(norm, clip); } // step_math.h

void sk_adam_update(float *params, const float *grads, float *m, float *v, const sk_param_layout *layout,
                    const sk_adam_hparams *h, float lr, float clip_scale, int64_t step) {
    sk_adam_update_range(params, grads, m, v, layout, h, lr, clip_scale, step, 0, layout->total);
}

void sk_adam_update_range(float *params, const float *grads, float *m, float *v, const sk_param_layout *layout,
                          const sk_adam_hparams *h, float lr, float clip_scale, int64_t step, size_t begin,
                          size_t end) {
    const sk_adamw_args w = sk_adamw_args_of(h, lr, clip_scale, step); // step_math.h, as the GPU gets them
    for (int ti = 0; ti < layout->n_tensors; ti++) {
        const sk_tensor_info *t = &layout->tensors[ti];
        size_t lo = t->offset > begin ? t->offset : begin, hi = t->offset + t->numel < end ? t->offset + t->numel : end;
        if (lo >= hi) continue;
        const float decay = t->ndim == 2 ? w.decay : 1.0f;
        for (size_t i = lo; i < hi; i++) {
            float gi = grads[i] * w.clip_scale;
            m[i] = w.beta1 * m[i] + w.one_minus_beta1 * gi;
            v[i] = w.beta2 * v[i] + w.one_minus_beta2 * gi * gi;
            float denom = sqrtf(v[i]) / w.bc2_sqrt + w.eps;
            params[i] = params[i] * decay - w.step_size * (m[i] / denom);
        }
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
