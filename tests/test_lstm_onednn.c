// test_lstm_onednn.c: oneDNN's LSTM stack (src/cpu/lstm_onednn.h) against layer_cpu.c's LSTM layers,
// the fp32 reference, on a 2-layer stack (B=4, T=7, E=5, H=8) from a nonzero state with random
// weights (PyTorch's init range, 1/sqrt(H)), inputs in [-1, 1] and a random output gradient.
//  1. fp32: outputs, final h and c, the input gradient and every weight and bias gradient.
//     Tolerance: the two compute the same sums in other orders (oneDNN's gemm blocking against
//     CBLAS and libxsmm), so they differ by fp32 roundings: a pre-activation sums K = in + H <= 16
//     products of size <= 0.36, so its error is <= K * 2^-24 * 16 * 0.36 ~ 6e-6 relative to
//     its terms in the worst case; through T = 7 steps and back, atol = 1e-5 and rtol = 1e-4 for
//     values (of order 0.1-1) and gradients (sums over len*B = 28 rows of such terms).
//  2. bf16 against fp32: every operand (W_ih, W_hh, x, h) is rounded to bf16's 8 significant bits,
//     a relative error <= 2^-9 each, so a product's error is <= 2^-8 relative and a sum of K of
//     them is off by <= 2^-8 * sum |x_i w_i| <= 2^-8 * K * max|x| * max|w| (0.0225 at K = 16).
//     The cell adds such errors step after step (c_t = f c_{t-1} + i g, |f| < 1), so after T
//     steps an element is off by at most T times that: atol = 0.16 elementwise, which catches a
//     wrong layout or gate order (errors of the values' own size, 0.1-1). Rounding errors of
//     random sign add in quadrature, so the normalized (relative L2) error is bounded by
//     2^-8 * sqrt(K * T) ~ 0.041 for values and the weight gradients (each a sum over rows of
//     products of bf16-rounded h and fp32 gate gradients): checked too. And it must differ from
//     fp32 by more than fp32's own error (relative L2 > 2^-16), which shows that bf16 ran.
//     On an AVX-512 CPU without bf16 dot products, part 2 runs on oneDNN's reference kernels
//     (sk_onednn_test_reference_kernels), the same arithmetic.
//  3. Where bf16 is unavailable (ONEDNN_MAX_CPU_ISA=AVX2, the test's second registration, with
//     argument "no-bf16"; or a build without oneDNN), bf16 is refused with one line naming what
//     is missing, through this interface and through the CPU backend.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/layer_cpu.h"
#include "cpu/lstm_onednn.h"
#include "shakespeare/backend.h"
#include "shakespeare/rng.h"
#include "test_util.h"

enum { B = 4, T = 7, E = 5, H = 8, L = 2, G4 = 4 * H };

typedef struct {
    float *w_ih[L], *w_hh[L], *b_ih[L], *b_hh[L]; // canonical parameters
    float *x, *h0, *c0, *dtop;                     // (T*B, E), (L, B, H) twice, (T*B, H)
} problem;

typedef struct {
    float *y[L];                                   // (T*B, H) each layer's outputs
    float *hT, *cT;                                // (L, B, H)
    float *g_ih[L], *g_hh[L], *gb_ih[L], *gb_hh[L]; // gradients
    float *dx;                                     // (T*B, E)
} result;

static float *fill(sk_rng *r, size_t n, float scale) {
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = scale * (2.0f * sk_rng_uniform(r) - 1.0f);
    return p;
}

static float *zeros(size_t n) { return calloc(n, sizeof(float)); }

