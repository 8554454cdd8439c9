// backend_cpu.c: the CPU reference backend. Embedding -> LSTM stack (lstm_cpu.c) ->
// dropout -> linear -> softmax cross-entropy, forward and backward, and AdamW.
// Internally rows are time-major (r = t*B + b); the interface is stream-major (b, t).
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "backend/backend_impl.h"
#include "embedding_cpu.h"
#include "lstm_cpu.h"
#include "lstm_onednn.h"
#include "matvec_cpu.h"
#include "parallel.h"
#include "recurrent_gemm.h"
#include "shakespeare/rng.h"
#include "xent_cpu.h"

typedef struct {
    int V, E, H, L, B, T;
    int stream_offset, global_batch; // data-parallel: see sk_backend_config
    float p;        // dropout probability
    float wdrop;    // weight drop probability (model.h)
    int training;   // backward buffers allocated
    int threads;    // BLAS threads, and spans of the LSTM recurrence
    int len;        // steps of the last forward
    int last_train; // the last forward was SK_MODE_TRAIN (backward allowed)
    int64_t step;   // the last forward's step (keys the weight-drop masks again in backward)
    float *params, *grads, *m, *v; // (total,) canonical layout
    sk_param_tensors w, dw;         // named views of params and (training) grads
    int32_t *x, *y;  // (T*B) time-major copies of the window
    float *emb;      // (T*B, E) embedded inputs
    float **hbuf;    // [L] ((T+1)*B, H): initial state then h_t, see lstm_cpu.h
    float **cbuf;    // [L] ((T+1)*B, H)
    float **gates;   // [L] (T*B, 4H)
    float **tanh_c;  // [L] (T*B, H)
    float **w_hh_t;  // [L] (H, 4H) W_hh laid out for the recurrent kernels (recurrent_gemm.h)
    float **w_hh_dropped; // [L] (4H, H) W_hh times the step's weight-drop factors; training with wdrop only
    float **mask;    // [L] (T*B, H) dropout multipliers (0 or 1/(1-p)) for site k; training only
    float **dropped; // [L] (T*B, H) h * mask: what layer k+1 (or fc for k = L-1) reads
    float *logits;   // (T*B, V)
    float *row_loss; // (T*B) per-row -log p(y), summed in row order for determinism
    // backward scratch
    float *dlogits;  // (T*B, V)
    float *dtop;     // (T*B, max(H, E)) gradient flowing down into a layer's output
    float *dx;       // (T*B, max(H, E)) gradient w.r.t. a layer's input
    float *dgates;   // (T*B, 4H)
    float *dh, *dc;  // (B, H)
    float *h_state, *c_state; // (L, B, H) carried state
    // (V, 4H) layer 0's gate inputs of every token, b_ih + b_hh + emb[v] W_ih^T: an inference
    // forward reads its rows instead of multiplying (a seventh of a character's arithmetic at
    // config A). Each row is made by the product one batch-1 step would run, so a sample comes
    // out as it did without the table. Stale (in_proj_ok = 0) after set_params and update.
    float *in_proj;
    int in_proj_ok;
    // Inference forwards keep w_hh_t from one call to the next (a batch of samples steps one
    // character per call, and laying W_hh out again each time cost more than the product):
    // 1 when w_hh_t holds the parameters' W_hh, laid out by an inference forward. Stale after
    // set_params, update, and a training forward (which lays out its weight-dropped W_hh).
    int w_hh_t_ok;
    // The LSTM stack through oneDNN (lstm_onednn.h: --precision bf16); NULL: lstm_cpu.c's layers.
    // It runs every forward but an inference step (sampling), which stays on lstm_cpu.c in fp32.
    sk_lstm_onednn *dnn;
    sk_lstm_tensors *dnn_w; // [L] the tensors a window multiplies (W_hh weight-dropped in training)
    float **dnn_y;          // [L] hbuf[k] + B*H: where layer k's outputs land
} cpu_impl;

static cpu_impl *impl_of(sk_backend *b) { return (cpu_impl *)b->impl; }

static void cpu_destroy(sk_backend *b) {
    cpu_impl *c = impl_of(b);
    if (c) {
        float **per_layer[] = {c->hbuf, c->cbuf, c->gates, c->tanh_c, c->w_hh_t, c->w_hh_dropped, c->mask, c->dropped};
        for (size_t i = 0; i < sizeof per_layer / sizeof per_layer[0]; i++) {
            if (!per_layer[i]) continue;
            for (int k = 0; k < c->L; k++) free(per_layer[i][k]);
            free(per_layer[i]);
        }
        float *flat[] = {c->params, c->grads, c->m,      c->v,  c->emb, c->logits,  c->row_loss, c->dlogits,
                         c->dtop,   c->dx,    c->dgates, c->dh, c->dc,  c->h_state, c->c_state,  c->in_proj};
        for (size_t i = 0; i < sizeof flat / sizeof flat[0]; i++) free(flat[i]);
        free(c->x);
        free(c->y);
        sk_lstm_onednn_free(c->dnn);
        free(c->dnn_w);
        free(c->dnn_y);
        free(c);
    }
    sk_param_layout_free(&b->layout);
    free(b);
}

