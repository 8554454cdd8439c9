// stack_cpu.c: stack_cpu.h's reference implementation: L layers of layer_cpu.c in fp32, any
// cell, with dropout between layers and after the last, and weight drop on W_hh.
#include "stack_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "cells_cpu.h"
#include "layer_cpu.h"
#include "matvec_bf16.h"
#include "parallel.h"
#include "recurrent_gemm.h"
#include "shakespeare/hash.h"

typedef struct {
    const sk_cell_cpu *rows;
    int G, S, A;          // the cell's gates, states, kept floats per unit
    int len;              // steps of the last forward
    int64_t step;         // the last training forward's step (keys the weight-drop masks again in backward)
    float **state;        // [L*S] ((T+1)*B, H), layer k's state s at k*S + s: initial state then step t's
    float **gates;        // [L] (T*B, G*H) the gates after their nonlinearities
    float **aux;          // [L] (T*B, A*H) what the cell keeps for backward (NULL when A = 0)
    float **w_hh_t;       // [L] (H, G*H) W_hh laid out for the recurrent kernels (recurrent_gemm.h)
    float **w_hh_dropped; // [L] (G*H, H) W_hh times the step's weight-drop factors; training with weight drop
    float **mask;         // [L] (T*B, H) dropout multipliers (0 or 1/(1-p)) of site k; training with dropout
    float **dropped;      // [L] (T*B, H) h * mask: what layer k+1 (or fc for k = L-1) reads
    float *hh;            // (B, G*H) one step's recurrent product, split_hh cells
    const float *emb;     // borrowed: the last training forward's input
    // backward scratch
    float *dtop;          // (T*B, max(H, E)) gradient flowing down into a layer's output
    float *dx;            // (T*B, max(H, E)) gradient w.r.t. a layer's input
    float *dgates;        // (T*B, G*H) the input side's pre-activation gradients
    float *dgates_h;      // (T*B, G*H) the recurrent side's, split_hh cells
    float *dh, *dcarry;   // (B, H), (S, B, H)
    // (V, G*H) layer 0's input side of every token, b_ih (+ b_hh) + emb[v] W_ih^T: an inference
    // forward reads its rows instead of multiplying (a seventh of a character's arithmetic at
    // config A). Each row is made by the product one batch-1 step would run, so a sample comes
    // out as it did without the table. Stale (in_proj_ok = 0) after the parameters change.
    float *in_proj;
    int in_proj_ok;
    // bf16_weights: every layer's W_ih then W_hh rounded to bf16, layer k at w16_at(cfg, k): what
    // an inference forward reads instead of the fp32 matrices (half the bytes a character streams).
    // Stale (w16_ok = 0) after the parameters change; in_proj is then made from these too.
    uint16_t *w16;
    int w16_ok;
    // Inference forwards keep w_hh_t from one call to the next (a batch of samples steps one
    // character per call, and laying W_hh out again each time cost more than the product):
    // 1 when w_hh_t holds the parameters' W_hh, laid out by an inference forward. Stale after
    // the parameters change and after a training forward (which lays out its weight-dropped W_hh).
    int w_hh_t_ok;
} ref_stack;

static ref_stack *ref_of(sk_cpu_stack *s) { return (ref_stack *)s->impl; }

// Dropout at `site` over (len*B, H) time-major rows: out = h * mask. Masks are keyed by
// the stream-major index (b*len + t)*H + j, b the global stream, so every backend and
// every split of the batch over ranks draws the same ones (hash.h). Each element is its own
// hash, so the rows are split over the threads with the same result for any thread count
// (two hashes an element: a few percent of a default training step's time).
typedef struct {
    const sk_cpu_stack_config *c;
    uint64_t key;
    int len;
    const float *h;
    float *mask, *out;
} dropout_job;

