// test_cpu_bf16.c: --precision bf16 on the CPU backend (oneDNN's LSTM, src/cpu/lstm_onednn.h) in
// training, on a 2-layer model with dropout between and after the layers and weight drop on W_hh
// (B=4, T=9, E=6, H=12, V=11), at 2 threads:
//  1. one step's loss and every gradient against the fp32 backend's from the same parameters:
//     the normalized (relative L2) error of each tensor within 2^-8 * sqrt(K * T), K = 2H the
//     longest reduction into a gate (bf16's 8 significant bits: 2^-8 relative per product, errors
//     of random sign adding in quadrature over K terms and T steps; test_lstm_onednn.c derives
//     it), and above fp32's own error (2^-16), which shows that bf16 ran;
//  2. bit-exact resume within one precision and thread count: 6 steps straight, and 3 steps,
//     then a new backend given the parameters, Adam's moments and the carried state, then 3
//     more, end with the same bits in parameters, moments and state;
//  3. data-parallel: two backends holding streams [0, 2) and [2, 4) of the global batch of 4
//     (their gradients summed, as the all-reduce does) against one holding all 4: the same
//     dropout masks and the gradient of the same mean; per tensor within the bound of 1 (each
//     side's h is a bf16 rounding of fp32 sums that may differ in their last bits, so a rounding
//     may fall on either side).
//  4. evaluation windows of other lengths than T (eval_lengths says what).
// On an AVX-512 CPU without bf16 dot products it runs on oneDNN's reference kernels (the same
// arithmetic); where bf16 cannot run at all (AVX2, or no oneDNN in the build) it is skipped
// (exit 77); test_lstm_onednn checks the refusal there.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/lstm_onednn.h"
#include "shakespeare/backend.h"
#include "shakespeare/model.h"
#include "shakespeare/optim.h"
#include "shakespeare/rng.h"
#include "test_util.h"

enum { V = 11, E = 6, H = 12, L = 2, B = 4, T = 9, STEPS = 6 };

static const sk_optim_hparams hp = {.beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f,
                                    .grad_clip = 1.0f};

static sk_backend_config config(sk_precision p, int batch, int offset) {
    return (sk_backend_config){
        .model = {.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = 0.25f,
                  .weight_drop = 0.2f},
        .batch_size = batch, .seq_len = T, .training = 1, .threads = 2, .seed = 7, .precision = p,
        .stream_offset = offset, .global_batch = B};
}

static sk_backend *make(sk_precision p, int batch, int offset, const float *params) {
    sk_error err = {{0}};
    sk_backend *be = NULL;
    sk_backend_config cfg = config(p, batch, offset);
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    CHECK_OK(sk_backend_set_params(be, params));
    CHECK_OK(sk_backend_set_state(be, NULL));
    return be;
}

// Window `step` of streams [offset, offset + batch): (batch, T) ids x and their next ids y.
static void window(int64_t step, int batch, int offset, int32_t *x, int32_t *y) {
    for (int b = 0; b < batch; b++)
        for (int t = 0; t < T; t++) {
            const uint64_t k = (uint64_t)step * 1000 + (uint64_t)(b + offset) * 31 + (uint64_t)t;
            x[b * T + t] = (int32_t)((k * 2654435761u) % V), y[b * T + t] = (int32_t)(((k + 1) * 2654435761u) % V);
        }
}

static void train(sk_backend *be, int64_t from, int64_t to) {
    sk_error err = {{0}};
    int32_t x[B * T], y[B * T];
    for (int64_t s = from; s <= to; s++) {
        window(s, B, 0, x, y);
        double loss = 0.0, norm = 0.0;
        CHECK_OK(sk_backend_forward(be, x, y, T, SK_MODE_TRAIN, s, &loss));
        CHECK_OK(sk_backend_backward(be));
        CHECK_OK(sk_backend_step(be, &hp, 1e-2f, s, &norm));
    }
}

static double rel_l2(const float *got, const float *ref, size_t n) {
    double d = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) d += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]), r += (double)ref[i] * ref[i];
    return sqrt(d / (r > 0.0 ? r : 1.0));
}

// Each tensor of got against ref within bound (relative L2); returns the largest error.
static double compare_grads(const char *tag, const sk_param_layout *lay, const float *got, const float *ref,
                            double bound) {
    double worst = 0.0;
    for (int i = 0; i < lay->n_tensors; i++) {
        const sk_tensor_info *t = &lay->tensors[i];
        const double e = rel_l2(got + t->offset, ref + t->offset, t->numel);
        printf("  %s %-24s relative L2 error %.3g (bound %.3g)%s\n", tag, t->name, e, bound, e <= bound ? "" : "  FAIL");
        if (!(e <= bound)) sk_test_failures++;
        if (e > worst) worst = e;
    }
    return worst;
}

