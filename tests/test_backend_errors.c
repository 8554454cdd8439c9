// test_backend_errors.c: a failing backend op hands its own message out.
//  1. each refused op of the CPU backend returns its status and leaves a line naming what
//     was wrong in sk_backend_error(b) (the CUDA backend does the same with the failing
//     call and file:line; tests/gpu covers that path);
//  2. callers (sk_score, sk_generate) put that message into their own error line, after
//     "the cpu backend failed ...", so the CLI's `error:` line says why.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "shakespeare/sampler.h"
#include "test_util.h"

#define CONTAINS(haystack, needle) CHECK(strstr((haystack), (needle)) != NULL)

int main(void) {
    sk_error err;
    sk_backend_config cfg = {.model = {.vocab_size = 5, .embed_size = 4, .hidden_size = 8, .num_layers = 1, .dropout = 0.0f, .weight_drop = 0.0f}, .batch_size = 1, .seq_len = 4, .training = 0,
                             .threads = 1, .seed = 1};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    CHECK(strcmp(sk_backend_error(be), "no message") == 0);

    int32_t x[5] = {0, 1, 2, 3, 4}, bad[2] = {1, 7};
    CHECK(sk_backend_forward(be, x, NULL, 5, SK_MODE_EVAL, 0, NULL) == SK_ERR_ARG);
    CONTAINS(sk_backend_error(be), "forward over 5 steps; this backend takes 1 to 4");
    CHECK(sk_backend_forward(be, bad, NULL, 2, SK_MODE_EVAL, 0, NULL) == SK_ERR_ARG);
    CONTAINS(sk_backend_error(be), "input id 7 outside the vocabulary of 5");
    CHECK(sk_backend_forward(be, x, NULL, 2, SK_MODE_TRAIN, 1, NULL) == SK_ERR_ARG);
    CONTAINS(sk_backend_error(be), "training forward on an inference-only backend");
    float m[1];
    CHECK(sk_backend_get_optimizer_state(be, 0, m) == SK_ERR_ARG);
    CONTAINS(sk_backend_error(be), "inference-only");
    CHECK(sk_backend_backward(be) == SK_ERR_ARG);
    CONTAINS(sk_backend_error(be), "backward without a training forward");

    // A caller's line: what it was doing, then the backend's reason.
    double nll;
    size_t count;
    CHECK(sk_score(be, bad, 2, &nll, &count, &err) == SK_ERR_ARG); // 1 predicts 7
    CONTAINS(err.msg, "the cpu backend failed while scoring: target id 7 outside the vocabulary of 5");
    sk_sample_opts so = {.temperature = 1.0f};
    CHECK(sk_generate(be, bad, 2, 3, &so, 1, NULL, NULL, &err) == SK_ERR_ARG);
    CONTAINS(err.msg, "the cpu backend failed while sampling: input id 7 outside the vocabulary of 5");
    sk_backend_free(be);

    // A training backend: a non-finite gradient norm is SK_ERR_NUMERIC with the norm named.
    cfg.training = 1, cfg.batch_size = 2;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    float *p = calloc(sk_backend_layout(be)->total, sizeof(float));
    p[0] = NAN; // embedding row 0 feeds every step below
    CHECK_OK(sk_backend_set_params(be, p));
    int32_t xs[4] = {0, 0, 0, 0}, ys[4] = {1, 1, 1, 1};
    double loss;
    (void)sk_backend_forward(be, xs, ys, 2, SK_MODE_TRAIN, 1, &loss);
    (void)sk_backend_backward(be);
    sk_optim_hparams h = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0, .grad_clip = 5.0};
    double gn;
    CHECK(sk_backend_step(be, &h, 1e-3f, 1, &gn) == SK_ERR_NUMERIC);
    CONTAINS(sk_backend_error(be), "the gradient norm is nan");
    free(p);
    sk_backend_free(be);
    return sk_test_done("test_backend_errors");
}
