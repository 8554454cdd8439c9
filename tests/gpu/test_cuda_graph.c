// test_cuda_graph.c: the deferred training step (backend.h's train_step/read_stats) and its
// CUDA-graph replay (--cuda-graph on) compute exactly what the eager sequence computes
// (forward, backward, sk_backend_step: the loss and the norm read back every step):
//  1. 50 steps (16 on the emulated device: same_steps), three backends from the same
//     parameters on the same windows: eager ops, train_step without a graph, train_step
//     replayed as graphs. Parameters, Adam moments, carried state, the last loss sum and
//     the last norm are bit-identical. The windows mix two lengths (two graphs per length:
//     the state slots) and an evaluation forward of a third length every 10 steps (cuDNN's
//     device sequence lengths change under the graphs), for both LSTM implementations,
//     dropout and weight drop 0 and > 0 (their masks' keys are read from device memory when a
//     replayed graph runs).
//  2. stop and resume with the graph: N graph steps, the state copied into a NEW graph
//     backend (--cuda-graph try, which launches graphs and says nothing when no capture
//     fails) that runs N more, equals 2N graph steps straight (the checkpointed resume is
//     tests/gpu/test_gpu_graph_resume.sh, try's fallback after a failed capture too).
//  3. a forced non-finite step (Adam with beta2 = 0 and eps = 1e-30, lr 1, no clipping, as
//     tests/cli/test_divergence.sh; weight drop off, see run_case): the eager sequence stops
//     at step s (loss or norm not finite); the graph backend, read back only after 3 more
//     steps, reports the same step and kind, and holds the eager backend's parameters and
//     moments of before step s.
//  4. the checks can fail: parameters after N steps differ from those after 2N, and the graph
//     backend really launched graphs (read_stats' graph_launches > 0; 0 without a graph), so
//     that 1 does not compare the deferred path with itself. The first step of each (length,
//     state slot) runs eagerly (step_graph.h's warm-up), later ones as graphs.
// Cases: cudnn, the persistent kernel, and cudnn-persist where cuDNN takes the shape (else
// its refusal is printed and the case skipped); with SK_CELLS_ONLY=1 (test_cuda_cells.sh) the
// GRU and the RNN (cell.h) through cuDNN (CUDNN_GRU, CUDNN_RNN_TANH) instead, the cuDNN cases.
// Tolerance: none, every comparison is bitwise (the clip scale and the non-finite test are
// formed on the device with step_math.h, the host's formulas). Exits 77 without a usable GPU.
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
    float weight_drop;
    sk_rnn_impl impl;
} graph_case;

typedef enum { RUN_EAGER_OPS, RUN_DEFERRED, RUN_GRAPH } run_kind;

typedef struct {
    size_t n, ns;
    float *p, *m, *v, *h, *c;
    double loss_sum, norm;
    int64_t launches; // read_stats' graph_launches
    char notice[SK_ERROR_MSG_MAX]; // read_stats' notice
} snapshot;

static void snap_take(snapshot *s, sk_backend *be) {
    s->n = sk_backend_layout(be)->total;
    s->ns = (size_t)sk_backend_cfg(be)->model.num_layers * sk_backend_cfg(be)->batch_size * sk_backend_cfg(be)->model.hidden_size;
    // The state: h, then an LSTM's c (zeros for the cells without one: compared all the same).
    s->p = alloc_f(s->n), s->m = alloc_f(s->n), s->v = alloc_f(s->n), s->h = alloc_f(2 * s->ns), s->c = s->h + s->ns;
    memset(s->h, 0, sizeof(float) * 2 * s->ns);
    OP_OK(be, sk_backend_get_params(be, s->p));
    OP_OK(be, sk_backend_get_optimizer_state(be, 0, s->m));
    OP_OK(be, sk_backend_get_optimizer_state(be, 1, s->v));
    OP_OK(be, sk_backend_get_state(be, s->h));
}

static void snap_free(snapshot *s) { free(s->p), free(s->m), free(s->v), free(s->h); }