static void dropout_span(void *ctx, int i, int n) {
    const dropout_job *d = ctx;
    const sk_cpu_stack_config *c = d->c;
    const int B = c->B, H = c->H;
    const float keep_scale = 1.0f / (1.0f - c->dropout);
    const size_t rows = (size_t)d->len * B;
    for (size_t r = rows * i / n; r < rows * (i + 1) / n; r++) {
        const size_t t = r / B, b = r % B;
        const uint64_t stream = (uint64_t)c->stream_offset + (uint64_t)b; // global stream index
        const uint64_t base = (stream * (uint64_t)d->len + (uint64_t)t) * (uint64_t)H;
        for (int j = 0; j < H; j++) {
            float mk = sk_hash_uniform(d->key, base + (uint64_t)j) >= c->dropout ? keep_scale : 0.0f;
            d->mask[r * H + j] = mk;
            d->out[r * H + j] = d->h[r * H + j] * mk;
        }
    }
}

void sk_cpu_stack_dropout(const sk_cpu_stack_config *c, int64_t step, int site, int len, const float *h, float *mask,
                          float *out) {
    dropout_job d = {.c = c, .key = sk_dropout_key(c->seed, step, site), .len = len, .h = h, .mask = mask, .out = out};
    sk_parallel_for(c->threads, dropout_span, &d);
}

void sk_cpu_stack_drop_weights(const sk_cpu_stack_config *c, int64_t step, int k, const float *w_hh, float *out) {
    const uint64_t key = sk_dropout_key(c->seed, step, SK_WEIGHT_DROP_SITE + k);
    const size_t n = (size_t)c->cell->gates * c->H * c->H;
    for (size_t i = 0; i < n; i++) out[i] = w_hh[i] * sk_weight_drop_factor(key, i, c->weight_drop);
}

static void apply_dropout(const sk_cpu_stack_config *c, int64_t step, int site, int len, const float *h, float *mask,
                          float *out) {
    sk_cpu_stack_dropout(c, step, site, len, h, mask, out);
}

// Weight drop (hash.h): out = layer k's W_hh (or its gradient) times the mask of a training
// step at `step` (out == w_hh allowed).
static void drop_weights(const sk_cpu_stack *s, int64_t step, int k, const float *w_hh, float *out) {
    sk_cpu_stack_drop_weights(&s->cfg, step, k, w_hh, out);
}

// Where layer k's W_ih (then its W_hh) starts in w16; w16_at(c, L) is the whole copy's length.
static size_t w16_at(const sk_cpu_stack_config *c, int k) {
    const size_t GH = (size_t)c->cell->gates * c->H, H = (size_t)c->H;
    return k == 0 ? 0 : GH * ((size_t)c->E + H) + (size_t)(k - 1) * GH * 2 * H;
}

// The elements of w16 for c: the whole copy in inference with bf16 weights, 0 (no copy) otherwise.
static size_t w16_len(const sk_cpu_stack_config *c) {
    return c->bf16_weights && !c->training ? w16_at(c, c->L) : 0;
}

// Layer k of the stack as layer_cpu.h runs it; its W_hh the dropped copy in training steps with
// weight drop, the parameters' own otherwise.
static sk_layer_cpu layer_of(sk_cpu_stack *s, const sk_param_tensors *w, int k, int train) {
    const ref_stack *r = ref_of(s);
    const sk_layer_tensors *t = &w->layer[k];
    sk_layer_cpu l = sk_layer_cpu_make(s->cfg.cell->kind, s->cfg.B, s->cfg.H, k == 0 ? s->cfg.E : s->cfg.H,
                                       s->cfg.threads, t->w_ih,
                                       train && s->cfg.weight_drop > 0.0f ? r->w_hh_dropped[k] : t->w_hh, t->b_ih,
                                       t->b_hh);
    l.w_hh_t = r->w_hh_t[k], l.hh = r->hh;
    if (r->w16 && !train) {
        l.w_ih16 = r->w16 + w16_at(&s->cfg, k);
        l.w_hh16 = l.w_ih16 + (size_t)r->G * s->cfg.H * l.in;
    }
    return l;
}

