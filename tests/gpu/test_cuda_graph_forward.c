// test_cuda_graph_forward.c: evaluation and sampling forwards replayed as CUDA graphs compute
// exactly what eager forwards compute. Two CUDA backends from the same parameters, one with
// --cuda-graph auto and one off, run the same sequence of inference forwards: one-character
// steps as sampling makes them (the state carried, the logits read after each), windows with
// targets as evaluation makes them (the loss summed), and windows of other lengths between.
// After every forward the logits, and the loss where there are targets, are bit-identical,
// and so is the carried state at the end; the graph backend launched graphs (read_stats'
// forward_graph_launches > 0) and the eager one none, so the comparison is not of one path
// with itself. Cases: an inference-only backend (shakespeare-sample's, B = 2), and training
// backends whose evaluation forward runs cuDNN's wavefront (dropout between layers) and the
// persistent kernel. Tolerance: none, every comparison is bitwise. Exits 77 without a GPU.
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
    int training;
    sk_rnn_impl impl;
} forward_case;

static sk_backend *make(const forward_case *fc, sk_cuda_graph graph, const float *params) {
    sk_error err = {{0}};
    sk_backend_config cfg = {.model = {.vocab_size = fc->V, .embed_size = fc->E, .hidden_size = fc->H, .num_layers = fc->L, .dropout = fc->dropout, .weight_drop = 0.0f}, .batch_size = fc->B,
                             .seq_len = fc->T, .training = fc->training, .seed = 7, .rnn_impl = fc->impl,
                             .cuda_graph = graph};
    sk_backend *be;
    CHECK_OK(sk_backend_create_cuda(&cfg, &be, &err));
    OP_OK(be, sk_backend_set_params(be, params));
    return be;
}

// Forward s of the sequence: mostly single steps without targets (sampling), every fifth a
// window of T with targets (evaluation), every seventh one of T/2 + 1 without.
static int forward_kind(const forward_case *fc, int s, int *with_y) {
    *with_y = s % 5 == 4;
    return *with_y ? fc->T : s % 7 == 6 ? fc->T / 2 + 1 : 1;
}

static void run_case(const forward_case *fc) {
    printf("%s: V=%d E=%d H=%d L=%d B=%d T=%d dropout=%.2f %s, --rnn-impl %s\n", fc->name, fc->V, fc->E, fc->H, fc->L,
           fc->B, fc->T, (double)fc->dropout, fc->training ? "training backend" : "inference-only",
           sk_rnn_impl_name(fc->impl));
    sk_model_config m = {.vocab_size = fc->V, .embed_size = fc->E, .hidden_size = fc->H, .num_layers = fc->L,
                         .dropout = fc->dropout};
    sk_param_layout layout;
    sk_error err = {{0}};
    CHECK_OK(sk_param_layout_init(&layout, &m, &err));
    float *params = alloc_f(layout.total);
    sk_rng r;
    sk_rng_seed(&r, 11);
    for (size_t i = 0; i < layout.total; i++) params[i] = 0.3f * (2.0f * sk_rng_uniform(&r) - 1.0f);
    sk_backend *graph = make(fc, SK_GRAPH_AUTO, params), *eager = make(fc, SK_GRAPH_OFF, params);
    const size_t bt = (size_t)fc->B * fc->T, ns = (size_t)fc->L * fc->B * fc->H;
    int32_t *x = malloc(bt * sizeof *x), *y = malloc(bt * sizeof *y);
    float *lg = alloc_f(bt * (size_t)fc->V), *le = alloc_f(bt * (size_t)fc->V);
    if (!x || !y) exit(1);
    int diffs = 0;
    for (int s = 0; s < 40; s++) {
        int with_y;
        const int len = forward_kind(fc, s, &with_y);
        for (size_t i = 0; i < (size_t)fc->B * len; i++) x[i] = (int32_t)(sk_rng_u64(&r) % (uint64_t)fc->V);
        for (size_t i = 0; i < (size_t)fc->B * len; i++) y[i] = (int32_t)(sk_rng_u64(&r) % (uint64_t)fc->V);
        double loss_g = 0.0, loss_e = 0.0;
        OP_OK(graph, sk_backend_forward(graph, x, with_y ? y : NULL, len, SK_MODE_EVAL, s, with_y ? &loss_g : NULL));
        OP_OK(eager, sk_backend_forward(eager, x, with_y ? y : NULL, len, SK_MODE_EVAL, s, with_y ? &loss_e : NULL));
        OP_OK(graph, sk_backend_get_logits(graph, lg));
        OP_OK(eager, sk_backend_get_logits(eager, le));
        const size_t n = (size_t)fc->B * len * fc->V;
        if (memcmp(lg, le, n * sizeof *lg) != 0 || memcmp(&loss_g, &loss_e, sizeof loss_g) != 0) {
            if (diffs++ < 3) printf("  forward %d (len %d, targets %d): logits or loss differ\n", s, len, with_y);
        }
    }
    float *hg = alloc_f(2 * ns), *he = alloc_f(2 * ns); // the states: h, then c
    OP_OK(graph, sk_backend_get_state(graph, hg));
    OP_OK(eager, sk_backend_get_state(eager, he));
    if (memcmp(hg, he, 2 * ns * sizeof *hg) != 0) diffs++;
    sk_step_stats sg, se;
    CHECK_OK(sk_backend_read_stats(graph, &sg, &err));
    CHECK_OK(sk_backend_read_stats(eager, &se, &err));
    printf("  40 forwards: %d differing; graph launches %lld (eager backend: %lld)\n", diffs,
           (long long)sg.forward_graph_launches, (long long)se.forward_graph_launches);
    CHECK(diffs == 0);
    CHECK(sg.forward_graph_launches > 0 && se.forward_graph_launches == 0);
    sk_backend_free(graph);
    sk_backend_free(eager);
    free(x), free(y), free(lg), free(le), free(hg), free(he), free(params);
    sk_param_layout_free(&layout);
}

int main(void) {
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    static const forward_case cases[] = {
        {"sampling backend", 29, 12, 24, 2, 2, 8, 0.0f, 0, SK_RNN_CUDNN},
        {"training backend, dropout between layers", 23, 8, 40, 3, 3, 9, 0.3f, 1, SK_RNN_CUDNN},
        {"training backend, persistent kernel", 23, 8, 40, 2, 3, 9, 0.0f, 1, SK_RNN_PERSISTENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    return sk_test_done("test_cuda_graph_forward");
}
