// lstm_impl_persistent.cu: the persistent-kernel implementation of the LSTM seam (lstm_impl.h):
// the wavefront kernels of kernels/lstm_persistent.cu for the recurrence (forward,
// and backward to the gate gradients of every layer), cuBLAS for what has no time
// dependency (dx of layer 0 and every weight gradient: one GEMM each over the window).
// defines: sk_lstm_impl_persistent, sk_lstm_impl_persistent_layerwise, sk_lstm_impl_persistent_cluster,
//          sk_lstm_create_persistent, sk_lstm_create_persistent_variant, sk_lstm_persistent_fits
//
// Precision (backend.h): fp32 runs the kernels with fp32 operands and cuBLAS without TF32;
// tf32 the same kernels on CUDA cores (an fp32 recurrence, within TF32's tolerance) or, once
// kTf32TensorCores is set, on tensor cores (operands rounded to TF32), with cuBLAS in TF32;
// bf16 the kernels' bf16 operands (weight slices converted from the fp32 copy at every
// launch), on CUDA cores, or on tensor cores once kBf16TensorCores is set, with cuBLAS in
// TF32. The config's tensor_cores (backend.h) overrides those defaults (tests run both
// paths); create_persistent_variant picks the inner product explicitly (lstm_bench).
// Weights: import copies the LSTM tensors (one contiguous range of the canonical buffer)
// into the implementation's own buffer, which the kernels read at launch; export copies
// them back. --rnn-impl auto takes it where it measures fastest (lstm_autotune.cu).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "lstm_impl.h"
#include "math_mode.h"
#include "lstm_layerwise.h"
#include "lstm_persistent.h"

