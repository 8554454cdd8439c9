// lstm_onednn.c: the LSTM stack through oneDNN 2.x's LSTM primitive (lstm_onednn.h), one
// primitive per layer so that dropout applies between layers. Built only with oneDNN
// (CMakeLists.txt); lstm_onednn_stub.c stands in without it.
#include "lstm_onednn.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#if DNNL_VERSION_MAJOR != 2
#error "lstm_onednn.c is written against oneDNN 2.x's C API (Debian's libdnnl-dev 2.6)"
#endif

// A failing oneDNN call: its text, oneDNN's status and file:line, as the caller's error.
#define DNNL_TRY(call)                                                                                         \
    do {                                                                                                       \
        dnnl_status_t st_ = (call);                                                                            \
        if (st_ != dnnl_success)                                                                               \
            return sk_fail(err, SK_ERR_DEVICE, "oneDNN: %s failed: %s (%s:%d)", #call, dnnl_status2str(st_), \
                           __FILE__, __LINE__);                                                                \
    } while (0)

typedef dnnl_memory_desc_t md_t;

// One layer's primitives for a window of len steps, and the buffers they need. "lp" is the
// operands' type: bf16, or f32 in the fp32 precision (then the lp buffers alias f32 ones).
typedef struct {
    int in;                            // input width: E for layer 0, H above
    dnnl_primitive_desc_t fpd, bpd;    // forward_training and backward
    dnnl_primitive_t fwd, bwd;
    md_t src, src_f, iter, iter_f, iter_c, dst, dst_f, bias, w_user_l, w_user_i; // plain layouts
    md_t wl_f, wi_f, wl_b, wi_b, dwl, dwi, ws;                                   // the primitives' own
    void *wl_f_buf, *wi_f_buf, *wl_b_buf, *wi_b_buf, *dwl_buf, *dwi_buf, *ws_buf;
    float *bias_buf;       // (4H) b_ih + b_hh
    float *h0, *c0, *cT;   // (B, H) the window's initial state (copied: the caller's may become the final)
    void *h0_lp, *hT_lp;   // (B, H) in lp
    void *src_lp, *dst_lp; // (len*B, in), (len*B, H) in lp: bf16 only (fp32 reads the caller's)
    const float *x;        // borrowed: the window's input (read again by backward)
    float *y;              // borrowed: the window's output
} dnn_layer;

struct sk_lstm_onednn {
    sk_lstm_onednn_config cfg;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_data_type_t lp; // dnnl_bf16 or dnnl_f32
    int len;             // the window the layers' primitives are built for (0: none yet)
    dnn_layer *layer;    // [L]
    float *zeros;        // (B, H) the gradient entering through the final state: none (truncated BPTT)
    float *d_iter;       // (2, B, H) scratch for the gradients leaving through h0 and c0 (not used)
    float *da, *db;      // (T*B, max(E, H)) the gradient between layers
};

static int test_reference_kernels; // sk_onednn_test_reference_kernels

void sk_onednn_test_reference_kernels(int on) { test_reference_kernels = on; }

int sk_onednn_bf16_check(char *why, size_t n) {
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    const dnnl_cpu_isa_t need = test_reference_kernels ? dnnl_cpu_isa_avx512_core : dnnl_cpu_isa_avx512_core_bf16;
    if ((isa & need) == need) return 1;
    snprintf(why, n, "this CPU has no bf16 dot products (oneDNN dispatches to ISA 0x%x; bf16 needs AVX512_BF16 "
                     "or AMX%s)", (unsigned)isa, getenv("ONEDNN_MAX_CPU_ISA") ? ", and ONEDNN_MAX_CPU_ISA caps it" : "");
    return 0;
}

static md_t plain(int nd, const dnnl_dim_t *dims, dnnl_data_type_t dt, dnnl_format_tag_t tag) {
    md_t md;
    dnnl_dims_t full = {0}; // the API reads a whole dnnl_dims_t
    memcpy(full, dims, sizeof(dnnl_dim_t) * (size_t)nd);
    dnnl_memory_desc_init_by_tag(&md, nd, full, dt, tag);
    return md;
}

