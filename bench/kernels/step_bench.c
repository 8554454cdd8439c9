// step_bench.c: the training step's workbench: what the deferred step and its CUDA-graph
// replay buy over today's eager sequence, side by side in one run, on the CUDA backend.
// defines: main
//
//   build/step_bench [B E H L T steps rnn-impl dropout [precision [tensor-cores]]]
//       default: config A, 32 128 256 2 100 200 cudnn 0 fp32 default
//   config B: build/step_bench 64 256 512 4 128 100 cudnn 0
//   config B, the persistent kernel in bf16 on tensor cores:
//             build/step_bench 64 256 512 4 128 100 persistent 0 bf16 on
//   (tensor-cores: default | on | off, the persistent kernel's inner products in tf32 and
//   bf16: sk_tensor_cores in backend.h)
//
// Three ways to run the same steps (V = 65, the same parameters and windows):
//   eager    forward, backward, sk_backend_step: the loss and the norm read back each step
//            (two host synchronizations per step; what data-parallel runs still do);
//   deferred train_step without a graph, read_stats once at the end (--cuda-graph off);
//   graph    train_step replayed as a CUDA graph, read_stats at the end (--cuda-graph on).
// Each is warmed up (5 steps; the graph is captured there, after one eager step per state
// slot: step_graph.h), then timed over `steps` steps,
// wall clock from the first enqueue to the read-back; three rounds, the modes interleaved
// within each round, and the median round reported as ms/step, tokens/s and the ratio to
// eager. The final parameters of the three are compared bit for bit (they must agree:
// tests/gpu/test_cuda_graph.c). Exits 77 without a usable GPU.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shakespeare/backend.h"
#include "shakespeare/model.h"
#include "shakespeare/rng.h"

enum { MODES = 3, ROUNDS = 3, WARMUP = 5, V = 65 };
static const char *const mode_names[MODES] = {"eager", "deferred", "graph"};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const sk_backend *be, sk_status st, const char *what) {
    fprintf(stderr, "step_bench: %s: %s: %s\n", what, sk_status_str(st), be ? sk_backend_error(be) : "");
    exit(1);
}

#define RUN(be, call, what)                        \
    do {                                           \
        sk_status st_ = (call);                    \
        if (st_ != SK_OK) die((be), st_, (what));  \
    } while (0)

// Steps [from, from + n) in mode m; returns seconds from the first enqueue to the read-back.
static double run(sk_backend *be, int m, int from, int n, const int32_t *x, const int32_t *y, int T) {
    const sk_optim_hparams hp = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0, .grad_clip = 5.0};
    const float lr = 2e-3f;
    const double t0 = now_s();
    for (int s = from; s < from + n; s++) {
        if (m == 0) {
            double loss, norm;
            RUN(be, sk_backend_forward(be, x, y, T, SK_MODE_TRAIN, s, &loss), "forward");
            RUN(be, sk_backend_backward(be), "backward");
            RUN(be, sk_backend_step(be, &hp, lr, s + 1, &norm), "optimizer step");
        } else {
            const sk_train_step_args a = {x, y, T, s, s + 1, &hp, lr, NULL};
            RUN(be, sk_backend_train_step(be, &a, NULL), "train_step");
        }
    }
    if (m != 0) {
        sk_step_stats ss;
        RUN(be, sk_backend_read_stats(be, &ss, NULL), "read_stats");
        if (ss.bad_step) die(be, SK_ERR_NUMERIC, "a step was not finite");
        if (m == 2 && ss.graph_launches == 0) die(be, SK_ERR_DEVICE, "--cuda-graph on launched no graph");
    }
    return now_s() - t0;
}

