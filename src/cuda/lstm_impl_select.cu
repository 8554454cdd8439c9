// lstm_impl_select.cu: which LSTM implementation the CUDA backend gets (lstm_impl.h).
// defines: sk_lstm_create, sk_lstm_destroy
//
// cudnn and persistent are taken as named (a persistent kernel that does not fit the shape
// is an error saying why). auto takes the persistent kernel only when kPersistentValidated
// says it is worth taking (correct and faster than cuDNN with a graph; kernels/
// PERSISTENT_LSTM_FLOOR.md) and only where it fits, with a one-line notice when it falls back.
// Precision: cuDNN computes in fp32 and tf32 only (math_mode.h); --rnn-impl cudnn with bf16
// is refused with the reason, and auto with bf16 takes the persistent kernel.
#include <stdio.h>

#include "lstm_impl.h"
#include "lstm_persistent_plan.h"
#include "math_mode.h"

namespace {

// auto's choice for fp32 and tf32 where the kernel fits. It passes tests/gpu on an H100 but
// ran slower there than cuDNN with a graph (kernels/PERSISTENT_LSTM_FLOOR.md, Measurements).
constexpr bool kPersistentValidated = false;

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
    case SK_RNN_PERSISTENT: {
        const sk_status st = sk_lstm_create_persistent(cfg, out, err);
        if (st == SK_OK && sk_lstm_persistent_layerwise() && notice && notice_size)
            snprintf(notice, notice_size,
                     "%s: the persistent LSTM runs its layer-after-layer kernels (kernels/lstm_layerwise.h) with %s, not "
                     "yet validated on a GPU",
                     sk_lstm_persistent_layerwise_name(),
                     sk_lstm_persistent_layerwise() == 2 ? "thread-block clusters" : "grid.sync");
        return st;
    }
    case SK_RNN_CUDNN_PERSIST:
        return create_cudnn_persist(cfg, out, notice, notice_size, err);
    case SK_RNN_AUTO: {
        const char *why_not_cudnn = "";
        if (!sk_cudnn_rnn_precision_ok(cfg->precision, &why_not_cudnn)) {
            // bf16: the persistent kernel is the only implementation; refused (with its
            // reason) where it does not fit.
            sk_status st = sk_lstm_create_persistent(cfg, out, err);
            if (st == SK_ERR_ARG) {
                char why[SK_ERROR_MSG_MAX];
                snprintf(why, sizeof why, "%s", err->msg);
                return sk_fail(err, SK_ERR_ARG, "precision %s runs only on the persistent LSTM kernel, and %.400s",
                               sk_precision_name(cfg->precision), why);
            }
            return st;
        }
        if (kPersistentValidated) {
            int fits = 0;
            char why[sizeof ((sk_plstm_plan *)0)->why_not];
            sk_status st = sk_lstm_persistent_fits(cfg, &fits, why, sizeof why, err);
            if (st != SK_OK) return st;
            if (fits) return sk_lstm_create_persistent(cfg, out, err);
            if (notice && notice_size)
                snprintf(notice, notice_size,
                         "rnn-impl auto: using cuDNN, the persistent LSTM kernel does not fit: %s", why);
        }
        return sk_lstm_create_cudnn(cfg, out, err);
    }
    }
    return sk_fail(err, SK_ERR_ARG, "unknown LSTM implementation %d", (int)which);
}

void sk_lstm_destroy(sk_lstm *l) {
    if (l) l->ops->destroy(l);
}
