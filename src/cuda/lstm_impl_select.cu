// lstm_impl_select.cu: which LSTM implementation the CUDA backend gets (lstm_impl.h).
// defines: sk_lstm_create, sk_lstm_choice, sk_lstm_destroy
//
// A named implementation is taken as named (one that does not fit the shape is an error saying
// why). auto, where nothing is measured (inference, or a backend not asked to measure), is
// cuDNN: which implementation wins depends on the GPU and the shape, and only a measurement
// (lstm_autotune.cu) knows. Precision: cuDNN computes in fp32 and tf32 only (math_mode.h);
// --rnn-impl cudnn with bf16 is refused with the reason, and auto with bf16 takes the
// persistent kernels.
#include <stdio.h>
#include <string.h>

#include "cuda_check.h"
#include "lstm_impl.h"
#include "lstm_persistent_plan.h"
#include "math_mode.h"

namespace {

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
        if (st != SK_ERR_ARG || !sk_cudnn_rnn_precision_ok(cfg->precision, &unused))
            return st; // not a refusal of the shape: the same for every algorithm
        if (at < sizeof why)
            at += (size_t)snprintf(why + at, sizeof why - at, "%s%.150s", i ? "; " : "", err->msg);
    }
    return sk_fail(err, SK_ERR_ARG, "rnn-impl cudnn-persist: no persistent cuDNN algorithm takes this model: %s",
                   why);
}

} // namespace

sk_status sk_lstm_create(sk_rnn_impl which, const sk_lstm_config *cfg, sk_lstm **out, char *notice,
                         size_t notice_size, sk_error *err) {
    *out = NULL;
    if (notice && notice_size) notice[0] = '\0';
    switch (which) {
    case SK_RNN_CUDNN:
        return sk_lstm_create_cudnn(cfg, out, err);
    case SK_RNN_PERSISTENT:
    case SK_RNN_PERSISTENT_LAYERWISE:
    case SK_RNN_PERSISTENT_CLUSTER: {
        sk_lstm_config c = *cfg;
        c.family = which == SK_RNN_PERSISTENT_LAYERWISE ? SK_LSTM_LAYERWISE
                   : which == SK_RNN_PERSISTENT_CLUSTER ? SK_LSTM_CLUSTER
                                                        : SK_LSTM_WAVEFRONT;
        return sk_lstm_create_persistent(&c, out, err);
    }
    case SK_RNN_CUDNN_PERSIST:
        return create_cudnn_persist(cfg, out, notice, notice_size, err);
    case SK_RNN_AUTO: {
        const char *why_not_cudnn = "";
        if (!sk_cudnn_rnn_precision_ok(cfg->precision, &why_not_cudnn)) {
            // bf16: the persistent kernels are the only implementation, layer after layer
            // where they fit (the faster wherever measured: bench/results/h200-2026-11-28-2d6bab0),
            // else the wavefront; refused (with its reason) where neither fits.
            sk_lstm_config c = *cfg;
            c.family = SK_LSTM_LAYERWISE;
            int fits = 0;
            SK_TRY(sk_lstm_persistent_fits(&c, &fits, NULL, 0, err));
            if (!fits) c.family = SK_LSTM_WAVEFRONT;
            sk_status st = sk_lstm_create_persistent(&c, out, err);
            if (st == SK_ERR_ARG) {
                char why[SK_ERROR_MSG_MAX];
                snprintf(why, sizeof why, "%s", err->msg);
                return sk_fail(err, SK_ERR_ARG, "precision %s runs only on the persistent LSTM kernel, and %.400s",
                               sk_precision_name(cfg->precision), why);
            }
            return st;
        }
        return sk_lstm_create_cudnn(cfg, out, err);
    }
    default:
        break;
    }
    return sk_fail(err, SK_ERR_ARG, "unknown LSTM implementation %d", (int)which);
}

sk_rnn_choice sk_lstm_choice(const sk_lstm *l) {
    if (strcmp(l->ops->name, "persistent") != 0)
        return {strcmp(l->ops->name, "cudnn") == 0 ? SK_RNN_CUDNN : SK_RNN_CUDNN_PERSIST, SK_TENSOR_CORES_DEFAULT};
    const sk_rnn_impl impl = l->cfg.family == SK_LSTM_LAYERWISE ? SK_RNN_PERSISTENT_LAYERWISE
                             : l->cfg.family == SK_LSTM_CLUSTER ? SK_RNN_PERSISTENT_CLUSTER
                                                                : SK_RNN_PERSISTENT;
    return {impl, l->cfg.tensor_cores};
}

void sk_lstm_destroy(sk_lstm *l) {
    if (l) l->ops->destroy(l);
}
