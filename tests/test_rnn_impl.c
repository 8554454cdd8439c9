// test_rnn_impl.c: the --rnn-impl choice at the backend interface, on any machine.
//  1. sk_rnn_impl_parse takes every row of SK_RNN_IMPLS (the first six pinned by name: auto,
//     cudnn, persistent, cudnn-persist, persistent-layerwise, persistent-cluster; a later row
//     needs no edit here), names round-trip through sk_rnn_impl_name, and anything else is
//     refused with a line naming every word and the value;
//  2. the CPU backend takes only auto and refuses a named CUDA implementation with a clear
//     line (directly and through sk_backend_create with --device cpu), rather than
//     silently ignoring it;
//  3. without a usable GPU, --device auto falls back to the CPU: with rnn_impl auto that
//     works (and says why in the notice); with a named implementation it is refused.
// The CUDA side (cudnn chosen by auto, an explicit choice honoured) is in tests/gpu.
#include <stdio.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "test_util.h"

int main(void) {
    sk_error err = {{0}};
    // The rows that exist today, pinned by name and position; rows added later are read from
    // the table (each must round-trip too).
    static const char *const known[] = {"auto",          "cudnn", "persistent", "cudnn-persist", "persistent-layerwise",
                                        "persistent-cluster"};
    const int n_known = (int)(sizeof known / sizeof known[0]);
    CHECK(SK_RNN_IMPL_COUNT >= n_known);
    const char *names[SK_RNN_IMPL_COUNT];
    for (int i = 0; i < SK_RNN_IMPL_COUNT; i++) {
        names[i] = sk_rnn_impl_name((sk_rnn_impl)i);
        if (i < n_known) CHECK(strcmp(names[i], known[i]) == 0);
        sk_rnn_impl r = (sk_rnn_impl)-1;
        CHECK_OK(sk_rnn_impl_parse(names[i], &r, &err));
        CHECK((int)r == i);
    }
    static const char *const bad[] = {"", "Auto", "cudnn ", "cuDNN", "persistent2", "cpu", "cudnn-persistent",
                                      "layerwise", "persistent-layerwise "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sk_rnn_impl r = SK_RNN_CUDNN;
        CHECK(sk_rnn_impl_parse(bad[i], &r, &err) == SK_ERR_ARG);
        // "rnn-impl expects auto, cudnn, ..., X or Y, got "...": every word, in the table's order.
        const char *at = strstr(err.msg, "rnn-impl expects auto, cudnn, persistent, cudnn-persist, persistent-layerwise");
        CHECK(at != NULL);
        for (int k = 0; at && k < SK_RNN_IMPL_COUNT; k++) {
            at = strstr(at, names[k]);
            CHECK(at != NULL);
            if (at) at += strlen(names[k]);
        }
        char tail[96];
        snprintf(tail, sizeof tail, " or %s, got", names[SK_RNN_IMPL_COUNT - 1]);
        CHECK(strstr(err.msg, tail) != NULL);
        CHECK(r == SK_RNN_CUDNN); // untouched on failure
    }

    sk_backend_config cfg = {.model = {.vocab_size = 7, .embed_size = 4, .hidden_size = 8, .num_layers = 2, .dropout = 0.1f, .weight_drop = 0.0f}, .batch_size = 2, .seq_len = 3, .training = 1,
                             .threads = 1, .seed = 3};
    sk_backend *be = NULL;
    for (int i = 1; i < SK_RNN_IMPL_COUNT; i++) {
        cfg.rnn_impl = (sk_rnn_impl)i;
        err.msg[0] = '\0';
        CHECK(sk_backend_create_cpu(&cfg, &be, &err) == SK_ERR_ARG && be == NULL);
        printf("cpu, rnn_impl %s: %s\n", names[i], err.msg);
        char want[96];
        snprintf(want, sizeof want, "rnn-impl %s selects a CUDA LSTM implementation", names[i]);
        CHECK(strstr(err.msg, want) != NULL);
        char notice[256] = "x";
        CHECK(sk_backend_create(&cfg, "cpu", &be, notice, sizeof notice, &err) == SK_ERR_ARG && be == NULL);
        CHECK(strstr(err.msg, want) != NULL);
    }
    cfg.rnn_impl = SK_RNN_AUTO;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    CHECK(sk_backend_notice(be)[0] == '\0');
    sk_backend_free(be);

    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        char notice[256] = "";
        CHECK_OK(sk_backend_create(&cfg, "auto", &be, notice, sizeof notice, &err));
        CHECK(strcmp(sk_backend_name(be), "cpu") == 0 && strstr(notice, "running on the CPU") != NULL);
        sk_backend_free(be);
        cfg.rnn_impl = SK_RNN_CUDNN;
        CHECK(sk_backend_create(&cfg, "auto", &be, notice, sizeof notice, &err) == SK_ERR_ARG && be == NULL);
        CHECK(strstr(err.msg, "rnn-impl cudnn selects a CUDA LSTM implementation") != NULL);
    }
    return sk_test_done("test_rnn_impl");
}