// Runs primitive p on the (arg, md, pointer) triples and waits for it.
typedef struct {
    int arg;
    const md_t *md;
    const void *ptr;
} exec_arg;

static sk_status execute(sk_lstm_onednn *s, dnnl_primitive_t p, const exec_arg *a, int n, sk_error *err) {
    dnnl_exec_arg_t args[24];
    int made = 0;
    dnnl_status_t st = dnnl_success;
    for (; made < n && st == dnnl_success; made++) {
        args[made].arg = a[made].arg;
        st = dnnl_memory_create(&args[made].memory, a[made].md, s->engine, (void *)a[made].ptr);
        if (st != dnnl_success) break;
    }
    if (st == dnnl_success) st = dnnl_primitive_execute(p, s->stream, n, args);
    if (st == dnnl_success) st = dnnl_stream_wait(s->stream);
    for (int i = 0; i < made; i++) dnnl_memory_destroy(args[i].memory);
    DNNL_TRY(st);
    return SK_OK;
}

// to (to_md) = from (from_md): a layout change, a type conversion (round to nearest even), or both.
static sk_status reorder(sk_lstm_onednn *s, const md_t *from_md, const void *from, const md_t *to_md, void *to,
                         sk_error *err) {
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, from_md, s->engine, to_md, s->engine, NULL));
    dnnl_status_t st = dnnl_primitive_create(&p, pd);
    dnnl_primitive_desc_destroy(pd);
    DNNL_TRY(st);
    const exec_arg a[] = {{DNNL_ARG_FROM, from_md, from}, {DNNL_ARG_TO, to_md, to}};
    sk_status r = execute(s, p, a, 2, err);
    dnnl_primitive_destroy(p);
    return r;
}

static void layer_release(dnn_layer *d) {
    if (d->fwd) dnnl_primitive_destroy(d->fwd);
    if (d->bwd) dnnl_primitive_destroy(d->bwd);
    if (d->fpd) dnnl_primitive_desc_destroy(d->fpd);
    if (d->bpd) dnnl_primitive_desc_destroy(d->bpd);
    void *bufs[] = {d->wl_f_buf, d->wi_f_buf, d->wl_b_buf, d->wi_b_buf, d->dwl_buf, d->dwi_buf, d->ws_buf,
                    d->bias_buf, d->h0,       d->c0,       d->cT,       d->hT_lp,   d->src_lp,  d->dst_lp};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    if (d->h0_lp != d->h0) free(d->h0_lp);
    const int in = d->in;
    memset(d, 0, sizeof *d);
    d->in = in;
}

// The plain (user-side) layouts of layer d for a window of len steps.
static void plain_layouts(const sk_lstm_onednn *s, dnn_layer *d, int len) {
    const int B = s->cfg.B, H = s->cfg.H;
    const dnnl_dim_t src[] = {len, B, d->in}, dst[] = {len, B, H}, iter[] = {1, 1, B, H}, bias[] = {1, 1, 4, H};
    const dnnl_dim_t wl[] = {1, 1, d->in, 4, H}, wi[] = {1, 1, H, 4, H};
    d->src = plain(3, src, s->lp, dnnl_tnc), d->src_f = plain(3, src, dnnl_f32, dnnl_tnc);
    d->dst = plain(3, dst, s->lp, dnnl_tnc), d->dst_f = plain(3, dst, dnnl_f32, dnnl_tnc);
    d->iter = plain(4, iter, s->lp, dnnl_ldnc), d->iter_f = plain(4, iter, dnnl_f32, dnnl_ldnc);
    d->iter_c = d->iter_f;
    d->bias = plain(4, bias, dnnl_f32, dnnl_ldgo);
    // Canonical (4H, in) row-major is ldgoi: for each gate g and unit o, the in inputs.
    d->w_user_l = plain(5, wl, dnnl_f32, dnnl_ldgoi), d->w_user_i = plain(5, wi, dnnl_f32, dnnl_ldgoi);
}

