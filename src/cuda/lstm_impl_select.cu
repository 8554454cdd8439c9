// lstm_impl_select.cu: the registry of LSTM implementations (lstm_impl.h): the descriptors of
// backend.h's SK_RNN_IMPLS by id, the creation of one, and auto's rule.
// defines: sk_lstm_impl_of, sk_lstm_impl_auto, sk_lstm_create, sk_lstm_choice, sk_lstm_destroy
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
#include "math_mode.h"

namespace {

#define SK_LSTM_IMPL_ENTRY(id, tag, word, help) &sk_lstm_impl_##tag,
const sk_lstm_impl *const kImpls[] = {SK_RNN_IMPLS(SK_LSTM_IMPL_ENTRY)};
#undef SK_LSTM_IMPL_ENTRY
constexpr int kImplCount = (int)(sizeof kImpls / sizeof kImpls[0]);

// auto where nothing is measured: cuDNN; in bf16 the persistent kernels, the only implementation
// there, layer after layer where they fit (the faster wherever measured:
// bench/results/h200-2026-11-28-2d6bab0), else the wavefront; refused (with its reason) where
// neither fits.
sk_status create_auto(const sk_lstm_config *cfg, sk_lstm **out, char *notice, size_t notice_size, sk_error *err) {
    const char *why_not_cudnn = "";
    if (sk_cudnn_rnn_precision_ok(cfg->backend->precision, &why_not_cudnn))
        return sk_lstm_create(SK_RNN_CUDNN, cfg, out, notice, notice_size, err);
    int fits = 0;
    SK_TRY(sk_lstm_impl_persistent_layerwise.fits(cfg, &fits, NULL, 0, err));
    sk_status st = sk_lstm_create(fits ? SK_RNN_PERSISTENT_LAYERWISE : SK_RNN_PERSISTENT, cfg, out, notice,
                                  notice_size, err);
    if (st == SK_ERR_ARG) {
        char why[SK_ERROR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        return sk_fail(err, SK_ERR_ARG, "precision %s runs only on the persistent LSTM kernel, and %.400s",
                       sk_precision_name(cfg->backend->precision), why);
    }
    return st;
}

} // namespace

const sk_lstm_impl sk_lstm_impl_auto = {.id = SK_RNN_AUTO, .candidate = 0, .variants = 0, .fits = NULL,
                                        .create = create_auto};

const sk_lstm_impl *sk_lstm_impl_of(sk_rnn_impl which) {
    return (int)which >= 0 && (int)which < kImplCount ? kImpls[which] : NULL;
}

sk_status sk_lstm_create(sk_rnn_impl which, const sk_lstm_config *cfg, sk_lstm **out, char *notice,
                         size_t notice_size, sk_error *err) {
    *out = NULL;
    if (notice && notice_size) notice[0] = '\0';
    const sk_lstm_impl *d = sk_lstm_impl_of(which);
    if (!d) return sk_fail(err, SK_ERR_ARG, "unknown LSTM implementation %d", (int)which);
    SK_TRY(d->create(cfg, out, notice, notice_size, err));
    if (!(*out)->desc) (*out)->desc = d; // a delegating row (auto) keeps its delegate's
    return SK_OK;
}

sk_rnn_choice sk_lstm_choice(const sk_lstm *l) {
    return {.impl = l->desc->id, .tensor_cores = l->desc->variants ? l->cfg.tensor_cores : SK_TENSOR_CORES_DEFAULT};
}

void sk_lstm_destroy(sk_lstm *l) {
    if (l) l->ops->destroy(l);
}
