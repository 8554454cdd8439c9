// lstm_select.cu: which LSTM implementation the CUDA backend gets (lstm_impl.h).
// defines: sk_lstm_create, sk_lstm_destroy
//
// auto takes the fastest implementation that is validated on a GPU and supports the
// configuration. Today that is cuDNN: the persistent kernel is not part of this build yet
// (kernels/PERSISTENT_LSTM_FLOOR.md says where it stands), so naming it is refused with
// a reason rather than silently run on cuDNN.
#include <stdio.h>

#include "lstm_impl.h"

sk_status sk_lstm_create(sk_rnn_impl which, const sk_lstm_config *cfg, sk_lstm **out, char *notice,
                         size_t notice_size, sk_error *err) {
    *out = NULL;
    if (notice && notice_size) notice[0] = '\0';
    switch (which) {
    case SK_RNN_AUTO:
    case SK_RNN_CUDNN:
        return sk_lstm_create_cudnn(cfg, out, err);
    case SK_RNN_PERSISTENT:
        return sk_fail(err, SK_ERR_ARG, "--rnn-impl persistent: the persistent LSTM kernel is not in this build "
                                        "yet; use cudnn or auto");
    }
    return sk_fail(err, SK_ERR_ARG, "unknown LSTM implementation %d", (int)which);
}

void sk_lstm_destroy(sk_lstm *l) {
    if (l) l->ops->destroy(l);
}
