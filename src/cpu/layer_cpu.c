// layer_cpu.c: a recurrent layer on the CPU, any cell (cells_cpu.h). Matrix products go through
// CBLAS; the input projection and all weight gradients are single GEMMs over the whole window,
// so only the recurrent products h_{t-1} W_hh^T (forward) and dG_t W_hh (backward) run per step,
// through recurrent_gemm.c.
#include "layer_cpu.h"

#include <cblas.h>
#include <string.h>

#include "matvec_bf16.h"
#include "matvec_cpu.h"
#include "parallel.h"
#include "recurrent_gemm.h"

// The recurrence of streams [b0, b1) over the whole window. Streams never interact inside
// a layer, so disjoint spans run on different threads with no synchronization per step.
typedef struct {
    const sk_layer_cpu *l;
    int len, b0, b1;
    float *gates, *aux;
    float *const *state;
    const float *dh_out;               // backward
    const sk_layer_cpu_scratch *s;     // backward
} span_job;

// Stream b's rows at row r of the state buffers: prev (r) and next (r + B).
static void state_rows(const span_job *j, size_t r, const float **prev, float **next) {
    const size_t H = (size_t)j->l->H, B = (size_t)j->l->B;
    for (int s = 0; s < j->l->cell->n_states; s++) prev[s] = j->state[s] + r * H, next[s] = j->state[s] + (r + B) * H;
}

static void forward_span(const span_job *j) {
    const sk_layer_cpu *l = j->l;
    const int B = l->B, H = l->H, GH = l->cell->gates * H, A = l->rows->aux, nb = j->b1 - j->b0;
    const int split = l->cell->split_hh;
    for (int t = 0; t < j->len; t++) {
        const size_t r = (size_t)t * B + j->b0; // first row of this span at step t
        float *g = j->gates + r * GH, *acc = g;
        const float *h_prev = j->state[0] + r * H;
        if (split) { // the recurrent product apart, from b_hh
            acc = l->hh + (size_t)j->b0 * GH;
            for (int b = 0; b < nb; b++) memcpy(acc + (size_t)b * GH, l->b_hh, sizeof(float) * (size_t)GH);
        }
        if (l->w_hh16) sk_matvec_bf16_rows(GH, H, l->w_hh16, nb, h_prev, H, acc, GH);
        else if (l->step) sk_matvec_rows(GH, H, l->w_hh, nb, h_prev, H, acc, GH);
        else sk_recur_forward(nb, H, GH, l->w_hh, l->w_hh_t, h_prev, acc);
        for (int b = 0; b < nb; b++) {
            const float *prev[SK_MAX_CELL_STATES];
            float *next[SK_MAX_CELL_STATES];
            state_rows(j, r + (size_t)b, prev, next);
            l->rows->forward(H, g + (size_t)b * GH, split ? acc + (size_t)b * GH : NULL, prev, next,
                             A ? j->aux + (r + (size_t)b) * A * H : NULL);
        }
    }
}