// The bf16 copies from the parameters, rounded once (to nearest, ties to even) in the kernel's layout.
static void fill_w16(sk_cpu_stack *s, const sk_param_tensors *w) {
    ref_stack *r = ref_of(s);
    const size_t GH = (size_t)r->G * s->cfg.H;
    for (int k = 0; k < s->cfg.L; k++) {
        const size_t in = (size_t)(k == 0 ? s->cfg.E : s->cfg.H), at = w16_at(&s->cfg, k);
        sk_bf16_pack_rows((int)GH, (int)in, w->layer[k].w_ih, r->w16 + at);
        sk_bf16_pack_rows((int)GH, s->cfg.H, w->layer[k].w_hh, r->w16 + at + GH * in);
    }
    r->w16_ok = 1;
}

// in_proj from the parameters: row v by the product of an inference step (sk_layer_cpu_input over
// emb[v] with step = 1), so a table row is what the step would compute itself.
static void fill_in_proj(sk_cpu_stack *s, const sk_param_tensors *w) {
    ref_stack *r = ref_of(s);
    sk_layer_cpu l0 = layer_of(s, w, 0, 0);
    l0.step = 1;
    sk_layer_cpu_input(&l0, s->cfg.V, w->embedding, r->in_proj);
    r->in_proj_ok = 1;
}

// Layer k's state buffers, s = 0..S-1.
static float *const *layer_state(const ref_stack *r, int k) { return r->state + (size_t)k * r->S; }

static sk_status ref_forward(sk_cpu_stack *s, const sk_param_tensors *w, int len, int train, int infer_step,
                             int64_t step, const int32_t *x, const float *emb, const float **top, sk_error *err) {
    (void)err;
    ref_stack *r = ref_of(s);
    const int B = s->cfg.B, H = s->cfg.H, L = s->cfg.L, GH = r->G * H, rows = len * B;
    const int drop = train && s->cfg.dropout > 0.0f;
    const size_t lbh = (size_t)L * B * H;
    if (!train) { // layer 0's input side from the table
        if (r->w16 && !r->w16_ok) fill_w16(s, w);
        if (!r->in_proj_ok) fill_in_proj(s, w);
        for (int i = 0; i < rows; i++)
            memcpy(r->gates[0] + (size_t)i * GH, r->in_proj + (size_t)x[i] * GH, sizeof(float) * (size_t)GH);
    }
    const float *in = emb;
    for (int k = 0; k < L; k++) {
        if (train && s->cfg.weight_drop > 0.0f) drop_weights(s, step, k, w->layer[k].w_hh, r->w_hh_dropped[k]);
        sk_layer_cpu layer = layer_of(s, w, k, train);
        layer.gates_in = !train && k == 0, layer.w_hh_t_ready = !train && r->w_hh_t_ok, layer.step = infer_step;
        float *const *st = layer_state(r, k);
        for (int j = 0; j < r->S; j++)
            memcpy(st[j], s->state + j * lbh + (size_t)k * B * H, sizeof(float) * (size_t)B * H);
        sk_layer_cpu_forward(&layer, len, in, r->gates[k], r->A ? r->aux[k] : NULL, st);
        const float *h_out = st[0] + (size_t)B * H;
        if (drop) {
            apply_dropout(&s->cfg, step, k, len, h_out, r->mask[k], r->dropped[k]);
            in = r->dropped[k];
        } else {
            in = h_out;
        }
        // Carry the final state into the next window.
        for (int j = 0; j < r->S; j++)
            memcpy(s->state + j * lbh + (size_t)k * B * H, st[j] + (size_t)rows * H, sizeof(float) * (size_t)B * H);
    }
    r->w_hh_t_ok = !train; // every layer's w_hh_t now holds what this forward laid out
    r->len = len, r->step = step, r->emb = emb;
    *top = in;
    return SK_OK;
}

