// test_deferred_step.c: the training step's one entry point (backend.h's
// sk_backend_train_step and sk_backend_read_stats) on the CPU backend is the eager sequence
// of its ops, bit for bit, and its reduce hook sits where data-parallel ranks need it:
//  1. 12 steps through the entry point on one backend and of forward, backward, sk_backend_step
//     on another, from the same parameters and windows, with dropout and clipping: identical
//     parameters, Adam moments, carried state, last loss sum and last norm;
//  2. a step whose loss is not finite (one parameter set to +inf after a few steps) is
//     recorded with its step, and neither it nor the later steps touch parameters or moments;
//     read_stats then forgets the record;
//  3. the comparison can fail: parameters after 6 steps differ from those after 12;
//  4. a reduce hook that sums over one rank (leaves the values) is called once per step and
//     changes nothing, bit for bit; it is called, with the failure, also when forward fails
//     (so that ranks agree before a collective), and a failure it returns comes back with its
//     own message.
// Tolerance: none (the same code runs on both sides).
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shakespeare/backend.h"
#include "shakespeare/rng.h"
#include "test_util.h"

enum { V = 11, E = 6, H = 10, L = 2, B = 3, T = 7 };

static const sk_optim_hparams kHp = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01, .grad_clip = 0.5};

static sk_backend *fresh(const float *p0) {
    sk_error err = {{0}};
    sk_backend_config cfg = {.model = {.vocab_size = V, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = 0.3f, .weight_drop = 0.0f}, .batch_size = B, .seq_len = T, .training = 1,
                             .threads = 1, .seed = 42};
    sk_backend *be = NULL;
    CHECK_OK(sk_backend_create_cpu(&cfg, &be, &err));
    if (p0) CHECK(sk_backend_set_params(be, p0) == SK_OK);
    return be;
}

static void window(int s, int32_t *x, int32_t *y) {
    sk_rng r;
    sk_rng_seed(&r, 300 + (uint64_t)s);
    for (int i = 0; i < B * T; i++) x[i] = (int32_t)(sk_rng_u64(&r) % V), y[i] = (int32_t)(sk_rng_u64(&r) % V);
}

static sk_error g_err;

static sk_status step(sk_backend *be, const int32_t *x, const int32_t *y, int s, const sk_grad_reduce *reduce) {
    const sk_train_step_args a = {x, y, T, s, s + 1, &kHp, 1e-2f, reduce};
    return sk_backend_train_step(be, &a, &g_err);
}

// A reduce hook over one rank: counts its calls and the failures it was handed; fails on
// request.
typedef struct {
    int calls, failures_seen, fail_at;
} hook_log;

static sk_status one_rank(void *ctx, sk_status st, double *loss_sum, float *grads, size_t n, int on_device,
                          sk_error *err) {
    hook_log *h = ctx;
    (void)loss_sum, (void)n, (void)on_device;
    h->calls++;
    if (st != SK_OK) h->failures_seen++;
    if (st == SK_OK && grads == NULL) return sk_fail(err, SK_ERR_ARG, "no gradient buffer handed to the hook");
    if (st == SK_OK && h->calls == h->fail_at) return sk_fail(err, SK_ERR_IO, "the hook's own failure");
    return st;
}

