// lstm_cpu.c: the LSTM recurrence on the CPU. Matrix products go through CBLAS; the
// input projection and all weight gradients are single GEMMs over the whole window, so
// only the recurrent products h_{t-1} W_hh^T (forward) and dG_t W_hh (backward) run per step,
// through recurrent_gemm.c.
#include "lstm_cpu.h"

#include <cblas.h>
#include <string.h>

#include "activations.h"
#include "matvec_cpu.h"
#include "parallel.h"
#include "recurrent_gemm.h"
#include "shakespeare/lstm_cell.h"

// One stream's cell update (lstm_cell.h with the CPU's activations): g (4H) holds the gate
// pre-activations and receives i, f, g, o after their nonlinearities; restrict lets GCC
// vectorize the loop.
static void cell_forward(int H, float *restrict g, const float *restrict c_prev, float *restrict c,
                         float *restrict tanh_c, float *restrict h) {
    float *restrict gi = g, *restrict gf = g + H, *restrict gg = g + 2 * H, *restrict go = g + 3 * H;
    for (int j = 0; j < H; j++) {
        const sk_lstm_cell_out s = sk_lstm_cell_forward(gi[j], gf[j], gg[j], go[j], c_prev[j], sk_sigmoidf, sk_tanhf);
        gi[j] = s.i, gf[j] = s.f, gg[j] = s.g, go[j] = s.o;
        c[j] = s.c, tanh_c[j] = s.tanh_c, h[j] = s.h;
    }
}

// One stream's backward step (lstm_cell.h): writes the pre-activation gradients dg (4H) and
// updates dc (B's row) in place to the gradient flowing into c_{t-1}.
static void cell_backward(int H, const float *restrict g, const float *restrict c_prev,
                          const float *restrict tanh_c, const float *restrict dh_out, const float *restrict dh,
                          float *restrict dc, float *restrict dg) {
    const float *restrict gi = g, *restrict gf = g + H, *restrict gg = g + 2 * H, *restrict go = g + 3 * H;
    for (int j = 0; j < H; j++) {
        const sk_lstm_cell_grads r =
            sk_lstm_cell_backward(dh_out[j] + dh[j], dc[j], gi[j], gf[j], gg[j], go[j], tanh_c[j], c_prev[j]);
        dg[j] = r.dpre[0], dg[H + j] = r.dpre[1], dg[2 * H + j] = r.dpre[2], dg[3 * H + j] = r.dpre[3];
        dc[j] = r.dc_prev;
    }
}

// The recurrence of streams [b0, b1) over the whole window. Streams never interact inside
// a layer, so disjoint spans run on different threads with no synchronization per step.
typedef struct {
    const sk_lstm_cpu_layer *l;
    int len, b0, b1;
    float *gates, *tanh_c, *hbuf, *cbuf;              // forward
    const float *dh_out;                              // backward
    float *dgates, *dh, *dc;                          // backward
} span_job;

static void forward_span(const span_job *j) {
    const int B = j->l->B, H = j->l->H, G4 = 4 * H, nb = j->b1 - j->b0;
    for (int t = 0; t < j->len; t++) {
        const size_t r = (size_t)t * B + j->b0; // first row of this span at step t
        float *g = j->gates + r * G4;
        const float *h_prev = j->hbuf + r * H, *c_prev = j->cbuf + r * H;
        float *h = j->hbuf + (r + B) * H, *c = j->cbuf + (r + B) * H, *tc = j->tanh_c + r * H;
        if (j->l->step) sk_matvec_rows(G4, H, j->l->w_hh, nb, h_prev, H, g, G4);
        else sk_recur_forward(nb, H, j->l->w_hh, j->l->w_hh_t, h_prev, g);
        for (int b = 0; b < nb; b++)
            cell_forward(H, g + (size_t)b * G4, c_prev + (size_t)b * H, c + (size_t)b * H, tc + (size_t)b * H,
                         h + (size_t)b * H);
    }
}

static void backward_span(const span_job *j) {
    const int B = j->l->B, H = j->l->H, G4 = 4 * H, nb = j->b1 - j->b0;
    float *dh = j->dh + (size_t)j->b0 * H, *dc = j->dc + (size_t)j->b0 * H;
    memset(dh, 0, sizeof(float) * (size_t)nb * H); // gradient flowing from step t+1 into h_t
    memset(dc, 0, sizeof(float) * (size_t)nb * H); // ... and into c_t
    for (int t = j->len - 1; t >= 0; t--) {
        const size_t r = (size_t)t * B + j->b0;
        const float *g = j->gates + r * G4, *c_prev = j->cbuf + r * H, *tc = j->tanh_c + r * H;
        const float *dho = j->dh_out + r * H;
        float *dg = j->dgates + r * G4;
        for (int b = 0; b < nb; b++)
            cell_backward(H, g + (size_t)b * G4, c_prev + (size_t)b * H, tc + (size_t)b * H, dho + (size_t)b * H,
                          dh + (size_t)b * H, dc + (size_t)b * H, dg + (size_t)b * G4);
        // dh_{t-1} = dG_t W_hh; not needed at t = 0 (truncated BPTT).
        if (t > 0) sk_recur_backward(nb, H, j->l->w_hh, dg, dh);
    }
}

