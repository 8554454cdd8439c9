// test_optim.c: Adam / AdamW, RMSprop and SGD against values computed by hand (in double, see the
// comments), the optimizers' table, the global gradient norm, the clip scale, and the
// learning-rate schedules.
// Tolerance 2e-6 absolute on parameters of order 1: three fp32 Adam steps accumulate a
// few ulp (1.2e-7 each) of rounding; an error in the formula (bias correction, eps
// placement, decay order) moves the result by more than 1e-3.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shakespeare/optim.h"
#include "test_util.h"

#define NEAR(a, b, tol) CHECK(fabs((double)(a) - (double)(b)) <= (tol))

static void test_adam(void) {
    sk_error err;
    // A tiny layout: the first element of embedding.weight (a matrix) and of fc.bias (a vector).
    sk_model_config cfg = {.vocab_size = 3, .embed_size = 2, .hidden_size = 1, .num_layers = 1};
    sk_param_layout l;
    CHECK_OK(sk_param_layout_init(&l, &cfg, &err));
    const size_t n = l.total, ie = l.tensors[0].offset, ib = l.tensors[l.n_tensors - 1].offset;
    float p[64] = {0}, g[64] = {0}, state[128] = {0}; // state: the slots m, v (optim.h)
    float *m = state, *v = state + n;
    CHECK(n <= 64);
    sk_optim_hparams h = {.kind = SK_OPTIM_ADAM, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    // Plain Adam, lr 0.1, gradients 0.5, -1, 0.25 on a parameter starting at 1:
    //   step 1: m = 0.05, v = 2.5e-4, p = 1 - 0.1 * 0.5 / (0.5 + 1e-8)      = 0.900000002
    //   step 2: m = -0.055, v = 1.24975e-3,                                  p = 0.93661035424
    //   step 3: m = -0.0245, v = 1.31100025e-3,                              p = 0.95027942034
    const float grads[3] = {0.5f, -1.0f, 0.25f};
    const double want[3] = {0.900000002, 0.9366103542405654, 0.9502794203389762};
    p[ie] = p[ib] = 1.0f;
    for (int t = 0; t < 3; t++) {
        g[ie] = g[ib] = grads[t];
        sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, t + 1);
        NEAR(p[ie], want[t], 2e-6);
        NEAR(p[ib], want[t], 2e-6);
    }
    NEAR(m[ie], -0.0245, 1e-7);
    NEAR(v[ie], 1.31100025e-3, 1e-9);
    // AdamW, weight decay 0.5: p *= 1 - lr*wd before the update, on matrices only.
    //   step 1: 1 * 0.95 - 0.1 = 0.850000002;  step 2: 0.8441103541405653
    memset(state, 0, sizeof state);
    p[ie] = p[ib] = 1.0f;
    h.weight_decay = 0.5f;
    g[ie] = g[ib] = 0.5f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, 1);
    NEAR(p[ie], 0.850000002, 2e-6);
    NEAR(p[ib], 0.900000002, 2e-6); // the bias is not decayed
    g[ie] = g[ib] = -1.0f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, 2);
    NEAR(p[ie], 0.8441103541405653, 2e-6);
    // The clip scale multiplies the gradient before the moments: m = (1-b1) * scale * g.
    memset(state, 0, sizeof state);
    g[ie] = 2.0f;
    h.weight_decay = 0.0f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 0.25f, 1);
    NEAR(m[ie], 0.1 * 0.5, 1e-8);
    NEAR(v[ie], 0.001 * 0.25, 1e-9);
    // Untouched elements (zero gradient, zero moments) do not move.
    CHECK(p[ie + 1] == 0.0f && m[ie + 1] == 0.0f);
    sk_param_layout_free(&l);
}

