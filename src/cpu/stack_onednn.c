// stack_onednn.c: stack_cpu.h's oneDNN implementation: the LSTM stack through oneDNN's LSTM
// primitive (lstm_onednn.h), fp32 or bf16, one primitive per layer so that the stack's dropout
// and weight drop (stack_cpu.c's masks) apply between layers. An inference step (len 1,
// sampling) runs the reference stack in fp32 on the same carried state.
#include <stdlib.h>
#include <string.h>

#include "embedding_cpu.h"
#include "lstm_onednn.h"
#include "stack_cpu.h"

typedef struct {
    sk_lstm_onednn *dnn;
    sk_cpu_stack *step_ref;      // the reference, inference only: the forwards with infer_step
    sk_layer_tensors *w;         // [L] the tensors a window multiplies (W_hh weight-dropped in training)
    float **y;                   // [L] (T*B, H) layer k's outputs
    float **w_hh_dropped;        // [L] (4H, H) training with weight drop
    float **mask, **dropped;     // [L] (T*B, H) training with dropout
    float *emb;                  // (T*B, E) an inference forward's embedded rows
    float *dtop;                 // (T*B, H) backward's copy of the top gradient (oneDNN overwrites it)
    float *dx;                   // (T*B, E) dL/d emb
    int64_t step;                // the last training forward's step
    int len;                     // and its steps
    int drop;                    // the last forward dropped out
} dnn_stack;

static dnn_stack *dnn_of(sk_cpu_stack *s) { return (dnn_stack *)s->impl; }

typedef struct {
    sk_cpu_stack *s;
    int64_t step;
    int drop;
} between_ctx;

static const float *drop_forward(void *ctx, int k, int len, const float *y) {
    const between_ctx *b = ctx;
    if (!b->drop) return y;
    dnn_stack *d = dnn_of(b->s);
    sk_cpu_stack_dropout(&b->s->cfg, b->step, k, len, y, d->mask[k], d->dropped[k]);
    return d->dropped[k];
}

static void drop_backward(void *ctx, int k, int len, float *dy) {
    const between_ctx *b = ctx;
    const float *mk = b->drop ? dnn_of(b->s)->mask[k] : NULL;
    for (size_t i = 0; mk && i < (size_t)len * b->s->cfg.B * b->s->cfg.H; i++) dy[i] *= mk[i];
}

static sk_status dnn_forward(sk_cpu_stack *s, const sk_param_tensors *w, int len, int train, int infer_step,
                             int64_t step, const int32_t *x, const float *emb, const float **top, sk_error *err) {
    dnn_stack *d = dnn_of(s);
    const sk_cpu_stack_config *c = &s->cfg;
    const size_t carried = (size_t)2 * c->L * c->B * c->H;
    if (infer_step && !train) { // sampling: the reference in fp32, on this stack's state
        memcpy(d->step_ref->state, s->state, sizeof(float) * carried);
        sk_status st = d->step_ref->ops->forward(d->step_ref, w, len, 0, 1, step, x, NULL, top, err);
        memcpy(s->state, d->step_ref->state, sizeof(float) * carried);
        return st;
    }
    if (!train) {
        sk_embedding_cpu_forward(d->emb, w->embedding, x, len * c->B, c->E);
        emb = d->emb;
    }
    const int wdrop = train && c->weight_drop > 0.0f;
    for (int k = 0; k < c->L; k++) {
        d->w[k] = w->layer[k];
        if (wdrop) {
            sk_cpu_stack_drop_weights(c, step, k, w->layer[k].w_hh, d->w_hh_dropped[k]);
            d->w[k].w_hh = d->w_hh_dropped[k];
        }
    }
    between_ctx b = {.s = s, .step = step, .drop = train && c->dropout > 0.0f};
    const sk_lstm_onednn_between between = {.forward = drop_forward, .backward = drop_backward, .ctx = &b};
    float *h = s->state, *cs = s->state + carried / 2;
    *top = sk_lstm_onednn_forward(d->dnn, len, emb, d->w, h, cs, h, cs, d->y, &between, err);
    if (!*top) return SK_ERR_DEVICE; // err holds oneDNN's message
    if (train) d->step = step, d->len = len, d->drop = b.drop;
    return SK_OK;
}