static sk_status cpu_set_params(sk_backend *b, const float *params) {
    memcpy(impl_of(b)->params, params, sizeof(float) * b->layout.total);
    impl_of(b)->in_proj_ok = 0, impl_of(b)->w_hh_t_ok = 0;
    return SK_OK;
}
static sk_status cpu_get_params(sk_backend *b, float *params) {
    memcpy(params, impl_of(b)->params, sizeof(float) * b->layout.total);
    return SK_OK;
}
static sk_status cpu_get_grads(sk_backend *b, float *grads) {
    cpu_impl *c = impl_of(b);
    if (!c->training) return sk_fail(&b->err, SK_ERR_ARG, "get_grads on an inference-only backend");
    memcpy(grads, c->grads, sizeof(float) * b->layout.total);
    return SK_OK;
}
static sk_status cpu_set_optimizer_state(sk_backend *b, const float *m, const float *v) {
    cpu_impl *c = impl_of(b);
    if (!c->training) return sk_fail(&b->err, SK_ERR_ARG, "set_optimizer_state on an inference-only backend");
    memcpy(c->m, m, sizeof(float) * b->layout.total);
    memcpy(c->v, v, sizeof(float) * b->layout.total);
    return SK_OK;
}
static sk_status cpu_get_optimizer_state(sk_backend *b, float *m, float *v) {
    cpu_impl *c = impl_of(b);
    if (!c->training) return sk_fail(&b->err, SK_ERR_ARG, "get_optimizer_state on an inference-only backend");
    memcpy(m, c->m, sizeof(float) * b->layout.total);
    memcpy(v, c->v, sizeof(float) * b->layout.total);
    return SK_OK;
}
static sk_status cpu_set_state(sk_backend *b, const float *h, const float *c_) {
    cpu_impl *c = impl_of(b);
    size_t n = (size_t)c->L * c->B * c->H;
    if (h) memcpy(c->h_state, h, sizeof(float) * n);
    else memset(c->h_state, 0, sizeof(float) * n);
    if (c_) memcpy(c->c_state, c_, sizeof(float) * n);
    else memset(c->c_state, 0, sizeof(float) * n);
    return SK_OK;
}
static sk_status cpu_get_state(sk_backend *b, float *h, float *c_) {
    cpu_impl *c = impl_of(b);
    size_t n = (size_t)c->L * c->B * c->H;
    if (h) memcpy(h, c->h_state, sizeof(float) * n);
    if (c_) memcpy(c_, c->c_state, sizeof(float) * n);
    return SK_OK;
}

// Dropout at `site` over (len*B, H) time-major rows: out = h * mask. Masks are keyed by
// the stream-major index (b*len + t)*H + j, b the global stream, so every backend and
// every split of the batch over ranks draws the same ones (rng.h). Each element is its own
// hash, so the rows are split over the threads with the same result for any thread count
// (two hashes an element: a few percent of a default training step's time).
typedef struct {
    const cpu_impl *c;
    uint64_t key;
    int len;
    const float *h;
    float *mask, *out;
} dropout_job;

static void dropout_span(void *ctx, int i, int n) {
    const dropout_job *d = ctx;
    const cpu_impl *c = d->c;
    const int B = c->B, H = c->H;
    const float keep_scale = 1.0f / (1.0f - c->p);
    const size_t rows = (size_t)d->len * B;
    for (size_t r = rows * i / n; r < rows * (i + 1) / n; r++) {
        const size_t t = r / B, b = r % B;
        const uint64_t stream = (uint64_t)c->stream_offset + (uint64_t)b; // global stream index
        const uint64_t base = (stream * (uint64_t)d->len + (uint64_t)t) * (uint64_t)H;
        for (int j = 0; j < H; j++) {
            float mk = sk_hash_uniform(d->key, base + (uint64_t)j) >= c->p ? keep_scale : 0.0f;
            d->mask[r * H + j] = mk;
            d->out[r * H + j] = d->h[r * H + j] * mk;
        }
    }
}

static void apply_dropout(const cpu_impl *c, uint64_t seed, int64_t step, int site, int len, const float *h,
                          float *mask, float *out) {
    dropout_job d = {c, sk_dropout_key(seed, step, site), len, h, mask, out};
    sk_parallel_for(c->threads, dropout_span, &d);
}

// Weight drop (hash.h): out = layer k's W_hh (or its gradient) times the mask of a training
// step at `step` (out == w_hh allowed).
static void drop_weights(const cpu_impl *c, uint64_t seed, int64_t step, int k, const float *w_hh, float *out) {
    const uint64_t key = sk_dropout_key(seed, step, SK_WEIGHT_DROP_SITE + k);
    for (size_t i = 0; i < (size_t)4 * c->H * c->H; i++) out[i] = w_hh[i] * sk_weight_drop_factor(key, i, c->wdrop);
}

