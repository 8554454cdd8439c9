// test_cuda_rnn_impls.c: the persistent LSTM kernel against the cuDNN path, both behind the
// CUDA backend's LSTM seam (--rnn-impl persistent vs cudnn), in strict fp32 on the GPU alone
// (the lower precisions: test_cuda_low_precision_tf32.c and _bf16.c):
//  1. 200 training steps (60 on the emulated device; rnn_pair.h's model: two layers,
//     dropout 0.2 between them and before fc, AdamW with clipping) from the same initialization: the first 10 losses
//     agree to 1e-4 relative, and both runs learn (last-20 mean below half of the first
//     loss). Both are fp32 with identical dropout masks; they differ only in summation order
//     (~1e-7 relative per dot product), which 10 Adam steps amplify far less than 1e-4.
//     Later steps drift apart chaotically while learning equally well, so only learning is
//     checked there.
//  2. the trained parameters in both: eval logits and final state agree to 1e-5 of the
//     tensor's scale + 1e-4 relative (the forward tolerance of test_cuda_parity.c), over
//     two windows that carry the state;
//  3. inference-only backends with B = 1 (the sampler's shape): a full window, then one
//     step at a time, agree the same way.
// Exits 77 (skipped) without a usable GPU.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shakespeare/backend.h"
#include "gpu_test_util.h"
#include "rnn_pair.h"
#include "test_util.h"

// One window on both; compares loss (when y), logits and the carried state.
static void forward_pair(sk_backend *a, sk_backend *b, const int32_t *x, const int32_t *y, int len,
                         const char *tag) {
    const size_t nl = (size_t)sk_backend_cfg(a)->batch_size * len * V_, ns = (size_t)L_ * sk_backend_cfg(a)->batch_size * H_;
    double la = 0.0, lb = 0.0;
    OP_OK(a, sk_backend_forward(a, x, y, len, SK_MODE_EVAL, 0, &la));
    OP_OK(b, sk_backend_forward(b, x, y, len, SK_MODE_EVAL, 0, &lb));
    if (y) {
        printf(" %s: loss persistent %.9g cudnn %.9g\n", tag, la, lb);
        CHECK(fabs(la - lb) <= 1e-5 * fabs(lb));
    }
    float *ga = alloc_f(nl), *gb = alloc_f(nl), *ha = alloc_f(2 * ns), *hb = alloc_f(2 * ns); // h, then c
    float *ca = ha + ns, *cb = hb + ns;
    OP_OK(a, sk_backend_get_logits(a, ga));
    OP_OK(b, sk_backend_get_logits(b, gb));
    compare_scaled("logits", ga, gb, nl, 1e-5, 1e-4);
    OP_OK(a, sk_backend_get_state(a, ha));
    OP_OK(b, sk_backend_get_state(b, hb));
    compare_scaled("h", ha, hb, ns, 1e-5, 1e-4);
    compare_scaled("c", ca, cb, ns, 1e-5, 1e-4);
    free(ga), free(gb), free(ha), free(hb);
}

int main(void) {
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    sk_backend *per = pair_create(SK_RNN_PERSISTENT, B_, 1), *dnn = pair_create(SK_RNN_CUDNN, B_, 1);
    float *p = alloc_f(sk_backend_layout(per)->total);
    pair_init(per, p);
    static double loss_per[STEPS], loss_dnn[STEPS];
    pair_train(per, p, loss_per);
    pair_train(dnn, p, loss_dnn);
    pair_compare(loss_per, loss_dnn, 1e-4, 1e-4, 0.0);
    OP_OK(per, sk_backend_get_params(per, p)); // the persistent-trained parameters
    int32_t x[B_ * T_], y[B_ * T_];

    // The persistent-trained parameters in both, from a zero state.
    OP_OK(dnn, sk_backend_set_params(dnn, p));
    OP_OK(per, sk_backend_set_state(per, NULL));
    OP_OK(dnn, sk_backend_set_state(dnn, NULL));
    for (int w = 0; w < 2; w++) {
        pair_window(STEPS + w, x, y);
        forward_pair(per, dnn, x, y, T_, w ? "eval window 2 (carried state)" : "eval window 1");
    }
    sk_backend_free(per);
    sk_backend_free(dnn);

    // Inference-only, B = 1: a window, then single steps (as the sampler does).
    sk_backend *ip = pair_create(SK_RNN_PERSISTENT, 1, 0), *id = pair_create(SK_RNN_CUDNN, 1, 0);
    OP_OK(ip, sk_backend_set_params(ip, p));
    OP_OK(id, sk_backend_set_params(id, p));
    pair_window(0, x, y);
    forward_pair(ip, id, x, y, T_, "B = 1, full window");
    for (int t = 0; t < 5; t++) forward_pair(ip, id, &x[t], NULL, 1, "B = 1, one step");
    sk_backend_free(ip);
    sk_backend_free(id);

    free(p);
    return sk_test_done("test_cuda_rnn_impls");
}
