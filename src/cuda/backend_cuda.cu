// backend_cuda.cu: the CUDA backend: embedding (kernel) -> LSTM stack (an implementation
// behind lstm_impl.h: cuDNN) -> dropout (kernel, hash.h's masks) -> linear (cuBLAS) -> fused
// softmax cross-entropy (kernel), forward and backward, and the optimizer's update (one kernel
// for every kind) over one parameter buffer.
// defines: sk_cuda_backend_create, sk_cuda_device_usable (cuda_module.h: the module's
//          sk_backend_create_cuda and sk_cuda_available)
//
// Semantics are the CPU backend's (backend_cpu.c): every dropout mask (between LSTM layers
// and before fc) is hash.h's, keyed by (seed, step, site), so the GPU drops exactly the
// elements the CPU drops; so does weight drop on W_hh: a training forward hands the LSTM
// implementation a copy of the parameters whose W_hh carry the step's masks
// (dropped_params), and backward masks their gradients the same way. Sums run in other
// orders (GEMMs, cuDNN), so results agree to fp32 rounding, not bitwise. Every reduction
// here is still deterministic: same inputs, same bits.
// Device buffers (canonical parameter layout for params, grads, the optimizer's slots; activations for
// windows of up to T steps) are all allocated at creation. A failing CUDA, cuBLAS or
// cuDNN call inside an op returns SK_ERR_DEVICE; its message is kept in b->err
// (sk_backend_error).
// Step-dependent scalars (dropout keys, the optimizer's scalars, the clip threshold) are filled on
// the host into a pinned slot and copied to the device (sk_cuda_step_args) with the
// window's ids before the step's kernels, which read them from there: the eager ops and
// the deferred train_step enqueue the same kernels in the same order, and train_step can
// be one captured CUDA graph (step_graph.h) that forms the clip scale and the non-finite
// test on the device and reads nothing back until read_stats.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cuda_module.h"
#include "cudnn_rnn.h"
#include "kernels.h"
#include "lstm_impl.h"
#include "math_mode.h"
#include "sample_cuda.h"
#include "step_graph.h"

extern "C" {
#include "backend/backend_impl.h"
#include "shakespeare/optim.h"
#include "shakespeare/rng.h"
}

namespace {

constexpr size_t kBlasWorkspaceBytes = (size_t)32 << 20; // cuBLAS's recommendation for Hopper

// --cuda-graph auto replays captured graphs (as try: eager after a failed capture). The graph
// tests pass on an H100, where graphs made a step 1.2-1.6x faster
// (bench/results/h100-2026-11-26-faa1609/). false makes auto run eagerly.
constexpr bool kGraphValidated = true;

// rnn_impl auto's measurement (lstm_autotune.cu) starts no candidate after this long: the
// start-up a user waits for once per GPU, build and shape (the choice is cached).
constexpr double kAutotuneBudgetSeconds = 2.0;

// Pinned staging slots: the host fills slot i for a step while the device may still be
// copying from the slots of the steps before it; it waits only when it is this many steps
// ahead of the device.
constexpr int kStageSlots = 4;

typedef struct {
    sk_cuda_step_args *args; // pinned
    int32_t *xy;             // pinned (2, B, T): x at 0, y at B*T, each (B, len) packed
    cudaEvent_t done;        // recorded after the copies that read this slot
    int pending;             // done recorded, maybe not passed yet
} stage_slot;

typedef struct {
    int device;
    int V, E, H, L, B, T;
    int G;            // the cell's gates (cell.h): W_hh is (G*H, H)
    float p;          // dropout probability
    float wdrop;      // weight drop probability (model.h)
    int training;     // gradient and optimizer buffers allocated
    int len;          // steps of the last forward (0: none yet)
    int last_train;   // the last forward was SK_MODE_TRAIN with targets: backward allowed
    int64_t last_step; // its step, which keys the fc dropout mask again in backward
    int cur;          // state slot (0/1) holding the carried state
    int stale;        // params changed since the LSTM weight space was packed
    cudaStream_t stream;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    sk_lstm *lstm; // the LSTM stack behind its seam
    size_t total;                              // floats
    // One allocation, llm.c's layout (param_block_floats): params, then (training) grads and
    // cfg.optimizer's slots, in the canonical layout; params owns it.
    float *params, *grads;                     // (total,) each
    float *opt_state;                          // (n_slots, total), slot k at opt_state + k * total
    int n_slots;                               // sk_optim_of(cfg.optimizer)->n_slots when training, else 0
    float *dropped_params;                     // (total,) training with wdrop: the LSTM tensors, W_hh masked
    sk_param_tensors w, dw, dropped_w;         // named views of params, grads, dropped_params (where allocated)
    uint8_t *decay_mask;                       // (total,) 1 on 2-D tensors
    int32_t *xy;                               // (2, B, T): x then y (a pinned slot's layout)
    int32_t *x, *y;                            // (B, len) window, stream-major: xy, xy + B*T
    float *emb, *demb;                         // (B, T, E)
    float *hs;                                 // (B, T, H) top LSTM layer output
    float *hd;                                 // (B, T, H) hs after dropout (training with p > 0)
    float *dh;                                 // (B, T, H) gradient w.r.t. hs
    float *logits, *dlogits;                   // (B, T, V)
    float *row_loss;                           // (B, T)
    float *ones;                               // (B*T,) for the fc bias gradient
    float *h[2], *c[2];                        // (L, B, H) each: carried state, ping-pong
    sk_cuda_step_args *args;                   // device: this step's scalars (dropout keys read by the LSTM too)
    sk_cuda_step_stats *stats;                 // device: loss sum, norm, clip scale, the first bad step
    double *partials;                          // (SK_CUDA_SUMSQ_PARTIALS,)
    sk_cuda_step_stats *host_stats;            // pinned (1,)
    stage_slot slots[kStageSlots];
    unsigned next_slot;
    sk_step_graphs *graphs; // train_step's graphs; NULL: train_step runs eagerly
    // Inference forwards' graphs, [1] with targets (evaluation, with the loss summed) and [0]
    // without (sampling: one character a call, where launches and cuDNN's host work cost more
    // than the arithmetic); NULL: eager.
    sk_step_graphs *forward_graphs[2];
    // Inference backends: the fused sampler (ops->sample), NULL where its kernel cannot run
    // the shape (or the config's no_fused_sampler turns it off, for benchmarks).
    sk_cuda_sampler *sampler;
    sk_backend_ops ops; // cuda_ops with sample set, when there is a sampler
    void *blas_ws;
} cuda_impl;

cuda_impl *impl_of(sk_backend *b) { return (cuda_impl *)b->impl; }

sk_status dev_alloc(void **p, size_t bytes, const char *what, sk_error *err) {
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *p = NULL;
        (void)cudaGetLastError();
        return sk_fail(err, e == cudaErrorMemoryAllocation ? SK_ERR_NOMEM : SK_ERR_DEVICE,
                             "cudaMalloc of %zu bytes for %s failed: %s", bytes, what, cudaGetErrorString(e));
    }
    return SK_OK;
}