namespace {

typedef struct {
    sk_plstm_args a; // shape, plan and buffers; pointers of the current call filled per call
    cublasHandle_t blas;
    void *blas_ws;       // its workspace, set explicitly: nothing for cuBLAS to allocate lazily (graph capture)
    size_t begin, count; // the LSTM range of the canonical buffer (floats)
    float *w;            // (count,) own copy
    sk_plstm_layer *layers_dev;
    sk_layer_offsets *layers; // (L,) canonical offsets
    float *xpad, *dxpad;           // (B, T+1, E): layer 0's input and its gradient, row stride len+1
    float *ones;                   // (B*(T+1),)
    int phase;                     // 0 none, 1 training forward, 2 backward data
    // cfg.family LAYERWISE or CLUSTER: the layer-after-layer kernels (lstm_layerwise.h) instead
    // of the wavefront, on a's buffers, with the input projections and the gradients between
    // layers as GEMMs here.
    int layerwise;
    sk_plstm_lw_args lw;
    float *xproj; // (B, T+1, 4H) a layer's input projection, reused layer after layer
    float *dxin;  // (B, T+1, H) training: dg_{k+1} W_ih_{k+1}, the gradient reaching layer k
} persist;

persist *impl_of(sk_lstm *l) { return (persist *)l->impl; }

size_t pad_slab(const sk_lstm_config *c, int width) { return (size_t)c->B * (c->T + 1) * width; }

sk_status p_import(sk_lstm *l, const float *params, sk_error *err) {
    persist *p = impl_of(l);
    CUDA_CHECK(cudaMemcpyAsync(p->w, params + p->begin, p->count * sizeof(float), cudaMemcpyDeviceToDevice,
                               l->cfg.stream));
    return SK_OK;
}

sk_status p_export(sk_lstm *l, float *params, sk_error *err) {
    persist *p = impl_of(l);
    CUDA_CHECK(cudaMemcpyAsync(params + p->begin, p->w, p->count * sizeof(float), cudaMemcpyDeviceToDevice,
                               l->cfg.stream));
    return SK_OK;
}

// The layer-after-layer forward: per layer, its input projection for the window (one GEMM:
// layer 0's input (B len, E), a higher layer's xin slab (B (len+1), H), pad rows zero), then
// the recurrence over W_hh. a holds this call's pointers and scalars.
sk_status lw_forward(persist *p, const sk_lstm_config *c, sk_error *err) {
    const sk_plstm_args *a = &p->a;
    sk_plstm_lw_args *w = &p->lw;
    const int len = a->len, H4 = 4 * c->H;
    w->len = len, w->hx = a->hx, w->cx = a->cx, w->hy = a->hy, w->cy = a->cy, w->y = a->y;
    w->train = a->train, w->p = a->p, w->keep_scale = a->keep_scale, w->dy = NULL, w->dxin = NULL;
    const float one = 1.0f, zero = 0.0f;
    for (int k = 0; k < c->L; k++) {
        const sk_layer_offsets *o = &p->layers[k];
        const float *in = k == 0 ? a->x : a->xin + (size_t)k * pad_slab(c, c->H);
        const int rows = k == 0 ? c->B * len : c->B * (len + 1);
        // xproj (rows, 4H) = in (rows, in) W_ih^T (row-major; cuBLAS sees the transposes).
        CUBLAS_CHECK(cublasSgemm(p->blas, CUBLAS_OP_T, CUBLAS_OP_N, H4, rows, o->in, &one, p->w + (o->w_ih - p->begin),
                                 o->in, in, o->in, &zero, p->xproj, H4));
        w->k = k, w->xproj = p->xproj, w->xrows = k == 0 ? len : len + 1;
        CUDA_CHECK(sk_plstm_lw_forward(w, c->stream));
    }
    return SK_OK;
}

// The layer-after-layer backward data, top layer first: below the top, the gradient from the
// layer above (one GEMM over its gate gradients, pad rows zero), then the recurrence.
sk_status lw_backward(persist *p, const sk_lstm_config *c, const float *dy, sk_error *err) {
    sk_plstm_lw_args *w = &p->lw;
    const int M = c->B * (w->len + 1), H = c->H, H4 = 4 * H;
    const float one = 1.0f, zero = 0.0f;
    for (int k = c->L - 1; k >= 0; k--) {
        if (k < c->L - 1) // dxin (M, H) = dg_{k+1} (M, 4H) W_ih_{k+1} (4H, H)
            CUBLAS_CHECK(cublasSgemm(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, H, M, H4, &one,
                                     p->w + (p->layers[k + 1].w_ih - p->begin), H,
                                     p->a.dg + (size_t)(k + 1) * pad_slab(c, H4), H4, &zero, p->dxin, H));
        w->k = k, w->dy = dy, w->dxin = p->dxin;
        CUDA_CHECK(sk_plstm_lw_backward(w, c->stream));
    }
    return SK_OK;
}

sk_status p_forward(sk_lstm *l, int train, int len, const float *x, float *y, const float *hx, const float *cx,
                    float *hy, float *cy, sk_error *err) {
    persist *p = impl_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (train && !c->training) return sk_fail(err, SK_ERR_ARG, "training forward on an inference-only LSTM");
    if (len < 1 || len > c->T) return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, c->T);
    p->phase = 0;
    sk_plstm_args *a = &p->a;
    a->len = len, a->x = x, a->y = y, a->hx = hx, a->cx = cx, a->hy = hy, a->cy = cy, a->dy = NULL;
    a->train = train;
    a->p = train && c->L > 1 ? c->dropout : 0.0f;
    a->keep_scale = 1.0f / (1.0f - c->dropout); // as the CPU backend
    if (p->layerwise) SK_TRY(lw_forward(p, c, err));
    else CUDA_CHECK(sk_plstm_forward(a, c->stream));
    if (train) p->phase = 1;
    return SK_OK;
}

