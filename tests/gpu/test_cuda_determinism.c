// test_cuda_determinism.c: the CUDA backend is bitwise reproducible, with dropout off and on
// (the inter-layer masks are hash.h's, keyed by (seed, step); no generator state lives on
// the GPU), at the backend interface:
//  1. same seed twice: two backends trained from the same parameters on the same windows
//     end with bit-identical parameters, Adam moments, carried state and losses;
//  2. stop and resume: a backend stopped after N steps, whose parameters, moments and
//     carried state are copied into a NEW backend that trains steps N+1..2N, ends
//     bit-identical to one that trained 2N steps straight (the trainer's resume does the
//     same through a checkpoint: tests/gpu/test_gpu_resume.sh);
//  3. the checks can fail: the state after N differs from the state after 2N, and with
//     dropout a different seed gives different parameters (so the masks matter and are
//     keyed by the seed).
// Both LSTM implementations (cudnn, and the persistent kernel whose dot products run in a
// fixed order too), in fp32, and in tf32 (cuDNN) and bf16 (the persistent kernel, on CUDA
// cores and on tensor cores, whose split of K among warps is fixed by the shape). Tolerance:
// none, every comparison is bitwise. Exits 77 (skipped) without a usable GPU.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "shakespeare/rng.h"
#include "gpu_test_util.h"
#include "test_util.h"

typedef struct {
    const char *name;
    int V, E, H, L, B, T;
    float dropout;
    sk_rnn_impl impl;
    sk_precision precision;
    sk_tensor_cores tc; // the persistent kernel's inner products (0: SK_TENSOR_CORES_DEFAULT)
} det_case;

// Everything a resume carries: parameters, Adam moments, carried LSTM state, last loss.
typedef struct {
    size_t n, ns;
    float *p, *m, *v, *h, *c;
    double loss;
} snapshot;

static void snap_alloc(snapshot *s, const sk_backend *be) {
    s->n = sk_backend_layout(be)->total;
    s->ns = (size_t)sk_backend_cfg(be)->model.num_layers * sk_backend_cfg(be)->batch_size * sk_backend_cfg(be)->model.hidden_size;
    s->p = alloc_f(s->n), s->m = alloc_f(s->n), s->v = alloc_f(s->n), s->h = alloc_f(2 * s->ns), s->c = s->h + s->ns; // the state: h, then c
    s->loss = 0.0;
}

static void snap_free(snapshot *s) { free(s->p), free(s->m), free(s->v), free(s->h); }

static void snap_take(snapshot *s, sk_backend *be) {
    OP_OK(be, sk_backend_get_params(be, s->p));
    OP_OK(be, sk_backend_get_optimizer_state(be, 0, s->m));
    OP_OK(be, sk_backend_get_optimizer_state(be, 1, s->v));
    OP_OK(be, sk_backend_get_state(be, s->h));
}

static void snap_restore(const snapshot *s, sk_backend *be) {
    OP_OK(be, sk_backend_set_params(be, s->p));
    OP_OK(be, sk_backend_set_optimizer_state(be, 0, s->m));
    OP_OK(be, sk_backend_set_optimizer_state(be, 1, s->v));
    OP_OK(be, sk_backend_set_state(be, s->h));
}

// Counts bitwise differences of n floats; prints the first one.
static size_t count_diff(const char *what, const float *got, const float *ref, size_t n, int print) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &ref[i], sizeof(float)) != 0 && !bad++) first = i;
    if (print)
        printf("  %-12s n=%-8zu %zu bitwise difference(s)%s", what, n, bad, bad ? "" : "\n");
    if (print && bad) printf(", first [%zu] got %.9g want %.9g\n", first, got[first], ref[first]);
    return bad;
}

// Bitwise equality of two snapshots (expect = 1) or at least one difference (expect = 0).
static void compare(const char *what, const snapshot *a, const snapshot *b, int expect_equal) {
    printf(" %s: loss %.17g vs %.17g\n", what, a->loss, b->loss);
    const int pr = expect_equal;
    size_t d = count_diff("params", a->p, b->p, a->n, pr) + count_diff("adam m", a->m, b->m, a->n, pr) +
               count_diff("adam v", a->v, b->v, a->n, pr) + count_diff("h", a->h, b->h, a->ns, pr) +
               count_diff("c", a->c, b->c, a->ns, pr);
    int same = d == 0 && memcmp(&a->loss, &b->loss, sizeof a->loss) == 0;
    if (expect_equal && !same) printf("  FAIL: %s should be bit-identical\n", what);
    if (!expect_equal && same) printf("  FAIL: %s should differ\n", what);
    CHECK(same == expect_equal);
}