// Host -> device through the stream, then wait: the caller may reuse `src` at once.
sk_status upload(cuda_impl *ci, void *dst, const void *src, size_t bytes, sk_error *err) {
    CUDA_CHECK(cudaSetDevice(ci->device));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ci->stream));
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    return SK_OK;
}

sk_status download(cuda_impl *ci, void *dst, const void *src, size_t bytes, sk_error *err) {
    CUDA_CHECK(cudaSetDevice(ci->device));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ci->stream));
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    return SK_OK;
}

// Data-parallel (backend.h): the loss is the mean over the global batch's rows, and the
// fc dropout mask of this backend's first element is that of global stream stream_offset.
int global_batch(const sk_backend *b) { return b->cfg.global_batch > 0 ? b->cfg.global_batch : b->cfg.batch_size; }
uint64_t first_index(const sk_backend *b, int len) {
    return (uint64_t)b->cfg.stream_offset * (uint64_t)len * (uint64_t)b->cfg.model.hidden_size;
}

// The next pinned slot; waits (rarely) until the copies that last read it have run.
sk_status take_slot(cuda_impl *ci, stage_slot **out, sk_error *err) {
    stage_slot *s = &ci->slots[ci->next_slot++ % kStageSlots];
    if (s->pending) CUDA_CHECK(cudaEventSynchronize(s->done));
    s->pending = 0;
    *out = s;
    return SK_OK;
}

// Slot -> device in stream order: the step's scalars, and with n > 0 the n ids of x (and y).
sk_status send_slot(cuda_impl *ci, stage_slot *s, int n, int with_y, sk_error *err) {
    CUDA_CHECK(cudaMemcpyAsync(ci->args, s->args, sizeof *s->args, cudaMemcpyHostToDevice, ci->stream));
    if (n > 0) {
        const size_t ids = with_y ? (size_t)ci->B * ci->T + (size_t)n : (size_t)n;
        CUDA_CHECK(cudaMemcpyAsync(ci->xy, s->xy, sizeof(int32_t) * ids, cudaMemcpyHostToDevice, ci->stream));
    }
    CUDA_CHECK(cudaEventRecord(s->done, ci->stream));
    s->pending = 1;
    return SK_OK;
}

// The scalars of a step at `step` (keys every dropout site) over windows of len; with h,
// those of optimizer step opt_step at lr (the table's args_of: as sk_optim_update forms them).
void fill_args(const sk_backend *b, sk_cuda_step_args *a, int64_t step, int len, const sk_optim_hparams *h, float lr,
               float clip_scale, int64_t opt_step) {
    memset(a, 0, sizeof *a);
    for (int k = 0; k < b->cfg.model.num_layers; k++) {
        a->dropout_key[k] = sk_dropout_key(b->cfg.seed, step, k);
        a->weight_drop_key[k] = sk_dropout_key(b->cfg.seed, step, SK_WEIGHT_DROP_SITE + k);
    }
    a->rows = (double)global_batch(b) * len;
    a->opt_step = opt_step;
    if (!h) return;
    a->optim.kind = h->kind, a->optim.clip_scale = clip_scale;
    sk_optim_of(h->kind)->args_of(h, lr, opt_step, &a->optim); // kind checked against the config by backend.c
    a->grad_clip = h->grad_clip;
}

// The LSTM stack, and in *chosen what runs: as named; for rnn_impl auto on a training backend
// that is to measure, lstm_autotune.cu's choice, measured on this backend's own activation
// buffers, which are zeroed again afterwards as creation leaves them.
sk_status create_lstm_stack(sk_backend *b, const sk_lstm_config *lc, sk_rnn_choice *chosen, sk_error *err) {
    cuda_impl *ci = impl_of(b);
    const sk_backend_config *cfg = &b->cfg;
    if (cfg->rnn_impl != SK_RNN_AUTO || !ci->training || !cfg->rnn_autotune) {
        SK_TRY(sk_lstm_create(cfg->rnn_impl, lc, &ci->lstm, b->notice, sizeof b->notice, err));
        *chosen = sk_lstm_choice(ci->lstm);
        return SK_OK;
    }
    const size_t rows = (size_t)ci->B * ci->T, state = (size_t)ci->L * ci->B * ci->H;
    struct { void *p; size_t bytes; } bufs[] = {
        {ci->emb, sizeof(float) * rows * ci->E}, {ci->demb, sizeof(float) * rows * ci->E},
        {ci->hs, sizeof(float) * rows * ci->H},  {ci->dh, sizeof(float) * rows * ci->H},
        {ci->h[0], sizeof(float) * state},       {ci->c[0], sizeof(float) * state},
        {ci->h[1], sizeof(float) * state},       {ci->c[1], sizeof(float) * state},
        {ci->grads, sizeof(float) * ci->total}};
    const int nbufs = (int)(sizeof bufs / sizeof bufs[0]);
    for (int i = 0; i < nbufs; i++) CUDA_CHECK(cudaMemsetAsync(bufs[i].p, 0, bufs[i].bytes, ci->stream));
    const sk_lstm_io io = {.params = ci->params, .grads = ci->grads, .x = ci->emb, .dx = ci->demb, .y = ci->hs,
                           .dy = ci->dh, .hx = ci->h[0], .cx = ci->c[0], .hy = ci->h[1], .cy = ci->c[1]};
    const sk_lstm_tune_opts o = {.cache_dir = cfg->rnn_tune_dir, .budget_s = kAutotuneBudgetSeconds,
                                 .request = cfg->plstm_tensor_cores};
    SK_TRY(sk_lstm_autotune(lc, &o, &io, &ci->lstm, chosen, b->notice, sizeof b->notice, err));
    for (int i = 0; i < nbufs; i++) CUDA_CHECK(cudaMemsetAsync(bufs[i].p, 0, bufs[i].bytes, ci->stream));
    return SK_OK;
}

// The LSTM stack; b->cfg then holds its choice (rnn_impl and plstm_tensor_cores as they run), as
// it holds the resolved precision, for the options record.
sk_status create_lstm(sk_backend *b, const sk_lstm_config *lc, sk_error *err) {
    sk_rnn_choice chosen;
    SK_TRY(create_lstm_stack(b, lc, &chosen, err));
    b->cfg.rnn_impl = chosen.impl, b->cfg.plstm_tensor_cores = chosen.tensor_cores;
    return SK_OK;
}

// The shape and the probabilities the backend runs with.
void set_shape(cuda_impl *ci, const sk_backend_config *cfg, const sk_param_layout *layout) {
    ci->device = cfg->device_index;
    ci->V = cfg->model.vocab_size, ci->E = cfg->model.embed_size, ci->H = cfg->model.hidden_size;
    ci->L = cfg->model.num_layers, ci->B = cfg->batch_size, ci->T = cfg->seq_len, ci->p = cfg->model.dropout;
    ci->wdrop = cfg->model.weight_drop;
    ci->G = sk_model_cell(&cfg->model)->gates;
    ci->training = cfg->training != 0;
    ci->total = layout->total;
    const sk_optim_info *opt = sk_optim_of(cfg->optimizer); // NULL: refused by sk_cuda_backend_create
    ci->n_slots = ci->training && opt ? opt->n_slots : 0;
}