static size_t count_diff(const char *what, const float *got, const float *ref, size_t n) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &ref[i], sizeof(float)) != 0 && !bad++) first = i;
    if (bad) printf("    %s: %zu of %zu differ, first [%zu] %.9g vs %.9g\n", what, bad, n, first, got[first], ref[first]);
    return bad;
}

// Bitwise: parameters, moments (with_moments), state (with_state).
static size_t diff(const snapshot *a, const snapshot *b, int with_state) {
    size_t d = count_diff("params", a->p, b->p, a->n) + count_diff("adam m", a->m, b->m, a->n) +
               count_diff("adam v", a->v, b->v, a->n);
    if (with_state) d += count_diff("h", a->h, b->h, a->ns) + count_diff("c", a->c, b->c, a->ns);
    return d;
}

static sk_cell_kind g_cell; // the cell of the case being run (cell.h)

static sk_backend *fresh(const graph_case *gc, sk_cuda_graph graph, const float *p0) {
    sk_error err = {{0}};
    sk_backend_config cfg = {.model = {.vocab_size = gc->V, .embed_size = gc->E, .hidden_size = gc->H, .num_layers = gc->L, .dropout = gc->dropout, .weight_drop = gc->weight_drop, .cell = g_cell},
                             .batch_size = gc->B, .seq_len = gc->T, .training = 1, .seed = 99,
                             .rnn_impl = gc->impl, .cuda_graph = graph,
                             // The cuDNN case with dropout runs its wavefront in 3 chunks of 3 steps
                             // (lstm_impl_cudnn_wavefront.cu): lanes forked off the captured stream
                             // and joined back.
                             .cudnn_chunk_steps = 3};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cuda(&cfg, &be, &err));
    if (p0) OP_OK(be, sk_backend_set_params(be, p0));
    return be;
}

// Window s: ids a pure function of s; length T, or T/2 + 1 every fourth step.
static int window(const graph_case *gc, int s, int32_t *x, int32_t *y) {
    const int len = s % 4 == 3 ? gc->T / 2 + 1 : gc->T;
    sk_rng r;
    sk_rng_seed(&r, 5000 + (uint64_t)s);
    for (int i = 0; i < gc->B * len; i++) x[i] = (int32_t)(sk_rng_u64(&r) % (uint64_t)gc->V);
    for (int i = 0; i < gc->B * len; i++) y[i] = (int32_t)(sk_rng_u64(&r) % (uint64_t)gc->V);
    return len;
}

// Steps [from, to) of kind k with hyperparameters hp at lr. Every 10th step is followed by
// an evaluation forward of 3 steps (its loss is the same on every backend too). Returns
// the step at which the eager sequence met a non-finite loss or norm (1-based), or 0;
// *last gets the last step's loss sum and norm.
static int64_t train(sk_backend *be, run_kind k, const graph_case *gc, const sk_optim_hparams *hp, float lr, int from,
                     int to, snapshot *last) {
    const size_t bt = (size_t)gc->B * gc->T;
    int32_t *x = malloc(bt * sizeof(int32_t)), *y = malloc(bt * sizeof(int32_t));
    if (!x || !y) exit(1);
    int64_t bad = 0;
    sk_error err = {{0}};
    for (int s = from; s < to && !bad; s++) {
        const int len = window(gc, s, x, y);
        if (k == RUN_EAGER_OPS) {
            double loss = 0.0, norm = 0.0;
            OP_OK(be, sk_backend_forward(be, x, y, len, SK_MODE_TRAIN, s + 1, &loss));
            OP_OK(be, sk_backend_backward(be));
            last->loss_sum = loss;
            if (!isfinite((float)(loss / ((double)gc->B * len)))) {
                bad = s + 1;
                break;
            }
            sk_status st = sk_backend_step(be, hp, lr, s + 1, &norm);
            last->norm = norm;
            if (st == SK_ERR_NUMERIC) bad = s + 1;
            else OP_OK(be, st);
        } else {
            const sk_train_step_args a = {.x = x, .y = y, .len = len, .step = s + 1, .opt_step = s + 1, .optim = hp,
                                          .lr = lr}; // no reduce hook: the backend's deferred step
            CHECK_OK(sk_backend_train_step(be, &a, &err));
        }
        if (s % 10 == 9) {
            double ev = 0.0;
            OP_OK(be, sk_backend_forward(be, x, y, 3, SK_MODE_EVAL, 0, &ev));
        }
    }
    if (k != RUN_EAGER_OPS) {
        sk_step_stats ss;
        CHECK_OK(sk_backend_read_stats(be, &ss, &err));
        last->loss_sum = ss.loss_sum, last->norm = ss.grad_norm, last->launches = ss.graph_launches;
        snprintf(last->notice, sizeof last->notice, "%s", ss.notice);
        bad = ss.bad_step;
        if (bad) last->loss_sum = ss.bad_loss_sum, last->norm = ss.bad_is_norm ? ss.bad_norm : NAN;
    }
    free(x), free(y);
    return bad;
}