static sk_status dnn_backward(sk_cpu_stack *s, const sk_param_tensors *w, const sk_param_tensors *g, const float *dtop,
                              const float **demb, sk_error *err) {
    (void)w; // the forward's views (d->w) are what backward reads
    dnn_stack *d = dnn_of(s);
    const sk_cpu_stack_config *c = &s->cfg;
    if (!c->training) return sk_fail(err, SK_ERR_ARG, "backward on an inference-only CPU stack");
    memcpy(d->dtop, dtop, sizeof(float) * (size_t)d->len * c->B * c->H);
    between_ctx b = {.s = s, .step = d->step, .drop = d->drop};
    const sk_lstm_onednn_between between = {.forward = drop_forward, .backward = drop_backward, .ctx = &b};
    sk_layer_tensors gl[SK_MAX_LAYERS];
    for (int k = 0; k < c->L; k++) gl[k] = g->layer[k];
    sk_status st = sk_lstm_onednn_backward(d->dnn, d->dtop, d->w, gl, d->dx, &between, err);
    if (st != SK_OK) return st;
    // d W_hh = d (W_hh used) times the same factors (0 where an element was dropped).
    for (int k = 0; k < c->L && c->weight_drop > 0.0f; k++)
        sk_cpu_stack_drop_weights(c, d->step, k, gl[k].w_hh, gl[k].w_hh);
    *demb = d->dx;
    return SK_OK;
}

static void dnn_params_changed(sk_cpu_stack *s) {
    dnn_stack *d = dnn_of(s);
    if (d->step_ref) d->step_ref->ops->params_changed(d->step_ref);
}

static void free_per_layer(float **p, int n) {
    if (!p) return;
    for (int k = 0; k < n; k++) free(p[k]);
    free(p);
}

static void dnn_destroy(sk_cpu_stack *s) {
    dnn_stack *d = dnn_of(s);
    if (d) {
        sk_lstm_onednn_free(d->dnn);
        sk_cpu_stack_destroy(d->step_ref);
        free_per_layer(d->y, s->cfg.L), free_per_layer(d->w_hh_dropped, s->cfg.L);
        free_per_layer(d->mask, s->cfg.L), free_per_layer(d->dropped, s->cfg.L);
        free(d->w), free(d->emb), free(d->dtop), free(d->dx);
        free(d);
    }
    free(s->state);
    free(s);
}

static const sk_cpu_stack_ops dnn_ops_fp32 = {
    .name = "onednn-fp32",
    .forward = dnn_forward,
    .backward = dnn_backward,
    .params_changed = dnn_params_changed,
    .destroy = dnn_destroy,
};

static const sk_cpu_stack_ops dnn_ops_bf16 = {
    .name = "onednn-bf16",
    .forward = dnn_forward,
    .backward = dnn_backward,
    .params_changed = dnn_params_changed,
    .destroy = dnn_destroy,
};

static float **alloc_per_layer(int n_bufs, size_t n, int *ok) {
    float **p = calloc((size_t)n_bufs, sizeof(float *));
    if (!p) {
        *ok = 0;
        return NULL;
    }
    for (int k = 0; k < n_bufs; k++)
        if (!(p[k] = calloc(n ? n : 1, sizeof(float)))) *ok = 0;
    return p;
}

static float *alloc_floats(size_t n, int *ok) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *ok = 0;
    return p;
}

static sk_cpu_stack_config step_ref_config(const sk_cpu_stack_config *cfg) {
    sk_cpu_stack_config r = *cfg;
    r.T = 1, r.training = 0;
    return r;
}