// The stream, and cuBLAS (with its workspace) and cuDNN on it.
sk_status create_handles(cuda_impl *ci, sk_precision precision, sk_error *err) {
    CUDA_CHECK(cudaSetDevice(ci->device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&ci->stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&ci->blas));
    CUBLAS_CHECK(cublasSetStream(ci->blas, ci->stream));
    // fp32: plain fp32 GEMMs (no TF32), as the CPU reference; tf32, bf16: TF32 (math_mode.h).
    CUBLAS_CHECK(cublasSetMathMode(ci->blas, sk_cublas_math(precision)));
    SK_TRY(dev_alloc(&ci->blas_ws, kBlasWorkspaceBytes, "the cuBLAS workspace", err));
    CUBLAS_CHECK(cublasSetWorkspace(ci->blas, ci->blas_ws, kBlasWorkspaceBytes));
    CUDNN_CHECK(cudnnCreate(&ci->dnn));
    CUDNN_CHECK(cudnnSetStream(ci->dnn, ci->stream));
    return SK_OK;
}

// One device buffer of the backend: where it goes, its bytes, whether this backend needs it
// (the gradient side only when training) and whether it starts zeroed.
typedef struct {
    void **p;
    size_t bytes;
    int needed, zeroed;
    const char *what;
} device_buffer;

constexpr size_t kDeviceBuffers = 20;

// The floats of the parameters' allocation and where grads and the slots start in it: params,
// grads and the slots, the first two each rounded up to 64 floats (256 bytes, cudaMalloc's own
// alignment), so that every part starts aligned as a buffer of its own would.
size_t param_stride(const cuda_impl *ci) { return (ci->total + 63) / 64 * 64; }
size_t param_block_floats(const cuda_impl *ci) {
    return ci->training ? 2 * param_stride(ci) + (size_t)ci->n_slots * ci->total : ci->total;
}

// Every device buffer of ci's shape (set_shape), in one table: the allocation below, the
// memory estimate (sk_cuda_memory) and cuda_destroy read the same rows.
void device_buffers(cuda_impl *ci, device_buffer bufs[kDeviceBuffers]) {
    const size_t rows = (size_t)ci->B * ci->T, state = (size_t)ci->L * ci->B * ci->H, total = ci->total;
    const size_t f = sizeof(float);
    const int train = ci->training;
    const device_buffer table[kDeviceBuffers] = {
        {.p = (void **)&ci->params, .bytes = f * param_block_floats(ci), .needed = 1, .zeroed = 1,
         .what = "parameters, gradients, optimizer slots"},
        {.p = (void **)&ci->xy, .bytes = sizeof(int32_t) * 2 * rows, .needed = 1, .zeroed = 0,
         .what = "input and target ids"},
        {.p = (void **)&ci->args, .bytes = sizeof *ci->args, .needed = 1, .zeroed = 1, .what = "the step's scalars"},
        {.p = (void **)&ci->stats, .bytes = sizeof *ci->stats, .needed = 1, .zeroed = 1,
         .what = "the step's statistics"},
        {.p = (void **)&ci->emb, .bytes = f * rows * ci->E, .needed = 1, .zeroed = 0, .what = "embedded inputs"},
        {.p = (void **)&ci->hs, .bytes = f * rows * ci->H, .needed = 1, .zeroed = 0, .what = "LSTM outputs"},
        {.p = (void **)&ci->logits, .bytes = f * rows * ci->V, .needed = 1, .zeroed = 0, .what = "logits"},
        {.p = (void **)&ci->row_loss, .bytes = f * rows, .needed = 1, .zeroed = 0, .what = "row losses"},
        {.p = (void **)&ci->h[0], .bytes = f * state, .needed = 1, .zeroed = 1, .what = "the LSTM state"},
        {.p = (void **)&ci->c[0], .bytes = f * state, .needed = 1, .zeroed = 1, .what = "the LSTM state"},
        {.p = (void **)&ci->h[1], .bytes = f * state, .needed = 1, .zeroed = 1, .what = "the LSTM state"},
        {.p = (void **)&ci->c[1], .bytes = f * state, .needed = 1, .zeroed = 1, .what = "the LSTM state"},
        {.p = (void **)&ci->partials, .bytes = sizeof(double) * SK_CUDA_SUMSQ_PARTIALS, .needed = 1, .zeroed = 0,
         .what = "norm partial sums"},
        {.p = (void **)&ci->decay_mask, .bytes = total, .needed = train, .zeroed = 0, .what = "the weight-decay mask"},
        {.p = (void **)&ci->demb, .bytes = f * rows * ci->E, .needed = train, .zeroed = 0,
         .what = "embedding gradients"},
        {.p = (void **)&ci->dh, .bytes = f * rows * ci->H, .needed = train, .zeroed = 0,
         .what = "LSTM output gradients"},
        {.p = (void **)&ci->dlogits, .bytes = f * rows * ci->V, .needed = train, .zeroed = 0,
         .what = "logit gradients"},
        {.p = (void **)&ci->ones, .bytes = f * rows, .needed = train, .zeroed = 0, .what = "a ones vector"},
        {.p = (void **)&ci->hd, .bytes = f * rows * ci->H, .needed = train && ci->p > 0.0f, .zeroed = 0,
         .what = "dropped LSTM outputs"},
        {.p = (void **)&ci->dropped_params, .bytes = f * total, .needed = train && ci->wdrop > 0.0f, .zeroed = 1,
         .what = "the weight-dropped parameters"},
    };
    for (size_t i = 0; i < kDeviceBuffers; i++) bufs[i] = table[i];
}

sk_status alloc_device_buffers(cuda_impl *ci, sk_error *err) {
    device_buffer bufs[kDeviceBuffers];
    device_buffers(ci, bufs);
    for (size_t i = 0; i < kDeviceBuffers; i++) {
        if (!bufs[i].needed) continue;
        SK_TRY(dev_alloc(bufs[i].p, bufs[i].bytes, bufs[i].what, err));
        if (bufs[i].zeroed) CUDA_CHECK(cudaMemsetAsync(*bufs[i].p, 0, bufs[i].bytes, ci->stream));
    }
    ci->x = ci->xy, ci->y = ci->xy + (size_t)ci->B * ci->T;
    if (ci->training) ci->grads = ci->params + param_stride(ci), ci->opt_state = ci->params + 2 * param_stride(ci);
    return SK_OK;
}

// The bytes of the backend's own buffers for ci's shape, the cuBLAS workspace and an estimate
// of the LSTM implementation's: its copy of the weights (and their gradient when training),
// and per window row and layer what backprop through time keeps (the four gates, c, tanh(c),
// h and a step's gradients: 8 H floats; 2 H when inferring). cuDNN's and our kernels' exact
// sizes are known only once their plans exist; this is the same order, from the shapes alone.
size_t device_bytes(cuda_impl *ci) {
    device_buffer bufs[kDeviceBuffers];
    device_buffers(ci, bufs);
    size_t bytes = kBlasWorkspaceBytes;
    for (size_t i = 0; i < kDeviceBuffers; i++)
        if (bufs[i].needed) bytes += bufs[i].bytes;
    const size_t rows = (size_t)ci->B * ci->T, per_row = (size_t)(ci->training ? 8 : 2) * ci->L * ci->H;
    return bytes + sizeof(float) * (ci->total * (ci->training ? 2 : 1) + rows * per_row);
}