// RMSprop as torch.optim.RMSprop, lr 0.1, alpha 0.9, eps 1e-8, gradients 0.5, -1, 0.25 on a
// parameter starting at 1 (double, by the formulas of step_math.h's sk_rmsprop_element):
//   momentum 0.5: p = 0.6837722539831608, 0.8113726585257618, 0.801928021029354,
//                 square_avg after step 3 0.1165, momentum_buffer 0.0944463749640776
//   momentum 0:   p = 0.6837722539831608, 0.9694865315341814, 0.8962416917664732 (buffer stays 0)
//   weight decay 0.5 (an L2 term, matrices only), momentum 0.5, gradients 0.5, -1:
//                 p = 0.6837722439831617, 0.7059051034918703; square_avg after step 1 0.1
// Same tolerance as Adam's: a wrong term (alpha on the wrong side, eps inside the root, the
// momentum buffer skipped) moves step 2 or 3 by more than 1e-2.
static void test_rmsprop(void) {
    sk_error err;
    sk_model_config cfg = {.vocab_size = 3, .embed_size = 2, .hidden_size = 1, .num_layers = 1};
    sk_param_layout l;
    CHECK_OK(sk_param_layout_init(&l, &cfg, &err));
    const size_t n = l.total, ie = l.tensors[0].offset, ib = l.tensors[l.n_tensors - 1].offset;
    float p[64] = {0}, g[64] = {0}, state[128] = {0}; // slots square_avg, momentum_buffer
    CHECK(n <= 64);
    sk_optim_hparams h = {.kind = SK_OPTIM_RMSPROP, .alpha = 0.9, .eps = 1e-8, .momentum = 0.5};
    const float grads[3] = {0.5f, -1.0f, 0.25f};
    const double with_momentum[3] = {0.6837722539831608, 0.8113726585257618, 0.801928021029354};
    const double without[3] = {0.6837722539831608, 0.9694865315341814, 0.8962416917664732};
    p[ie] = p[ib] = 1.0f;
    for (int t = 0; t < 3; t++) {
        g[ie] = g[ib] = grads[t];
        sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, t + 1);
        NEAR(p[ie], with_momentum[t], 2e-6);
        NEAR(p[ib], with_momentum[t], 2e-6);
    }
    NEAR(state[ie], 0.1165, 1e-7);
    NEAR(state[n + ie], 0.0944463749640776, 2e-6);
    memset(state, 0, sizeof state);
    p[ie] = 1.0f;
    h.momentum = 0.0;
    for (int t = 0; t < 3; t++) {
        g[ie] = grads[t];
        sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, t + 1);
        NEAR(p[ie], without[t], 2e-6);
    }
    CHECK(state[n + ie] == 0.0f); // no momentum: the buffer is untouched
    memset(state, 0, sizeof state);
    p[ie] = p[ib] = 1.0f;
    h.momentum = 0.5, h.weight_decay = 0.5;
    g[ie] = g[ib] = 0.5f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, 1);
    NEAR(state[ie], 0.1, 1e-7);   // (1 - alpha) (g + wd p)^2 = 0.1 * 1
    NEAR(state[ib], 0.025, 1e-8); // the bias is not decayed
    g[ie] = g[ib] = -1.0f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, 2);
    NEAR(p[ie], 0.7059051034918703, 2e-6);
    NEAR(p[ib], 0.8113726585257618, 2e-6);
    // The clip scale multiplies the gradient before anything else: square_avg = 0.1 (s g)^2.
    memset(state, 0, sizeof state);
    h.weight_decay = 0.0;
    g[ie] = 2.0f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 0.25f, 1);
    NEAR(state[ie], 0.1 * 0.25, 1e-8);
    sk_param_layout_free(&l);
}