static void against_fp32(const float *params, size_t P, const sk_param_layout *lay, double bound) {
    sk_error err = {{0}};
    sk_backend *f = make(SK_PRECISION_FP32, B, 0, params), *h = make(SK_PRECISION_BF16, B, 0, params);
    float *gf = calloc(P, sizeof(float)), *gh = calloc(P, sizeof(float));
    int32_t x[B * T], y[B * T];
    window(1, B, 0, x, y);
    double lf = 0.0, lh = 0.0;
    CHECK_OK(sk_backend_forward(f, x, y, T, SK_MODE_TRAIN, 1, &lf));
    CHECK_OK(sk_backend_forward(h, x, y, T, SK_MODE_TRAIN, 1, &lh));
    printf("1. bf16 against fp32: loss %.7f against %.7f\n", lh / (B * T), lf / (B * T));
    CHECK(fabs(lh - lf) <= bound * fabs(lf));
    CHECK_OK(sk_backend_backward(f));
    CHECK_OK(sk_backend_backward(h));
    CHECK_OK(sk_backend_get_grads(f, gf));
    CHECK_OK(sk_backend_get_grads(h, gh));
    CHECK(compare_grads("bf16", lay, gh, gf, bound) > ldexp(1.0, -16)); // bf16 ran
    sk_backend_free(f), sk_backend_free(h);
    free(gf), free(gh);
}

static void resume(const float *params, size_t P) {
    sk_error err = {{0}};
    const size_t S = (size_t)L * B * H;
    float *buf[2][5];
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 5; i++) buf[r][i] = calloc(i < 3 ? P : 2 * S, sizeof(float)); // [3]: (S, L, B, H) h, c
    sk_backend *a = make(SK_PRECISION_BF16, B, 0, params);
    train(a, 1, STEPS);
    sk_backend *b = make(SK_PRECISION_BF16, B, 0, params);
    train(b, 1, STEPS / 2);
    CHECK_OK(sk_backend_get_params(b, buf[1][0]));
    CHECK_OK(sk_backend_get_optimizer_state(b, 0, buf[1][1]));
    CHECK_OK(sk_backend_get_optimizer_state(b, 1, buf[1][2]));
    CHECK_OK(sk_backend_get_state(b, buf[1][3]));
    sk_backend_free(b);
    sk_backend *c = make(SK_PRECISION_BF16, B, 0, buf[1][0]);
    CHECK_OK(sk_backend_set_optimizer_state(c, 0, buf[1][1]));
    CHECK_OK(sk_backend_set_optimizer_state(c, 1, buf[1][2]));
    CHECK_OK(sk_backend_set_state(c, buf[1][3]));
    train(c, STEPS / 2 + 1, STEPS);
    sk_backend *ends[2] = {a, c};
    for (int r = 0; r < 2; r++) {
        CHECK_OK(sk_backend_get_params(ends[r], buf[r][0]));
        CHECK_OK(sk_backend_get_optimizer_state(ends[r], 0, buf[r][1]));
        CHECK_OK(sk_backend_get_optimizer_state(ends[r], 1, buf[r][2]));
        CHECK_OK(sk_backend_get_state(ends[r], buf[r][3]));
        memcpy(buf[r][4], buf[r][3] + S, S * sizeof(float)); // c
    }
    static const char *const what[] = {"parameters", "Adam's m", "Adam's v", "h", "c"};
    for (int i = 0; i < 5; i++) {
        const int same = memcmp(buf[0][i], buf[1][i], (i < 3 ? P : S) * sizeof(float)) == 0;
        printf("2. resumed after step %d of %d: %s %s\n", STEPS / 2, STEPS, what[i], same ? "bit-identical" : "DIFFER");
        CHECK(same);
    }
    sk_backend_free(a), sk_backend_free(c);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 5; i++) free(buf[r][i]);
}