static int same_floats(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

typedef struct {
    float *p, *m, *v, *h; // h: the carried state, h then c
} state;

static void take(sk_backend *be, state *s) {
    const size_t n = sk_backend_layout(be)->total, ns = (size_t)L * B * H;
    s->p = malloc(n * sizeof(float)), s->m = malloc(n * sizeof(float)), s->v = malloc(n * sizeof(float));
    s->h = malloc(2 * ns * sizeof(float)); // h, then c
    if (!s->p || !s->m || !s->v || !s->h) exit(1);
    CHECK(sk_backend_get_params(be, s->p) == SK_OK);
    CHECK(sk_backend_get_optimizer_state(be, 0, s->m) == SK_OK && sk_backend_get_optimizer_state(be, 1, s->v) == SK_OK);
    CHECK(sk_backend_get_state(be, s->h) == SK_OK);
}

static void drop(state *s) { free(s->p), free(s->m), free(s->v), free(s->h); }

int main(void) {
    int32_t x[B * T], y[B * T];
    sk_backend *a = fresh(NULL);
    const size_t n = sk_backend_layout(a)->total, ns = (size_t)L * B * H;
    float *p0 = malloc(n * sizeof(float));
    if (!p0) return 1;
    sk_params_init(p0, sk_backend_layout(a), SK_INIT_PYTORCH, 0.0f, 1.0f, 3);
    CHECK(sk_backend_set_params(a, p0) == SK_OK);
    sk_backend *e = fresh(p0);

    // 1: deferred (a) vs eager (e).
    double loss = 0.0, norm = 0.0;
    state half;
    for (int s = 0; s < 12; s++) {
        window(s, x, y);
        CHECK(step(a, x, y, s, NULL) == SK_OK);
        CHECK(sk_backend_forward(e, x, y, T, SK_MODE_TRAIN, s, &loss) == SK_OK);
        CHECK(sk_backend_backward(e) == SK_OK);
        CHECK(sk_backend_step(e, &kHp, 1e-2f, s + 1, &norm) == SK_OK);
        if (s == 5) take(a, &half);
    }
    sk_step_stats ss;
    CHECK(sk_backend_read_stats(a, &ss, &g_err) == SK_OK);
    state sa, se;
    take(a, &sa), take(e, &se);
    const int same = same_floats(sa.p, se.p, n) && same_floats(sa.m, se.m, n) && same_floats(sa.v, se.v, n) &&
                     same_floats(sa.h, se.h, 2 * ns);
    printf("deferred vs eager, 12 steps: %s; loss sum %.17g vs %.17g, norm %.17g vs %.17g\n",
           same ? "bit-identical" : "DIFFERENT", ss.loss_sum, loss, ss.grad_norm, norm);
    CHECK(same && ss.loss_sum == loss && ss.grad_norm == norm && ss.bad_step == 0);
    // 3: the comparison can fail.
    CHECK(!same_floats(half.p, sa.p, n));

    // 2: an infinite parameter (the fc bias) makes step 13's loss nan: recorded, nothing moves.
    sa.p[n - 1] = INFINITY;
    CHECK(sk_backend_set_params(a, sa.p) == SK_OK);
    for (int s = 12; s < 15; s++) {
        window(s, x, y);
        CHECK(step(a, x, y, s, NULL) == SK_OK);
    }
    state sb;
    take(a, &sb);
    CHECK(sk_backend_read_stats(a, &ss, &g_err) == SK_OK);
    printf("an infinite parameter: bad step %lld (%s), parameters and moments %s\n", (long long)ss.bad_step,
           ss.bad_is_norm ? "norm" : "loss",
           same_floats(sb.p, sa.p, n) && same_floats(sb.m, sa.m, n) && same_floats(sb.v, sa.v, n) ? "untouched"
                                                                                                   : "CHANGED");
    CHECK(ss.bad_step == 13 && ss.bad_is_norm == 0 && !isfinite(ss.bad_loss_sum));
    CHECK(same_floats(sb.p, sa.p, n) && same_floats(sb.m, sa.m, n) && same_floats(sb.v, sa.v, n));
    CHECK(sk_backend_read_stats(a, &ss, &g_err) == SK_OK && ss.bad_step == 0); // forgotten once read

    // 4: the reduce hook.
    sk_backend *hooked = fresh(p0), *plain = fresh(p0);
    hook_log log = {0, 0, 0};
    const sk_grad_reduce reduce = {one_rank, &log};
    for (int s = 0; s < 5; s++) {
        window(s, x, y);
        CHECK(step(hooked, x, y, s, &reduce) == SK_OK);
        CHECK(step(plain, x, y, s, NULL) == SK_OK);
    }
    state sh, sp;
    take(hooked, &sh), take(plain, &sp);
    CHECK(log.calls == 5 && log.failures_seen == 0);
    CHECK(same_floats(sh.p, sp.p, n) && same_floats(sh.m, sp.m, n) && same_floats(sh.v, sp.v, n));
    int32_t bad_ids[B * T];
    for (int i = 0; i < B * T; i++) bad_ids[i] = V; // out of the vocabulary: forward fails
    CHECK(step(hooked, bad_ids, y, 5, &reduce) == SK_ERR_ARG);
    CHECK(log.calls == 6 && log.failures_seen == 1 && strstr(g_err.msg, "the cpu backend failed at step 6"));
    log.fail_at = 7;
    CHECK(step(hooked, x, y, 6, &reduce) == SK_ERR_IO && strcmp(g_err.msg, "the hook's own failure") == 0);
    printf("reduce hook: %d calls, bit-identical to no hook; failures agreed and named (\"%s\")\n", log.calls,
           g_err.msg);
    drop(&sh), drop(&sp);
    sk_backend_free(hooked);
    sk_backend_free(plain);

    drop(&half), drop(&sa), drop(&se), drop(&sb);
    free(p0);
    sk_backend_free(a);
    sk_backend_free(e);
    return sk_test_done("test_deferred_step");
}