// The pinned host memory: the statistics read back, and the staging slots.
sk_status alloc_pinned(cuda_impl *ci, sk_error *err) {
    const size_t rows = (size_t)ci->B * ci->T;
    CUDA_CHECK(cudaMallocHost((void **)&ci->host_stats, sizeof *ci->host_stats));
    for (int i = 0; i < kStageSlots; i++) {
        stage_slot *s = &ci->slots[i];
        CUDA_CHECK(cudaMallocHost((void **)&s->args, sizeof *s->args));
        CUDA_CHECK(cudaMallocHost((void **)&s->xy, sizeof(int32_t) * 2 * rows));
        CUDA_CHECK(cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
    }
    return SK_OK;
}

// A training backend's constants: the weight-decay mask (1 where optim.h's sk_param_decays,
// as in sk_optim_update) and the ones vector the fc bias gradient sums with.
sk_status upload_constants(cuda_impl *ci, const sk_param_layout *layout, sk_error *err) {
    const size_t rows = (size_t)ci->B * ci->T;
    uint8_t *mask = (uint8_t *)calloc(ci->total ? ci->total : 1, 1);
    float *ones = (float *)malloc(sizeof(float) * rows);
    sk_status st = mask && ones ? SK_OK : sk_fail(err, SK_ERR_NOMEM, "out of memory at CUDA setup");
    if (st == SK_OK) {
        for (int t = 0; t < layout->n_tensors; t++)
            if (sk_param_decays(&layout->tensors[t])) memset(mask + layout->tensors[t].offset, 1, layout->tensors[t].numel);
        for (size_t i = 0; i < rows; i++) ones[i] = 1.0f;
        st = upload(ci, ci->decay_mask, mask, ci->total, err);
        if (st == SK_OK) st = upload(ci, ci->ones, ones, sizeof(float) * rows, err);
    }
    free(mask);
    free(ones);
    return st;
}

// The step graphs --cuda-graph asks for: train_step's (training) and the inference forwards'.
sk_status create_graphs(cuda_impl *ci, sk_cuda_graph g, sk_error *err) {
    if (!(g == SK_GRAPH_ON || g == SK_GRAPH_TRY || (g == SK_GRAPH_AUTO && kGraphValidated))) return SK_OK;
    if (ci->training) SK_TRY(sk_step_graphs_create(ci->T, g != SK_GRAPH_ON, &ci->graphs, err));
    for (int i = 0; i < 2; i++) SK_TRY(sk_step_graphs_create(ci->T, g != SK_GRAPH_ON, &ci->forward_graphs[i], err));
    return SK_OK;
}

sk_status cuda_init(sk_backend *b, sk_error *err) {
    cuda_impl *ci = impl_of(b);
    const sk_backend_config *cfg = &b->cfg;
    const sk_param_layout *layout = &b->layout;
    set_shape(ci, cfg, layout);
    SK_TRY(create_handles(ci, cfg->precision, err));
    SK_TRY(alloc_device_buffers(ci, err));
    SK_TRY(alloc_pinned(ci, err));
    ci->w = sk_point_params(layout, ci->params);
    if (ci->training) {
        ci->dw = sk_point_params(layout, ci->grads);
        if (ci->dropped_params) ci->dropped_w = sk_point_params(layout, ci->dropped_params);
        SK_TRY(upload_constants(ci, layout, err));
    }
    const sk_lstm_config lc = {.backend = cfg, .dnn = ci->dnn, .stream = ci->stream, .layout = layout, .B = ci->B,
                               .T = ci->T, .E = ci->E, .H = ci->H, .L = ci->L, .training = ci->training,
                               .dropout = ci->p, .dropout_keys = ci->args->dropout_key,
                               .tensor_cores = cfg->plstm_tensor_cores, .family = SK_LSTM_WAVEFRONT};
    SK_TRY(create_lstm(b, &lc, err));
    SK_TRY(create_graphs(ci, cfg->cuda_graph, err));
    if (!ci->training && !cfg->no_fused_sampler) {
        char why[256];
        SK_TRY(sk_cuda_sampler_create(ci->device, layout, ci->params, ci->B, &ci->sampler, why, sizeof why, err));
    }
    ci->stale = 1;
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    return SK_OK;
}

} // namespace