// The forward and backward primitives of layer d for len steps, weights in the layouts oneDNN picks.
static sk_status layer_primitives(sk_lstm_onednn *s, dnn_layer *d, int len, sk_error *err) {
    const int H = s->cfg.H;
    const dnnl_dim_t wl[] = {1, 1, d->in, 4, H}, wi[] = {1, 1, H, 4, H};
    const md_t wl_any = plain(5, wl, s->lp, dnnl_format_tag_any), wi_any = plain(5, wi, s->lp, dnnl_format_tag_any);
    const md_t dwl_any = plain(5, wl, dnnl_f32, dnnl_format_tag_any), dwi_any = plain(5, wi, dnnl_f32, dnnl_format_tag_any);
    const dnnl_dim_t ddst[] = {len, s->cfg.B, H};
    const md_t d_src = d->src_f, d_dst = plain(3, ddst, dnnl_f32, dnnl_tnc);
    dnnl_rnn_desc_t fd, bd;
    DNNL_TRY(dnnl_lstm_forward_desc_init(&fd, dnnl_forward_training, dnnl_unidirectional_left2right, &d->src, &d->iter,
                                         &d->iter_c, &wl_any, &wi_any, &d->bias, &d->dst, &d->iter, &d->iter_c, 0));
    DNNL_TRY(dnnl_primitive_desc_create(&d->fpd, &fd, NULL, s->engine, NULL));
    DNNL_TRY(dnnl_lstm_backward_desc_init(&bd, dnnl_backward, dnnl_unidirectional_left2right, &d->src, &d->iter,
                                          &d->iter_c, &wl_any, &wi_any, &d->bias, &d->dst, &d->iter, &d->iter_c,
                                          &d_src, &d->iter_f, &d->iter_f, &dwl_any, &dwi_any, &d->bias, &d_dst,
                                          &d->iter_f, &d->iter_f, 0));
    DNNL_TRY(dnnl_primitive_desc_create(&d->bpd, &bd, NULL, s->engine, d->fpd));
    DNNL_TRY(dnnl_primitive_create(&d->fwd, d->fpd));
    DNNL_TRY(dnnl_primitive_create(&d->bwd, d->bpd));
    d->wl_f = *dnnl_primitive_desc_query_md(d->fpd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS_LAYER);
    d->wi_f = *dnnl_primitive_desc_query_md(d->fpd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS_ITER);
    d->ws = *dnnl_primitive_desc_query_md(d->fpd, dnnl_query_exec_arg_md, DNNL_ARG_WORKSPACE);
    d->wl_b = *dnnl_primitive_desc_query_md(d->bpd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS_LAYER);
    d->wi_b = *dnnl_primitive_desc_query_md(d->bpd, dnnl_query_exec_arg_md, DNNL_ARG_WEIGHTS_ITER);
    d->dwl = *dnnl_primitive_desc_query_md(d->bpd, dnnl_query_exec_arg_md, DNNL_ARG_DIFF_WEIGHTS_LAYER);
    d->dwi = *dnnl_primitive_desc_query_md(d->bpd, dnnl_query_exec_arg_md, DNNL_ARG_DIFF_WEIGHTS_ITER);
    return SK_OK;
}

static void *alloc_md(const md_t *md, int *ok) {
    size_t n = dnnl_memory_desc_get_size(md);
    void *p = calloc(n ? n : 1, 1);
    if (!p) *ok = 0;
    return p;
}