sk_status p_backward_data(sk_lstm *l, const float *dy, float *dx, sk_error *err) {
    persist *p = impl_of(l);
    const sk_lstm_config *c = &l->cfg;
    sk_plstm_args *a = &p->a;
    if (p->phase != 1) return sk_fail(err, SK_ERR_ARG, "LSTM backward without a training forward before it");
    const int len = a->len, E = c->E, H4 = 4 * c->H, M = c->B * (len + 1);
    // Row (b, len) of every gate-gradient slab must be zero (the weight GEMMs sum over it);
    // the kernel writes every other row the GEMMs read (t < len, all 4H columns), so only
    // the B pad rows of each layer are cleared: at config B that is 0.5 MB, not 270 MB.
    const size_t pitch = (size_t)(len + 1) * H4 * sizeof(float);
    for (int k = 0; k < c->L; k++)
        CUDA_CHECK(cudaMemset2DAsync(a->dg + (size_t)k * pad_slab(c, H4) + (size_t)len * H4, pitch, 0,
                                     (size_t)H4 * sizeof(float), (size_t)c->B, c->stream));
    a->dy = dy;
    if (p->layerwise) SK_TRY(lw_backward(p, c, dy, err));
    else CUDA_CHECK(sk_plstm_backward(a, c->stream));
    // dx (B, len+1, E) = dg_0 (B(len+1), 4H) W_ih_0 (4H, E) (row-major; cuBLAS sees the
    // transposes), then the len real rows of each stream into the caller's (B, len, E).
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSgemm(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, E, M, H4, &one, p->w + (p->layers[0].w_ih - p->begin),
                             E, a->dg, H4, &zero, p->dxpad, E));
    CUDA_CHECK(cudaMemcpy2DAsync(dx, (size_t)len * E * sizeof(float), p->dxpad, (size_t)(len + 1) * E * sizeof(float),
                                 (size_t)len * E * sizeof(float), (size_t)c->B, cudaMemcpyDeviceToDevice, c->stream));
    p->phase = 2;
    return SK_OK;
}

sk_status p_backward_weights(sk_lstm *l, float *grads, sk_error *err) {
    persist *p = impl_of(l);
    const sk_lstm_config *c = &l->cfg;
    sk_plstm_args *a = &p->a;
    if (p->phase != 2) return sk_fail(err, SK_ERR_ARG, "LSTM weight gradients before the data gradients");
    const int len = a->len, E = c->E, H = c->H, H4 = 4 * H, M = c->B * (len + 1);
    // Layer 0's input with the same row stride as the gate gradients; pad rows zero.
    const size_t row = (size_t)E * sizeof(float);
    CUDA_CHECK(cudaMemcpy2DAsync(p->xpad, (len + 1) * row, a->x, len * row, len * row, (size_t)c->B,
                                 cudaMemcpyDeviceToDevice, c->stream));
    CUDA_CHECK(cudaMemset2DAsync(p->xpad + (size_t)len * E, (len + 1) * row, 0, row, (size_t)c->B, c->stream));
    const float one = 1.0f, zero = 0.0f;
    for (int k = 0; k < c->L; k++) {
        const sk_layer_offsets *o = &p->layers[k];
        const float *dg = a->dg + (size_t)k * pad_slab(c, H4);
        const float *xin = k == 0 ? p->xpad : a->xin + (size_t)k * pad_slab(c, H);
        const float *hprev = a->hh + (size_t)k * pad_slab(c, H); // row (b, t) = h(t-1), row (b, 0) = hx
        // dW_ih (4H, in) = dg^T (4H, M) X (M, in); dW_hh (4H, H) = dg^T hprev; in cuBLAS's
        // column-major view: (in, 4H) = X^T-view (in, M) x dg-view^T (M, 4H).
        CUBLAS_CHECK(cublasSgemm(p->blas, CUBLAS_OP_N, CUBLAS_OP_T, o->in, H4, M, &one, xin, o->in, dg, H4, &zero,
                                 grads + o->w_ih, o->in));
        CUBLAS_CHECK(cublasSgemm(p->blas, CUBLAS_OP_N, CUBLAS_OP_T, H, H4, M, &one, hprev, H, dg, H4, &zero,
                                 grads + o->w_hh, H));
        // Both biases get the column sums of dg.
        CUBLAS_CHECK(cublasSgemv(p->blas, CUBLAS_OP_N, H4, M, &one, dg, H4, p->ones, 1, &zero, grads + o->b_ih, 1));
        CUDA_CHECK(cudaMemcpyAsync(grads + o->b_hh, grads + o->b_ih, (size_t)H4 * sizeof(float),
                                   cudaMemcpyDeviceToDevice, c->stream));
    }
    p->phase = 0;
    return SK_OK;
}

void p_destroy(sk_lstm *l) {
    if (!l) return;
    persist *p = impl_of(l);
    if (p) {
        void *bufs[] = {p->w,     p->layers_dev, p->xpad,  p->dxpad,  p->ones,    p->a.hh,   p->a.xin, p->a.cs,
                        p->a.gates, p->a.dg,     p->a.hh16, p->a.xin16, p->a.dg16, p->xproj, p->dxin};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) cudaFree(bufs[i]);
        if (p->blas) cublasDestroy(p->blas);
        cudaFree(p->blas_ws); // after the handle that used it
        (void)cudaGetLastError();
        free(p->layers);
        free(p);
    }
    free(l);
}

