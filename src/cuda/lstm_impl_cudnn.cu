// lstm_impl_cudnn.cu: the cuDNN implementation of the LSTM seam (lstm_impl.h).
// defines: sk_lstm_create_cudnn, sk_lstm_create_cudnn_algo, sk_cudnn_algo_name
//
// Without inter-layer dropout (p = 0, L = 1, or an inference-only backend) the stack is one
// cuDNN network over all L layers: one call per direction. With a training dropout p > 0
// and L > 1 it is L one-layer networks with the project's keyed dropout kernel between
// them (hash.h's masks, site k after layer k, keyed by (seed, step) through the keys the
// backend writes to device memory every step, cfg.dropout_keys): the masks are the CPU
// backend's, so CPU/GPU parity holds with dropout on and a resumed run draws the same
// masks as an uninterrupted one. cuDNN's own dropout (a generator state seeded once and
// never saved) is not used. The networks share one workspace (scratch only, used by one
// call at a time); each keeps its reserve space for its backward. Precision (math_mode.h):
// fp32 data always; fp32 strict (CUDNN_FMA_MATH) or tf32 (CUDNN_DEFAULT_MATH); bf16 refused.
// A persistent algorithm runs every call once on zeros at creation (sk_cudnn_lstm_trial):
// cuDNN refuses some shapes only when a call is made, and cudnn-persist then moves on.
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cudnn_rnn.h"
#include "kernels.h"
#include "lstm_impl.h"
#include "math_mode.h"

namespace {

typedef struct {
    cudnnRNNAlgo_t algo;  // of every network
    int nunits;           // 1: one network over all layers; L: one per layer, dropout between
    sk_cudnn_lstm *units; // (nunits)
    void *work;           // shared workspace
    // One-per-layer only, each (L-1) slabs of (B, T, H), slab k for layer k's output:
    float *out;     // raw outputs of layers 0..L-2
    float *dropped; // the same after dropout: the inputs of layers 1..L-1 (training)
    float *grad[2]; // (B, T, H) each: gradients between layers, ping-pong
    // The last training forward, which the backward differentiates.
    int phase; // 0: none; 1: a training forward ran; 2: backward_data ran too
    int len;
    const float *x, *y, *hx, *cx;
} cudnn_stack;

cudnn_stack *stack_of(sk_lstm *l) { return (cudnn_stack *)l->impl; }

size_t slab(const sk_lstm_config *c) { return (size_t)c->B * c->T * c->H; }
size_t state_slab(const sk_lstm_config *c) { return (size_t)c->B * c->H; }

float keep_scale(const sk_lstm_config *c) { return 1.0f / (1.0f - c->dropout); } // as the CPU backend

// The mask index of element 0 of a (B, len, H) slab: that of global stream stream_offset.
uint64_t first_index(const sk_lstm_config *c, int len) {
    return (uint64_t)c->stream_offset * (uint64_t)len * (uint64_t)c->H;
}

sk_status cudnn_import(sk_lstm *l, const float *params, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    for (int u = 0; u < s->nunits; u++) SK_TRY(sk_cudnn_lstm_pack(&s->units[u], params, err));
    return SK_OK;
}

sk_status cudnn_export(sk_lstm *l, float *params, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    for (int u = 0; u < s->nunits; u++) SK_TRY(sk_cudnn_lstm_unpack(&s->units[u], params, err));
    return SK_OK;
}

// The networks' descriptors and device sequence lengths for len (a no-op when current).
sk_status cudnn_prepare(sk_lstm *l, int len, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    for (int u = 0; u < s->nunits; u++) SK_TRY(sk_cudnn_lstm_set_len(&s->units[u], len, err));
    return SK_OK;
}

sk_status cudnn_forward(sk_lstm *l, int train, int len, const float *x, float *y, const float *hx, const float *cx,
                        float *hy, float *cy, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (train && !c->training) return sk_fail(err, SK_ERR_ARG, "training forward on an inference-only LSTM");
    if (len < 1 || len > c->T) return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, c->T);
    s->phase = 0; // until this forward has gone through
    SK_TRY(cudnn_prepare(l, len, err));
    if (s->nunits == 1) {
        SK_TRY(sk_cudnn_lstm_forward(&s->units[0], train, x, y, hx, cx, hy, cy, err));
    } else {
        const size_t n = (size_t)c->B * len * c->H, hs = state_slab(c);
        for (int k = 0; k < c->L; k++) {
            const float *in = k == 0 ? x : (train ? s->dropped : s->out) + (size_t)(k - 1) * slab(c);
            float *o = k == c->L - 1 ? y : s->out + (size_t)k * slab(c);
            SK_TRY(sk_cudnn_lstm_forward(&s->units[k], train, in, o, hx + k * hs, cx + k * hs, hy + k * hs,
                                         cy + k * hs, err));
            if (train && k < c->L - 1)
                CUDA_CHECK(sk_cuda_dropout(s->dropped + (size_t)k * slab(c), o, n, first_index(c, len),
                                           &c->dropout_keys[k], c->dropout, keep_scale(c), c->stream));
        }
    }
    if (train) {
        s->phase = 1;
        s->len = len;
        s->x = x, s->y = y, s->hx = hx, s->cx = cx;
    }
    return SK_OK;
}