static void backward_span(const span_job *j) {
    const sk_layer_cpu *l = j->l;
    const int B = l->B, H = l->H, GH = l->cell->gates * H, S = l->cell->n_states, A = l->rows->aux;
    const int nb = j->b1 - j->b0, split = l->cell->split_hh;
    float *dh = j->s->dh + (size_t)j->b0 * H; // gradient flowing from step t+1 into h_t
    float *dcarry[SK_MAX_CELL_STATES];        // ... into the states, and h's direct part
    memset(dh, 0, sizeof(float) * (size_t)nb * H);
    for (int s = 0; s < S; s++) {
        dcarry[s] = j->s->dcarry + ((size_t)s * B + j->b0) * H;
        memset(dcarry[s], 0, sizeof(float) * (size_t)nb * H);
    }
    for (int t = j->len - 1; t >= 0; t--) {
        const size_t r = (size_t)t * B + j->b0;
        const float *dho = j->dh_out + r * H;
        float *dg = j->s->dgates + r * GH, *dgh = split ? j->s->dgates_h + r * GH : NULL;
        for (int b = 0; b < nb; b++) {
            const float *prev[SK_MAX_CELL_STATES];
            float *next[SK_MAX_CELL_STATES], *dc[SK_MAX_CELL_STATES];
            state_rows(j, r + (size_t)b, prev, next);
            for (int s = 0; s < S; s++) dc[s] = dcarry[s] + (size_t)b * H;
            l->rows->backward(H, j->gates + (r + (size_t)b) * GH, A ? j->aux + (r + (size_t)b) * A * H : NULL, prev,
                              dho + (size_t)b * H, dh + (size_t)b * H, dc, dg + (size_t)b * GH,
                              split ? dgh + (size_t)b * GH : NULL);
        }
        // dh_{t-1} = dG_t W_hh (+ the direct part); not needed at t = 0 (truncated BPTT).
        if (t > 0) {
            sk_recur_backward(nb, H, GH, l->w_hh, split ? dgh : dg, dh);
            if (l->rows->direct_h)
                for (size_t i = 0; i < (size_t)nb * H; i++) dh[i] += dcarry[0][i];
        }
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
static int span_count(const sk_layer_cpu *l) {
    int n = l->threads < l->B ? l->threads : l->B;
    if (n < 1) n = 1;
    return n > SK_MAX_THREADS ? SK_MAX_THREADS : n;
}

// Runs fn over the spans of the batch, one per thread.
static void run_spans(const sk_layer_cpu *l, span_job proto, void (*fn)(const span_job *)) {
    span_job jobs[SK_MAX_THREADS];
    const int n = span_count(l);
    for (int i = 0; i < n; i++) {
        jobs[i] = proto;
        jobs[i].b0 = (int)((long)l->B * i / n), jobs[i].b1 = (int)((long)l->B * (i + 1) / n);
    }
    span_table ctx = {.jobs = jobs, .fn = fn};
    sk_parallel_for(n, run_job, &ctx);
}

sk_layer_cpu sk_layer_cpu_make(sk_cell_kind kind, int B, int H, int in, int threads, const float *w_ih,
                               const float *w_hh, const float *b_ih, const float *b_hh) {
    return (sk_layer_cpu){.cell = sk_cell_get(kind), .rows = sk_cell_cpu_get(kind), .B = B, .H = H, .in = in,
                          .threads = threads, .w_ih = w_ih, .w_hh = w_hh, .b_ih = b_ih, .b_hh = b_hh};
}

void sk_layer_cpu_input(const sk_layer_cpu *l, int rows, const float *x, float *gates) {
    const int GH = l->cell->gates * l->H;
    for (int r = 0; r < rows; r++) {
        float *gr = gates + (size_t)r * GH;
        if (l->cell->split_hh) memcpy(gr, l->b_ih, sizeof(float) * (size_t)GH);
        else for (int j = 0; j < GH; j++) gr[j] = l->b_ih[j] + l->b_hh[j];
    }
    if (l->w_ih16)
        sk_matvec_bf16_rows(GH, l->in, l->w_ih16, rows, x, l->in, gates, GH);
    else if (l->step)
        sk_matvec_rows(GH, l->in, l->w_ih, rows, x, l->in, gates, GH);
    else
        sk_sgemm_rows(l->threads, CblasNoTrans, CblasTrans, rows, GH, l->in, 1.0f, x, l->in, l->w_ih, l->in, 1.0f,
                      gates, GH);
}

void sk_layer_cpu_forward(const sk_layer_cpu *l, int len, const float *x, float *gates, float *aux,
                          float *const *state) {
    if (!l->gates_in) sk_layer_cpu_input(l, len * l->B, x, gates);
    // W_hh laid out once for the window's len steps, when a span holds more than one stream;
    // one stream per span (sampling) multiplies W_hh as stored, a matrix-vector product.
    if (!l->step && !l->w_hh16 && l->B > span_count(l) && !l->w_hh_t_ready)
        sk_recur_prepare(l->H, l->cell->gates * l->H, l->w_hh, l->w_hh_t);
    span_job job = {.l = l, .len = len, .gates = gates, .aux = aux, .state = state};
    run_spans(l, job, forward_span);
}

// Column sums of d (rows, n) into out, in row order (deterministic).
static void column_sums(const float *d, int rows, int n, float *out) {
    memset(out, 0, sizeof(float) * (size_t)n);
    for (int r = 0; r < rows; r++) {
        const float *dr = d + (size_t)r * n;
        for (int j = 0; j < n; j++) out[j] += dr[j];
    }
}

void sk_layer_cpu_backward(const sk_layer_cpu *l, int len, const float *x, const float *gates, const float *aux,
                           float *const *state, const float *dh_out, const sk_layer_cpu_scratch *s,
                           const sk_layer_cpu_grads *grad, float *dx) {
    const int B = l->B, H = l->H, GH = l->cell->gates * H, rows = len * B;
    span_job job = {.l = l, .len = len, .gates = (float *)gates, .aux = (float *)aux, .state = state,
                    .dh_out = dh_out, .s = s};
    run_spans(l, job, backward_span);
    const float *dgh = l->cell->split_hh ? s->dgates_h : s->dgates; // the recurrent side's
    // Weight gradients over the whole window: dW_ih = dG^T x, dW_hh = dG_h^T h_{t-1}.
    sk_sgemm_rows(l->threads, CblasTrans, CblasNoTrans, GH, l->in, rows, 1.0f, s->dgates, GH, x, l->in, 0.0f,
                  grad->w_ih, l->in);
    sk_sgemm_rows(l->threads, CblasTrans, CblasNoTrans, GH, H, rows, 1.0f, dgh, GH, state[0], H, 0.0f, grad->w_hh, H);
    // The biases receive the column sums of their side's dG (one sum when both sides are one).
    column_sums(s->dgates, rows, GH, grad->b_ih);
    if (l->cell->split_hh) column_sums(dgh, rows, GH, grad->b_hh);
    else memcpy(grad->b_hh, grad->b_ih, sizeof(float) * (size_t)GH);
    if (dx)
        sk_sgemm_rows(l->threads, CblasNoTrans, CblasNoTrans, rows, l->in, GH, 1.0f, s->dgates, GH, l->w_ih, l->in,
                      0.0f, dx, l->in);
}