// Layer k's W_hh for the last (or this) forward: the dropped copy in training steps with
// weight drop, the parameters' own otherwise.
static const float *w_hh_used(const cpu_impl *c, int k, int train) {
    return train && c->wdrop > 0.0f ? c->w_hh_dropped[k] : c->w.lstm[k].w_hh;
}

// Layer k's input width: in_0 = E, in_k = H (model.h).
static int layer_in(const cpu_impl *c, int k) { return k == 0 ? c->E : c->H; }

// Numerically stable log-softmax cross-entropy per row (xent_cpu.c); keeps the logits.
static void row_losses(cpu_impl *c, int rows) {
    const int V = c->V;
    for (int r = 0; r < rows; r++) c->row_loss[r] = sk_xent_row_loss(c->logits + (size_t)r * V, V, c->y[r]);
}

// c->in_proj from the parameters: row v by the product of an inference step (the biases,
// then sk_matvec_rows over emb[v]), so a table row is what the step would compute itself.
static void fill_in_proj(cpu_impl *c) {
    const int G4 = 4 * c->H, E = c->E;
    const sk_lstm_tensors *w = &c->w.lstm[0];
    for (int v = 0; v < c->V; v++) {
        float *row = c->in_proj + (size_t)v * G4;
        for (int j = 0; j < G4; j++) row[j] = w->b_ih[j] + w->b_hh[j];
    }
    sk_matvec_rows(G4, E, w->w_ih, c->V, c->w.embedding, E, c->in_proj, G4);
    c->in_proj_ok = 1;
}

// Stream-major (b, t) -> time-major rows; out-of-range ids are a caller bug, refused.
static sk_status gather_window(sk_backend *b, cpu_impl *c, const int32_t *x, const int32_t *y, int len) {
    const int B = c->B, V = c->V;
    for (int b_ = 0; b_ < B; b_++) {
        for (int t = 0; t < len; t++) {
            int32_t xi = x[(size_t)b_ * len + t];
            if (xi < 0 || xi >= V)
                return sk_fail(&b->err, SK_ERR_ARG, "input id %d outside the vocabulary of %d", (int)xi, V);
            c->x[(size_t)t * B + b_] = xi;
            if (y) {
                int32_t yi = y[(size_t)b_ * len + t];
                if (yi < 0 || yi >= V)
                    return sk_fail(&b->err, SK_ERR_ARG, "target id %d outside the vocabulary of %d", (int)yi, V);
                c->y[(size_t)t * B + b_] = yi;
            }
        }
    }
    return SK_OK;
}

// Layer 0's input: the embedded rows (training, and oneDNN's stack); else (lstm_cpu.c in
// inference) its gate inputs from the table.
static void embed_window(cpu_impl *c, int rows, int embed) {
    const int H = c->H;
    if (!embed) {
        if (!c->in_proj_ok) fill_in_proj(c);
        for (int r = 0; r < rows; r++)
            memcpy(c->gates[0] + (size_t)r * 4 * H, c->in_proj + (size_t)c->x[r] * 4 * H, sizeof(float) * 4 * H);
    } else {
        sk_embedding_cpu_forward(c->emb, c->w.embedding, c->x, rows, c->E);
    }
}

// The LSTM stack over the window from the carried state (carrying the final state into the
// next window), with dropout after each layer in training; returns what fc reads.
static const float *lstm_stack_forward(const sk_backend *b, cpu_impl *c, int len, int train, int infer_step,
                                       int64_t step) {
    const int B = c->B, H = c->H, L = c->L;
    const int drop = train && c->p > 0.0f;
    const float *in = c->emb;
    for (int k = 0; k < L; k++) {
        const sk_lstm_tensors *w = &c->w.lstm[k];
        if (train && c->wdrop > 0.0f) drop_weights(c, b->cfg.seed, step, k, w->w_hh, c->w_hh_dropped[k]);
        sk_lstm_cpu_layer layer = {B, H, layer_in(c, k), c->threads, w->w_ih, w_hh_used(c, k, train), w->b_ih,
                                   w->b_hh, c->w_hh_t[k], !train && k == 0, !train && c->w_hh_t_ok,
                                   infer_step};
        memcpy(c->hbuf[k], c->h_state + (size_t)k * B * H, sizeof(float) * B * H);
        memcpy(c->cbuf[k], c->c_state + (size_t)k * B * H, sizeof(float) * B * H);
        sk_lstm_cpu_forward(&layer, len, in, c->gates[k], c->tanh_c[k], c->hbuf[k], c->cbuf[k]);
        const float *h_out = c->hbuf[k] + (size_t)B * H;
        if (drop) {
            apply_dropout(c, b->cfg.seed, step, k, len, h_out, c->mask[k], c->dropped[k]);
            in = c->dropped[k];
        } else {
            in = h_out;
        }
        // Carry the final state into the next window.
        memcpy(c->h_state + (size_t)k * B * H, c->hbuf[k] + (size_t)len * B * H, sizeof(float) * B * H);
        memcpy(c->c_state + (size_t)k * B * H, c->cbuf[k] + (size_t)len * B * H, sizeof(float) * B * H);
    }
    c->w_hh_t_ok = !train; // every layer's w_hh_t now holds what this forward laid out
    return in;
}