// The ops table's function types have C linkage: so do its functions.
extern "C" {

static void cuda_destroy(sk_backend *b) {
    cuda_impl *ci = impl_of(b);
    if (ci) {
        if (ci->stream) {
            (void)cudaSetDevice(ci->device);
            (void)cudaStreamSynchronize(ci->stream);
        }
        sk_step_graphs_free(ci->graphs);
        sk_cuda_sampler_free(ci->sampler);
        for (int i = 0; i < 2; i++) sk_step_graphs_free(ci->forward_graphs[i]);
        sk_lstm_destroy(ci->lstm);
        device_buffer bufs[kDeviceBuffers]; // the table that allocated them (cudaFree(NULL) is a no-op)
        device_buffers(ci, bufs);
        for (size_t i = 0; i < kDeviceBuffers; i++) cudaFree(*bufs[i].p);
        cudaFree(ci->blas_ws); // create_handles'
        if (ci->host_stats) cudaFreeHost(ci->host_stats);
        for (int i = 0; i < kStageSlots; i++) {
            if (ci->slots[i].args) cudaFreeHost(ci->slots[i].args);
            if (ci->slots[i].xy) cudaFreeHost(ci->slots[i].xy);
            if (ci->slots[i].done) cudaEventDestroy(ci->slots[i].done);
        }
        if (ci->blas) cublasDestroy(ci->blas);
        if (ci->dnn) cudnnDestroy(ci->dnn);
        if (ci->stream) cudaStreamDestroy(ci->stream);
        (void)cudaGetLastError(); // nothing to report from a destructor
        free(ci);
    }
    sk_param_layout_free(&b->layout);
    free(b);
}

static sk_status cuda_set_params(sk_backend *b, const float *params) {
    cuda_impl *ci = impl_of(b);
    ci->stale = 1;
    return upload(ci, ci->params, params, sizeof(float) * ci->total, &b->err);
}

static sk_status cuda_get_params(sk_backend *b, float *params) {
    cuda_impl *ci = impl_of(b);
    return download(ci, params, ci->params, sizeof(float) * ci->total, &b->err);
}

static sk_status cuda_get_grads(sk_backend *b, float *grads) {
    cuda_impl *ci = impl_of(b);
    if (!ci->training) return sk_fail(&b->err, SK_ERR_ARG, "get_grads on an inference-only backend");
    return download(ci, grads, ci->grads, sizeof(float) * ci->total, &b->err);
}

// Slot `slot` (checked by backend.c) of the optimizer's state.
static sk_status cuda_set_optimizer_state(sk_backend *b, int slot, const float *x) {
    cuda_impl *ci = impl_of(b);
    return upload(ci, ci->opt_state + (size_t)slot * ci->total, x, sizeof(float) * ci->total, &b->err);
}

static sk_status cuda_get_optimizer_state(sk_backend *b, int slot, float *x) {
    cuda_impl *ci = impl_of(b);
    return download(ci, x, ci->opt_state + (size_t)slot * ci->total, sizeof(float) * ci->total, &b->err);
}

// The carried state (S, L, B, H) of the cell's S state tensors (cell.h): h, then an LSTM's c.
static sk_status cuda_set_state(sk_backend *b, const float *state) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    const size_t n = (size_t)ci->L * ci->B * ci->H, bytes = sizeof(float) * n;
    float *dev[SK_MAX_CELL_STATES] = {ci->h[ci->cur], ci->c[ci->cur]};
    CUDA_CHECK(cudaSetDevice(ci->device));
    for (int s = 0; s < sk_model_cell(&b->layout.cfg)->n_states; s++) {
        if (state) CUDA_CHECK(cudaMemcpyAsync(dev[s], state + s * n, bytes, cudaMemcpyHostToDevice, ci->stream));
        else CUDA_CHECK(cudaMemsetAsync(dev[s], 0, bytes, ci->stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    return SK_OK;
}

static sk_status cuda_get_state(sk_backend *b, float *state) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    const size_t n = (size_t)ci->L * ci->B * ci->H, bytes = sizeof(float) * n;
    const float *dev[SK_MAX_CELL_STATES] = {ci->h[ci->cur], ci->c[ci->cur]};
    CUDA_CHECK(cudaSetDevice(ci->device));
    for (int s = 0; s < sk_model_cell(&b->layout.cfg)->n_states; s++)
        CUDA_CHECK(cudaMemcpyAsync(state + s * n, dev[s], bytes, cudaMemcpyDeviceToHost, ci->stream));
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    return SK_OK;
}

// Refuses ids outside [0, V): the embedding kernel would read out of bounds.
static sk_status check_ids(const cuda_impl *ci, const int32_t *x, const int32_t *y, int n, sk_error *err) {
    for (int i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= ci->V) return sk_fail(err, SK_ERR_ARG, "input id %d outside [0, %d)", x[i], ci->V);
        if (y && (y[i] < 0 || y[i] >= ci->V))
            return sk_fail(err, SK_ERR_ARG, "target id %d outside [0, %d)", y[i], ci->V);
    }
    return SK_OK;
}

// The window's ids and the step's scalars into a pinned slot, then to the device.
static sk_status stage(sk_backend *b, const int32_t *x, const int32_t *y, int len, int64_t step,
                       const sk_optim_hparams *h, float lr, int64_t opt_step, sk_error *err) {
    cuda_impl *ci = impl_of(b);
    const int n = ci->B * len;
    stage_slot *s = NULL;
    SK_TRY(take_slot(ci, &s, err));
    fill_args(b, s->args, step, len, h, lr, 1.0f, opt_step);
    memcpy(s->xy, x, sizeof(int32_t) * (size_t)n);
    if (y) memcpy(s->xy + (size_t)ci->B * ci->T, y, sizeof(int32_t) * (size_t)n);
    return send_slot(ci, s, n, y != NULL, err);
}

// Every layer's W_hh of src (a canonical buffer: parameters or gradients) times the staged
// step's weight-drop mask (hash.h; keys read from ci->args when the work runs), into the
// same place in dst (dst == src allowed).
static sk_status enqueue_w_hh_masks(cuda_impl *ci, const sk_param_tensors *dst, const sk_param_tensors *src,
                                    sk_error *err) {
    for (int k = 0; k < ci->L; k++)
        CUDA_CHECK(sk_cuda_dropout(dst->layer[k].w_hh, src->layer[k].w_hh, (size_t)ci->G * ci->H * ci->H, 0,
                                   &ci->args->weight_drop_key[k], ci->wdrop, 1.0f / (1.0f - ci->wdrop), ci->stream));
    return SK_OK;
}

// Weight drop, for the staged step: dropped_params gets the LSTM tensors with each layer's
// W_hh masked; `which` is then the buffer for import_weights. Without weight drop, params.
static sk_status enqueue_weight_drop(cuda_impl *ci, const float **which, sk_error *err) {
    *which = ci->params;
    if (ci->wdrop <= 0.0f) return SK_OK;
    // The LSTM tensors lie together, from layer 0's W_ih up to fc.weight (model.h).
    const float *first = ci->w.layer[0].w_ih;
    CUDA_CHECK(cudaMemcpyAsync(ci->dropped_w.layer[0].w_ih, first, sizeof(float) * (size_t)(ci->w.fc_w - first),
                               cudaMemcpyDeviceToDevice, ci->stream));
    SK_TRY(enqueue_w_hh_masks(ci, &ci->dropped_w, &ci->w, err));
    *which = ci->dropped_params;
    return SK_OK;
}

// Enqueues the forward over the staged window from state slot `from` into `to`: emb (B,
// len, E) -> hs (B, len, H) -> [dropout] -> logits; with targets the row losses (and with
// grad their gradients); with loss_sum (device) also their sum there.
static sk_status enqueue_forward(sk_backend *b, int len, int train, int with_y, int grad, double *loss_sum, int from,
                                 int to, sk_error *err) {
    cuda_impl *ci = impl_of(b);
    const int B = ci->B, E = ci->E, H = ci->H, V = ci->V, n = B * len;
    CUDA_CHECK(sk_cuda_embedding_forward(ci->emb, ci->w.embedding, ci->x, B, len, E, ci->stream));
    SK_TRY(ci->lstm->ops->forward(ci->lstm, train, len, ci->emb, ci->hs, ci->h[from], ci->c[from], ci->h[to],
                                  ci->c[to], err));
    // Dropout before fc: site L-1, element index (b*len + t)*H + j (rng.h).
    const float *top = ci->hs;
    if (train && ci->p > 0.0f) {
        CUDA_CHECK(sk_cuda_dropout(ci->hd, ci->hs, (size_t)n * H, first_index(b, len), &ci->args->dropout_key[ci->L - 1],
                                   ci->p, 1.0f / (1.0f - ci->p), ci->stream));
        top = ci->hd;
    }
    // logits (n, V) = top (n, H) fc.weight^T; the bias is added by the softmax kernel.
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(ci->blas, CUBLAS_OP_T, CUBLAS_OP_N, V, n, H, &one, ci->w.fc_w, H, top, H,
                             &zero, ci->logits, V));
    CUDA_CHECK(sk_cuda_softmax_xent(ci->logits, ci->w.fc_b, with_y ? ci->y : NULL, ci->row_loss,
                                    grad ? ci->dlogits : NULL, 1.0f / (float)(len * global_batch(b)), n, V,
                                    ci->stream));
    if (loss_sum) CUDA_CHECK(sk_cuda_sum_double(loss_sum, ci->row_loss, n, ci->stream));
    return SK_OK;
}

