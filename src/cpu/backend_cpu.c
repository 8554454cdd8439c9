// backend_cpu.c: the CPU reference backend. Embedding -> recurrent stack (stack_cpu.h, with
// dropout) -> linear -> softmax cross-entropy, forward and backward, and the optimizer's update.
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
#include "lstm_onednn.h"
#include "matvec_bf16.h"
#include "matvec_cpu.h"
#include "parallel.h"
#include "recurrent_gemm.h"
#include "shakespeare/rng.h"
#include "stack_cpu.h"
#include "xent_cpu.h"

typedef struct {
    int V, E, H, L, B, T;
    int stream_offset, global_batch; // data-parallel: see sk_backend_config
    int training;   // backward buffers allocated
    int threads;    // BLAS threads, and spans of the recurrence
    int len;        // steps of the last forward
    int last_train; // the last forward was SK_MODE_TRAIN (backward allowed)
    // One allocation, llm.c's layout: params, then (training) grads and cfg.optimizer's slots
    // (optim.h), each (total,) in the canonical layout; params owns it.
    float *params, *grads; // (total,)
    float *opt_state;      // (n_slots, total), slot k at opt_state + k * total
    int n_slots;           // sk_optim_of(cfg.optimizer)->n_slots when training, else 0
    sk_param_tensors w, dw;         // named views of params and (training) grads
    sk_cpu_stack *stack; // the recurrent layers, their dropout and the carried state (stack_cpu.h)
    int32_t *x, *y;  // (T*B) time-major copies of the window
    float *emb;      // (T*B, E) embedded inputs (training forwards)
    const float *top; // (T*B, H) what fc read in the last forward (the stack's)
    float *logits;   // (T*B, V)
    float *row_loss; // (T*B) per-row -log p(y), summed in row order for determinism
    // backward scratch
    float *dlogits;  // (T*B, V)
    float *dtop;     // (T*B, H) gradient w.r.t. top
    // Inference in bf16 (precision bf16, not training): fc's weight rounded to bf16, what the
    // logits read (the stack keeps its own matrices' copies); stale (fc_w16_ok 0) after set_params.
    uint16_t *fc_w16; // (V, H), allocated when bf16_infer
    int fc_w16_ok;
    int bf16_infer;   // bf16_inference(cfg)
} cpu_impl;

static cpu_impl *impl_of(sk_backend *b) { return (cpu_impl *)b->impl; }

// One buffer of the backend (the stack's are its own): where it goes, its elements and their
// size, whether this backend needs it (the backward side only when training), and whether it is
// an activation (it grows with the window's T x B rows; sk_backend_cpu_bytes' *activations).
typedef struct {
    void **p;
    size_t n, size;
    int needed;
    int activation;
} cpu_buffer;

enum { CPU_BUFFERS = 9 };

// Every buffer of c's shape (set_shape) for `total` parameters, in one table: alloc_buffers,
// the memory estimate (sk_backend_cpu_bytes) and cpu_destroy read the same rows. The first
// holds the parameters and, when training, their gradients and the optimizer's slots (llm.c's
// one allocation).
static void cpu_buffers(cpu_impl *c, size_t total, cpu_buffer bufs[CPU_BUFFERS]) {
    const size_t rows = (size_t)c->T * c->B, f = sizeof(float), id = sizeof(int32_t);
    const int train = c->training;
    const cpu_buffer table[CPU_BUFFERS] = {
        {.p = (void **)&c->params, .n = total * (train ? 2 + (size_t)c->n_slots : 1), .size = f, .needed = 1},
        {.p = (void **)&c->x, .n = rows, .size = id, .needed = 1, .activation = 1},
        {.p = (void **)&c->y, .n = rows, .size = id, .needed = 1, .activation = 1},
        {.p = (void **)&c->emb, .n = rows * c->E, .size = f, .needed = 1, .activation = 1},
        {.p = (void **)&c->logits, .n = rows * c->V, .size = f, .needed = 1, .activation = 1},
        {.p = (void **)&c->row_loss, .n = rows, .size = f, .needed = 1, .activation = 1},
        {.p = (void **)&c->dlogits, .n = rows * c->V, .size = f, .needed = train, .activation = 1},
        {.p = (void **)&c->dtop, .n = rows * c->H, .size = f, .needed = train, .activation = 1},
        {.p = (void **)&c->fc_w16, .n = (size_t)c->V * c->H, .size = sizeof(uint16_t), .needed = c->bf16_infer},
    };
    memcpy(bufs, table, sizeof table);
}