// Steps [from, to) (1-based optimizer steps from+1..to). Window s is a pure function of s.
static double train(sk_backend *be, const det_case *dc, int from, int to) {
    const size_t bt = (size_t)dc->B * dc->T;
    int32_t *x = malloc(bt * sizeof(int32_t)), *y = malloc(bt * sizeof(int32_t));
    if (!x || !y) exit(1);
    const sk_optim_hparams hp = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01, .grad_clip = 1.0};
    double loss = 0.0;
    for (int s = from; s < to; s++) {
        sk_rng r;
        sk_rng_seed(&r, 1000 + (uint64_t)s);
        for (size_t i = 0; i < bt; i++) x[i] = (int32_t)(sk_rng_u64(&r) % (uint64_t)dc->V);
        for (size_t i = 0; i < bt; i++) y[i] = (int32_t)(sk_rng_u64(&r) % (uint64_t)dc->V);
        double norm = 0.0;
        OP_OK(be, sk_backend_forward(be, x, y, dc->T, SK_MODE_TRAIN, s + 1, &loss));
        OP_OK(be, sk_backend_backward(be));
        OP_OK(be, sk_backend_step(be, &hp, 3e-3f, s + 1, &norm));
        CHECK(isfinite(loss) && isfinite(norm));
    }
    free(x), free(y);
    return loss;
}

static sk_backend *fresh(const det_case *dc, uint64_t seed, const float *p0) {
    sk_error err = {{0}};
    sk_backend_config cfg = {.model = {.vocab_size = dc->V, .embed_size = dc->E, .hidden_size = dc->H, .num_layers = dc->L, .dropout = dc->dropout, .weight_drop = 0.0f}, .batch_size = dc->B,
                             .seq_len = dc->T, .training = 1, .seed = seed, .rnn_impl = dc->impl,
                             .precision = dc->precision, .plstm_tensor_cores = dc->tc};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cuda(&cfg, &be, &err));
    if (p0) OP_OK(be, sk_backend_set_params(be, p0));
    return be;
}

static void run_case(const det_case *dc) {
    enum { N = 12 };
    const uint64_t seed = 77;
    printf("%s: V=%d E=%d H=%d L=%d B=%d T=%d dropout=%.2f rnn-impl %s precision %s%s\n", dc->name, dc->V, dc->E,
           dc->H, dc->L, dc->B, dc->T, (double)dc->dropout, sk_rnn_impl_name(dc->impl),
           sk_precision_name(dc->precision), dc->tc == SK_TENSOR_CORES_ON ? ", tensor cores" : "");
    sk_backend *a = fresh(dc, seed, NULL);
    float *p0 = alloc_f(sk_backend_layout(a)->total);
    sk_params_init(p0, sk_backend_layout(a), SK_INIT_PYTORCH, 0.0f, 1.0f, 5);
    OP_OK(a, sk_backend_set_params(a, p0));
    snapshot straight, half, twice, resumed;
    snap_alloc(&straight, a), snap_alloc(&half, a), snap_alloc(&twice, a), snap_alloc(&resumed, a);

    // The straight run: N steps (kept), then N more.
    half.loss = train(a, dc, 0, N);
    snap_take(&half, a);
    straight.loss = train(a, dc, N, 2 * N);
    snap_take(&straight, a);
    sk_backend_free(a);

    // 1: the same seed and parameters again, in a new backend.
    sk_backend *b = fresh(dc, seed, p0);
    twice.loss = train(b, dc, 0, 2 * N);
    snap_take(&twice, b);
    sk_backend_free(b);
    compare("same seed twice", &twice, &straight, 1);

    // 2: resume from the snapshot at N in a new backend.
    sk_backend *c = fresh(dc, seed, NULL);
    snap_restore(&half, c);
    resumed.loss = train(c, dc, N, 2 * N);
    snap_take(&resumed, c);
    sk_backend_free(c);
    compare("N + resumed N == 2N straight", &resumed, &straight, 1);

    // 3: the comparisons can fail.
    compare("state at N vs at 2N", &half, &straight, 0);
    if (dc->dropout > 0.0f) {
        sk_backend *d = fresh(dc, seed + 1, p0);
        twice.loss = train(d, dc, 0, 2 * N);
        snap_take(&twice, d);
        sk_backend_free(d);
        compare("another seed (other dropout masks)", &twice, &straight, 0);
    }
    snap_free(&straight), snap_free(&half), snap_free(&twice), snap_free(&resumed);
    free(p0);
}

int main(void) {
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    static const det_case cases[] = {
        {"two layers, no dropout", 37, 16, 48, 2, 4, 16, 0.0f, SK_RNN_AUTO, SK_PRECISION_FP32, 0},
        {"two layers, dropout", 37, 16, 48, 2, 4, 16, 0.25f, SK_RNN_AUTO, SK_PRECISION_FP32, 0},
        {"three layers, dropout, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, SK_RNN_CUDNN, SK_PRECISION_FP32, 0},
        {"one layer, dropout before fc only", 23, 8, 40, 1, 2, 9, 0.4f, SK_RNN_CUDNN, SK_PRECISION_FP32, 0},
        {"two layers, no dropout", 37, 16, 48, 2, 4, 16, 0.0f, SK_RNN_PERSISTENT, SK_PRECISION_FP32, 0},
        {"three layers, dropout, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, SK_RNN_PERSISTENT, SK_PRECISION_FP32, 0},
        {"three layers, dropout, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, SK_RNN_CUDNN, SK_PRECISION_TF32, 0},
        {"three layers, dropout, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, SK_RNN_PERSISTENT, SK_PRECISION_BF16,
         SK_TENSOR_CORES_OFF},
        {"three layers, dropout, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, SK_RNN_PERSISTENT, SK_PRECISION_BF16,
         SK_TENSOR_CORES_ON},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    return sk_test_done("test_cuda_determinism");
}