size_t sk_cpu_stack_onednn_bytes(const sk_cpu_stack_config *c, int bf16, size_t *activations) {
    const size_t L = (size_t)c->L, H = (size_t)c->H, E = (size_t)c->E, B = (size_t)c->B, R = (size_t)c->T * B;
    const int train = c->training, drop = train && c->dropout > 0.0f, wdrop = train && c->weight_drop > 0.0f;
    const sk_cpu_stack_config rc = step_ref_config(c);
    // Per row: every layer's output, the inference embedding; training: the gradients and the
    // dropout masks; oneDNN's own per layer and row (its gates and states: about 6H floats, an
    // estimate, as oneDNN sizes it itself; in bf16 also the bf16 input and output copies).
    size_t rows = L * H + E + (train ? H + E + (drop ? 2 * L * H : 0) : 0) + L * (6 * H + (bf16 ? (E + H) / 2 : 0));
    // Fixed: the carried state, the dropped W_hh, oneDNN's weights (twice in bf16) and gradients.
    size_t fixed = 2 * L * B * H + (wdrop ? L * 4 * H * H : 0) + L * 4 * H * (E + H) * 2 + 6 * B * H * L;
    if (activations) *activations = sizeof(float) * R * rows;
    return sizeof(float) * (R * rows + fixed) + sk_cpu_stack_bytes(&rc, NULL);
}

sk_status sk_cpu_stack_create_onednn(const sk_cpu_stack_config *cfg, int bf16, sk_cpu_stack **out, sk_error *err) {
    *out = NULL;
    if (cfg->cell->kind != SK_CELL_LSTM)
        return sk_fail(err, SK_ERR_ARG, "oneDNN's stack runs the LSTM; the %s not yet", cfg->cell->name);
    sk_cpu_stack *s = calloc(1, sizeof *s);
    dnn_stack *d = calloc(1, sizeof *d);
    if (!s || !d) {
        free(s);
        free(d);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the CPU recurrent stack");
    }
    s->ops = bf16 ? &dnn_ops_bf16 : &dnn_ops_fp32, s->cfg = *cfg, s->impl = d;
    const sk_lstm_onednn_config dc = {.B = cfg->B, .T = cfg->T, .E = cfg->E, .H = cfg->H, .L = cfg->L, .bf16 = bf16,
                                      .threads = cfg->threads};
    sk_status st = sk_lstm_onednn_create(&dc, &d->dnn, err);
    const sk_cpu_stack_config rc = step_ref_config(cfg);
    if (st == SK_OK) st = sk_cpu_stack_create_reference(&rc, &d->step_ref, err);
    if (st != SK_OK) {
        dnn_destroy(s);
        return st;
    }
    const size_t L = (size_t)cfg->L, R = (size_t)cfg->T * cfg->B, H = (size_t)cfg->H;
    int ok = 1;
    s->state = alloc_floats(2 * L * cfg->B * H, &ok);
    d->w = calloc(L, sizeof *d->w);
    if (!d->w) ok = 0;
    d->y = alloc_per_layer(cfg->L, R * H, &ok);
    d->emb = alloc_floats(R * cfg->E, &ok);
    if (cfg->training) {
        if (cfg->weight_drop > 0.0f) d->w_hh_dropped = alloc_per_layer(cfg->L, 4 * H * H, &ok);
        if (cfg->dropout > 0.0f) {
            d->mask = alloc_per_layer(cfg->L, R * H, &ok);
            d->dropped = alloc_per_layer(cfg->L, R * H, &ok);
        }
        d->dtop = alloc_floats(R * H, &ok);
        d->dx = alloc_floats(R * cfg->E, &ok);
    }
    if (!ok) {
        dnn_destroy(s);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory allocating the CPU recurrent stack for B=%d T=%d H=%d L=%d",
                       cfg->B, cfg->T, cfg->H, cfg->L);
    }
    *out = s;
    return SK_OK;
}