// Steps of same_three, and of each half of resume. On the emulated device, where every step of
// the persistent kernels costs its fibers (gpu_test_util.h's emulated_device), 16 and 6: 16
// still mixes both window lengths (steps 4, 8, 12 and 16 are short), one evaluation forward
// (after step 10) and graph replays of both lengths past their warm-up steps; 6 + 6 still
// resumes mid-run into a new backend, on a short window (step 8).
static int same_steps(void) { return emulated_device() ? 16 : 50; }
static int resume_steps(void) { return emulated_device() ? 6 : 12; }

static const sk_optim_hparams kHp = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01, .grad_clip = 1.0};

static void same_three(const graph_case *gc, const float *p0) {
    const int N = same_steps();
    snapshot s[3];
    const run_kind kinds[3] = {RUN_EAGER_OPS, RUN_DEFERRED, RUN_GRAPH};
    const sk_cuda_graph graphs[3] = {SK_GRAPH_OFF, SK_GRAPH_OFF, SK_GRAPH_ON};
    for (int i = 0; i < 3; i++) {
        sk_backend *be = fresh(gc, graphs[i], p0);
        memset(&s[i], 0, sizeof s[i]);
        snapshot last = {0};
        CHECK(train(be, kinds[i], gc, &kHp, 3e-3f, 0, N, &last) == 0);
        snap_take(&s[i], be);
        s[i].loss_sum = last.loss_sum, s[i].norm = last.norm, s[i].launches = last.launches;
        sk_backend_free(be);
    }
    printf("  steps launched as CUDA graphs: %lld of %d (train_step without a graph: %lld)\n",
           (long long)s[2].launches, N, (long long)s[1].launches);
    CHECK(s[2].launches > 0 && s[1].launches == 0);
    for (int i = 1; i < 3; i++) {
        const size_t d = diff(&s[i], &s[0], 1);
        const int same = d == 0 && memcmp(&s[i].loss_sum, &s[0].loss_sum, sizeof(double)) == 0 &&
                         memcmp(&s[i].norm, &s[0].norm, sizeof(double)) == 0;
        printf("  %s vs eager ops, %d steps: %s (loss sum %.17g vs %.17g, norm %.17g vs %.17g)\n",
               i == 1 ? "train_step" : "train_step as CUDA graphs", N, same ? "bit-identical" : "DIFFERENT",
               s[i].loss_sum, s[0].loss_sum, s[i].norm, s[0].norm);
        CHECK(same);
    }
    for (int i = 0; i < 3; i++) snap_free(&s[i]);
}