// SGD as torch.optim.SGD (dampening 0), lr 0.1, gradients 0.5, -1, 0.25 on a parameter starting
// at 1 (torch.optim.SGD in float64, scripts/gen_torch_reference.py's torch):
//   momentum 0.5:            p = 0.95, 1.025, 1.0375; momentum_buffer after step 3 -0.125
//   momentum 0.5, nesterov:  p = 0.925, 1.0625, 1.04375 (the same buffer)
//   momentum 0:              p = 0.95, 1.05, 1.025 (the buffer stays 0)
//   weight decay 0.5 (an L2 term, matrices only), momentum 0.5, gradients 0.5, -1:
//                            matrix p = 0.9, 0.905, buffer -0.05; bias as without decay
// Same tolerance as Adam's: a wrong term (Nesterov's look-ahead missing, the buffer skipped or
// dampened, decay on a bias) moves a step by 0.0125 or more.
static void test_sgd(void) {
    sk_error err;
    sk_model_config cfg = {.vocab_size = 3, .embed_size = 2, .hidden_size = 1, .num_layers = 1};
    sk_param_layout l;
    CHECK_OK(sk_param_layout_init(&l, &cfg, &err));
    const size_t ie = l.tensors[0].offset, ib = l.tensors[l.n_tensors - 1].offset;
    float p[64] = {0}, g[64] = {0}, state[64] = {0}; // the one slot, momentum_buffer
    CHECK(l.total <= 64 && sk_optim_of(SK_OPTIM_SGD)->n_slots == 1);
    const float grads[3] = {0.5f, -1.0f, 0.25f};
    const double want[3][3] = {{0.95, 1.025, 1.0375}, {0.925, 1.0625, 1.04375}, {0.95, 1.05, 1.025}};
    const sk_optim_hparams runs[3] = {{.kind = SK_OPTIM_SGD, .momentum = 0.5},
                                      {.kind = SK_OPTIM_SGD, .momentum = 0.5, .nesterov = 1},
                                      {.kind = SK_OPTIM_SGD, .momentum = 0.0}};
    for (int r = 0; r < 3; r++) {
        memset(state, 0, sizeof state);
        p[ie] = p[ib] = 1.0f;
        for (int t = 0; t < 3; t++) {
            g[ie] = g[ib] = grads[t];
            sk_optim_update(p, g, state, &l, &runs[r], 0.1f, 1.0f, t + 1);
            NEAR(p[ie], want[r][t], 2e-6);
            NEAR(p[ib], want[r][t], 2e-6);
        }
        NEAR(state[ie], r < 2 ? -0.125 : 0.0, 1e-7);
        if (r == 2) CHECK(state[ie] == 0.0f && state[ib] == 0.0f); // no momentum: the buffer is untouched
    }
    memset(state, 0, sizeof state);
    p[ie] = p[ib] = 1.0f;
    sk_optim_hparams h = {.kind = SK_OPTIM_SGD, .momentum = 0.5, .weight_decay = 0.5};
    for (int t = 0; t < 2; t++) {
        g[ie] = g[ib] = grads[t];
        sk_optim_update(p, g, state, &l, &h, 0.1f, 1.0f, t + 1);
    }
    NEAR(p[ie], 0.905, 2e-6);
    NEAR(state[ie], -0.05, 1e-7);
    NEAR(p[ib], 1.025, 2e-6); // the bias is not decayed
    // The clip scale multiplies the gradient first: the buffer's first value is s g.
    memset(state, 0, sizeof state);
    h.weight_decay = 0.0;
    g[ie] = 2.0f;
    sk_optim_update(p, g, state, &l, &h, 0.1f, 0.25f, 1);
    NEAR(state[ie], 0.5, 1e-7);
    // The row's check: torch.optim.SGD refuses Nesterov's momentum without a momentum.
    h.nesterov = 1;
    CHECK(sk_optim_check(&h, &err) == SK_OK);
    h.momentum = 0.0;
    CHECK(sk_optim_check(&h, &err) == SK_ERR_ARG && strstr(err.msg, "nesterov needs --momentum above 0"));
    sk_param_layout_free(&l);
}

// The table: names both ways, slots, and the one line for an unknown name.
static void test_table(void) {
    sk_error err;
    sk_optim_kind k = SK_OPTIM_ADAM;
    CHECK(sk_optim_kind_parse("rmsprop", &k, &err) == SK_OK && k == SK_OPTIM_RMSPROP);
    CHECK(sk_optim_kind_parse("adam", &k, &err) == SK_OK && k == SK_OPTIM_ADAM);
    CHECK(sk_optim_kind_parse("sgd", &k, &err) == SK_OK && k == SK_OPTIM_SGD);
    CHECK(sk_optim_kind_parse("lbfgs", &k, &err) == SK_ERR_ARG &&
          strstr(err.msg, "adam, rmsprop or sgd, got \"lbfgs\""));
    CHECK(strcmp(sk_optim_kind_name(SK_OPTIM_RMSPROP), "rmsprop") == 0);
    CHECK(strcmp(sk_optim_kind_name(SK_OPTIM_SGD), "sgd") == 0);
    CHECK(sk_optim_of(SK_OPTIM_COUNT) == NULL && strcmp(sk_optim_kind_name(SK_OPTIM_COUNT), "?") == 0);
    for (int i = 0; i < SK_OPTIM_COUNT; i++) {
        const sk_optim_info *o = sk_optim_of((sk_optim_kind)i);
        CHECK(o && o->kind == (sk_optim_kind)i && o->n_slots >= 1 && o->n_slots <= SK_OPTIM_MAX_SLOTS && o->args_of);
        CHECK(o->default_lr > 0.0f && o->default_lr <= 10.0f); // within --lr's range (0, 10]
    }
    CHECK(strcmp(sk_optim_of(SK_OPTIM_ADAM)->slot_names[0], "m") == 0); // what version 1 state files hold
    CHECK(strcmp(sk_optim_of(SK_OPTIM_ADAM)->slot_names[1], "v") == 0);
    CHECK(sk_optim_check(&(sk_optim_hparams){.kind = SK_OPTIM_ADAM}, &err) == SK_OK); // no check: SK_OK
    CHECK(sk_optim_check(&(sk_optim_hparams){.kind = SK_OPTIM_COUNT}, &err) == SK_ERR_ARG);
}

