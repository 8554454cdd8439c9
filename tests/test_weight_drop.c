// test_weight_drop.c: weight drop (DropConnect on W_hh, model.h's weight_drop) on the CPU
// backend is exactly the model whose W_hh is masked by hand. With masks written out here
// from hash.h's definition (element i of layer k's W_hh times 0 or 1/(1-p), keyed by
// (seed, step, SK_WEIGHT_DROP_SITE + k)):
//   - a training forward with weight drop p gives the loss and logits of a backend without
//     weight drop whose parameters carry the masked W_hh, bit for bit (the same products of
//     the same floats: W_hh[i] * factor is formed once either way);
//   - its gradient is that backend's, with each W_hh gradient times the same factors, bit
//     for bit; every other tensor's gradient is identical;
//   - an evaluation forward ignores weight drop;
//   - the masks drop about p of the elements (within 5 standard deviations of a binomial),
//     and differ between steps and between layers.
// Gradients against finite differences with weight drop on are test_gradcheck's.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "shakespeare/rng.h"
#include "test_util.h"

enum { V = 9, E = 5, H = 16, L = 2, B = 3, T = 6 };
static const float kDropout = 0.2f, kWeightDrop = 0.5f;
static const uint64_t kSeed = 4242;

static sk_backend *make_backend(float weight_drop) {
    sk_error err;
    sk_backend_config cfg = {.model = {.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = kDropout, .weight_drop = weight_drop}, .batch_size = B, .seq_len = T,
                             .training = 1, .threads = 2, .seed = kSeed};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    return be;
}

static float factor(int64_t step, int k, size_t i) {
    return sk_weight_drop_factor(sk_dropout_key(kSeed, step, SK_WEIGHT_DROP_SITE + k), i, kWeightDrop);
}

// Loss, logits (B*T*V) and gradients (total) of one training forward and backward at step.
static double train_pass(sk_backend *be, const float *params, const int32_t *x, const int32_t *y, int64_t step,
                         float *logits, float *grads) {
    sk_error err;
    double loss = 0.0;
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_state(be, NULL));
    CHECK_OK(sk_backend_forward(be, x, y, T, SK_MODE_TRAIN, step, &loss));
    CHECK_OK(sk_backend_get_logits(be, logits));
    CHECK_OK(sk_backend_backward(be));
    CHECK_OK(sk_backend_get_grads(be, grads));
    return loss;
}

static double eval_pass(sk_backend *be, const float *params, const int32_t *x, const int32_t *y) {
    sk_error err;
    double loss = 0.0;
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_state(be, NULL));
    CHECK_OK(sk_backend_forward(be, x, y, T, SK_MODE_EVAL, 0, &loss));
    return loss;
}

int main(void) {
    sk_backend *wd = make_backend(kWeightDrop), *plain = make_backend(0.0f);
    const sk_param_layout *lay = sk_backend_layout(wd);
    const size_t n = lay->total, nw = (size_t)4 * H * H;
    float *p = malloc(n * sizeof(float)), *q = malloc(n * sizeof(float));
    float *g_wd = malloc(n * sizeof(float)), *g_plain = malloc(n * sizeof(float));
    float *lg_wd = malloc((size_t)B * T * V * sizeof(float)), *lg_plain = malloc((size_t)B * T * V * sizeof(float));
    sk_params_init(p, lay, SK_INIT_UNIFORM, 0.3f, 0.0f, 11);
    sk_rng r;
    sk_rng_seed(&r, 5);
    int32_t x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++) x[i] = (int32_t)(sk_rng_u64(&r) % V), y[i] = (int32_t)(sk_rng_u64(&r) % V);

    for (int64_t step = 0; step < 3; step++) {
        memcpy(q, p, n * sizeof(float));
        for (int k = 0; k < L; k++) {
            size_t off = sk_layer_at(lay, k).w_hh;
            for (size_t i = 0; i < nw; i++) q[off + i] = p[off + i] * factor(step, k, i);
        }
        double l_wd = train_pass(wd, p, x, y, step, lg_wd, g_wd);
        double l_plain = train_pass(plain, q, x, y, step, lg_plain, g_plain);
        CHECK(l_wd == l_plain);
        CHECK(memcmp(lg_wd, lg_plain, (size_t)B * T * V * sizeof(float)) == 0);
        for (int k = 0; k < L; k++) {
            size_t off = sk_layer_at(lay, k).w_hh;
            for (size_t i = 0; i < nw; i++) g_plain[off + i] *= factor(step, k, i);
        }
        int same = memcmp(g_wd, g_plain, n * sizeof(float)) == 0;
        CHECK(same);
        printf("step %lld: training loss %.6f (evaluation %.6f), gradients %s\n", (long long)step, l_wd / (B * T),
               eval_pass(plain, p, x, y) / (B * T), same ? "identical" : "DIFFER");
    }

    // Evaluation uses W_hh itself.
    double e_wd = eval_pass(wd, p, x, y), e_plain = eval_pass(plain, p, x, y);
    CHECK(e_wd == e_plain);

    // The masks: about p dropped, new each step and each layer.
    size_t dropped = 0, differ_step = 0, differ_layer = 0;
    for (size_t i = 0; i < nw; i++) {
        dropped += factor(7, 0, i) == 0.0f;
        differ_step += factor(7, 0, i) != factor(8, 0, i);
        differ_layer += factor(7, 0, i) != factor(7, 1, i);
    }
    const double mean = nw * kWeightDrop, sd = sqrt(nw * kWeightDrop * (1.0 - kWeightDrop));
    printf("mask: %zu of %zu dropped (expected %.0f +- %.0f); %zu differ from the next step's, %zu from layer 1's\n",
           dropped, nw, mean, sd, differ_step, differ_layer);
    CHECK(fabs((double)dropped - mean) < 5 * sd);
    // Two independent masks differ in 2p(1-p) of the elements: 512 of 1024 here.
    CHECK(differ_step > nw / 4 && differ_layer > nw / 4);
    CHECK(factor(7, 0, 0) == 0.0f || factor(7, 0, 0) == 1.0f / (1.0f - kWeightDrop));

    free(p), free(q), free(g_wd), free(g_plain), free(lg_wd), free(lg_plain);
    sk_backend_free(wd);
    sk_backend_free(plain);
    return sk_test_done("test_weight_drop");
}