// Between oneDNN's layers: the dropout of lstm_stack_forward, and its mask on the way back.
typedef struct {
    const sk_backend *b;
    cpu_impl *c;
    int64_t step;
    int drop;
} dnn_between_ctx;

static const float *dnn_drop_forward(void *ctx, int k, int len, const float *y) {
    const dnn_between_ctx *d = ctx;
    if (!d->drop) return y;
    apply_dropout(d->c, d->b->cfg.seed, d->step, k, len, y, d->c->mask[k], d->c->dropped[k]);
    return d->c->dropped[k];
}

static void dnn_drop_backward(void *ctx, int k, int len, float *dy) {
    const dnn_between_ctx *d = ctx;
    for (size_t i = 0; d->drop && i < (size_t)len * d->c->B * d->c->H; i++) dy[i] *= d->c->mask[k][i];
}

// lstm_stack_forward through oneDNN: the same weight drop, dropout and carried state. NULL on
// failure (b->err says why).
static const float *dnn_stack_forward(sk_backend *b, cpu_impl *c, int len, int train, int64_t step) {
    for (int k = 0; k < c->L; k++) {
        if (train && c->wdrop > 0.0f) drop_weights(c, b->cfg.seed, step, k, c->w.lstm[k].w_hh, c->w_hh_dropped[k]);
        c->dnn_w[k] = c->w.lstm[k];
        c->dnn_w[k].w_hh = (float *)w_hh_used(c, k, train);
    }
    dnn_between_ctx d = {.b = b, .c = c, .step = step, .drop = train && c->p > 0.0f};
    const sk_lstm_onednn_between between = {.forward = dnn_drop_forward, .backward = dnn_drop_backward, .ctx = &d};
    return sk_lstm_onednn_forward(c->dnn, len, c->emb, c->dnn_w, c->h_state, c->c_state, c->h_state, c->c_state,
                                  c->dnn_y, &between, &b->err);
}

// logits = top W_fc^T + b_fc
static void fc_forward(cpu_impl *c, const float *top, int rows, int infer_step) {
    const int H = c->H, V = c->V;
    for (int r = 0; r < rows; r++) memcpy(c->logits + (size_t)r * V, c->w.fc_b, sizeof(float) * V);
    if (infer_step)
        sk_matvec_rows(V, H, c->w.fc_w, rows, top, H, c->logits, V);
    else
        sk_sgemm_rows(c->threads, CblasNoTrans, CblasTrans, rows, V, H, 1.0f, top, H, c->w.fc_w, H, 1.0f, c->logits,
                      V);
}

static sk_status cpu_forward(sk_backend *b, const int32_t *x, const int32_t *y, int len, sk_mode mode,
                             int64_t step, double *loss_sum) {
    cpu_impl *c = impl_of(b);
    if (len < 1 || len > c->T)
        return sk_fail(&b->err, SK_ERR_ARG, "forward over %d steps; this backend takes 1 to %d", len, c->T);
    if (mode == SK_MODE_TRAIN && !c->training)
        return sk_fail(&b->err, SK_ERR_ARG, "a training forward on an inference-only backend");
    const int rows = len * c->B, train = mode == SK_MODE_TRAIN;
    // An inference step (sampling): batch-invariant products (matvec_cpu.h), so that a stream's
    // text does not depend on the streams beside it.
    const int infer_step = !train && len == 1;
    sk_status st = gather_window(b, c, x, y, len);
    if (st != SK_OK) return st;
    const int dnn = c->dnn && !infer_step;
    embed_window(c, rows, train || dnn);
    const float *top = dnn ? dnn_stack_forward(b, c, len, train, step) : lstm_stack_forward(b, c, len, train,
                                                                                             infer_step, step);
    if (!top) return SK_ERR_DEVICE; // b->err holds oneDNN's message
    fc_forward(c, top, rows, infer_step);
    c->len = len;
    c->step = step;
    c->last_train = train && y != NULL;
    if (y) {
        row_losses(c, rows);
        double s = 0.0;
        for (int r = 0; r < rows; r++) s += c->row_loss[r];
        if (loss_sum) *loss_sum = s;
    } else if (loss_sum) {
        *loss_sum = 0.0;
    }
    return SK_OK;
}

static sk_status cpu_get_logits(sk_backend *b, float *logits) {
    cpu_impl *c = impl_of(b);
    const int B = c->B, V = c->V, len = c->len;
    for (int b_ = 0; b_ < B; b_++)
        for (int t = 0; t < len; t++)
            memcpy(logits + ((size_t)b_ * len + t) * V, c->logits + ((size_t)t * B + b_) * V, sizeof(float) * V);
    return SK_OK;
}