static void ranks(const float *params, size_t P, const sk_param_layout *lay, double bound) {
    sk_error err = {{0}};
    sk_backend *one = make(SK_PRECISION_BF16, B, 0, params);
    sk_backend *r0 = make(SK_PRECISION_BF16, B / 2, 0, params), *r1 = make(SK_PRECISION_BF16, B / 2, B / 2, params);
    float *g = calloc(P, sizeof(float)), *g0 = calloc(P, sizeof(float)), *g1 = calloc(P, sizeof(float));
    int32_t x[B * T], y[B * T];
    double l = 0.0, l0 = 0.0, l1 = 0.0;
    window(1, B, 0, x, y);
    CHECK_OK(sk_backend_forward(one, x, y, T, SK_MODE_TRAIN, 1, &l));
    window(1, B / 2, 0, x, y);
    CHECK_OK(sk_backend_forward(r0, x, y, T, SK_MODE_TRAIN, 1, &l0));
    window(1, B / 2, B / 2, x, y);
    CHECK_OK(sk_backend_forward(r1, x, y, T, SK_MODE_TRAIN, 1, &l1));
    printf("3. two ranks against one process: loss %.7f against %.7f\n", (l0 + l1) / (B * T), l / (B * T));
    CHECK(fabs(l0 + l1 - l) <= bound * fabs(l));
    sk_backend *all[3] = {one, r0, r1};
    float *grads[3] = {g, g0, g1};
    for (int i = 0; i < 3; i++) {
        CHECK_OK(sk_backend_backward(all[i]));
        CHECK_OK(sk_backend_get_grads(all[i], grads[i]));
    }
    for (size_t i = 0; i < P; i++) g0[i] += g1[i];
    compare_grads("ranks", lay, g0, g, bound);
    for (int i = 0; i < 3; i++) sk_backend_free(all[i]);
    free(g), free(g0), free(g1);
}

// Evaluation windows of other lengths (oneDNN's primitives rebuilt for each): a window of T,
// then 4 + 5 steps carrying the state, then T again from the start: the last equals the first
// bit for bit, and the split windows' logits equal the whole window's within the bound (the
// same arithmetic over other batches of rows).
static void eval_lengths(const float *params, double bound) {
    sk_error err = {{0}};
    sk_backend *be = make(SK_PRECISION_BF16, B, 0, params);
    float *whole = calloc((size_t)B * T * V, sizeof(float)), *again = calloc((size_t)B * T * V, sizeof(float));
    float *part = calloc((size_t)B * T * V, sizeof(float)), *split = calloc((size_t)B * T * V, sizeof(float));
    int32_t x[B * T], y[B * T], xs[B * T];
    window(1, B, 0, x, y);
    double loss = 0.0;
    CHECK_OK(sk_backend_forward(be, x, NULL, T, SK_MODE_EVAL, 0, &loss));
    CHECK_OK(sk_backend_get_logits(be, whole));
    CHECK_OK(sk_backend_set_state(be, NULL));
    for (int start = 0, len = 4; start < T; start += len, len = T - start) {
        for (int b = 0; b < B; b++) memcpy(xs + b * len, x + b * T + start, sizeof(int32_t) * (size_t)len);
        CHECK_OK(sk_backend_forward(be, xs, NULL, len, SK_MODE_EVAL, 0, &loss));
        CHECK_OK(sk_backend_get_logits(be, part));
        for (int b = 0; b < B; b++)
            memcpy(split + ((size_t)b * T + start) * V, part + (size_t)b * len * V, sizeof(float) * (size_t)len * V);
    }
    CHECK_OK(sk_backend_set_state(be, NULL));
    CHECK_OK(sk_backend_forward(be, x, NULL, T, SK_MODE_EVAL, 0, &loss));
    CHECK_OK(sk_backend_get_logits(be, again));
    const int same = memcmp(whole, again, sizeof(float) * B * T * V) == 0;
    const double e = rel_l2(split, whole, (size_t)B * T * V);
    printf("4. evaluation windows: T again %s; 4 + 5 steps against T: relative L2 error %.3g (bound %.3g)\n",
           same ? "bit-identical" : "DIFFERS", e, bound);
    CHECK(same && e <= bound);
    sk_backend_free(be);
    free(whole), free(again), free(part), free(split);
}

int main(void) {
    char why[256];
    if (!sk_onednn_bf16_check(why, sizeof why)) sk_onednn_test_reference_kernels(1);
    if (!sk_onednn_bf16_check(why, sizeof why)) {
        printf("test_cpu_bf16: skipped: %s\n", why);
        return 77;
    }
    sk_error err = {{0}};
    sk_param_layout lay;
    const sk_model_config mc = config(SK_PRECISION_FP32, B, 0).model;
    CHECK_OK(sk_param_layout_init(&lay, &mc, &err));
    float *params = calloc(lay.total, sizeof(float));
    sk_rng r;
    sk_rng_seed(&r, 51);
    const float k = 1.0f / sqrtf((float)H);
    for (size_t i = 0; i < lay.total; i++) params[i] = k * (2.0f * sk_rng_uniform(&r) - 1.0f);
    const double bound = ldexp(1.0, -8) * sqrt(2.0 * H * T);
    against_fp32(params, lay.total, &lay, bound);
    resume(params, lay.total);
    ranks(params, lay.total, &lay, bound);
    eval_lengths(params, bound);
    free(params);
    sk_param_layout_free(&lay);
    return sk_test_done("test_cpu_bf16");
}