static void test_clip(void) {
    float g[4] = {3.0f, 0.0f, -4.0f, 0.0f};
    NEAR(sk_grad_norm(g, 4), 5.0, 1e-12);
    NEAR(sk_clip_scale(5.0, 1.0f), 1.0 / (5.0 + 1e-6), 1e-7); // clipped to norm 1
    CHECK(sk_clip_scale(0.5, 1.0f) == 1.0f);                    // below the threshold: untouched
    CHECK(sk_clip_scale(1e9, 0.0f) == 1.0f);                    // clip disabled
    float big[3] = {1e30f, 1e30f, 0.0f};                         // norm in double: no overflow
    NEAR(sk_grad_norm(big, 3) / 1e30, sqrt(2.0), 1e-6);
    float bad[2] = {1.0f, NAN};
    CHECK(isnan(sk_grad_norm(bad, 2)));
}

static void test_schedules(void) {
    sk_error err;
    sk_lr_schedule s = {SK_LR_CONSTANT, 1e-2f, 1e-4f, 0, 1000, 0.5f, 2};
    CHECK(sk_lr_at(&s, 0, 0) == 1e-2f && sk_lr_at(&s, 999, 50) == 1e-2f);
    s.warmup_iters = 10; // linear warm-up from lr/10 to lr
    NEAR(sk_lr_at(&s, 0, 0), 1e-3, 1e-9);
    NEAR(sk_lr_at(&s, 4, 0), 5e-3, 1e-9);
    NEAR(sk_lr_at(&s, 10, 0), 1e-2, 1e-9);
    s.warmup_iters = 0;
    s.kind = SK_LR_STEP_DECAY; // x0.5 per epoch after epoch 2
    NEAR(sk_lr_at(&s, 0, 2), 1e-2, 1e-9);
    NEAR(sk_lr_at(&s, 0, 3), 5e-3, 1e-9);
    NEAR(sk_lr_at(&s, 0, 5), 1.25e-3, 1e-9);
    s.kind = SK_LR_COSINE;
    s.warmup_iters = 100, s.max_iters = 1100;
    NEAR(sk_lr_at(&s, 100, 0), 1e-2, 1e-9);            // top after warm-up
    NEAR(sk_lr_at(&s, 600, 0), (1e-2 + 1e-4) / 2, 1e-8); // half way
    NEAR(sk_lr_at(&s, 1100, 0), 1e-4, 1e-9);            // floor at max_iters and after
    NEAR(sk_lr_at(&s, 5000, 0), 1e-4, 1e-9);
    CHECK(sk_lr_at(&s, 300, 0) > sk_lr_at(&s, 301, 0)); // decreasing
    sk_lr_kind k;
    CHECK(sk_lr_kind_parse("cosine", &k, &err) == SK_OK && k == SK_LR_COSINE);
    CHECK(sk_lr_kind_parse("step", &k, &err) == SK_OK && k == SK_LR_STEP_DECAY);
    CHECK(sk_lr_kind_parse("linear", &k, &err) == SK_ERR_ARG && strstr(err.msg, "linear"));
}

int main(void) {
    test_adam();
    test_rmsprop();
    test_sgd();
    test_table();
    test_clip();
    test_schedules();
    return sk_test_done("test_optim");
}