const sk_lstm_ops persistent_ops = {
    "persistent", p_import, p_export, p_forward, p_backward_data, p_backward_weights, p_destroy, NULL,
};

sk_status alloc_zeroed(float **ptr, size_t n, cudaStream_t stream, sk_error *err) {
    CUDA_CHECK(cudaMalloc((void **)ptr, (n ? n : 1) * sizeof(float)));
    CUDA_CHECK(cudaMemsetAsync(*ptr, 0, (n ? n : 1) * sizeof(float), stream));
    return SK_OK;
}

// The bf16 copies (sk_plstm_args.hh16, ...): n elements of 2 bytes, zero.
sk_status alloc_zeroed16(uint16_t **ptr, size_t n, cudaStream_t stream, sk_error *err) {
    CUDA_CHECK(cudaMalloc((void **)ptr, (n ? n : 1) * sizeof(uint16_t)));
    CUDA_CHECK(cudaMemsetAsync(*ptr, 0, (n ? n : 1) * sizeof(uint16_t), stream));
    return SK_OK;
}

// p->layers (host), and the kernels' table of them (device) as offsets from p->begin: the
// LSTM tensors lie together in the canonical layout, [begin, begin + count).
sk_status build_layer_table(persist *p, const sk_lstm_config *c, sk_error *err) {
    const int L = c->L, H = c->H;
    p->layers = (sk_layer_offsets *)calloc((size_t)L, sizeof *p->layers);
    sk_plstm_layer *host = (sk_plstm_layer *)calloc((size_t)L, sizeof *host);
    if (!p->layers || !host) {
        free(host);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory for the persistent LSTM's layer table");
    }
    for (int k = 0; k < L; k++) p->layers[k] = sk_layer_at(c->layout, k);
    p->begin = p->layers[0].w_ih;
    p->count = p->layers[L - 1].b_hh + (size_t)4 * H - p->begin;
    for (int k = 0; k < L; k++) {
        const sk_layer_offsets *o = &p->layers[k];
        host[k] = {o->w_ih - p->begin, o->w_hh - p->begin, o->b_ih - p->begin, o->b_hh - p->begin, o->in};
    }
    cudaError_t ce = cudaMalloc((void **)&p->layers_dev, sizeof(sk_plstm_layer) * (size_t)L);
    if (ce == cudaSuccess)
        ce = cudaMemcpyAsync(p->layers_dev, host, sizeof(sk_plstm_layer) * (size_t)L, cudaMemcpyHostToDevice,
                             c->stream);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(c->stream); // before host is freed
    free(host);
    if (ce != cudaSuccess)
        return sk_fail(err, SK_ERR_DEVICE, "uploading the persistent LSTM's layer table failed: %s",
                       cudaGetErrorName(ce));
    return SK_OK;
}

// The cuBLAS handle of the weight gradients, on the stream, with its own workspace.
sk_status create_blas(persist *p, const sk_lstm_config *c, sk_error *err) {
    CUBLAS_CHECK(cublasCreate(&p->blas));
    CUBLAS_CHECK(cublasSetStream(p->blas, c->stream));
    CUBLAS_CHECK(cublasSetMathMode(p->blas, sk_cublas_math(c->backend->precision))); // fp32: no TF32 (math_mode.h)
    // After cublasSetStream, which resets it; cuBLAS's recommendation for Hopper (as the
    // backend's own handle). Without it cuBLAS allocates a default one on its first GEMM,
    // which a stream capture may refuse.
    const size_t ws_bytes = (size_t)32 << 20;
    CUDA_CHECK(cudaMalloc(&p->blas_ws, ws_bytes));
    CUBLAS_CHECK(cublasSetWorkspace(p->blas, p->blas_ws, ws_bytes));
    return SK_OK;
}