static void make_problem(problem *p) {
    sk_rng r;
    sk_rng_seed(&r, 51);
    const float k = 1.0f / sqrtf((float)H);
    for (int l = 0; l < L; l++) {
        p->w_ih[l] = fill(&r, (size_t)G4 * (l ? H : E), k), p->w_hh[l] = fill(&r, (size_t)G4 * H, k);
        p->b_ih[l] = fill(&r, G4, k), p->b_hh[l] = fill(&r, G4, k);
    }
    p->x = fill(&r, (size_t)T * B * E, 1.0f);
    p->h0 = fill(&r, (size_t)L * B * H, 0.5f), p->c0 = fill(&r, (size_t)L * B * H, 0.5f);
    p->dtop = fill(&r, (size_t)T * B * H, 0.1f);
}

static void make_result(result *o) {
    for (int l = 0; l < L; l++) {
        o->y[l] = zeros((size_t)T * B * H);
        o->g_ih[l] = zeros((size_t)G4 * (l ? H : E)), o->g_hh[l] = zeros((size_t)G4 * H);
        o->gb_ih[l] = zeros(G4), o->gb_hh[l] = zeros(G4);
    }
    o->hT = zeros((size_t)L * B * H), o->cT = zeros((size_t)L * B * H), o->dx = zeros((size_t)T * B * E);
}

static void free_problem(problem *p) {
    for (int l = 0; l < L; l++) free(p->w_ih[l]), free(p->w_hh[l]), free(p->b_ih[l]), free(p->b_hh[l]);
    free(p->x), free(p->h0), free(p->c0), free(p->dtop);
}

static void free_result(result *o) {
    for (int l = 0; l < L; l++) free(o->y[l]), free(o->g_ih[l]), free(o->g_hh[l]), free(o->gb_ih[l]), free(o->gb_hh[l]);
    free(o->hT), free(o->cT), free(o->dx);
}

// The reference: layer_cpu.c's LSTM layers stacked as backend_cpu.c stacks them (no dropout).
static void run_reference(const problem *p, result *o) {
    float *hbuf[L], *cbuf[L], *gates[L], *tanh_c[L];
    float *dgates = zeros((size_t)T * B * G4), *dh = zeros(B * H), *dc = zeros(2 * B * H);
    float *dy = malloc(sizeof(float) * T * B * H), *dxk = zeros((size_t)T * B * H);
    const float *in = p->x;
    sk_layer_cpu layer[L];
    for (int l = 0; l < L; l++) {
        layer[l] = sk_layer_cpu_make(SK_CELL_LSTM, B, H, l ? H : E, 1, p->w_ih[l], p->w_hh[l], p->b_ih[l], p->b_hh[l]);
        hbuf[l] = zeros((size_t)(T + 1) * B * H), cbuf[l] = zeros((size_t)(T + 1) * B * H);
        gates[l] = zeros((size_t)T * B * G4), tanh_c[l] = zeros((size_t)T * B * H);
        memcpy(hbuf[l], p->h0 + l * B * H, sizeof(float) * B * H);
        memcpy(cbuf[l], p->c0 + l * B * H, sizeof(float) * B * H);
        float *const st[2] = {hbuf[l], cbuf[l]};
        sk_layer_cpu_forward(&layer[l], T, in, gates[l], tanh_c[l], st);
        in = hbuf[l] + B * H;
        memcpy(o->y[l], in, sizeof(float) * T * B * H);
        memcpy(o->hT + l * B * H, hbuf[l] + (size_t)T * B * H, sizeof(float) * B * H);
        memcpy(o->cT + l * B * H, cbuf[l] + (size_t)T * B * H, sizeof(float) * B * H);
    }
    memcpy(dy, p->dtop, sizeof(float) * T * B * H);
    for (int l = L - 1; l >= 0; l--) {
        const sk_layer_cpu_grads g = {.w_ih = o->g_ih[l], .w_hh = o->g_hh[l], .b_ih = o->gb_ih[l], .b_hh = o->gb_hh[l]};
        float *dx = l ? dxk : o->dx;
        float *const st[2] = {hbuf[l], cbuf[l]};
        const sk_layer_cpu_scratch sc = {.dgates = dgates, .dh = dh, .dcarry = dc};
        sk_layer_cpu_backward(&layer[l], T, l ? hbuf[l - 1] + B * H : p->x, gates[l], tanh_c[l], st, dy, &sc, &g, dx);
        if (l) memcpy(dy, dxk, sizeof(float) * T * B * H);
    }
    for (int l = 0; l < L; l++) free(hbuf[l]), free(cbuf[l]), free(gates[l]), free(tanh_c[l]);
    free(dgates), free(dh), free(dc), free(dy), free(dxk);
}