// Enqueues the backward of the last training forward (over len steps) into ci->grads.
static sk_status enqueue_backward(sk_backend *b, int len, sk_error *err) {
    cuda_impl *ci = impl_of(b);
    const int B = ci->B, E = ci->E, H = ci->H, V = ci->V, n = B * len;
    const int drop = ci->p > 0.0f; // the last forward was a training one
    const float *top = drop ? ci->hd : ci->hs;
    const float one = 1.0f, zero = 0.0f;
    // fc.weight grad (V, H) = dlogits^T (V, n) top (n, H); fc.bias grad = column sums.
    CUBLAS_CHECK(cublasSgemm(ci->blas, CUBLAS_OP_N, CUBLAS_OP_T, H, V, n, &one, top, H, ci->dlogits, V, &zero,
                             ci->dw.fc_w, H));
    CUBLAS_CHECK(cublasSgemv(ci->blas, CUBLAS_OP_N, V, n, &one, ci->dlogits, V, ci->ones, 1, &zero, ci->dw.fc_b,
                             1));
    // dh (n, H) = dlogits (n, V) fc.weight (V, H), then through the same dropout mask.
    CUBLAS_CHECK(cublasSgemm(ci->blas, CUBLAS_OP_N, CUBLAS_OP_N, H, n, V, &one, ci->w.fc_w, H,
                             ci->dlogits, V, &zero, ci->dh, H));
    if (drop)
        CUDA_CHECK(sk_cuda_dropout(ci->dh, ci->dh, (size_t)n * H, first_index(b, len), &ci->args->dropout_key[ci->L - 1],
                                   ci->p, 1.0f / (1.0f - ci->p), ci->stream));
    SK_TRY(ci->lstm->ops->backward_data(ci->lstm, ci->dh, ci->demb, err));
    SK_TRY(ci->lstm->ops->backward_weights(ci->lstm, ci->grads, err));
    // Weight drop: d W_hh = d (W_hh used) times the same mask (0 where an element was dropped).
    if (ci->wdrop > 0.0f) SK_TRY(enqueue_w_hh_masks(ci, &ci->dw, &ci->dw, err));
    CUDA_CHECK(sk_cuda_embedding_backward(ci->dw.embedding, ci->demb, ci->x, B, len, V, E, ci->stream));
    return SK_OK;
}

// An inference forward as one graph's work: with targets, the loss summed on the device.
typedef struct {
    sk_backend *b;
    int len, with_y;
} forward_ctx;

static sk_status enqueue_inference(void *ctx, sk_error *err) {
    const forward_ctx *fc = (const forward_ctx *)ctx;
    cuda_impl *ci = impl_of(fc->b);
    return enqueue_forward(fc->b, fc->len, 0, fc->with_y, 0, fc->with_y ? &ci->stats->forward_loss_sum : NULL, ci->cur,
                           1 - ci->cur, err);
}

static sk_status cuda_forward(sk_backend *b, const int32_t *x, const int32_t *y, int len, sk_mode mode,
                              int64_t step, double *loss_sum) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    const int train = mode == SK_MODE_TRAIN;
    if (len < 1 || len > ci->T) return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, ci->T);
    if (train && !ci->training) return sk_fail(err, SK_ERR_ARG, "training forward on an inference-only backend");
    SK_TRY(check_ids(ci, x, y, ci->B * len, err));
    ci->last_train = 0; // until this forward has gone through
    CUDA_CHECK(cudaSetDevice(ci->device));
    SK_TRY(stage(b, x, y, len, step, NULL, 0.0f, 0, err));
    if (train && ci->wdrop > 0.0f) { // this step's masked weights; whatever follows imports again
        const float *w = NULL;
        SK_TRY(enqueue_weight_drop(ci, &w, err));
        SK_TRY(ci->lstm->ops->import_weights(ci->lstm, w, err));
        ci->stale = 1;
    } else if (ci->stale) {
        SK_TRY(ci->lstm->ops->import_weights(ci->lstm, ci->params, err));
        ci->stale = 0;
    }
    const int from = ci->cur, to = 1 - ci->cur, grad = train && y, want_loss = y && loss_sum;
    sk_step_graphs *graphs = train ? NULL : ci->forward_graphs[y != NULL];
    if (graphs) { // the same kernels as below; the loss is summed whether asked for or not
        forward_ctx fc = {.b = b, .len = len, .with_y = y != NULL};
        if (ci->lstm->ops->prepare) SK_TRY(ci->lstm->ops->prepare(ci->lstm, len, err));
        SK_TRY(sk_step_graphs_launch(graphs, len, from, ci->stream, enqueue_inference, &fc, err));
    } else {
        SK_TRY(enqueue_forward(b, len, train, y != NULL, grad, want_loss ? &ci->stats->forward_loss_sum : NULL, from,
                               to, err));
    }
    ci->cur = to;
    ci->len = len;
    ci->last_step = step;
    if (want_loss) {
        CUDA_CHECK(cudaMemcpyAsync(&ci->host_stats->forward_loss_sum, &ci->stats->forward_loss_sum, sizeof(double),
                                   cudaMemcpyDeviceToHost, ci->stream));
        CUDA_CHECK(cudaStreamSynchronize(ci->stream));
        *loss_sum = ci->host_stats->forward_loss_sum;
    } else if (loss_sum) {
        *loss_sum = 0.0;
    }
    ci->last_train = grad;
    return SK_OK;
}

static sk_status cuda_get_logits(sk_backend *b, float *logits) {
    cuda_impl *ci = impl_of(b);
    return download(ci, logits, ci->logits, sizeof(float) * (size_t)ci->B * ci->len * ci->V, &b->err);
}

static sk_status cuda_backward(sk_backend *b) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    if (!ci->last_train)
        return sk_fail(err, SK_ERR_ARG, "backward needs a preceding training forward with targets");
    CUDA_CHECK(cudaSetDevice(ci->device));
    return enqueue_backward(b, ci->len, err);
}

static sk_status cuda_grad_buffer(sk_backend *b, float **grads, int *on_device) {
    cuda_impl *ci = impl_of(b);
    if (!ci->training) return sk_fail(&b->err, SK_ERR_ARG, "grad_buffer on a backend without training buffers");
    *grads = ci->grads;
    *on_device = 1;
    return SK_OK;
}

static sk_status cuda_grad_norm(sk_backend *b, double *norm) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    if (!ci->training) return sk_fail(err, SK_ERR_ARG, "grad_norm on a backend without training buffers");
    CUDA_CHECK(cudaSetDevice(ci->device));
    CUDA_CHECK(sk_cuda_sumsq(&ci->stats->sumsq, ci->partials, ci->grads, ci->total, ci->stream));
    CUDA_CHECK(cudaMemcpyAsync(&ci->host_stats->sumsq, &ci->stats->sumsq, sizeof(double), cudaMemcpyDeviceToHost,
                               ci->stream));
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    *norm = sqrt(ci->host_stats->sumsq);
    return SK_OK;
}