// p->ones: a device vector of m ones (the bias gradients' column sums).
sk_status upload_ones(persist *p, size_t m, cudaStream_t stream, sk_error *err) {
    float *ones = (float *)malloc(m * sizeof(float));
    if (!ones) return sk_fail(err, SK_ERR_NOMEM, "out of memory for a ones vector");
    for (size_t i = 0; i < m; i++) ones[i] = 1.0f;
    cudaError_t ce = cudaMalloc((void **)&p->ones, m * sizeof(float));
    if (ce == cudaSuccess) ce = cudaMemcpyAsync(p->ones, ones, m * sizeof(float), cudaMemcpyHostToDevice, stream);
    if (ce == cudaSuccess) ce = cudaStreamSynchronize(stream);
    free(ones);
    if (ce != cudaSuccess) return sk_fail(err, SK_ERR_DEVICE, "uploading a ones vector failed: %s", cudaGetErrorName(ce));
    return SK_OK;
}

// The layer-after-layer kernels' arguments, on the wavefront's buffers, and their own.
sk_status init_layerwise(persist *p, const sk_lstm_config *c, const sk_plstm_lw_plan *lw_plan, sk_error *err) {
    p->layerwise = 1;
    memset(&p->lw, 0, sizeof p->lw);
    sk_plstm_lw_args *w = &p->lw;
    w->B = c->B, w->T = c->T, w->H = c->H, w->L = c->L, w->plan = *lw_plan, w->w = p->w, w->layers = p->layers_dev;
    w->keys = c->dropout_keys, w->stream_offset = c->backend->stream_offset;
    SK_TRY(alloc_zeroed(&p->xproj, pad_slab(c, 4 * c->H), c->stream, err));
    if (c->training) SK_TRY(alloc_zeroed(&p->dxin, pad_slab(c, c->H), c->stream, err));
    return SK_OK;
}

// What backward keeps and uses: the cell states, gates and their gradients (bf16 copies of
// those when bf16 is set), layer 0's padded input and its gradient, a ones vector.
sk_status alloc_training(persist *p, const sk_lstm_config *c, int bf16, sk_error *err) {
    sk_plstm_args *a = &p->a;
    const int L = c->L, H = c->H;
    const size_t seq = (size_t)L * c->B * c->T * H;
    SK_TRY(alloc_zeroed(&a->cs, seq, c->stream, err));
    SK_TRY(alloc_zeroed(&a->gates, 4 * seq, c->stream, err));
    SK_TRY(alloc_zeroed(&a->dg, (size_t)L * pad_slab(c, 4 * H), c->stream, err));
    if (bf16) SK_TRY(alloc_zeroed16(&a->dg16, (size_t)L * pad_slab(c, 4 * H), c->stream, err));
    SK_TRY(alloc_zeroed(&p->xpad, pad_slab(c, c->E), c->stream, err));
    SK_TRY(alloc_zeroed(&p->dxpad, pad_slab(c, c->E), c->stream, err));
    return upload_ones(p, (size_t)c->B * (c->T + 1), c->stream, err);
}

sk_status persist_init(sk_lstm *l, const sk_plstm_plan *plan, const sk_plstm_lw_plan *lw_plan, sk_error *err) {
    persist *p = impl_of(l);
    const sk_lstm_config *c = &l->cfg;
    const int L = c->L, H = c->H;
    SK_TRY(build_layer_table(p, c, err));
    SK_TRY(create_blas(p, c, err));
    sk_plstm_args *a = &p->a;
    a->B = c->B, a->T = c->T, a->E = c->E, a->H = H, a->L = L;
    a->plan = *plan;
    a->layers = p->layers_dev;
    a->keys = c->dropout_keys;
    a->stream_offset = c->backend->stream_offset;
    SK_TRY(alloc_zeroed(&p->w, p->count, c->stream, err));
    a->w = p->w;
    SK_TRY(alloc_zeroed(&a->hh, (size_t)L * pad_slab(c, H), c->stream, err));
    SK_TRY(alloc_zeroed(&a->xin, (size_t)L * pad_slab(c, H), c->stream, err));
    // The bf16 copies blocks stage from: the wavefront kernels' of hh, xin and dg; the
    // layer-after-layer kernels' with grid.sync of hh and dg; none with clusters (h and the
    // gradients travel through shared memory).
    const int wave16 = !lw_plan && sk_plstm_operand_bytes(plan->operands) == 2;
    const int lw16 = lw_plan && lw_plan->operand_bytes == 2 && !lw_plan->cluster;
    if (wave16 || lw16) SK_TRY(alloc_zeroed16(&a->hh16, (size_t)L * pad_slab(c, H), c->stream, err));
    if (wave16) SK_TRY(alloc_zeroed16(&a->xin16, (size_t)L * pad_slab(c, H), c->stream, err));
    if (lw_plan) SK_TRY(init_layerwise(p, c, lw_plan, err));
    if (c->training) SK_TRY(alloc_training(p, c, wave16 || lw16, err));
    if (p->layerwise) {
        sk_plstm_lw_args *w = &p->lw;
        w->hh = a->hh, w->xin = a->xin, w->cs = a->cs, w->gates = a->gates, w->dg = a->dg;
        w->hh16 = a->hh16, w->dg16 = a->dg16; // NULL unless the grid.sync kernels stage bf16 (above)
    }
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return SK_OK;
}

} // namespace