static sk_status ref_backward(sk_cpu_stack *s, const sk_param_tensors *w, const sk_param_tensors *g,
                              const float *dy, const float **demb, sk_error *err) {
    ref_stack *r = ref_of(s);
    if (!s->cfg.training) return sk_fail(err, SK_ERR_ARG, "backward on an inference-only CPU stack");
    const int B = s->cfg.B, H = s->cfg.H, L = s->cfg.L, rows = r->len * B;
    const int drop = s->cfg.dropout > 0.0f;
    memcpy(r->dtop, dy, sizeof(float) * (size_t)rows * H);
    const sk_layer_cpu_scratch scratch = {.dgates = r->dgates, .dgates_h = r->dgates_h, .dh = r->dh,
                                          .dcarry = r->dcarry};
    for (int k = L - 1; k >= 0; k--) {
        if (drop) { // through the dropout mask of the layer's output
            const float *mk = r->mask[k];
            for (size_t i = 0; i < (size_t)rows * H; i++) r->dtop[i] *= mk[i];
        }
        const sk_layer_tensors *gk = &g->layer[k];
        const sk_layer_cpu layer = layer_of(s, w, k, 1);
        const sk_layer_cpu_grads lg = {.w_ih = gk->w_ih, .w_hh = gk->w_hh, .b_ih = gk->b_ih, .b_hh = gk->b_hh};
        const float *in = k == 0 ? r->emb : (drop ? r->dropped[k - 1] : layer_state(r, k - 1)[0] + (size_t)B * H);
        sk_layer_cpu_backward(&layer, r->len, in, r->gates[k], r->A ? r->aux[k] : NULL, layer_state(r, k), r->dtop,
                              &scratch, &lg, r->dx);
        // The input gradient of layer k is the output gradient of layer k-1.
        float *swap = r->dtop;
        r->dtop = r->dx;
        r->dx = swap;
        // d W_hh = d (W_hh used) times the same factors (0 where an element was dropped).
        if (s->cfg.weight_drop > 0.0f) drop_weights(s, r->step, k, gk->w_hh, gk->w_hh);
    }
    *demb = r->dtop;
    return SK_OK;
}

static void ref_params_changed(sk_cpu_stack *s) {
    ref_of(s)->in_proj_ok = 0, ref_of(s)->w_hh_t_ok = 0, ref_of(s)->w16_ok = 0;
}

static void free_per_layer(float **p, int n) {
    if (!p) return;
    for (int k = 0; k < n; k++) free(p[k]);
    free(p);
}

static void ref_destroy(sk_cpu_stack *s) {
    ref_stack *r = ref_of(s);
    if (r) {
        const int L = s->cfg.L;
        free_per_layer(r->state, L * r->S);
        float **per_layer[] = {r->gates, r->aux, r->w_hh_t, r->w_hh_dropped, r->mask, r->dropped};
        for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) free_per_layer(per_layer[i], L);
        float *flat[] = {r->hh, r->dtop, r->dx, r->dgates, r->dgates_h, r->dh, r->dcarry, r->in_proj};
        for (size_t i = 0; i < sizeof flat / sizeof flat[0]; i++) free(flat[i]);
        free(r->w16);
        free(r);
    }
    free(s->state);
    free(s);
}

static const sk_cpu_stack_ops ref_ops = {
    .name = "reference",
    .forward = ref_forward,
    .backward = ref_backward,
    .params_changed = ref_params_changed,
    .destroy = ref_destroy,
};

static float *alloc_floats(size_t n, int *ok) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *ok = 0;
    return p;
}

static float **alloc_per_layer(int n_bufs, size_t n, int *ok) {
    float **p = calloc((size_t)n_bufs, sizeof(float *));
    if (!p) {
        *ok = 0;
        return NULL;
    }
    for (int k = 0; k < n_bufs; k++) p[k] = alloc_floats(n, ok);
    return p;
}

// The sizes of the reference's buffers, in floats, for allocation and for sk_cpu_stack_bytes alike.
typedef struct {
    size_t state, gates, aux, w_hh, hh, wide, in_proj, carried, dgates_h;
    int S, A, drop, wdrop;
} ref_sizes;

static ref_sizes sizes_of(const sk_cpu_stack_config *c) {
    const sk_cell_cpu *rows = sk_cell_cpu_get(c->cell->kind);
    const size_t R = (size_t)c->T * c->B, H = (size_t)c->H, GH = (size_t)c->cell->gates * H;
    const int train = c->training;
    return (ref_sizes){.state = R * H + (size_t)c->B * H, .gates = R * GH, .aux = R * (size_t)rows->aux * H,
                       .w_hh = GH * H, .hh = c->cell->split_hh ? (size_t)c->B * GH : 0,
                       .wide = R * (H > (size_t)c->E ? H : (size_t)c->E), .in_proj = (size_t)c->V * GH,
                       .carried = (size_t)c->cell->n_states * c->L * c->B * H,
                       .dgates_h = train && c->cell->split_hh ? R * GH : 0, .S = c->cell->n_states, .A = rows->aux,
                       .drop = train && c->dropout > 0.0f, .wdrop = train && c->weight_drop > 0.0f};
}

