// test_gradcheck.c: analytic gradients of the CPU backend against central differences,
// for every element of every parameter tensor of a tiny model, without dropout, with
// dropout, and with dropout and weight drop on W_hh (masks are a pure function of (seed,
// step), so the perturbed forwards see the same masks), from a nonzero carried initial state.
//
// Tolerance: |analytic - numeric| <= 2e-4 + 1e-2 * |numeric|. The forward runs in fp32,
// so each loss evaluation carries a rounding error of ~1e-7 relative to the summed loss
// (~10 here); divided by 2*eps (eps = 1e-2) and by the N = B*T rows of the mean, that is
// ~1e-5 of noise; the O(eps^2) truncation error of the central difference adds ~1e-4 *
// |third derivative|. A wrong gate formula or a dropped term errs by O(|gradient|).
#include <stdio.h>
#include <stdlib.h>

#include "shakespeare/backend.h"
#include "shakespeare/rng.h"
#include "test_util.h"

enum { V = 6, E = 3, H = 4, L = 2, B = 2, T = 4 };

static double loss_at(sk_backend *be, const int32_t *x, const int32_t *y, const float *s0, int64_t step) {
    sk_error err;
    double s = 0.0;
    CHECK_OK(sk_backend_set_state(be, s0));
    CHECK_OK(sk_backend_forward(be, x, y, T, SK_MODE_TRAIN, step, &s));
    return s;
}

static void check_model(sk_cell_kind cell, float dropout, float weight_drop) {
    sk_error err;
    sk_backend_config cfg = {.model = {.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L,
                                       .dropout = dropout, .weight_drop = weight_drop, .cell = cell},
                             .batch_size = B, .seq_len = T, .training = 1, .threads = 1, .seed = 1234};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    const size_t n = sk_backend_layout(be)->total;
    float *p = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
    sk_params_init(p, sk_backend_layout(be), SK_INIT_UNIFORM, 0.5f, 0.0f, 7);
    CHECK_OK(sk_backend_set_params(be, p));

    sk_rng r;
    sk_rng_seed(&r, 99);
    int32_t x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++) x[i] = (int32_t)(sk_rng_u64(&r) % V), y[i] = (int32_t)(sk_rng_u64(&r) % V);
    float s0[SK_MAX_CELL_STATES * L * B * H]; // a nonzero initial state: its paths are checked too
    for (size_t i = 0; i < sk_backend_state_floats(be); i++) s0[i] = sk_rng_uniform(&r) - 0.5f;

    const int64_t step = 3;
    loss_at(be, x, y, s0, step);
    CHECK_OK(sk_backend_backward(be));
    CHECK_OK(sk_backend_get_grads(be, g));

    const float eps = 1e-2f;
    printf("cell %s, dropout %.2f, weight drop %.2f\n", sk_cell_get(cell)->name, (double)dropout, (double)weight_drop);
    for (int ti = 0; ti < sk_backend_layout(be)->n_tensors; ti++) {
        const sk_tensor_info *t = &sk_backend_layout(be)->tensors[ti];
        float *num = malloc(t->numel * sizeof(float));
        for (size_t j = 0; j < t->numel; j++) {
            float *pj = &p[t->offset + j], keep = *pj;
            *pj = keep + eps;
            sk_backend_set_params(be, p);
            double lp = loss_at(be, x, y, s0, step);
            *pj = keep - eps;
            sk_backend_set_params(be, p);
            double lm = loss_at(be, x, y, s0, step);
            *pj = keep;
            num[j] = (float)((lp - lm) / (2.0 * eps) / (B * T));
        }
        sk_backend_set_params(be, p);
        sk_test_compare(t->name, g + t->offset, num, t->numel, 2e-4, 1e-2);
        free(num);
    }
    free(p);
    free(g);
    sk_backend_free(be);
}

int main(void) {
    check_model(SK_CELL_LSTM, 0.0f, 0.0f);
    check_model(SK_CELL_LSTM, 0.3f, 0.0f);
    check_model(SK_CELL_LSTM, 0.3f, 0.4f);
    check_model(SK_CELL_GRU, 0.0f, 0.0f);
    check_model(SK_CELL_GRU, 0.3f, 0.4f);
    check_model(SK_CELL_RNN, 0.0f, 0.0f);
    check_model(SK_CELL_RNN, 0.3f, 0.4f);
    return sk_test_done("test_gradcheck");
}