// Tensor cores (mma.sync) for bf16 and tf32 unless --tensor-cores off: they pass tests/gpu on
// an H100 (bench/results/h100-2026-11-26-faa1609/gpu-tests.log).
static const int kBf16TensorCores = 1, kTf32TensorCores = 1;

// 1: the inner products on tensor cores (cfg->tensor_cores, or the default; in fp32 only an
// explicit ON, which create refuses).
static int tensor_cores_for(const sk_lstm_config *cfg) {
    if (cfg->tensor_cores != SK_TENSOR_CORES_DEFAULT) return cfg->tensor_cores == SK_TENSOR_CORES_ON;
    return cfg->backend->precision == SK_PRECISION_BF16 ? kBf16TensorCores
           : cfg->backend->precision == SK_PRECISION_TF32 ? kTf32TensorCores
                                                 : 0;
}

static sk_status make_plan(const sk_lstm_config *cfg, int tensor_cores, sk_plstm_plan *plan, sk_error *err) {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    sk_plstm_operands operands = SK_PLSTM_FP32; // fp32, and tf32 on CUDA cores (an fp32 recurrence)
    if (cfg->backend->precision == SK_PRECISION_BF16) operands = tensor_cores ? SK_PLSTM_BF16_MMA : SK_PLSTM_BF16;
    if (cfg->backend->precision == SK_PRECISION_TF32 && tensor_cores) operands = SK_PLSTM_TF32_MMA;
    CUDA_CHECK(sk_plstm_plan_make(plan, device, cfg->B, cfg->E, cfg->H, cfg->L, operands));
    return SK_OK;
}

// Their plan: the precision's operands (bf16 in bf16, else fp32), the inner products on tensor
// cores where the persistent kernel's would be (TF32 in tf32, bf16 in bf16).
static sk_status make_lw_plan(const sk_lstm_config *cfg, int tensor_cores, sk_plstm_lw_plan *plan, sk_error *err) {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const int bf16 = cfg->backend->precision == SK_PRECISION_BF16;
    CUDA_CHECK(sk_plstm_lw_plan_make(plan, device, cfg->B, cfg->H, tensor_cores && cfg->backend->precision != SK_PRECISION_FP32,
                                     bf16 ? 2 : 4, cfg->family == SK_LSTM_CLUSTER));
    return SK_OK;
}

// The persistent kernels are the LSTM's (kernels/lstm_persistent_kernels.cuh): another cell's
// refusal, or NULL.
static const char *cell_refusal(const sk_lstm_config *cfg) {
    static const char *why = "the persistent kernels run the lstm cell only (use --rnn-impl cudnn or auto)";
    return cfg->layout->cfg.cell == SK_CELL_LSTM ? NULL : why;
}

sk_status sk_lstm_persistent_fits(const sk_lstm_config *cfg, int *fits, char *why, size_t why_size, sk_error *err) {
    if (cell_refusal(cfg)) {
        *fits = 0;
        if (why && why_size) snprintf(why, why_size, "%s", cell_refusal(cfg));
        return SK_OK;
    }
    const int tc = tensor_cores_for(cfg);
    if (cfg->family != SK_LSTM_WAVEFRONT) {
        sk_plstm_lw_plan lw;
        SK_TRY(make_lw_plan(cfg, tc, &lw, err));
        *fits = lw.supported;
        if (why && why_size) snprintf(why, why_size, "%s", lw.why_not);
        return SK_OK;
    }
    sk_plstm_plan plan;
    SK_TRY(make_plan(cfg, tc, &plan, err));
    *fits = plan.supported;
    if (why && why_size) snprintf(why, why_size, "%s", plan.why_not);
    return SK_OK;
}