size_t sk_cpu_stack_bytes(const sk_cpu_stack_config *c, size_t *activations) {
    const ref_sizes z = sizes_of(c);
    const size_t L = (size_t)c->L, R = (size_t)c->T * c->B, H = (size_t)c->H, BH = (size_t)c->B * H;
    size_t rows = L * (z.S * (z.state - BH) + z.gates + z.aux); // the parts that grow with T x B
    size_t fixed = L * (z.S * BH + z.w_hh * (z.wdrop ? 2 : 1)) + z.hh + z.in_proj + z.carried;
    if (c->training) {
        rows += 2 * z.wide + z.gates + z.dgates_h + (z.drop ? 2 * L * R * H : 0);
        fixed += BH + (size_t)z.S * BH;
    }
    if (activations) *activations = sizeof(float) * rows;
    return sizeof(float) * (rows + fixed) + sizeof(uint16_t) * w16_len(c);
}

static int alloc_ref(ref_stack *r, const sk_cpu_stack_config *c) {
    const ref_sizes z = sizes_of(c);
    const int L = c->L;
    int ok = 1;
    r->state = alloc_per_layer(L * z.S, z.state, &ok);
    r->gates = alloc_per_layer(L, z.gates, &ok);
    if (z.A) r->aux = alloc_per_layer(L, z.aux, &ok);
    r->w_hh_t = alloc_per_layer(L, z.w_hh, &ok);
    if (z.hh) r->hh = alloc_floats(z.hh, &ok);
    r->in_proj = alloc_floats(z.in_proj, &ok);
    if (w16_len(c) && !(r->w16 = malloc(sizeof(uint16_t) * w16_len(c)))) ok = 0;
    if (!c->training) return ok;
    if (z.drop) {
        r->mask = alloc_per_layer(L, z.state - (size_t)c->B * c->H, &ok);
        r->dropped = alloc_per_layer(L, z.state - (size_t)c->B * c->H, &ok);
    }
    if (z.wdrop) r->w_hh_dropped = alloc_per_layer(L, z.w_hh, &ok);
    r->dtop = alloc_floats(z.wide, &ok);
    r->dx = alloc_floats(z.wide, &ok);
    r->dgates = alloc_floats(z.gates, &ok);
    if (z.dgates_h) r->dgates_h = alloc_floats(z.dgates_h, &ok);
    r->dh = alloc_floats((size_t)c->B * c->H, &ok);
    r->dcarry = alloc_floats((size_t)z.S * c->B * c->H, &ok);
    return ok;
}

sk_status sk_cpu_stack_create_reference(const sk_cpu_stack_config *cfg, sk_cpu_stack **out, sk_error *err) {
    *out = NULL;
    sk_cpu_stack *s = calloc(1, sizeof *s);
    ref_stack *r = calloc(1, sizeof *r);
    if (!s || !r) {
        free(s);
        free(r);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the CPU recurrent stack");
    }
    s->ops = &ref_ops, s->cfg = *cfg, s->impl = r;
    const ref_sizes z = sizes_of(cfg);
    r->rows = sk_cell_cpu_get(cfg->cell->kind), r->G = cfg->cell->gates, r->S = z.S, r->A = z.A;
    s->state = calloc(z.carried ? z.carried : 1, sizeof(float));
    if (!s->state || !alloc_ref(r, cfg)) {
        ref_destroy(s);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory allocating the CPU recurrent stack for B=%d T=%d H=%d L=%d",
                       cfg->B, cfg->T, cfg->H, cfg->L);
    }
    *out = s;
    return SK_OK;
}

void sk_cpu_stack_destroy(sk_cpu_stack *s) {
    if (s) s->ops->destroy(s);
}