static void cpu_destroy(sk_backend *b) {
    cpu_impl *c = impl_of(b);
    if (c) {
        sk_cpu_stack_destroy(c->stack);
        cpu_buffer bufs[CPU_BUFFERS]; // the table that allocated them (params holds grads and the slots)
        cpu_buffers(c, 0, bufs);
        for (size_t i = 0; i < CPU_BUFFERS; i++) free(*bufs[i].p);
        free(c);
    }
    sk_param_layout_free(&b->layout);
    free(b);
}

static sk_status cpu_set_params(sk_backend *b, const float *params) {
    memcpy(impl_of(b)->params, params, sizeof(float) * b->layout.total);
    impl_of(b)->stack->ops->params_changed(impl_of(b)->stack);
    impl_of(b)->fc_w16_ok = 0;
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
static sk_status cpu_set_optimizer_state(sk_backend *b, int slot, const float *x) {
    memcpy(impl_of(b)->opt_state + (size_t)slot * b->layout.total, x, sizeof(float) * b->layout.total);
    return SK_OK;
}
static sk_status cpu_get_optimizer_state(sk_backend *b, int slot, float *x) {
    memcpy(x, impl_of(b)->opt_state + (size_t)slot * b->layout.total, sizeof(float) * b->layout.total);
    return SK_OK;
}
// The carried state: the stack's (S, L, B, H), S the cell's states (cell.h).
static size_t state_floats(const cpu_impl *c) {
    return (size_t)c->stack->cfg.cell->n_states * c->L * c->B * c->H;
}
static sk_status cpu_set_state(sk_backend *b, const float *state) {
    cpu_impl *c = impl_of(b);
    if (state) memcpy(c->stack->state, state, sizeof(float) * state_floats(c));
    else memset(c->stack->state, 0, sizeof(float) * state_floats(c));
    return SK_OK;
}
static sk_status cpu_get_state(sk_backend *b, float *state) {
    cpu_impl *c = impl_of(b);
    memcpy(state, c->stack->state, sizeof(float) * state_floats(c));
    return SK_OK;
}

// Numerically stable log-softmax cross-entropy per row (xent_cpu.c); keeps the logits.
static void row_losses(cpu_impl *c, int rows) {
    const int V = c->V;
    for (int r = 0; r < rows; r++) c->row_loss[r] = sk_xent_row_loss(c->logits + (size_t)r * V, V, c->y[r]);
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

// logits = top W_fc^T + b_fc, in bf16 inference over fc's rounded copy (made on first use).
static void fc_forward_bf16(cpu_impl *c, const float *top, int rows) {
    if (!c->fc_w16_ok) sk_bf16_pack_rows(c->V, c->H, c->w.fc_w, c->fc_w16), c->fc_w16_ok = 1;
    sk_matvec_bf16_rows(c->V, c->H, c->fc_w16, rows, top, c->H, c->logits, c->V);
}

// logits = top W_fc^T + b_fc
static void fc_forward(cpu_impl *c, const float *top, int rows, int infer_step) {
    const int H = c->H, V = c->V;
    for (int r = 0; r < rows; r++) memcpy(c->logits + (size_t)r * V, c->w.fc_b, sizeof(float) * V);
    if (c->fc_w16)
        fc_forward_bf16(c, top, rows);
    else if (infer_step)
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
    if (train) sk_embedding_cpu_forward(c->emb, c->w.embedding, c->x, rows, c->E);
    st = c->stack->ops->forward(c->stack, &c->w, len, train, infer_step, step, c->x, c->emb, &c->top, &b->err);
    if (st != SK_OK) return st;
    fc_forward(c, c->top, rows, infer_step);
    c->len = len;
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
    const int H = c->H, E = c->E, V = c->V, len = c->len, rows = len * c->B;
    const sk_param_tensors *G = &c->dw;
    const float inv_n = 1.0f / (float)(len * c->global_batch);

    // dlogits = (softmax - onehot(y)) / rows of the global batch
    for (int r = 0; r < rows; r++)
        sk_xent_row_dlogits(c->logits + (size_t)r * V, V, c->y[r], inv_n, c->dlogits + (size_t)r * V);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, rows, 1.0f, c->dlogits, V, c->top, H, 0.0f, G->fc_w, H);
    float *gb = G->fc_b;
    memset(gb, 0, sizeof(float) * V);
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < V; v++) gb[v] += c->dlogits[(size_t)r * V + v];
    // dtop = dlogits W_fc; the stack takes it back through its dropout and layers.
    sk_sgemm_rows(c->threads, CblasNoTrans, CblasNoTrans, rows, H, V, 1.0f, c->dlogits, V, c->w.fc_w, H, 0.0f, c->dtop,
                  H);
    const float *demb = NULL;
    sk_status st = c->stack->ops->backward(c->stack, &c->w, G, c->dtop, &demb, &b->err);
    if (st != SK_OK) return st;
    // Embedding gradient: scatter-add in row order (deterministic).
    sk_embedding_cpu_backward(G->embedding, demb, c->x, rows, V, E);
    return SK_OK;
}

