// lstm_impl_cudnn.cu: the cuDNN implementation of the LSTM seam (lstm_impl.h).
// defines: sk_lstm_impl_cudnn, sk_lstm_impl_cudnn_persist, sk_lstm_create_cudnn, sk_lstm_create_cudnn_algo,
//          sk_cudnn_algo_name
//
// Without inter-layer dropout (p = 0, L = 1, or an inference-only backend) the stack is one
// cuDNN network over all L layers: one call per direction, here. With a training dropout
// p > 0 and L > 1 the project's keyed masks run between one-layer networks, overlapped as a
// wavefront of time chunks (lstm_impl_cudnn_wavefront.cu). Precision (math_mode.h): fp32
// data always; fp32 strict (CUDNN_FMA_MATH) or tf32 (CUDNN_DEFAULT_MATH); bf16 refused.
// A persistent algorithm runs every call once on zeros at creation (sk_cudnn_lstm_trial):
// cuDNN refuses some shapes only when a call is made, and cudnn-persist then moves on.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cudnn_rnn.h"
#include "lstm_impl.h"
#include "math_mode.h"

namespace {

typedef struct {
    cudnnRNNAlgo_t algo;
    sk_cudnn_lstm net; // all L layers
    void *work;        // net.work_cap bytes
    // The last training forward, which the backward differentiates.
    int phase; // 0: none; 1: a training forward ran; 2: backward_data ran too
    const float *x, *y, *hx, *cx;
} cudnn_stack;

cudnn_stack *stack_of(sk_lstm *l) { return (cudnn_stack *)l->impl; }

sk_status cudnn_import(sk_lstm *l, const float *params, sk_error *err) {
    return sk_cudnn_lstm_pack(&stack_of(l)->net, params, err);
}

sk_status cudnn_export(sk_lstm *l, float *params, sk_error *err) {
    return sk_cudnn_lstm_unpack(&stack_of(l)->net, params, err);
}

// The network's descriptors and device sequence lengths for len (a no-op when current).
sk_status cudnn_prepare(sk_lstm *l, int len, sk_error *err) { return sk_cudnn_lstm_set_len(&stack_of(l)->net, len, err); }

sk_status cudnn_forward(sk_lstm *l, int train, int len, const float *x, float *y, const float *hx, const float *cx,
                        float *hy, float *cy, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (train && !c->training) return sk_fail(err, SK_ERR_ARG, "training forward on an inference-only LSTM");
    if (len < 1 || len > c->T) return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, c->T);
    s->phase = 0; // until this forward has gone through
    SK_TRY(cudnn_prepare(l, len, err));
    SK_TRY(sk_cudnn_lstm_forward(&s->net, train, x, y, hx, cx, hy, cy, err));
    if (train) {
        s->phase = 1;
        s->x = x, s->y = y, s->hx = hx, s->cx = cx;
    }
    return SK_OK;
}

sk_status cudnn_backward_data(sk_lstm *l, const float *dy, float *dx, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    if (s->phase != 1) return sk_fail(err, SK_ERR_ARG, "LSTM backward without a training forward before it");
    SK_TRY(sk_cudnn_lstm_backward_data(&s->net, s->y, dy, dx, s->hx, s->cx, err));
    s->phase = 2;
    return SK_OK;
}

sk_status cudnn_backward_weights(sk_lstm *l, float *grads, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    if (s->phase != 2) return sk_fail(err, SK_ERR_ARG, "LSTM weight gradients before the data gradients");
    SK_TRY(sk_cudnn_lstm_backward_weights(&s->net, s->x, s->y, s->hx, grads, err));
    s->phase = 0; // once per training forward
    return SK_OK;
}