static sk_status run_onednn(const problem *p, int bf16, result *o, sk_error *err) {
    const sk_lstm_onednn_config cfg = {.B = B, .T = T, .E = E, .H = H, .L = L, .bf16 = bf16, .threads = 1};
    sk_lstm_onednn *s = NULL;
    sk_status st = sk_lstm_onednn_create(&cfg, &s, err);
    if (st != SK_OK) return st;
    sk_layer_tensors w[L], g[L];
    for (int l = 0; l < L; l++) {
        w[l] = (sk_layer_tensors){.w_ih = p->w_ih[l], .w_hh = p->w_hh[l], .b_ih = p->b_ih[l], .b_hh = p->b_hh[l]};
        g[l] = (sk_layer_tensors){.w_ih = o->g_ih[l], .w_hh = o->g_hh[l], .b_ih = o->gb_ih[l], .b_hh = o->gb_hh[l]};
    }
    const float *top = sk_lstm_onednn_forward(s, T, p->x, w, p->h0, p->c0, o->hT, o->cT, o->y, NULL, err);
    float *dtop = malloc(sizeof(float) * T * B * H);
    memcpy(dtop, p->dtop, sizeof(float) * T * B * H);
    st = !top ? SK_ERR_DEVICE : top != o->y[L - 1] ? sk_fail(err, SK_ERR_ARG, "forward returned another buffer")
                              : sk_lstm_onednn_backward(s, dtop, w, g, o->dx, NULL, err);
    free(dtop);
    sk_lstm_onednn_free(s);
    return st;
}

// Relative L2 error of got against ref.
static double rel_l2(const float *got, const float *ref, size_t n) {
    double d = 0.0, r = 0.0;
    for (size_t i = 0; i < n; i++) d += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]), r += (double)ref[i] * ref[i];
    return sqrt(d / (r > 0.0 ? r : 1.0));
}

// Every output of got against ref with (atol, rtol); with l2_max > 0 also the relative L2
// error, which must lie in (l2_min, l2_max]; returns the largest relative L2 error seen.
static double compare(const char *tag, const result *got, const result *ref, double atol, double rtol, double l2_max) {
    typedef struct {
        const char *name;
        const float *a, *b;
        size_t n;
    } pair;
    pair t[3 + 5 * L];
    int n = 0;
    t[n++] = (pair){"hT", got->hT, ref->hT, (size_t)L * B * H};
    t[n++] = (pair){"cT", got->cT, ref->cT, (size_t)L * B * H};
    t[n++] = (pair){"dx", got->dx, ref->dx, (size_t)T * B * E};
    for (int l = 0; l < L; l++) {
        t[n++] = (pair){"y", got->y[l], ref->y[l], (size_t)T * B * H};
        t[n++] = (pair){"dW_ih", got->g_ih[l], ref->g_ih[l], (size_t)G4 * (l ? H : E)};
        t[n++] = (pair){"dW_hh", got->g_hh[l], ref->g_hh[l], (size_t)G4 * H};
        t[n++] = (pair){"db_ih", got->gb_ih[l], ref->gb_ih[l], G4};
        t[n++] = (pair){"db_hh", got->gb_hh[l], ref->gb_hh[l], G4};
    }
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s %s", tag, t[i].name);
        sk_test_compare(what, t[i].a, t[i].b, t[i].n, atol, rtol);
        const double e = rel_l2(t[i].a, t[i].b, t[i].n);
        if (e > worst) worst = e;
        if (l2_max > 0.0 && !(e <= l2_max)) {
            printf("  %s: relative L2 error %.3g above %.3g  FAIL\n", what, e, l2_max);
            sk_test_failures++;
        }
    }
    printf("  %s: largest relative L2 error %.3g\n", tag, worst);
    return worst;
}