typedef struct {
    cpu_impl *c;
    const sk_param_layout *layout;
    const sk_optim_hparams *h;
    float lr, clip_scale;
    int64_t step;
    double partial[SK_MAX_THREADS]; // per-span sums of squares, combined in span order
} step_job;

static void span_range(size_t n, int i, int k, size_t *lo, size_t *hi) {
    *lo = n * (size_t)i / (size_t)k, *hi = n * (size_t)(i + 1) / (size_t)k;
}

static void norm_span(void *ctx, int i, int n) {
    step_job *j = ctx;
    size_t lo, hi;
    span_range(j->layout->total, i, n, &lo, &hi);
    j->partial[i] = 0.0;
    for (size_t k = lo; k < hi; k++) j->partial[i] += (double)j->c->grads[k] * (double)j->c->grads[k];
}

static void update_span(void *ctx, int i, int n) {
    step_job *j = ctx;
    size_t lo, hi;
    span_range(j->layout->total, i, n, &lo, &hi);
    sk_optim_update_range(j->c->params, j->c->grads, j->c->opt_state, j->layout, j->h, j->lr, j->clip_scale, j->step,
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
    step_job j = {.c = c, .layout = &b->layout};
    sk_parallel_for(n, norm_span, &j);
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += j.partial[i];
    *norm = sqrt(sum);
    return SK_OK;
}

static sk_status cpu_update(sk_backend *b, const sk_optim_hparams *h, float lr, float clip_scale, int64_t step) {
    cpu_impl *c = impl_of(b);
    if (!c->training || step < 1)
        return sk_fail(&b->err, SK_ERR_ARG, "optimizer step %lld on %s backend", (long long)step,
                       c->training ? "a training" : "an inference-only");
    step_job j = {.c = c, .layout = &b->layout, .h = h, .lr = lr, .clip_scale = clip_scale, .step = step};
    sk_parallel_for(step_spans(b, c), update_span, &j);
    c->stack->ops->params_changed(c->stack);
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

// The threads the backend runs: cfg's, or one per online core.
static int threads_of(const sk_backend_config *cfg) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cfg->threads > 0 ? cfg->threads : (int)(cores > 0 ? cores : 1);
    return n > SK_MAX_THREADS ? SK_MAX_THREADS : n;
}

// Precision bf16 without training: bf16 weights, fp32 arithmetic and state, on any CPU (the
// reference stack over matvec_bf16.h).
static int bf16_inference(const sk_backend_config *cfg) {
    return !cfg->training && cfg->precision == SK_PRECISION_BF16;
}

// Precision bf16 in training: oneDNN's LSTM in bf16 (stack_onednn.c), an LSTM on a CPU with bf16
// dot products only.
static int bf16_training(const sk_backend_config *cfg) {
    return cfg->training && cfg->precision == SK_PRECISION_BF16;
}

static sk_cpu_stack_config stack_config(const sk_backend_config *cfg) {
    const sk_model_config *m = &cfg->model;
    return (sk_cpu_stack_config){.cell = sk_model_cell(m), .V = m->vocab_size, .E = m->embed_size,
                                 .H = m->hidden_size, .L = m->num_layers, .B = cfg->batch_size, .T = cfg->seq_len,
                                 .threads = threads_of(cfg), .training = cfg->training, .dropout = m->dropout,
                                 .weight_drop = m->weight_drop, .seed = cfg->seed, .stream_offset = cfg->stream_offset,
                                 .bf16_weights = bf16_inference(cfg)};
}

// The shape and the threads the backend runs with.
static void set_shape(cpu_impl *c, const sk_backend_config *cfg) {
    c->threads = threads_of(cfg);
    c->V = cfg->model.vocab_size, c->E = cfg->model.embed_size, c->H = cfg->model.hidden_size;
    c->L = cfg->model.num_layers, c->B = cfg->batch_size, c->T = cfg->seq_len;
    c->stream_offset = cfg->stream_offset;
    c->global_batch = cfg->global_batch > 0 ? cfg->global_batch : cfg->batch_size;
    c->training = cfg->training;
    c->bf16_infer = bf16_inference(cfg);
    c->n_slots = cfg->training ? sk_optim_of(cfg->optimizer)->n_slots : 0; // kind checked by check_cpu_config
}

// sk_backend_create_cpu's memory for cfg, in bytes: its buffers (cpu_buffers' rows, ids 4 bytes as
// floats) and the stack's (sk_cpu_stack_bytes; in bf16 oneDNN's, sk_cpu_stack_onednn_bytes).
// *activations: what grows with the window's rows (every buffer but the parameters', and the
// stack's rows).
size_t sk_backend_cpu_bytes(const sk_backend_config *cfg, size_t *activations) {
    sk_param_layout layout;
    if (cfg->batch_size < 1 || cfg->seq_len < 1 || sk_param_layout_init(&layout, &cfg->model, NULL) != SK_OK) return 0;
    const size_t total = layout.total;
    sk_param_layout_free(&layout);
    if (cfg->training && !sk_optim_of(cfg->optimizer)) return 0;
    cpu_impl shape = {.params = NULL}; // set_shape fills what cpu_buffers reads
    set_shape(&shape, cfg);
    cpu_buffer bufs[CPU_BUFFERS];
    cpu_buffers(&shape, total, bufs);
    size_t bytes = 0, rows_bytes = 0;
    for (size_t i = 0; i < CPU_BUFFERS; i++)
        if (bufs[i].needed) {
            bytes += bufs[i].n * bufs[i].size;
            if (bufs[i].activation) rows_bytes += bufs[i].n * bufs[i].size;
        }
    const sk_cpu_stack_config sc = stack_config(cfg);
    size_t stack_rows = 0;
    const size_t stack = bf16_training(cfg) ? sk_cpu_stack_onednn_bytes(&sc, 1, &stack_rows)
                                            : sk_cpu_stack_bytes(&sc, &stack_rows);
    if (activations) *activations = rows_bytes + stack_rows;
    return bytes + stack;
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
    const sk_cell *cell = sk_model_cell(&cfg->model);
    // Training in bf16 runs oneDNN's LSTM; inference in bf16 (bf16 weights) runs on any CPU and cell.
    const int onednn_bf16 = bf16_training(cfg);
    if (onednn_bf16 && cell && cell->kind != SK_CELL_LSTM)
        return sk_fail(err, SK_ERR_ARG, "precision bf16 on the CPU runs oneDNN's LSTM; the %s not yet (use --precision "
                                        "fp32, or a CUDA device)", cell->name);
    if (onednn_bf16 && !sk_onednn_bf16_check(why, sizeof why))
        return sk_fail(err, SK_ERR_ARG, "precision bf16 on the CPU: %s (use --precision fp32, or a CUDA device)", why);
    if (cfg->plstm_tensor_cores == SK_TENSOR_CORES_ON)
        return sk_fail(err, SK_ERR_ARG, "tensor cores need a CUDA device (the persistent LSTM kernel's); the CPU "
                                        "backend computes on its own cores");
    if (cfg->training && !sk_optim_of(cfg->optimizer))
        return sk_fail(err, SK_ERR_ARG, "optimizer %d is not one of optim.h's table", (int)cfg->optimizer);
    if (cfg->stream_offset < 0 || (cfg->global_batch > 0 && cfg->stream_offset + cfg->batch_size > cfg->global_batch))
        return sk_fail(err, SK_ERR_ARG, "streams [%d, %d) outside a global batch of %d", cfg->stream_offset,
                       cfg->stream_offset + cfg->batch_size, cfg->global_batch);
    return SK_OK;
}

// Every buffer of cpu_buffers' table that c needs, zeroed; 0 when one could not be allocated.
static int alloc_buffers(cpu_impl *c, size_t total) {
    cpu_buffer bufs[CPU_BUFFERS];
    cpu_buffers(c, total, bufs);
    for (size_t i = 0; i < CPU_BUFFERS; i++)
        if (bufs[i].needed && !(*bufs[i].p = calloc(bufs[i].n ? bufs[i].n : 1, bufs[i].size))) return 0;
    if (c->training) c->grads = c->params + total, c->opt_state = c->params + 2 * total;
    return 1;
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
    // SK_PRECISION_AUTO means fp32 here, until bf16's quality is measured on a CPU with bf16 dot products.
    b->cfg.precision = cfg->precision == SK_PRECISION_BF16 ? SK_PRECISION_BF16 : SK_PRECISION_FP32;
    b->cfg.plstm_tensor_cores = SK_TENSOR_CORES_DEFAULT; // what runs: no inner products to choose
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
    // The stack: oneDNN's LSTM for training in bf16 (stack_onednn.c), the reference otherwise (in
    // inference in bf16, over bf16 copies of its weights).
    const sk_cpu_stack_config sc = stack_config(cfg);
    st = bf16_training(&b->cfg) ? sk_cpu_stack_create_onednn(&sc, 1, &c->stack, err)
                                : sk_cpu_stack_create_reference(&sc, &c->stack, err);
    if (st != SK_OK) {
        cpu_destroy(b);
        return st;
    }
    c->w = sk_point_params(&b->layout, c->params);
    if (c->training) c->dw = sk_point_params(&b->layout, c->grads);
    *out = b;
    return SK_OK;
}