void cudnn_destroy(sk_lstm *l) {
    if (!l) return;
    cudnn_stack *s = stack_of(l);
    if (s) {
        sk_cudnn_lstm_free(&s->net);
        cudaFree(s->work);
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

sk_status stack_init(sk_lstm *l, sk_error *err) {
    cudnn_stack *s = stack_of(l);
    const sk_lstm_config *c = &l->cfg;
    SK_TRY(sk_cudnn_lstm_init(&s->net, c->dnn, c->stream, c->layout, 0, c->L, c->B, c->T, c->training, s->algo,
                              sk_cudnn_rnn_math(c->backend->precision), 0, 0, err));
    CUDA_CHECK(cudaMalloc(&s->work, s->net.work_cap ? s->net.work_cap : 1));
    s->net.work = s->work;
    // A persistent algorithm is tried on every call before it is taken (cudnn_rnn.h).
    if (s->algo != CUDNN_RNN_ALGO_STANDARD) SK_TRY(sk_cudnn_lstm_trial(&s->net, err));
    return SK_OK;
}

// The single network (one cuDNN call per direction), or the wavefront of one-layer networks
// when keyed dropout runs between layers.
sk_status create_stack(const sk_lstm_config *cfg, cudnnRNNAlgo_t algo, sk_lstm **out, sk_error *err) {
    if (cfg->training && cfg->dropout > 0.0f && cfg->L > 1) return sk_lstm_create_cudnn_wavefront(cfg, algo, out, err);
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
        return st;
    }
    *out = l;
    return SK_OK;
}

// cuDNN's precisions: fp32 and tf32 (math_mode.h); the shape only creation can tell.
sk_status cudnn_fits(const sk_lstm_config *cfg, int *fits, char *why, size_t why_size, sk_error *err) {
    (void)err;
    const char *reason = "";
    *fits = sk_cudnn_rnn_precision_ok(cfg->backend->precision, &reason);
    if (why && why_size) snprintf(why, why_size, "%s", *fits ? "" : reason);
    return SK_OK;
}

sk_status create_cudnn(const sk_lstm_config *cfg, sk_lstm **out, char *notice, size_t notice_size, sk_error *err) {
    (void)notice, (void)notice_size;
    return sk_lstm_create_cudnn(cfg, out, err);
}

// cudnn-persist: the first of cuDNN's persistent algorithms that takes the shape (the small-H
// one first: the fastest where it applies), its name in the notice; else every refusal.
sk_status create_cudnn_persist(const sk_lstm_config *cfg, sk_lstm **out, char *notice, size_t notice_size,
                               sk_error *err) {
    static const cudnnRNNAlgo_t algos[] = {CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, CUDNN_RNN_ALGO_PERSIST_STATIC,
                                           CUDNN_RNN_ALGO_PERSIST_DYNAMIC};
    char why[SK_ERROR_MSG_MAX] = "";
    size_t at = 0;
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        sk_status st = sk_lstm_create_cudnn_algo(cfg, algos[i], out, err);
        if (st == SK_OK) {
            if (notice && notice_size)
                snprintf(notice, notice_size, "rnn-impl cudnn-persist: cuDNN's %s algorithm",
                         sk_cudnn_algo_name(algos[i]));
            return SK_OK;
        }
        const char *unused;
        if (st != SK_ERR_ARG || !sk_cudnn_rnn_precision_ok(cfg->backend->precision, &unused))
            return st; // not a refusal of the shape: the same for every algorithm
        if (at < sizeof why)
            at += (size_t)snprintf(why + at, sizeof why - at, "%s%.150s", i ? "; " : "", err->msg);
    }
    return sk_fail(err, SK_ERR_ARG, "rnn-impl cudnn-persist: no persistent cuDNN algorithm takes this model: %s",
                   why);
}

} // namespace

const sk_lstm_impl sk_lstm_impl_cudnn = {.id = SK_RNN_CUDNN, .candidate = 1, .variants = 0, .fits = cudnn_fits,
                                         .create = create_cudnn};
const sk_lstm_impl sk_lstm_impl_cudnn_persist = {.id = SK_RNN_CUDNN_PERSIST, .candidate = 2, .variants = 0,
                                                 .fits = cudnn_fits, .create = create_cudnn_persist};

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
    if (!sk_cudnn_rnn_precision_ok(cfg->backend->precision, &why))
        return sk_fail(err, SK_ERR_ARG, "rnn-impl %s cannot compute in --precision %s: %s",
                       algo == CUDNN_RNN_ALGO_STANDARD ? "cudnn" : "cudnn-persist", sk_precision_name(cfg->backend->precision),
                       why);
    sk_status st = create_stack(cfg, algo, out, err);
    if (st != SK_OK) {
        if (algo == CUDNN_RNN_ALGO_STANDARD || st != SK_ERR_DEVICE) return st;
        char why[SK_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        return sk_fail(err, SK_ERR_ARG, "cuDNN's %s algorithm does not take this model: %.300s",
                       sk_cudnn_algo_name(algo), why);
    }
    return SK_OK;
}
