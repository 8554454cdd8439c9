// lstm_onednn_stub.c: lstm_onednn.h in a build without oneDNN (CMakeLists.txt): bf16 on the CPU
// is refused, naming the package that brings it.
#include "lstm_onednn.h"

#include <stdio.h>

#define SK_NO_ONEDNN "this build has no oneDNN (install libdnnl-dev, e.g. scripts/setup.sh, and rebuild)"

void sk_onednn_test_reference_kernels(int on) { (void)on; }

int sk_onednn_bf16_check(char *why, size_t n) {
    snprintf(why, n, "%s", SK_NO_ONEDNN);
    return 0;
}

sk_status sk_lstm_onednn_create(const sk_lstm_onednn_config *cfg, sk_lstm_onednn **out, sk_error *err) {
    *out = NULL;
    return sk_fail(err, SK_ERR_ARG, "%s on the CPU: %s (use --precision fp32)", cfg->bf16 ? "precision bf16"
                                                                                          : "oneDNN's LSTM", SK_NO_ONEDNN);
}

void sk_lstm_onednn_free(sk_lstm_onednn *s) { (void)s; }

const float *sk_lstm_onednn_forward(sk_lstm_onednn *s, int len, const float *x, const sk_layer_tensors *w,
                                    const float *h0, const float *c0, float *hT, float *cT, float *const *y,
                                    const sk_lstm_onednn_between *between, sk_error *err) {
    (void)s, (void)len, (void)x, (void)w, (void)h0, (void)c0, (void)hT, (void)cT, (void)y, (void)between;
    sk_fail(err, SK_ERR_ARG, "%s", SK_NO_ONEDNN);
    return NULL;
}

sk_status sk_lstm_onednn_backward(sk_lstm_onednn *s, float *dtop, const sk_layer_tensors *w, const sk_layer_tensors *g,
                                  float *dx, const sk_lstm_onednn_between *between, sk_error *err) {
    (void)s, (void)dtop, (void)w, (void)g, (void)dx, (void)between;
    return sk_fail(err, SK_ERR_ARG, "%s", SK_NO_ONEDNN);
}