sk_status cudnn_backward_data(sk_lstm *l, const float *dy, float *dx, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (s->phase != 1) return sk_fail(err, SK_ERR_ARG, "LSTM backward without a training forward before it");
    if (s->nunits == 1) {
        SK_TRY(sk_cudnn_lstm_backward_data(&s->units[0], s->y, dy, dx, s->hx, s->cx, err));
    } else {
        // Layer k's dy is grad[k % 2] (the caller's dy for the top layer); its dx goes to
        // grad[(k - 1) % 2] (the caller's dx for layer 0) and through the mask of site k-1.
        const size_t n = (size_t)c->B * s->len * c->H, hs = state_slab(c);
        for (int k = c->L - 1; k >= 0; k--) {
            const float *yk = k == c->L - 1 ? s->y : s->out + (size_t)k * slab(c);
            const float *dyk = k == c->L - 1 ? dy : s->grad[k % 2];
            float *dxk = k == 0 ? dx : s->grad[(k + 1) % 2];
            SK_TRY(sk_cudnn_lstm_backward_data(&s->units[k], yk, dyk, dxk, s->hx + k * hs, s->cx + k * hs, err));
            if (k > 0)
                CUDA_CHECK(sk_cuda_dropout(dxk, dxk, n, first_index(c, s->len), &c->dropout_keys[k - 1], c->dropout,
                                           keep_scale(c), c->stream));
        }
    }
    s->phase = 2;
    return SK_OK;
}

sk_status cudnn_backward_weights(sk_lstm *l, float *grads, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (s->phase != 2) return sk_fail(err, SK_ERR_ARG, "LSTM weight gradients before the data gradients");
    if (s->nunits == 1) {
        SK_TRY(sk_cudnn_lstm_backward_weights(&s->units[0], s->x, s->y, s->hx, grads, err));
    } else {
        for (int k = 0; k < c->L; k++) {
            const float *xk = k == 0 ? s->x : s->dropped + (size_t)(k - 1) * slab(c);
            const float *yk = k == c->L - 1 ? s->y : s->out + (size_t)k * slab(c);
            SK_TRY(sk_cudnn_lstm_backward_weights(&s->units[k], xk, yk, s->hx + k * state_slab(c), grads, err));
        }
    }
    s->phase = 0; // once per training forward
    return SK_OK;
}

void cudnn_destroy(sk_lstm *l) {
    if (!l) return;
    cudnn_stack *s = stack_of(l);
    if (s) {
        for (int u = 0; u < s->nunits && s->units; u++) sk_cudnn_lstm_free(&s->units[u]);
        free(s->units);
        cudaFree(s->work);
        cudaFree(s->out);
        cudaFree(s->dropped);
        cudaFree(s->grad[0]);
        cudaFree(s->grad[1]);
        (void)cudaGetLastError();
        free(s);
    }
    free(l);
}

const sk_lstm_ops cudnn_ops = {
    "cudnn", cudnn_import, cudnn_export, cudnn_forward, cudnn_backward_data, cudnn_backward_weights, cudnn_destroy,
    cudnn_prepare,
};
const sk_lstm_ops cudnn_persist_ops = {
    "cudnn-persist", cudnn_import,           cudnn_export,  cudnn_forward, cudnn_backward_data,
    cudnn_backward_weights, cudnn_destroy, cudnn_prepare,
};