static sk_status cuda_update(sk_backend *b, const sk_optim_hparams *h, float lr, float clip_scale, int64_t step) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    if (!ci->training || step < 1)
        return sk_fail(err, SK_ERR_ARG, "optimizer step %lld on a backend %s", (long long)step,
                             ci->training ? "(steps count from 1)" : "without training buffers");
    CUDA_CHECK(cudaSetDevice(ci->device));
    stage_slot *s = NULL;
    SK_TRY(take_slot(ci, &s, err));
    fill_args(b, s->args, ci->last_step, ci->len, h, lr, clip_scale, step);
    SK_TRY(send_slot(ci, s, 0, 0, err));
    CUDA_CHECK(sk_cuda_optim_update(ci->params, ci->grads, ci->opt_state, ci->decay_mask, ci->total,
                                    &ci->args->optim, &ci->args->optim.clip_scale, NULL, ci->stream));
    ci->stale = 1;
    return SK_OK;
}

// The deferred step's work after its inputs are staged: the same kernels as forward,
// backward, grad_norm and update, in that order, with the norm's use moved to the device
// (sk_cuda_step_finish). The weights are imported every time (the eager path skips an
// import of unchanged weights; a copy of the same values changes nothing), so that one
// graph fits every step.
typedef struct {
    sk_backend *b;
    int len;
} step_ctx;

static sk_status enqueue_train_step(void *ctx, sk_error *err) {
    const step_ctx *sc = (const step_ctx *)ctx;
    cuda_impl *ci = impl_of(sc->b);
    const float *w = NULL;
    SK_TRY(enqueue_weight_drop(ci, &w, err));
    SK_TRY(ci->lstm->ops->import_weights(ci->lstm, w, err));
    SK_TRY(enqueue_forward(sc->b, sc->len, 1, 1, 1, &ci->stats->loss_sum, ci->cur, 1 - ci->cur, err));
    SK_TRY(enqueue_backward(sc->b, sc->len, err));
    CUDA_CHECK(sk_cuda_sumsq(&ci->stats->sumsq, ci->partials, ci->grads, ci->total, ci->stream));
    CUDA_CHECK(sk_cuda_step_finish(ci->stats, ci->args, ci->stream));
    CUDA_CHECK(sk_cuda_optim_update(ci->params, ci->grads, ci->opt_state, ci->decay_mask, ci->total,
                                    &ci->args->optim, &ci->stats->clip_scale, &ci->stats->skip, ci->stream));
    return SK_OK;
}

static sk_status cuda_train_step(sk_backend *b, const sk_train_step_args *a) {
    cuda_impl *ci = impl_of(b);
    const int32_t *x = a->x, *y = a->y;
    const int len = a->len;
    const int64_t step = a->step, opt_step = a->opt_step;
    sk_error *err = &b->err;
    if (!ci->training || opt_step < 1 || !y)
        return sk_fail(err, SK_ERR_ARG, "train_step at optimizer step %lld %s", (long long)opt_step,
                       !ci->training ? "on a backend without training buffers"
                                     : !y ? "without targets" : "(steps count from 1)");
    if (len < 1 || len > ci->T) return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, ci->T);
    SK_TRY(check_ids(ci, x, y, ci->B * len, err));
    ci->last_train = 0; // backward is part of the step
    CUDA_CHECK(cudaSetDevice(ci->device));
    SK_TRY(stage(b, x, y, len, step, a->optim, a->lr, opt_step, err));
    step_ctx sc = {.b = b, .len = len};
    if (ci->graphs) {
        if (ci->lstm->ops->prepare) SK_TRY(ci->lstm->ops->prepare(ci->lstm, len, err));
        SK_TRY(sk_step_graphs_launch(ci->graphs, len, ci->cur, ci->stream, enqueue_train_step, &sc, err));
    } else {
        SK_TRY(enqueue_train_step(&sc, err));
    }
    ci->cur = 1 - ci->cur;
    ci->len = len;
    ci->last_step = step;
    ci->stale = 1;
    return SK_OK;
}

static sk_status cuda_read_stats(sk_backend *b, sk_step_stats *stats) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    CUDA_CHECK(cudaSetDevice(ci->device));
    CUDA_CHECK(cudaMemcpyAsync(ci->host_stats, ci->stats, sizeof *ci->host_stats, cudaMemcpyDeviceToHost, ci->stream));
    CUDA_CHECK(cudaStreamSynchronize(ci->stream));
    const sk_cuda_step_stats *d = ci->host_stats;
    memset(stats, 0, sizeof *stats);
    stats->loss_sum = d->loss_sum, stats->grad_norm = d->norm;
    stats->graph_launches = sk_step_graphs_launches(ci->graphs);
    stats->forward_graph_launches =
        sk_step_graphs_launches(ci->forward_graphs[0]) + sk_step_graphs_launches(ci->forward_graphs[1]);
    stats->asynchronous = 1;
    const char *fallback = sk_step_graphs_take_notice(ci->graphs);
    if (fallback)
        snprintf(stats->notice, sizeof stats->notice, "cuda-graph %s: steps run eagerly from here, as %s",
                 b->cfg.cuda_graph == SK_GRAPH_AUTO ? "auto" : "try", fallback); // the modes that fall back
    if (d->bad_step) {
        stats->bad_step = d->bad_step, stats->bad_is_norm = d->bad_is_norm;
        stats->bad_loss_sum = d->bad_loss_sum, stats->bad_norm = d->bad_norm;
        CUDA_CHECK(cudaMemsetAsync(&ci->stats->bad_step, 0, sizeof ci->stats->bad_step, ci->stream));
    }
    return SK_OK;
}

static sk_status cuda_sample(sk_backend *b, const int32_t *x, int n, const sk_sample_opts *o, const uint64_t *keys,
                             int64_t position, int32_t *out) {
    cuda_impl *ci = impl_of(b);
    sk_error *err = &b->err;
    if (n < 1) return sk_fail(err, SK_ERR_ARG, "sampling needs at least one token, got %d", n);
    SK_TRY(check_ids(ci, x, NULL, ci->B, err));
    ci->last_train = 0;
    CUDA_CHECK(cudaSetDevice(ci->device));
    const int from = ci->cur, to = 1 - ci->cur;
    const sk_cuda_sampler_io io = {.params = ci->params, .hx = ci->h[from], .cx = ci->c[from], .hy = ci->h[to],
                                   .cy = ci->c[to], .logits = ci->logits, .stream = ci->stream};
    SK_TRY(sk_cuda_sampler_run(ci->sampler, &io, x, n, o, keys, position, out, err));
    ci->cur = to, ci->len = 1; // get_logits: the last draw's (B, 1, V)
    return SK_OK;
}