static sk_status cpu_backward(sk_backend *b) {
    cpu_impl *c = impl_of(b);
    if (!c->last_train) return sk_fail(&b->err, SK_ERR_ARG, "backward without a training forward before it");
    const int B = c->B, H = c->H, E = c->E, V = c->V, L = c->L, len = c->len, rows = len * B;
    const int drop = c->p > 0.0f;
    const sk_param_tensors *G = &c->dw;
    const float inv_n = 1.0f / (float)(len * c->global_batch);

    // dlogits = (softmax - onehot(y)) / rows of the global batch
    for (int r = 0; r < rows; r++)
        sk_xent_row_dlogits(c->logits + (size_t)r * V, V, c->y[r], inv_n, c->dlogits + (size_t)r * V);
    const float *top = drop ? c->dropped[L - 1] : c->hbuf[L - 1] + (size_t)B * H;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, rows, 1.0f, c->dlogits, V, top, H, 0.0f, G->fc_w, H);
    float *gb = G->fc_b;
    memset(gb, 0, sizeof(float) * V);
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < V; v++) gb[v] += c->dlogits[(size_t)r * V + v];
    // dtop = dlogits W_fc, then through the dropout mask before fc.
    sk_sgemm_rows(c->threads, CblasNoTrans, CblasNoTrans, rows, H, V, 1.0f, c->dlogits, V, c->w.fc_w, H, 0.0f, c->dtop,
                  H);
    if (c->dnn) {
        dnn_between_ctx d = {.b = b, .c = c, .step = c->step, .drop = drop};
        const sk_lstm_onednn_between between = {.forward = dnn_drop_forward, .backward = dnn_drop_backward, .ctx = &d};
        sk_status st = sk_lstm_onednn_backward(c->dnn, c->dtop, c->dnn_w, G->lstm, c->dx, &between, &b->err);
        if (st != SK_OK) return st;
        float *swap = c->dtop; // dtop now holds d emb, as after the loop below
        c->dtop = c->dx;
        c->dx = swap;
        for (int k = 0; k < L && c->wdrop > 0.0f; k++) drop_weights(c, b->cfg.seed, c->step, k, G->lstm[k].w_hh, G->lstm[k].w_hh);
    }
    for (int k = L - 1; k >= 0 && !c->dnn; k--) {
        if (drop) {
            const float *mk = c->mask[k];
            for (size_t i = 0; i < (size_t)rows * H; i++) c->dtop[i] *= mk[i];
        }
        const sk_lstm_tensors *w = &c->w.lstm[k], *g = &G->lstm[k];
        sk_lstm_cpu_layer layer = {B, H, layer_in(c, k), c->threads, w->w_ih, w_hh_used(c, k, 1), w->b_ih, w->b_hh,
                                   c->w_hh_t[k], 0, 0, 0};
        sk_lstm_cpu_grads lg = {g->w_ih, g->w_hh, g->b_ih, g->b_hh};
        const float *in = k == 0 ? c->emb : (drop ? c->dropped[k - 1] : c->hbuf[k - 1] + (size_t)B * H);
        sk_lstm_cpu_backward(&layer, len, in, c->gates[k], c->tanh_c[k], c->hbuf[k], c->cbuf[k], c->dtop, c->dgates,
                             c->dh, c->dc, &lg, c->dx);
        // The input gradient of layer k is the output gradient of layer k-1.
        float *swap = c->dtop;
        c->dtop = c->dx;
        c->dx = swap;
        // d W_hh = d (W_hh used) times the same factors (0 where an element was dropped).
        if (c->wdrop > 0.0f) drop_weights(c, b->cfg.seed, c->step, k, g->w_hh, g->w_hh);
    }
    // Embedding gradient: scatter-add in row order (deterministic). dtop now holds d emb.
    sk_embedding_cpu_backward(G->embedding, c->dtop, c->x, rows, V, E);
    return SK_OK;
}

typedef struct {
    cpu_impl *c;
    const sk_param_layout *layout;
    const sk_adam_hparams *h;
    float lr, clip_scale;
    int64_t step;
    double partial[SK_MAX_THREADS]; // per-span sums of squares, combined in span order
} adam_job;

static void span_range(size_t n, int i, int k, size_t *lo, size_t *hi) {
    *lo = n * (size_t)i / (size_t)k, *hi = n * (size_t)(i + 1) / (size_t)k;
}

static void norm_span(void *ctx, int i, int n) {
    adam_job *j = ctx;
    size_t lo, hi;
    span_range(j->layout->total, i, n, &lo, &hi);
    j->partial[i] = 0.0;
    for (size_t k = lo; k < hi; k++) j->partial[i] += (double)j->c->grads[k] * (double)j->c->grads[k];
}