sk_status dev_alloc(void **p, size_t bytes, sk_error *err) {
    CUDA_CHECK(cudaMalloc(p, bytes ? bytes : 1));
    return SK_OK;
}

sk_status stack_init(sk_lstm *l, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    const sk_lstm_config *c = &l->cfg;
    const int per_layer = c->training && c->dropout > 0.0f && c->L > 1;
    s->nunits = per_layer ? c->L : 1;
    s->units = (sk_cudnn_lstm *)calloc((size_t)s->nunits, sizeof *s->units);
    if (!s->units) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the cuDNN LSTM networks");
    size_t work = 0;
    for (int u = 0; u < s->nunits; u++) {
        SK_TRY(sk_cudnn_lstm_init(&s->units[u], c->dnn, c->stream, c->layout, per_layer ? u : 0,
                                  per_layer ? 1 : c->L, c->B, c->T, c->training, s->algo,
                                  sk_cudnn_rnn_math(c->precision), err));
        if (s->units[u].work_cap > work) work = s->units[u].work_cap;
    }
    SK_TRY(dev_alloc(&s->work, work, err));
    for (int u = 0; u < s->nunits; u++) s->units[u].work = s->work;
    // A persistent algorithm is tried on every call before it is taken (cudnn_rnn.h).
    if (s->algo != CUDNN_RNN_ALGO_STANDARD)
        for (int u = 0; u < s->nunits; u++) SK_TRY(sk_cudnn_lstm_trial(&s->units[u], err));
    if (per_layer) {
        const size_t inner = (size_t)(c->L - 1) * slab(c) * sizeof(float);
        SK_TRY(dev_alloc((void **)&s->out, inner, err));
        SK_TRY(dev_alloc((void **)&s->dropped, inner, err));
        SK_TRY(dev_alloc((void **)&s->grad[0], slab(c) * sizeof(float), err));
        SK_TRY(dev_alloc((void **)&s->grad[1], slab(c) * sizeof(float), err));
    }
    return SK_OK;
}

} // namespace

const char *sk_cudnn_algo_name(cudnnRNNAlgo_t algo) {
    switch (algo) {
    case CUDNN_RNN_ALGO_STANDARD: return "STANDARD";
    case CUDNN_RNN_ALGO_PERSIST_STATIC: return "PERSIST_STATIC";
    case CUDNN_RNN_ALGO_PERSIST_DYNAMIC: return "PERSIST_DYNAMIC";
    case CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H: return "PERSIST_STATIC_SMALL_H";
    default: return "unknown";
    }
}

sk_status sk_lstm_create_cudnn(const sk_lstm_config *cfg, sk_lstm **out, sk_error *err) {
    return sk_lstm_create_cudnn_algo(cfg, CUDNN_RNN_ALGO_STANDARD, out, err);
}

sk_status sk_lstm_create_cudnn_algo(const sk_lstm_config *cfg, cudnnRNNAlgo_t algo, sk_lstm **out, sk_error *err) {
    *out = NULL;
    const char *why = "";
    if (!sk_cudnn_rnn_precision_ok(cfg->precision, &why))
        return sk_fail(err, SK_ERR_ARG, "--rnn-impl %s cannot compute in --precision %s: %s",
                       algo == CUDNN_RNN_ALGO_STANDARD ? "cudnn" : "cudnn-persist", sk_precision_name(cfg->precision),
                       why);
    sk_lstm *l = (sk_lstm *)calloc(1, sizeof *l);
    cudnn_stack *s = (cudnn_stack *)calloc(1, sizeof *s);
    if (!l || !s) {
        free(l);
        free(s);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the cuDNN LSTM");
    }
    l->ops = algo == CUDNN_RNN_ALGO_STANDARD ? &cudnn_ops : &cudnn_persist_ops;
    l->cfg = *cfg;
    l->impl = s;
    s->algo = algo;
    sk_status st = stack_init(l, err);
    if (st != SK_OK) {
        cudnn_destroy(l);
        if (algo == CUDNN_RNN_ALGO_STANDARD || st != SK_ERR_DEVICE) return st;
        char why[SK_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        return sk_fail(err, SK_ERR_ARG, "cuDNN's %s algorithm does not take this model: %.300s",
                       sk_cudnn_algo_name(algo), why);
    }
    *out = l;
    return SK_OK;
}