static int cmp_double(const void *a, const void *b) {
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

int main(int argc, char **argv) {
    int B = 32, E = 128, H = 256, L = 2, T = 100, steps = 200;
    const char *impl = "cudnn", *precision = "fp32", *tensor_cores = "default";
    double dropout = 0.0;
    if (argc > 1 && (argc < 9 || argc > 11)) {
        fprintf(stderr, "usage: %s [B E H L T steps rnn-impl dropout [precision [tensor-cores]]]\n", argv[0]);
        return 2;
    }
    if (argc >= 9) {
        B = atoi(argv[1]), E = atoi(argv[2]), H = atoi(argv[3]), L = atoi(argv[4]), T = atoi(argv[5]);
        steps = atoi(argv[6]), impl = argv[7], dropout = atof(argv[8]);
    }
    if (argc >= 10) precision = argv[9];
    if (argc == 11) tensor_cores = argv[10];
    sk_error err = {{0}};
    sk_rnn_impl ri;
    sk_precision prec;
    const sk_tensor_cores tc = strcmp(tensor_cores, "on") == 0    ? SK_TENSOR_CORES_ON
                               : strcmp(tensor_cores, "off") == 0 ? SK_TENSOR_CORES_OFF
                                                                  : SK_TENSOR_CORES_DEFAULT;
    if (tc == SK_TENSOR_CORES_DEFAULT && strcmp(tensor_cores, "default") != 0) {
        fprintf(stderr, "step_bench: tensor-cores must be default, on or off, got \"%s\"\n", tensor_cores);
        return 2;
    }
    if (B < 1 || E < 1 || H < 1 || L < 1 || T < 1 || steps < 1 || sk_rnn_impl_parse(impl, &ri, &err) != SK_OK ||
        sk_precision_parse(precision, &prec, &err) != SK_OK) {
        fprintf(stderr, "step_bench: bad arguments %s\n", err.msg);
        return 2;
    }
    char reason[256];
    if (!sk_cuda_available(0, reason, sizeof reason)) {
        printf("skipped: %s\n", reason);
        return 77;
    }
    printf("step_bench: B=%d E=%d H=%d L=%d T=%d V=%d dropout=%.2f rnn-impl %s precision %s tensor-cores %s, %d timed "
           "steps x %d rounds\n", B, E, H, L, T, V, dropout, impl, precision, tensor_cores, steps, ROUNDS);
    sk_backend *be[MODES];
    for (int m = 0; m < MODES; m++) {
        const sk_backend_config settings = {.rnn_impl = ri, .precision = prec, .plstm_tensor_cores = tc,
                                            .cuda_graph = m == 2 ? SK_GRAPH_ON : SK_GRAPH_OFF};
        const sk_backend_shape shape = {.model = {.vocab_size = V, .embed_size = E, .hidden_size = H,
                                                  .num_layers = L, .dropout = (float)dropout},
                                        .batch_size = B, .seq_len = T, .training = 1, .seed = 1};
        const sk_backend_config cfg = sk_backend_config_make(&settings, &shape);
        if (sk_backend_create_cuda(&cfg, &be[m], &err) != SK_OK) {
            fprintf(stderr, "step_bench: %s\n", err.msg);
            return 1;
        }
    }
    const size_t total = sk_backend_layout(be[0])->total, n = (size_t)B * T;
    float *p0 = malloc(total * sizeof(float)), *p1 = malloc(total * sizeof(float));
    int32_t *x = malloc(n * sizeof(int32_t)), *y = malloc(n * sizeof(int32_t));
    if (!p0 || !p1 || !x || !y) return 1;
    sk_params_init(p0, sk_backend_layout(be[0]), SK_INIT_PYTORCH, 0.0f, 1.0f, 7);
    sk_rng r;
    sk_rng_seed(&r, 11);
    for (size_t i = 0; i < n; i++) x[i] = (int32_t)(sk_rng_u64(&r) % V), y[i] = (int32_t)(sk_rng_u64(&r) % V);
    for (int m = 0; m < MODES; m++) {
        RUN(be[m], sk_backend_set_params(be[m], p0), "set_params");
        run(be[m], m, 0, WARMUP, x, y, T);
    }
    double t[MODES][ROUNDS];
    for (int k = 0; k < ROUNDS; k++)
        for (int m = 0; m < MODES; m++) t[m][k] = run(be[m], m, WARMUP + k * steps, steps, x, y, T);
    double med[MODES];
    for (int m = 0; m < MODES; m++) {
        qsort(t[m], ROUNDS, sizeof(double), cmp_double);
        med[m] = t[m][ROUNDS / 2] / steps;
    }
    for (int m = 0; m < MODES; m++)
        printf("  %-8s %8.3f ms/step  %10.0f tokens/s  %5.2fx eager   (rounds %.3f..%.3f ms)\n", mode_names[m],
               1e3 * med[m], (double)n / med[m], med[0] / med[m], 1e3 * t[m][0] / steps,
               1e3 * t[m][ROUNDS - 1] / steps);
    RUN(be[0], sk_backend_get_params(be[0], p0), "get_params");
    int same = 1;
    for (int m = 1; m < MODES; m++) {
        RUN(be[m], sk_backend_get_params(be[m], p1), "get_params");
        const int eq = memcmp(p0, p1, total * sizeof(float)) == 0;
        printf("  %s parameters after %d steps: %s eager's\n", mode_names[m], WARMUP + ROUNDS * steps,
               eq ? "bit-identical to" : "DIFFERENT from");
        same &= eq;
    }
    for (int m = 0; m < MODES; m++) sk_backend_free(be[m]);
    free(p0), free(p1), free(x), free(y);
    return same ? 0 : 1;
}