static void adam_span(void *ctx, int i, int n) {
    adam_job *j = ctx;
    size_t lo, hi;
    span_range(j->layout->total, i, n, &lo, &hi);
    sk_adam_update_range(j->c->params, j->c->grads, j->c->m, j->c->v, j->layout, j->h, j->lr, j->clip_scale, j->step,
                         lo, hi);
}

// Small models are not worth a thread: one span below ~64K parameters per thread. The
// norm and the update use the same spans, so the norm's summation order is fixed.
static int step_spans(const sk_backend *b, const cpu_impl *c) {
    int n = c->threads;
    while (n > 1 && b->layout.total / (size_t)n < 65536) n--;
    return n;
}

static sk_status cpu_grad_buffer(sk_backend *b, float **grads, int *on_device) {
    cpu_impl *c = impl_of(b);
    if (!c->training) return sk_fail(&b->err, SK_ERR_ARG, "grad_buffer on an inference-only backend");
    *grads = c->grads;
    *on_device = 0;
    return SK_OK;
}

static sk_status cpu_grad_norm(sk_backend *b, double *norm) {
    cpu_impl *c = impl_of(b);
    if (!c->training) return sk_fail(&b->err, SK_ERR_ARG, "grad_norm on an inference-only backend");
    const int n = step_spans(b, c);
    adam_job j = {.c = c, .layout = &b->layout};
    sk_parallel_for(n, norm_span, &j);
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += j.partial[i];
    *norm = sqrt(sum);
    return SK_OK;
}

static sk_status cpu_update(sk_backend *b, const sk_adam_hparams *h, float lr, float clip_scale, int64_t step) {
    cpu_impl *c = impl_of(b);
    if (!c->training || step < 1)
        return sk_fail(&b->err, SK_ERR_ARG, "optimizer step %lld on %s backend", (long long)step,
                       c->training ? "a training" : "an inference-only");
    adam_job j = {.c = c, .layout = &b->layout, .h = h, .lr = lr, .clip_scale = clip_scale, .step = step};
    sk_parallel_for(step_spans(b, c), adam_span, &j);
    c->in_proj_ok = 0, c->w_hh_t_ok = 0;
    return SK_OK;
}

static const sk_backend_ops cpu_ops = {
    .name = "cpu",
    .set_params = cpu_set_params,
    .get_params = cpu_get_params,
    .get_grads = cpu_get_grads,
    .set_optimizer_state = cpu_set_optimizer_state,
    .get_optimizer_state = cpu_get_optimizer_state,
    .set_state = cpu_set_state,
    .get_state = cpu_get_state,
    .forward = cpu_forward,
    .get_logits = cpu_get_logits,
    .backward = cpu_backward,
    .grad_buffer = cpu_grad_buffer,
    .grad_norm = cpu_grad_norm,
    .update = cpu_update,
    .destroy = cpu_destroy,
    // No deferred step: every CPU step runs to its end anyway (src/backend/train_step.c's eager one).
};

static float *alloc_floats(size_t n, int *ok) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) *ok = 0;
    return p;
}

static float **alloc_per_layer(int L, size_t n, int *ok) {
    float **p = calloc((size_t)L, sizeof(float *));
    if (!p) {
        *ok = 0;
        return NULL;
    }
    for (int k = 0; k < L; k++) p[k] = alloc_floats(n, ok);
    return p;
}