static void resume(const graph_case *gc, const float *p0) {
    const int N = resume_steps();
    snapshot half, straight, resumed, dummy = {0};
    sk_backend *a = fresh(gc, SK_GRAPH_ON, p0);
    train(a, RUN_GRAPH, gc, &kHp, 3e-3f, 0, N, &dummy);
    snap_take(&half, a);
    train(a, RUN_GRAPH, gc, &kHp, 3e-3f, N, 2 * N, &dummy);
    snap_take(&straight, a);
    sk_backend_free(a);
    // The resumed half with --cuda-graph try, which captures as on does when nothing fails.
    sk_backend *b = fresh(gc, SK_GRAPH_TRY, NULL);
    OP_OK(b, sk_backend_set_params(b, half.p));
    OP_OK(b, sk_backend_set_optimizer_state(b, 0, half.m));
    OP_OK(b, sk_backend_set_optimizer_state(b, 1, half.v));
    OP_OK(b, sk_backend_set_state(b, half.h));
    train(b, RUN_GRAPH, gc, &kHp, 3e-3f, N, 2 * N, &dummy);
    snap_take(&resumed, b);
    sk_backend_free(b);
    const size_t d = diff(&resumed, &straight, 1);
    printf("  graph: %d + resumed %d (try: %lld graph launches, notice \"%s\") == %d straight: %s\n", N, N,
           (long long)dummy.launches, dummy.notice, 2 * N, d ? "DIFFERENT" : "bit-identical");
    CHECK(d == 0);
    CHECK(dummy.launches > 0 && dummy.notice[0] == '\0');
    const int moved = memcmp(half.p, straight.p, sizeof(float) * half.n) != 0;
    printf("  the check can fail: parameters at %d and %d %s\n", N, 2 * N, moved ? "differ" : "are EQUAL");
    CHECK(moved);
    snap_free(&half), snap_free(&straight), snap_free(&resumed);
}

static void diverge(const graph_case *gc, const float *p0) {
    enum { MAX = 300, LATE = 3 };
    const sk_optim_hparams hp = {.beta1 = 0.9, .beta2 = 0.0, .eps = 1e-30, .weight_decay = 0.0, .grad_clip = 0.0};
    snapshot le = {0}, lg = {0}, se, sg;
    sk_backend *e = fresh(gc, SK_GRAPH_OFF, p0);
    const int64_t bad = train(e, RUN_EAGER_OPS, gc, &hp, 1.0f, 0, MAX, &le);
    printf("  divergence: the eager sequence stops at step %lld\n", (long long)bad);
    CHECK(bad > 1);
    snap_take(&se, e);
    sk_backend_free(e);
    if (bad <= 1) {
        snap_free(&se);
        return;
    }
    sk_backend *g = fresh(gc, SK_GRAPH_ON, p0);
    // The graph backend runs LATE steps past the bad one before it reads anything back.
    const int64_t gbad = train(g, RUN_GRAPH, gc, &hp, 1.0f, 0, (int)bad + LATE, &lg);
    snap_take(&sg, g);
    sk_backend_free(g);
    printf("  graph backend, read back %d steps later: step %lld\n", LATE, (long long)gbad);
    CHECK(gbad == bad);
    const size_t d = diff(&sg, &se, 0);
    printf("  its parameters and moments are the eager ones of before step %lld: %s\n", (long long)bad,
           d ? "NO" : "yes, bit for bit");
    CHECK(d == 0);
    CHECK(memcmp(&lg.loss_sum, &le.loss_sum, sizeof(double)) == 0);
    snap_free(&se), snap_free(&sg);
}