sk_status sk_lstm_create_persistent(const sk_lstm_config *cfg, sk_lstm **out, sk_error *err) {
    return sk_lstm_create_persistent_variant(cfg, tensor_cores_for(cfg), out, err);
}

// The registry's three rows: one family each, set on a copy of cfg.
template <int family>
static sk_status family_fits(const sk_lstm_config *cfg, int *fits, char *why, size_t why_size, sk_error *err) {
    sk_lstm_config c = *cfg;
    c.family = family;
    return sk_lstm_persistent_fits(&c, fits, why, why_size, err);
}
template <int family>
static sk_status family_create(const sk_lstm_config *cfg, sk_lstm **out, char *notice, size_t notice_size,
                               sk_error *err) {
    (void)notice, (void)notice_size;
    sk_lstm_config c = *cfg;
    c.family = family;
    return sk_lstm_create_persistent(&c, out, err);
}
const sk_lstm_impl sk_lstm_impl_persistent = {.id = SK_RNN_PERSISTENT, .candidate = 5, .variants = 1,
                                              .fits = family_fits<SK_LSTM_WAVEFRONT>,
                                              .create = family_create<SK_LSTM_WAVEFRONT>};
const sk_lstm_impl sk_lstm_impl_persistent_layerwise = {.id = SK_RNN_PERSISTENT_LAYERWISE, .candidate = 3,
                                                        .variants = 1, .fits = family_fits<SK_LSTM_LAYERWISE>,
                                                        .create = family_create<SK_LSTM_LAYERWISE>};
const sk_lstm_impl sk_lstm_impl_persistent_cluster = {.id = SK_RNN_PERSISTENT_CLUSTER, .candidate = 4,
                                                      .variants = 1, .fits = family_fits<SK_LSTM_CLUSTER>,
                                                      .create = family_create<SK_LSTM_CLUSTER>};

sk_status sk_lstm_create_persistent_variant(const sk_lstm_config *cfg, int tensor_cores, sk_lstm **out,
                                            sk_error *err) {
    *out = NULL;
    if (cell_refusal(cfg))
        return sk_fail(err, SK_ERR_ARG, "cell %s: %s", sk_model_cell(&cfg->layout->cfg)->name, cell_refusal(cfg));
    if (tensor_cores && cfg->backend->precision == SK_PRECISION_FP32)
        return sk_fail(err, SK_ERR_ARG, "precision fp32 is strict fp32: the persistent LSTM kernel uses no tensor "
                                        "cores in it (tf32 and bf16 do)");
    sk_plstm_plan plan;
    SK_TRY(make_plan(cfg, tensor_cores, &plan, err));
    sk_plstm_lw_plan lw;
    const int layerwise = cfg->family != SK_LSTM_WAVEFRONT;
    if (layerwise) {
        SK_TRY(make_lw_plan(cfg, tensor_cores, &lw, err));
        if (!lw.supported)
            return sk_fail(err, SK_ERR_ARG, "rnn-impl %s: the layer-after-layer LSTM kernels do not fit this model: %s",
                           cfg->family == SK_LSTM_CLUSTER ? "persistent-cluster" : "persistent-layerwise",
                           lw.why_not);
    } else if (!plan.supported) {
        return sk_fail(err, SK_ERR_ARG, "the persistent LSTM kernel does not fit this model: %s", plan.why_not);
    }
    sk_lstm *l = (sk_lstm *)calloc(1, sizeof *l);
    persist *p = (persist *)calloc(1, sizeof *p);
    if (!l || !p) {
        free(l);
        free(p);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the persistent LSTM");
    }
    l->ops = &persistent_ops;
    l->cfg = *cfg;
    l->cfg.tensor_cores = tensor_cores ? SK_TENSOR_CORES_ON : SK_TENSOR_CORES_OFF; // as it runs (sk_lstm_choice)
    l->impl = p;
    sk_status st = persist_init(l, &plan, layerwise ? &lw : NULL, err);
    if (st != SK_OK) {
        p_destroy(l);
        return st;
    }
    *out = l;
    return SK_OK;
}