// Layer d ready for windows of len steps: its primitives and buffers.
static sk_status layer_build(sk_lstm_onednn *s, dnn_layer *d, int len, sk_error *err) {
    layer_release(d);
    plain_layouts(s, d, len);
    sk_status st = layer_primitives(s, d, len, err);
    if (st != SK_OK) return st;
    int ok = 1;
    const md_t *owned[] = {&d->wl_f, &d->wi_f, &d->wl_b, &d->wi_b, &d->dwl, &d->dwi, &d->ws};
    void **bufs[] = {&d->wl_f_buf, &d->wi_f_buf, &d->wl_b_buf, &d->wi_b_buf, &d->dwl_buf, &d->dwi_buf, &d->ws_buf};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) *bufs[i] = alloc_md(owned[i], &ok);
    d->bias_buf = alloc_md(&d->bias, &ok);
    d->h0 = alloc_md(&d->iter_f, &ok), d->c0 = alloc_md(&d->iter_f, &ok), d->cT = alloc_md(&d->iter_f, &ok);
    d->hT_lp = alloc_md(&d->iter, &ok);
    d->h0_lp = s->lp == dnnl_f32 ? (void *)d->h0 : alloc_md(&d->iter, &ok);
    if (s->lp != dnnl_f32) d->src_lp = alloc_md(&d->src, &ok), d->dst_lp = alloc_md(&d->dst, &ok);
    return ok ? SK_OK : sk_fail(err, SK_ERR_NOMEM, "out of memory for oneDNN's LSTM buffers (len %d)", len);
}

void sk_lstm_onednn_free(sk_lstm_onednn *s) {
    if (!s) return;
    for (int k = 0; s->layer && k < s->cfg.L; k++) layer_release(&s->layer[k]);
    free(s->layer);
    free(s->zeros), free(s->d_iter), free(s->da), free(s->db);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->engine) dnnl_engine_destroy(s->engine);
    free(s);
}

sk_status sk_lstm_onednn_create(const sk_lstm_onednn_config *cfg, sk_lstm_onednn **out, sk_error *err) {
    *out = NULL;
    char why[256];
    if (cfg->bf16 && !sk_onednn_bf16_check(why, sizeof why))
        return sk_fail(err, SK_ERR_ARG, "precision bf16 on the CPU: %s (use --precision fp32)", why);
    sk_lstm_onednn *s = calloc(1, sizeof *s);
    if (!s) return sk_fail(err, SK_ERR_NOMEM, "out of memory creating oneDNN's LSTM");
    s->cfg = *cfg;
    s->lp = cfg->bf16 ? dnnl_bf16 : dnnl_f32;
    const size_t BH = (size_t)cfg->B * cfg->H, wide = (size_t)(cfg->H > cfg->E ? cfg->H : cfg->E);
    s->layer = calloc((size_t)cfg->L, sizeof *s->layer);
    s->zeros = calloc(BH, sizeof(float)), s->d_iter = calloc(2 * BH, sizeof(float));
    s->da = calloc((size_t)cfg->T * cfg->B * wide, sizeof(float));
    s->db = calloc((size_t)cfg->T * cfg->B * wide, sizeof(float));
    if (!s->layer || !s->zeros || !s->d_iter || !s->da || !s->db) {
        sk_lstm_onednn_free(s);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating oneDNN's LSTM");
    }
    for (int k = 0; k < cfg->L; k++) s->layer[k].in = k == 0 ? cfg->E : cfg->H;
    dnnl_status_t st = dnnl_engine_create(&s->engine, dnnl_cpu, 0);
    if (st == dnnl_success) st = dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        sk_lstm_onednn_free(s);
        return sk_fail(err, SK_ERR_DEVICE, "oneDNN: no CPU engine: %s", dnnl_status2str(st));
    }
    *out = s;
    return SK_OK;
}