// One line when OpenBLAS runs kernels without AVX2 on a CPU that has it (OPENBLAS_CORETYPE
// forcing an old core, or a build without them): a training step then takes about 2.5x as
// long for the same result. The cores listed are OpenBLAS's x86-64 AVX2 and AVX-512 kernels.
static void slow_blas_notice(char *notice, size_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static const char *const fast[] = {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"};
    const char *core = openblas_get_corename();
    if (!core || !__builtin_cpu_supports("avx2")) return;
    for (size_t i = 0; i < sizeof fast / sizeof fast[0]; i++)
        if (strcasecmp(core, fast[i]) == 0) return;
    const char *forced = getenv("OPENBLAS_CORETYPE");
    snprintf(notice, n, "OpenBLAS runs its %s kernels on this AVX2 CPU, about 2.5x slower than it can%s", core,
             forced ? " (OPENBLAS_CORETYPE is set: unset it)" : " (an OpenBLAS built with DYNAMIC_ARCH picks faster ones)");
#else
    (void)notice, (void)n;
#endif
}

// sk_backend_create_cpu's buffers for cfg with `total` parameters, in bytes (ids are 4 bytes, as
// floats): per row of a window (T x B rows) the embedding, each layer's h, c, gates and tanh(c),
// the logits, the row losses and the ids; when training also the logits' gradient, the gradient
// flowing through the layers, the gates' gradient and the dropout masks; besides the rows, the
// parameters (with gradients and Adam's moments when training), W_hh laid out (and weight-dropped),
// the carried state and its rows before the window, layer 0's gate table; in bf16 oneDNN's buffers too.
size_t sk_backend_cpu_bytes(const sk_backend_config *cfg, size_t *activations) {
    sk_param_layout layout;
    if (cfg->batch_size < 1 || cfg->seq_len < 1 || sk_param_layout_init(&layout, &cfg->model, NULL) != SK_OK) return 0;
    const size_t total = layout.total;
    sk_param_layout_free(&layout);
    const size_t L = (size_t)cfg->model.num_layers, H = (size_t)cfg->model.hidden_size, E = (size_t)cfg->model.embed_size;
    const size_t V = (size_t)cfg->model.vocab_size, B = (size_t)cfg->batch_size, wide = H > E ? H : E;
    const size_t rows = (size_t)cfg->seq_len * B;
    const int train = cfg->training, drop = train && cfg->model.dropout > 0.0f, wdrop = train && cfg->model.weight_drop > 0.0f;
    size_t per_row = E + L * 7 * H + V + 1 + 2;
    if (train) per_row += V + 2 * wide + 4 * H + (drop ? 2 * L * H : 0);
    const size_t fixed = total * (train ? 4 : 1) + L * 4 * H * H * (wdrop ? 2 : 1) + 4 * L * B * H + V * 4 * H +
                         (train ? 2 * B * H : 0);
    if (cfg->precision == SK_PRECISION_BF16) { // oneDNN's LSTM (lstm_onednn.c), in floats' worth
        // Per layer, per row: the bf16 input and output copies and oneDNN's workspace (its gates
        // and states: about 6H floats, an estimate, as oneDNN sizes it itself); the gradient
        // between layers twice; per layer the weights in bf16 twice and their fp32 gradients.
        per_row += L * ((E + H) / 2 + 6 * H) + 2 * wide;
    }
    const size_t dnn_fixed = cfg->precision == SK_PRECISION_BF16 ? L * 4 * H * (E + H) * 2 + 6 * B * H * L : 0;
    if (activations) *activations = sizeof(float) * rows * per_row;
    return sizeof(float) * (rows * per_row + fixed + dnn_fixed);
}

// The settings only a CUDA device can honour, and a batch that does not fit the config.
static sk_status check_cpu_config(const sk_backend_config *cfg, sk_error *err) {
    if (cfg->batch_size < 1 || cfg->seq_len < 1)
        return sk_fail(err, SK_ERR_ARG, "batch size and sequence length must be positive, got %d and %d",
                       cfg->batch_size, cfg->seq_len);
    if (cfg->rnn_impl != SK_RNN_AUTO)
        return sk_fail(err, SK_ERR_ARG, "rnn-impl %s selects a CUDA LSTM implementation; the CPU backend has one "
                                        "(use --rnn-impl auto, or a CUDA device)", sk_rnn_impl_name(cfg->rnn_impl));
    if (cfg->cuda_graph == SK_GRAPH_ON)
        return sk_fail(err, SK_ERR_ARG, "cuda-graph on needs a CUDA device; the CPU backend runs its steps eagerly "
                                        "(use --cuda-graph auto or off)");
    char why[256];
    if (cfg->precision == SK_PRECISION_TF32)
        return sk_fail(err, SK_ERR_ARG, "precision tf32 needs a CUDA device; the CPU backend computes in fp32 or bf16 "
                                        "(use --precision fp32, or a CUDA device)");
    if (cfg->precision == SK_PRECISION_BF16 && !sk_onednn_bf16_check(why, sizeof why))
        return sk_fail(err, SK_ERR_ARG, "precision bf16 on the CPU: %s (use --precision fp32, or a CUDA device)", why);
    if (cfg->plstm_tensor_cores == SK_TENSOR_CORES_ON)
        return sk_fail(err, SK_ERR_ARG, "tensor cores need a CUDA device (the persistent LSTM kernel's); the CPU "
                                        "backend computes on its own cores");
    if (cfg->stream_offset < 0 || (cfg->global_batch > 0 && cfg->stream_offset + cfg->batch_size > cfg->global_batch))
        return sk_fail(err, SK_ERR_ARG, "streams [%d, %d) outside a global batch of %d", cfg->stream_offset,
                       cfg->stream_offset + cfg->batch_size, cfg->global_batch);
    return SK_OK;
}

// The shape, the threads and the probabilities the backend runs with.
static void set_shape(cpu_impl *c, const sk_backend_config *cfg) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = cfg->threads > 0 ? cfg->threads : (int)(cores > 0 ? cores : 1);
    if (c->threads > SK_MAX_THREADS) c->threads = SK_MAX_THREADS;
    c->V = cfg->model.vocab_size, c->E = cfg->model.embed_size, c->H = cfg->model.hidden_size;
    c->L = cfg->model.num_layers, c->B = cfg->batch_size, c->T = cfg->seq_len, c->p = cfg->model.dropout;
    c->wdrop = cfg->model.weight_drop;
    c->stream_offset = cfg->stream_offset;
    c->global_batch = cfg->global_batch > 0 ? cfg->global_batch : cfg->batch_size;
    c->training = cfg->training;
}