static const sk_backend_ops cuda_ops = {
    "cuda",
    cuda_set_params,
    cuda_get_params,
    cuda_get_grads,
    cuda_set_optimizer_state,
    cuda_get_optimizer_state,
    cuda_set_state,
    cuda_get_state,
    cuda_forward,
    cuda_get_logits,
    cuda_backward,
    cuda_grad_buffer,
    cuda_grad_norm,
    cuda_update,
    cuda_destroy,
    cuda_train_step,
    cuda_read_stats,
    NULL, // sample: set in the backend's own copy of this table where the sampling kernel runs the shape
};

// 1 when device `index` exists and can run this build's kernels; else 0 and why. Leaves
// `index` the current device (below).
static int probe_device(int index, char *why, size_t size) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        // cudart reports a missing driver (no libcuda.so) as an insufficient one.
        snprintf(why, size, "no CUDA device found (cudaGetDeviceCount: %s%s)", cudaGetErrorString(e),
                 e == cudaErrorInsufficientDriver ? "; no NVIDIA driver is loaded, or it predates this CUDA runtime"
                                                  : "");
        return 0;
    }
    if (n < 1) {
        snprintf(why, size, "no CUDA device found");
        return 0;
    }
    if (index < 0 || index >= n) {
        snprintf(why, size, "CUDA device %d does not exist (%d device%s found)", index, n, n == 1 ? "" : "s");
        return 0;
    }
    // The probed device stays current. Switching back would be wrong: since CUDA 12,
    // cudaSetDevice creates the device's primary context, so going back to device 0 in a
    // fresh process would leave every data-parallel rank holding a context (hundreds of MiB)
    // on GPU 0, and on a GPU in exclusive-process mode it would take the GPU from rank 0.
    // Every backend operation sets its own device first.
    e = cudaSetDevice(index);
    if (e == cudaSuccess) e = sk_cuda_probe_kernels(); // also creates the context
    if (e != cudaSuccess) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, index) == cudaSuccess)
            snprintf(why, size, "CUDA device %d (%.80s, compute capability %d.%d) is not usable by this build: %s",
                     index, prop.name, prop.major, prop.minor, cudaGetErrorString(e));
        else
            snprintf(why, size, "CUDA device %d is not usable: %s", index, cudaGetErrorString(e));
    }
    return e == cudaSuccess;
}

int sk_cuda_visible_devices(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)cudaGetLastError();
    return n;
}

// b->device, "cuda:1 (NVIDIA H100 80GB HBM3)", and b->device_uuid as nvidia-smi prints it.
static void describe_device(sk_backend *b, int index) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(b->device, sizeof b->device, "cuda:%d", index);
        return;
    }
    snprintf(b->device, sizeof b->device, "cuda:%d (%.100s)", index, prop.name);
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(b->device_uuid, sizeof b->device_uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4],
             u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

int sk_cuda_device_usable(int index, char *reason, size_t reason_size) {
    char why[256];
    int ok = probe_device(index, why, sizeof why);
    (void)cudaGetLastError(); // a failed probe must not leak into later error checks
    if (reason && reason_size) snprintf(reason, reason_size, "%s", ok ? "" : why);
    return ok;
}

sk_status sk_cuda_backend_create(const sk_backend_config *asked, sk_backend **out, sk_error *err) {
    *out = NULL;
    sk_backend_config resolved = *asked;
    if (resolved.precision == SK_PRECISION_AUTO) resolved.precision = SK_PRECISION_TF32; // backend.h says why
    const sk_backend_config *cfg = &resolved;
    if (cfg->batch_size < 1 || cfg->seq_len < 1)
        return sk_fail(err, SK_ERR_ARG, "batch size and sequence length must be positive, got %d and %d",
                             cfg->batch_size, cfg->seq_len);
    if (cfg->stream_offset < 0 || (cfg->global_batch > 0 && cfg->stream_offset + cfg->batch_size > cfg->global_batch))
        return sk_fail(err, SK_ERR_ARG, "streams [%d, %d) outside a global batch of %d", cfg->stream_offset,
                       cfg->stream_offset + cfg->batch_size, cfg->global_batch);
    if (cfg->model.num_layers > SK_CUDA_MAX_SITES)
        return sk_fail(err, SK_ERR_ARG, "the CUDA backend takes at most %d layers, got %d", SK_CUDA_MAX_SITES,
                       cfg->model.num_layers);
    if (cfg->training && !sk_optim_of(cfg->optimizer))
        return sk_fail(err, SK_ERR_ARG, "optimizer %d is not one of optim.h's table", (int)cfg->optimizer);
    char reason[256];
    if (!sk_cuda_device_usable(cfg->device_index, reason, sizeof reason))
        return sk_fail(err, SK_ERR_DEVICE, "device cuda:%d: %s", cfg->device_index, reason);
    sk_backend *b = (sk_backend *)calloc(1, sizeof *b);
    cuda_impl *ci = (cuda_impl *)calloc(1, sizeof *ci);
    if (!b || !ci) {
        free(b);
        free(ci);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the CUDA backend");
    }
    b->ops = &cuda_ops;
    b->cfg = *cfg;
    b->impl = ci;
    describe_device(b, cfg->device_index);
    sk_status st = sk_param_layout_init(&b->layout, &cfg->model, err);
    if (st == SK_OK) {
        // cuBLAS and cuDNN take int sizes: rows * width and the state must fit.
        const sk_model_config *m = &cfg->model;
        size_t rows = (size_t)cfg->batch_size * (size_t)cfg->seq_len, wide = (size_t)m->vocab_size;
        if ((size_t)m->embed_size > wide) wide = (size_t)m->embed_size;
        const size_t gh = (size_t)sk_model_cell(m)->gates * m->hidden_size;
        if (gh > wide) wide = gh;
        if (rows > (size_t)INT32_MAX / wide ||
            (size_t)m->num_layers * cfg->batch_size > (size_t)INT32_MAX / (size_t)m->hidden_size)
            st = sk_fail(err, SK_ERR_ARG,
                               "batch %d x window %d is too large for the CUDA backend at this model size",
                               cfg->batch_size, cfg->seq_len);
    }
    if (st == SK_OK) st = cuda_init(b, err);
    if (st != SK_OK) {
        cuda_destroy(b);
        return st;
    }
    if (ci->sampler) {
        ci->ops = cuda_ops;
        ci->ops.sample = cuda_sample;
        b->ops = &ci->ops;
    }
    *out = b;
    return SK_OK;
}

void sk_cuda_memory(const sk_backend_config *cfg, sk_backend_memory *m) {
    memset(m, 0, sizeof *m);
    m->on_cuda = 1;
    sk_param_layout layout;
    if (cfg->batch_size < 1 || cfg->seq_len < 1 || sk_param_layout_init(&layout, &cfg->model, NULL) != SK_OK) return;
    cuda_impl shape = {}, empty = {};
    set_shape(&shape, cfg, &layout);
    sk_param_layout_free(&layout);
    empty = shape, empty.T = 0; // what a window of no steps would take: the rest grows with B x T
    m->need = device_bytes(&shape);
    m->activations = m->need - device_bytes(&empty);
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(cfg->device_index) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
        m->available = free_bytes;
    (void)cudaGetLastError(); // an unusable device is sk_cuda_backend_create's to report
}

} // extern "C"