// Layer k forward: x (len*B, in) from (h0, c0) to y (len*B, H) and (hT, cT) (B, H).
static sk_status layer_forward(sk_lstm_onednn *s, dnn_layer *d, const sk_layer_tensors *w, const float *x,
                               const float *h0, const float *c0, float *y, float *hT, float *cT, sk_error *err) {
    const size_t BH = (size_t)s->cfg.B * s->cfg.H, G4 = 4 * (size_t)s->cfg.H;
    const int lp = s->lp != dnnl_f32;
    for (size_t j = 0; j < G4; j++) d->bias_buf[j] = w->b_ih[j] + w->b_hh[j];
    memcpy(d->h0, h0, sizeof(float) * BH);
    memcpy(d->c0, c0, sizeof(float) * BH);
    d->x = x, d->y = y;
    sk_status st = reorder(s, &d->w_user_l, w->w_ih, &d->wl_f, d->wl_f_buf, err);
    if (st == SK_OK) st = reorder(s, &d->w_user_i, w->w_hh, &d->wi_f, d->wi_f_buf, err);
    if (st == SK_OK && lp) st = reorder(s, &d->iter_f, d->h0, &d->iter, d->h0_lp, err);
    if (st == SK_OK && lp) st = reorder(s, &d->src_f, x, &d->src, d->src_lp, err);
    if (st != SK_OK) return st;
    const exec_arg a[] = {
        {DNNL_ARG_SRC_LAYER, &d->src, lp ? d->src_lp : x}, {DNNL_ARG_SRC_ITER, &d->iter, d->h0_lp},
        {DNNL_ARG_SRC_ITER_C, &d->iter_c, d->c0},           {DNNL_ARG_WEIGHTS_LAYER, &d->wl_f, d->wl_f_buf},
        {DNNL_ARG_WEIGHTS_ITER, &d->wi_f, d->wi_f_buf},     {DNNL_ARG_BIAS, &d->bias, d->bias_buf},
        {DNNL_ARG_DST_LAYER, &d->dst, lp ? d->dst_lp : y},  {DNNL_ARG_DST_ITER, &d->iter, d->hT_lp},
        {DNNL_ARG_DST_ITER_C, &d->iter_c, d->cT},           {DNNL_ARG_WORKSPACE, &d->ws, d->ws_buf},
    };
    st = execute(s, d->fwd, a, (int)(sizeof a / sizeof a[0]), err);
    if (st == SK_OK && lp) st = reorder(s, &d->dst, d->dst_lp, &d->dst_f, y, err);
    if (st == SK_OK && lp) st = reorder(s, &d->iter, d->hT_lp, &d->iter_f, hT, err);
    if (st != SK_OK) return st;
    if (!lp) memcpy(hT, d->hT_lp, sizeof(float) * BH);
    memcpy(cT, d->cT, sizeof(float) * BH);
    return SK_OK;
}

const float *sk_lstm_onednn_forward(sk_lstm_onednn *s, int len, const float *x, const sk_layer_tensors *w,
                                    const float *h0, const float *c0, float *hT, float *cT, float *const *y,
                                    const sk_lstm_onednn_between *between, sk_error *err) {
    if (len < 1 || len > s->cfg.T) {
        sk_fail(err, SK_ERR_ARG, "oneDNN's LSTM over %d steps; it takes 1 to %d", len, s->cfg.T);
        return NULL;
    }
    omp_set_num_threads(s->cfg.threads);
    const size_t BH = (size_t)s->cfg.B * s->cfg.H;
    const float *in = x;
    for (int k = 0; k < s->cfg.L; k++) {
        dnn_layer *d = &s->layer[k];
        if (len != s->len && layer_build(s, d, len, err) != SK_OK) {
            s->len = 0;
            return NULL;
        }
        if (layer_forward(s, d, &w[k], in, h0 + k * BH, c0 + k * BH, y[k], hT + k * BH, cT + k * BH, err) !=
            SK_OK) {
            s->len = 0; // every layer built again next time, and no backward of this window
            return NULL;
        }
        in = between && between->forward ? between->forward(between->ctx, k, len, y[k]) : y[k];
    }
    s->len = len;
    return in;
}