static void run_case(const graph_case *gc) {
    printf("%s: V=%d E=%d H=%d L=%d B=%d T=%d dropout=%.2f weight_drop=%.2f cell %s rnn-impl %s\n", gc->name, gc->V,
           gc->E, gc->H, gc->L, gc->B, gc->T, (double)gc->dropout, (double)gc->weight_drop, sk_cell_get(g_cell)->name,
           sk_rnn_impl_name(gc->impl));
    if (gc->impl == SK_RNN_CUDNN_PERSIST) { // cuDNN's choice: a refusal skips the case
        sk_error err = {{0}};
        sk_backend_config cfg = {.model = {.vocab_size = gc->V, .embed_size = gc->E, .hidden_size = gc->H, .num_layers = gc->L, .dropout = gc->dropout, .weight_drop = gc->weight_drop},
                                 .batch_size = gc->B, .seq_len = gc->T, .training = 1, .seed = 99,
                                 .rnn_impl = gc->impl, .cudnn_chunk_steps = 3};
        sk_backend *be = NULL;
        sk_status st = sk_backend_create_cuda(&cfg, &be, &err);
        if (st == SK_ERR_ARG) {
            printf("  skipped, cuDNN refuses it: %s\n", err.msg);
            return;
        }
        CHECK_OK(st);
        printf("  %s\n", sk_backend_notice(be));
        sk_backend_free(be);
    }
    sk_backend *probe = fresh(gc, SK_GRAPH_OFF, NULL);
    if (sk_backend_notice(probe)[0]) printf("  notice: %s\n", sk_backend_notice(probe));
    float *p0 = alloc_f(sk_backend_layout(probe)->total);
    sk_params_init(p0, sk_backend_layout(probe), SK_INIT_PYTORCH, 0.0f, 1.0f, 5);
    sk_backend_free(probe);
    same_three(gc, p0);
    resume(gc, p0);
    // Without weight drop: a dropped W_hh element's gradient is exactly 0, which beta2 = 0 and
    // eps = 1e-30 turn into a jump of ~1e29 from its momentum; saturated gates absorb it, and
    // whether a step then goes non-finite depends on how each implementation rounds them.
    graph_case no_wd = *gc;
    no_wd.weight_drop = 0.0f;
    diverge(&no_wd, p0);
    free(p0);
}

int main(void) {
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    static const graph_case cases[] = {
        {"two layers, no dropout", 37, 16, 48, 2, 4, 16, 0.0f, 0.0f, SK_RNN_CUDNN},
        {"three layers, dropout and weight drop, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, 0.3f, SK_RNN_CUDNN},
        {"two layers, no dropout", 37, 16, 48, 2, 4, 16, 0.0f, 0.0f, SK_RNN_PERSISTENT},
        {"three layers, dropout and weight drop, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, 0.3f, SK_RNN_PERSISTENT},
        {"two layers, no dropout", 37, 16, 48, 2, 4, 16, 0.0f, 0.0f, SK_RNN_CUDNN_PERSIST},
        {"three layers, dropout and weight drop, H = 40", 23, 8, 40, 3, 3, 9, 0.4f, 0.3f, SK_RNN_CUDNN_PERSIST},
    };
    // Test hook SK_GRAPH_ONLY=persistent-layerwise or persistent-cluster: the persistent kernel's
    // cases alone, on those kernels (test_plstm_layerwise.sh, test_plstm_cluster.sh).
    const int family = layerwise_hook("SK_GRAPH_ONLY");
    if (family < 0) return 2;
    // Test hook SK_CELLS_ONLY=1: the other cells' cases alone (test_cuda_cells.sh).
    const int cells_only = getenv("SK_CELLS_ONLY") != NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0] && !cells_only; i++) {
        graph_case gc = cases[i];
        if (family != SK_RNN_PERSISTENT && gc.impl != SK_RNN_PERSISTENT) continue;
        if (family != SK_RNN_PERSISTENT) gc.impl = (sk_rnn_impl)family;
        // On the emulated device the persistent kernels' windows are 8 steps at most (the short
        // ones 5, the evaluations 3: still three lengths); the emulated cuDNN costs little.
        if (emulated_device() && gc.impl != SK_RNN_CUDNN && gc.impl != SK_RNN_CUDNN_PERSIST && gc.T > 8) gc.T = 8;
        run_case(&gc);
    }
    // The GRU and the RNN through cuDNN: the cuDNN cases, every check the same (under the hook).
    for (g_cell = SK_CELL_GRU; g_cell <= SK_CELL_RNN && cells_only; g_cell = (sk_cell_kind)(g_cell + 1))
        for (size_t i = 0; i < 2; i++) run_case(&cases[i]);
    return sk_test_done("test_cuda_graph");
}
