// test_cpu_in_proj.c: the CPU backend's inference forward reads layer 0's gate inputs from a
// table (V, 4H) made from the parameters. Checks that the table follows the parameters: after
// set_params and after an optimizer step, an evaluation gives the logits of a fresh backend
// holding the same parameters; and that the table's logits agree with the training forward's
// (which multiplies the embedded inputs itself, dropout 0) within fp32 rounding.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "test_util.h"

// A backend op that must succeed (its message is in the backend, not in an sk_error).
#define OP_OK(call) CHECK((call) == SK_OK)

enum { V = 11, E = 6, H = 8, L = 2, B = 2, T = 5 };

static sk_backend *make(int training) {
    sk_backend_config bc = {.model = {.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = 0.0f, .weight_drop = 0.0f}, .batch_size = B, .seq_len = T, .training = training,
                            .threads = 1};
    sk_backend *b = NULL;
    sk_error err;
    if (sk_backend_create_cpu(&bc, &b, &err) != SK_OK) {
        fprintf(stderr, "create: %s\n", err.msg);
        exit(1);
    }
    return b;
}

// Logits (B, T, V) of an evaluation of x from a zero state.
static void eval_logits(sk_backend *b, const int32_t *x, float *out) {
    OP_OK(sk_backend_set_state(b, NULL));
    OP_OK(sk_backend_forward(b, x, NULL, T, SK_MODE_EVAL, 0, NULL));
    OP_OK(sk_backend_get_logits(b, out));
}

// The largest |a - b| over n floats.
static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0.0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

int main(void) {
    sk_backend *trained = make(1), *fresh = make(0);
    const size_t total = sk_backend_layout(trained)->total, n = (size_t)B * T * V;
    float *p = malloc(sizeof(float) * total), *q = malloc(sizeof(float) * total);
    float *got = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n);
    int32_t x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++) x[i] = (i * 7 + 3) % V, y[i] = (i * 5 + 1) % V;
    sk_params_init(p, sk_backend_layout(trained), SK_INIT_UNIFORM, 0.5f, 0.0f, 1);
    sk_params_init(q, sk_backend_layout(trained), SK_INIT_UNIFORM, 0.5f, 0.0f, 2);

    // set_params replaces the table's source: the second parameters' logits, not the first's.
    OP_OK(sk_backend_set_params(trained, p));
    eval_logits(trained, x, got);
    OP_OK(sk_backend_set_params(trained, q));
    eval_logits(trained, x, got);
    OP_OK(sk_backend_set_params(fresh, q));
    eval_logits(fresh, x, want);
    CHECK(max_diff(got, want, n) == 0.0); // the same arithmetic on the same numbers
    printf("  after set_params: max |diff| %g\n", max_diff(got, want, n));

    // The table against the products it replaces: the training forward (dropout 0, so the
    // same model) multiplies the embedded rows by W_ih in a GEMM; the two differ by the order
    // of a dot product of E = 6 terms of size ~0.5, carried through two layers: 1e-5 is ~100
    // fp32 ulps of logits of size ~1.
    OP_OK(sk_backend_set_state(trained, NULL));
    OP_OK(sk_backend_forward(trained, x, y, T, SK_MODE_TRAIN, 1, NULL));
    OP_OK(sk_backend_get_logits(trained, got));
    printf("  table against the training forward: max |diff| %g (tolerance 1e-5)\n", max_diff(got, want, n));
    CHECK(max_diff(got, want, n) <= 1e-5);

    // An optimizer step changes the parameters: the next evaluation uses the new ones.
    OP_OK(sk_backend_backward(trained));
    sk_optim_hparams h = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0, .grad_clip = 0.0};
    OP_OK(sk_backend_update(trained, &h, 0.1f, 1.0f, 1));
    eval_logits(trained, x, got);
    OP_OK(sk_backend_get_params(trained, p));
    OP_OK(sk_backend_set_params(fresh, p));
    eval_logits(fresh, x, want);
    printf("  after an optimizer step: max |diff| %g\n", max_diff(got, want, n));
    CHECK(max_diff(got, want, n) == 0.0);

    free(p);
    free(q);
    free(got);
    free(want);
    sk_backend_free(trained);
    sk_backend_free(fresh);
    return sk_test_done("test_cpu_in_proj");
}