// Layer k backward: dy (len*B, H) to dx (len*B, in) and g (overwritten).
static sk_status layer_backward(sk_lstm_onednn *s, dnn_layer *d, const sk_layer_tensors *w, const sk_layer_tensors *g,
                                const float *dy, float *dx, sk_error *err) {
    const int lp = s->lp != dnnl_f32;
    const size_t G4 = 4 * (size_t)s->cfg.H, BH = (size_t)s->cfg.B * s->cfg.H;
    sk_status st = reorder(s, &d->w_user_l, w->w_ih, &d->wl_b, d->wl_b_buf, err);
    if (st == SK_OK) st = reorder(s, &d->w_user_i, w->w_hh, &d->wi_b, d->wi_b_buf, err);
    if (st != SK_OK) return st;
    // oneDNN 2.x's backward adds into the weight and bias gradients.
    memset(d->dwl_buf, 0, dnnl_memory_desc_get_size(&d->dwl));
    memset(d->dwi_buf, 0, dnnl_memory_desc_get_size(&d->dwi));
    memset(g->b_ih, 0, sizeof(float) * G4);
    const md_t *dst_f = &d->dst_f, *src_f = &d->src_f, *iter_f = &d->iter_f;
    const exec_arg a[] = {
        {DNNL_ARG_SRC_LAYER, &d->src, lp ? d->src_lp : d->x}, {DNNL_ARG_SRC_ITER, &d->iter, d->h0_lp},
        {DNNL_ARG_SRC_ITER_C, &d->iter_c, d->c0},              {DNNL_ARG_WEIGHTS_LAYER, &d->wl_b, d->wl_b_buf},
        {DNNL_ARG_WEIGHTS_ITER, &d->wi_b, d->wi_b_buf},        {DNNL_ARG_BIAS, &d->bias, d->bias_buf},
        {DNNL_ARG_DST_LAYER, &d->dst, lp ? d->dst_lp : d->y},  {DNNL_ARG_DST_ITER, &d->iter, d->hT_lp},
        {DNNL_ARG_DST_ITER_C, &d->iter_c, d->cT},              {DNNL_ARG_WORKSPACE, &d->ws, d->ws_buf},
        {DNNL_ARG_DIFF_SRC_LAYER, src_f, dx},                  {DNNL_ARG_DIFF_SRC_ITER, iter_f, s->d_iter},
        {DNNL_ARG_DIFF_SRC_ITER_C, iter_f, s->d_iter + BH},         {DNNL_ARG_DIFF_WEIGHTS_LAYER, &d->dwl, d->dwl_buf},
        {DNNL_ARG_DIFF_WEIGHTS_ITER, &d->dwi, d->dwi_buf},     {DNNL_ARG_DIFF_BIAS, &d->bias, g->b_ih},
        {DNNL_ARG_DIFF_DST_LAYER, dst_f, dy},                  {DNNL_ARG_DIFF_DST_ITER, iter_f, s->zeros},
        {DNNL_ARG_DIFF_DST_ITER_C, iter_f, s->zeros},
    };
    st = execute(s, d->bwd, a, (int)(sizeof a / sizeof a[0]), err);
    if (st == SK_OK) st = reorder(s, &d->dwl, d->dwl_buf, &d->w_user_l, g->w_ih, err);
    if (st == SK_OK) st = reorder(s, &d->dwi, d->dwi_buf, &d->w_user_i, g->w_hh, err);
    if (st == SK_OK) memcpy(g->b_hh, g->b_ih, sizeof(float) * G4);
    return st;
}

sk_status sk_lstm_onednn_backward(sk_lstm_onednn *s, float *dtop, const sk_layer_tensors *w, const sk_layer_tensors *g,
                                  float *dx, const sk_lstm_onednn_between *between, sk_error *err) {
    if (s->len < 1) return sk_fail(err, SK_ERR_ARG, "oneDNN's LSTM backward without a forward before it");
    omp_set_num_threads(s->cfg.threads);
    float *dy = dtop;
    for (int k = s->cfg.L - 1; k >= 0; k--) {
        if (between && between->backward) between->backward(between->ctx, k, s->len, dy);
        // Layer k's input gradient: dx for layer 0 (scratch when the caller skips it), else
        // the scratch buffer that dy does not hold.
        float *d_in = k > 0 ? (dy == s->da ? s->db : s->da) : (dx ? dx : (dy == s->da ? s->db : s->da));
        sk_status st = layer_backward(s, &s->layer[k], &w[k], &g[k], dy, d_in, err);
        if (st != SK_OK) return st;
        dy = d_in;
    }
    return SK_OK;
}