typedef struct {
    const span_job *jobs;
    void (*fn)(const span_job *);
} span_table;

static void run_job(void *ctx, int i, int n) {
    (void)n;
    const span_table *t = ctx;
    t->fn(&t->jobs[i]);
}

// The spans the batch is split into: min(threads, B), one per thread.
static int span_count(const sk_lstm_cpu_layer *l) {
    int n = l->threads < l->B ? l->threads : l->B;
    if (n < 1) n = 1;
    return n > SK_MAX_THREADS ? SK_MAX_THREADS : n;
}

// Runs fn over the spans of the batch, one per thread.
static void run_spans(const sk_lstm_cpu_layer *l, span_job proto, void (*fn)(const span_job *)) {
    span_job jobs[SK_MAX_THREADS];
    const int n = span_count(l);
    for (int i = 0; i < n; i++) {
        jobs[i] = proto;
        jobs[i].b0 = (int)((long)l->B * i / n), jobs[i].b1 = (int)((long)l->B * (i + 1) / n);
    }
    span_table ctx = {jobs, fn};
    sk_parallel_for(n, run_job, &ctx);
}

void sk_lstm_cpu_forward(const sk_lstm_cpu_layer *l, int len, const float *x, float *gates, float *tanh_c,
                         float *hbuf, float *cbuf) {
    const int B = l->B, G4 = 4 * l->H, rows = len * B;
    // gates = b_ih + b_hh broadcast, then += x W_ih^T in one GEMM over all steps.
    for (int r = 0; r < rows && !l->gates_in; r++) {
        float *gr = gates + (size_t)r * G4;
        for (int j = 0; j < G4; j++) gr[j] = l->b_ih[j] + l->b_hh[j];
    }
    if (!l->gates_in && l->step)
        sk_matvec_rows(G4, l->in, l->w_ih, rows, x, l->in, gates, G4);
    else if (!l->gates_in)
        sk_sgemm_rows(l->threads, CblasNoTrans, CblasTrans, rows, G4, l->in, 1.0f, x, l->in, l->w_ih, l->in, 1.0f,
                      gates, G4);
    // W_hh laid out once for the window's len steps, when a span holds more than one stream;
    // one stream per span (sampling) multiplies W_hh as stored, a matrix-vector product.
    if (!l->step && B > span_count(l) && !l->w_hh_t_ready) sk_recur_prepare(l->H, l->w_hh, l->w_hh_t);
    span_job job = {.l = l, .len = len, .gates = gates, .tanh_c = tanh_c, .hbuf = hbuf, .cbuf = cbuf};
    run_spans(l, job, forward_span);
}

void sk_lstm_cpu_backward(const sk_lstm_cpu_layer *l, int len, const float *x, const float *gates,
                          const float *tanh_c, const float *hbuf, const float *cbuf, const float *dh_out,
                          float *dgates, float *dh, float *dc, const sk_lstm_cpu_grads *grad, float *dx) {
    const int B = l->B, H = l->H, G4 = 4 * H, rows = len * B;
    span_job job = {.l = l, .len = len, .gates = (float *)gates, .tanh_c = (float *)tanh_c,
                    .hbuf = (float *)hbuf, .cbuf = (float *)cbuf, .dh_out = dh_out, .dgates = dgates,
                    .dh = dh, .dc = dc};
    run_spans(l, job, backward_span);
    // Weight gradients over the whole window: dW_ih = dG^T x, dW_hh = dG^T h_{t-1}.
    sk_sgemm_rows(l->threads, CblasTrans, CblasNoTrans, G4, l->in, rows, 1.0f, dgates, G4, x, l->in, 0.0f, grad->w_ih,
                  l->in);
    sk_sgemm_rows(l->threads, CblasTrans, CblasNoTrans, G4, H, rows, 1.0f, dgates, G4, hbuf, H, 0.0f, grad->w_hh, H);
    // Both biases receive the column sums of dG (summed in row order: deterministic).
    memset(grad->b_ih, 0, sizeof(float) * (size_t)G4);
    for (int r = 0; r < rows; r++) {
        const float *dgr = dgates + (size_t)r * G4;
        for (int j = 0; j < G4; j++) grad->b_ih[j] += dgr[j];
    }
    memcpy(grad->b_hh, grad->b_ih, sizeof(float) * (size_t)G4);
    if (dx)
        sk_sgemm_rows(l->threads, CblasNoTrans, CblasNoTrans, rows, l->in, G4, 1.0f, dgates, G4, l->w_ih, l->in, 0.0f,
                      dx, l->in);
}