// bf16 refused, with one line saying what is missing, here and through the backend.
static void check_refused(void) {
    sk_error err = {{0}};
    char why[256] = "";
    CHECK(!sk_onednn_bf16_check(why, sizeof why) && why[0] && !strchr(why, '\n'));
    printf("bf16 unavailable: %s\n", why);
    const sk_lstm_onednn_config cfg = {.B = B, .T = T, .E = E, .H = H, .L = L, .bf16 = 1, .threads = 1};
    sk_lstm_onednn *s = NULL;
    CHECK(sk_lstm_onednn_create(&cfg, &s, &err) == SK_ERR_ARG && s == NULL);
    CHECK(strstr(err.msg, "precision bf16 on the CPU: ") == err.msg && !strchr(err.msg, '\n'));
    sk_backend_config bc = {.model = {.vocab_size = 7, .embed_size = E, .hidden_size = H, .num_layers = L},
                            .batch_size = B, .seq_len = T, .training = 1, .threads = 1,
                            .precision = SK_PRECISION_BF16};
    sk_backend *be = NULL;
    CHECK(sk_backend_create_cpu(&bc, &be, &err) == SK_ERR_ARG && be == NULL);
    printf("backend: %s\n", err.msg);
    CHECK(strstr(err.msg, "precision bf16 on the CPU: ") == err.msg && strstr(err.msg, why));
}

// Parts 1 and 2 (or 3 where bf16 is unavailable); the caller owns and frees the buffers.
static void run_checks(const problem *p, result *ref, result *f32, result *b16, int expect_no_bf16) {
    sk_error err = {{0}};
    run_reference(p, ref);
    sk_status st = run_onednn(p, 0, f32, &err);
    if (st != SK_OK && strstr(err.msg, "libdnnl-dev")) { // a build without oneDNN
        printf("no oneDNN: %s\n", err.msg);
        check_refused();
        return;
    }
    CHECK_OK(st);
    printf("oneDNN fp32 against layer_cpu.c:\n");
    compare("fp32", f32, ref, 1e-5, 1e-4, 0.0);
    char why[256];
    if (expect_no_bf16 || !sk_onednn_bf16_check(why, sizeof why)) {
        check_refused();
        if (expect_no_bf16) return;
        // An AVX-512 CPU without bf16 dot products: the same arithmetic on oneDNN's reference kernels.
        sk_onednn_test_reference_kernels(1);
        if (!sk_onednn_bf16_check(why, sizeof why)) return;
        printf("bf16 on oneDNN's reference kernels (this CPU has no bf16 dot products)\n");
    }
    CHECK_OK(run_onednn(p, 1, b16, &err));
    printf("oneDNN bf16 against layer_cpu.c (fp32):\n");
    const double bound = ldexp(1.0, -8) * sqrt((double)(H + H) * T) /* K = in + H <= 16 */;
    const double worst = compare("bf16", b16, ref, 0.16, 0.0, bound);
    CHECK(worst > ldexp(1.0, -16)); // bf16 ran: far more than fp32's own error (~1e-7)
}

int main(int argc, char **argv) {
    const int expect_no_bf16 = argc > 1 && strcmp(argv[1], "no-bf16") == 0;
    problem p;
    result ref, f32, b16;
    make_problem(&p);
    make_result(&ref), make_result(&f32), make_result(&b16);
    run_checks(&p, &ref, &f32, &b16, expect_no_bf16);
    free_problem(&p);
    free_result(&ref), free_result(&f32), free_result(&b16);
    return sk_test_done("test_lstm_onednn");
}