// Every buffer (sk_backend_cpu_bytes counts them); 0 when one could not be allocated.
static int alloc_buffers(cpu_impl *c, size_t total) {
    const size_t rows = (size_t)c->T * c->B, H = (size_t)c->H, wide = H > (size_t)c->E ? H : (size_t)c->E;
    int ok = 1;
    c->params = alloc_floats(total, &ok);
    c->x = calloc(rows, sizeof(int32_t));
    c->y = calloc(rows, sizeof(int32_t));
    if (!c->x || !c->y) ok = 0;
    c->emb = alloc_floats(rows * c->E, &ok);
    c->hbuf = alloc_per_layer(c->L, rows * H + (size_t)c->B * H, &ok);
    c->cbuf = alloc_per_layer(c->L, rows * H + (size_t)c->B * H, &ok);
    c->gates = alloc_per_layer(c->L, rows * 4 * H, &ok);
    c->tanh_c = alloc_per_layer(c->L, rows * H, &ok);
    c->w_hh_t = alloc_per_layer(c->L, 4 * H * H, &ok);
    c->logits = alloc_floats(rows * c->V, &ok);
    c->row_loss = alloc_floats(rows, &ok);
    c->h_state = alloc_floats((size_t)c->L * c->B * H, &ok);
    c->c_state = alloc_floats((size_t)c->L * c->B * H, &ok);
    c->in_proj = alloc_floats((size_t)c->V * 4 * H, &ok);
    if (!c->training) return ok;
    c->grads = alloc_floats(total, &ok);
    c->m = alloc_floats(total, &ok);
    c->v = alloc_floats(total, &ok);
    if (c->p > 0.0f) {
        c->mask = alloc_per_layer(c->L, rows * H, &ok);
        c->dropped = alloc_per_layer(c->L, rows * H, &ok);
    }
    if (c->wdrop > 0.0f) c->w_hh_dropped = alloc_per_layer(c->L, 4 * H * H, &ok);
    c->dlogits = alloc_floats(rows * c->V, &ok);
    c->dtop = alloc_floats(rows * wide, &ok);
    c->dx = alloc_floats(rows * wide, &ok);
    c->dgates = alloc_floats(rows * 4 * H, &ok);
    c->dh = alloc_floats((size_t)c->B * H, &ok);
    c->dc = alloc_floats((size_t)c->B * H, &ok);
    return ok;
}

// The oneDNN stack (c->dnn) in bf16, with the views it reads.
static sk_status create_dnn(cpu_impl *c, sk_error *err) {
    const sk_lstm_onednn_config dc = {.B = c->B, .T = c->T, .E = c->E, .H = c->H, .L = c->L, .bf16 = 1,
                                      .threads = c->threads};
    sk_status st = sk_lstm_onednn_create(&dc, &c->dnn, err);
    if (st != SK_OK) return st;
    c->dnn_w = calloc((size_t)c->L, sizeof *c->dnn_w);
    c->dnn_y = calloc((size_t)c->L, sizeof *c->dnn_y);
    if (!c->dnn_w || !c->dnn_y) return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the CPU backend");
    for (int k = 0; k < c->L; k++) c->dnn_y[k] = c->hbuf[k] + (size_t)c->B * c->H;
    return SK_OK;
}

sk_status sk_backend_create_cpu(const sk_backend_config *cfg, sk_backend **out, sk_error *err) {
    *out = NULL;
    sk_status st = check_cpu_config(cfg, err);
    if (st != SK_OK) return st;
    sk_backend *b = calloc(1, sizeof *b);
    cpu_impl *c = calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the CPU backend");
    }
    b->ops = &cpu_ops;
    b->cfg = *cfg;
    // SK_PRECISION_AUTO means fp32 here, until the quality of bf16 is measured (issue 51).
    b->cfg.precision = cfg->precision == SK_PRECISION_BF16 ? SK_PRECISION_BF16 : SK_PRECISION_FP32;
    b->impl = c;
    memcpy(b->device, "cpu", sizeof "cpu");
    st = sk_param_layout_init(&b->layout, &cfg->model, err);
    if (st != SK_OK) {
        cpu_destroy(b);
        return st;
    }
    // OpenBLAS runs single-threaded; the backend splits work over its own threads (parallel.h).
    openblas_set_num_threads(1);
    slow_blas_notice(b->notice, sizeof b->notice);
    sk_recur_init();
    set_shape(c, cfg);
    if (!alloc_buffers(c, b->layout.total)) {
        cpu_destroy(b);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory allocating CPU buffers for B=%d T=%d H=%d L=%d",
                       cfg->batch_size, cfg->seq_len, cfg->model.hidden_size, cfg->model.num_layers);
    }
    c->w = sk_point_params(&b->layout, c->params);
    if (c->training) c->dw = sk_point_params(&b->layout, c->grads);
    if (b->cfg.precision == SK_PRECISION_BF16 && (st = create_dnn(c, err)) != SK_OK) {
        cpu_destroy(b);
        return st;
    }
    *out = b;
    return SK_OK;
}
