// lstm_bench.cu: the kernel workbench for the LSTM stack (in the manner of llm.c's
// dev/cuda): every implementation behind the CUDA backend's LSTM seam (cuDNN on each of its
// RNN algorithms: STANDARD, PERSIST_STATIC, PERSIST_DYNAMIC, PERSIST_STATIC_SMALL_H; our
// persistent kernel on CUDA cores and, in tf32 and bf16, on tensor cores) in every precision
// (--precision fp32, tf32, bf16) against the CPU reference layer (src/cpu/layer_cpu.c), then
// timed, in one small program.
// defines: main
//
//   build/lstm_bench [B E H L T reps [fp32|tf32|bf16|all]]  (default: config A, 32 128 256 2 100 20 all)
//
// For each implementation: one training forward and backward over a T-step window from a
// random nonzero state, compared with the CPU reference (y, hy, cy, dx, every LSTM weight
// gradient: the largest |difference| over the tensor's largest |value|), then the mean
// time of `reps` forwards and of `reps` forward + backward (data and weights), from CUDA
// events, with tokens/s = B*T / time. No dropout here (the backend tests cover the masks).
// An implementation that does not take the shape or the precision is reported with its
// reason (cuDNN's own for its persistent algorithms) and skipped. Needs a GPU (exit 77
// without one); runs on the emulated device too (tests/emu/backend.cmake,
// tests/gpu/test_lstm_bench.sh).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "lstm_impl.h"

extern "C" {
#include "cpu/layer_cpu.h"
#include "shakespeare/model.h"
#include "shakespeare/rng.h"
}

namespace {

#define DIE_IF(cond, ...)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            fprintf(stderr, "lstm_bench: " __VA_ARGS__);                                           \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CUDA_OR_DIE(call) DIE_IF((call) != cudaSuccess, "%s failed: %s", #call, cudaGetErrorString(cudaGetLastError()))

float *host_f(size_t n) {
    float *p = (float *)calloc(n ? n : 1, sizeof(float));
    DIE_IF(!p, "out of memory");
    return p;
}

float *dev_copy(const float *h, size_t n) {
    float *d = NULL;
    CUDA_OR_DIE(cudaMalloc((void **)&d, (n ? n : 1) * sizeof(float)));
    if (h) CUDA_OR_DIE(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    else CUDA_OR_DIE(cudaMemset(d, 0, (n ? n : 1) * sizeof(float)));
    return d;
}

// max |got - ref| / max(|ref|, 1e-3) over n floats of device `got`.
double rel_err(const float *got_dev, const float *ref, size_t n) {
    float *got = host_f(n);
    CUDA_OR_DIE(cudaMemcpy(got, got_dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    double d = 0.0, s = 1e-3;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)got[i] - ref[i])), s = fmax(s, fabs((double)ref[i]));
    free(got);
    return d / s;
}

// The CPU reference of the stack, batch-major in and out (the seam's layouts).
typedef struct {
    float *y, *hy, *cy, *dx, *grads; // (B,T,H), (L,B,H) x2, (B,T,E), (total)
} reference;

void cpu_reference(const sk_param_layout *lay, int B, int T, const float *p, const float *x, const float *h0,
                   const float *c0, const float *dy, reference *ref) {
    const int E = lay->cfg.embed_size, H = lay->cfg.hidden_size, L = lay->cfg.num_layers;
    const size_t rows = (size_t)B * T;
    float **in = (float **)calloc((size_t)L + 1, sizeof(float *));
    float **gates = (float **)calloc((size_t)L, sizeof(float *));
    float **tc = (float **)calloc((size_t)L, sizeof(float *)), **hb = (float **)calloc((size_t)L, sizeof(float *));
    float **cb = (float **)calloc((size_t)L, sizeof(float *));
    DIE_IF(!in || !gates || !tc || !hb || !cb, "out of memory");
    in[0] = host_f(rows * E);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) memcpy(in[0] + ((size_t)t * B + b) * E, x + ((size_t)b * T + t) * E, E * 4);
    for (int k = 0; k < L; k++) {
        sk_layer_offsets o = sk_layer_at(lay, k);
        sk_layer_cpu l = sk_layer_cpu_make(SK_CELL_LSTM, B, H, o.in, 1,
                                           p + o.w_ih, p + o.w_hh, p + o.b_ih, p + o.b_hh);
        gates[k] = host_f(rows * 4 * H), tc[k] = host_f(rows * H);
        hb[k] = host_f(rows * H + (size_t)B * H), cb[k] = host_f(rows * H + (size_t)B * H);
        memcpy(hb[k], h0 + (size_t)k * B * H, sizeof(float) * B * H);
        memcpy(cb[k], c0 + (size_t)k * B * H, sizeof(float) * B * H);
        float *const states[2] = {hb[k], cb[k]};
        sk_layer_cpu_forward(&l, T, in[k], gates[k], tc[k], states);
        in[k + 1] = hb[k] + (size_t)B * H;
        memcpy(ref->hy + (size_t)k * B * H, hb[k] + rows * H, sizeof(float) * B * H);
        memcpy(ref->cy + (size_t)k * B * H, cb[k] + rows * H, sizeof(float) * B * H);
    }
    float *d = host_f(rows * (E > H ? E : H)), *dn = host_f(rows * (E > H ? E : H));
    float *dg = host_f(rows * 4 * H), *dh = host_f((size_t)B * H), *dc = host_f(2 * (size_t)B * H); // dc: (h, c)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            memcpy(ref->y + ((size_t)b * T + t) * H, in[L] + ((size_t)t * B + b) * H, H * 4);
            memcpy(d + ((size_t)t * B + b) * H, dy + ((size_t)b * T + t) * H, H * 4);
        }
    for (int k = L - 1; k >= 0; k--) {
        sk_layer_offsets o = sk_layer_at(lay, k);
        sk_layer_cpu l = sk_layer_cpu_make(SK_CELL_LSTM, B, H, o.in, 1,
                                           p + o.w_ih, p + o.w_hh, p + o.b_ih, p + o.b_hh);
        sk_layer_cpu_grads g = {ref->grads + o.w_ih, ref->grads + o.w_hh, ref->grads + o.b_ih, ref->grads + o.b_hh};
        sk_layer_cpu_scratch sc = {dg, NULL, dh, dc};
        float *const states[2] = {hb[k], cb[k]};
        sk_layer_cpu_backward(&l, T, in[k], gates[k], tc[k], states, d, &sc, &g, dn);
        float *s = d;
        d = dn, dn = s;
    }
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) memcpy(ref->dx + ((size_t)b * T + t) * E, d + ((size_t)t * B + b) * E, E * 4);
    for (int k = 0; k < L; k++) free(gates[k]), free(tc[k]), free(hb[k]), free(cb[k]);
    free(in[0]), free(in), free(gates), free(tc), free(hb), free(cb), free(d), free(dn), free(dg), free(dh), free(dc);
}

} // namespace

int main(int argc, char **argv) {
    int B = 32, E = 128, H = 256, L = 2, T = 100, reps = 20, precision_arg = -1; // -1: all
    if (argc >= 7) B = atoi(argv[1]), E = atoi(argv[2]), H = atoi(argv[3]), L = atoi(argv[4]), T = atoi(argv[5]),
                   reps = atoi(argv[6]);
    DIE_IF(argc != 1 && argc != 7 && argc != 8, "usage: lstm_bench [B E H L T reps [fp32|tf32|bf16|all]]");
    if (argc == 8 && strcmp(argv[7], "all") != 0) {
        sk_error perr;
        sk_precision p;
        DIE_IF(sk_precision_parse(argv[7], &p, &perr) != SK_OK, "%s", perr.msg);
        precision_arg = (int)p;
    }
    DIE_IF(B < 1 || E < 1 || H < 1 || L < 1 || T < 1 || reps < 1, "every size must be positive");
    int dev = 0, devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
        printf("lstm_bench: no usable CUDA device, skipped\n");
        return 77;
    }
    CUDA_OR_DIE(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CUDA_OR_DIE(cudaGetDeviceProperties(&prop, dev));
    printf("device: %s, %d SMs; B=%d E=%d H=%d L=%d T=%d, %d reps\n", prop.name, prop.multiProcessorCount, B, E, H,
           L, T, reps);

    sk_error err = {{0}};
    sk_param_layout lay;
    sk_model_config mc = {.vocab_size = 2, .embed_size = E, .hidden_size = H, .num_layers = L, .dropout = 0.0f,
                          .weight_drop = 0.0f, .cell = SK_CELL_LSTM};
    DIE_IF(sk_param_layout_init(&lay, &mc, &err) != SK_OK, "%s", err.msg);
    const size_t n = lay.total, xs = (size_t)B * T * E, ys = (size_t)B * T * H, ss = (size_t)L * B * H;
    float *p = host_f(n), *x = host_f(xs), *dy = host_f(ys), *h0 = host_f(ss), *c0 = host_f(ss);
    sk_params_init(p, &lay, SK_INIT_PYTORCH, 0.0f, 1.0f, 1);
    sk_rng r;
    sk_rng_seed(&r, 2);
    for (size_t i = 0; i < xs; i++) x[i] = sk_rng_normal(&r);
    for (size_t i = 0; i < ys; i++) dy[i] = 1e-3f * sk_rng_normal(&r);
    for (size_t i = 0; i < ss; i++) h0[i] = sk_rng_uniform(&r) - 0.5f, c0[i] = 2.0f * sk_rng_uniform(&r) - 1.0f;
    reference ref = {host_f(ys), host_f(ss), host_f(ss), host_f(xs), host_f(n)};
    cpu_reference(&lay, B, T, p, x, h0, c0, dy, &ref);

    float *dp = dev_copy(p, n), *dx_in = dev_copy(x, xs), *ddy = dev_copy(dy, ys), *dh0 = dev_copy(h0, ss);
    float *dc0 = dev_copy(c0, ss), *dyo = dev_copy(NULL, ys), *dhy = dev_copy(NULL, ss), *dcy = dev_copy(NULL, ss);
    float *ddx = dev_copy(NULL, xs), *dgr = dev_copy(NULL, n);
    cudaStream_t stream;
    CUDA_OR_DIE(cudaStreamCreate(&stream));
    cudnnHandle_t dnn;
    DIE_IF(cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS || cudnnSetStream(dnn, stream) != CUDNN_STATUS_SUCCESS,
           "cudnnCreate failed");
    cudaEvent_t e0, e1;
    CUDA_OR_DIE(cudaEventCreate(&e0));
    CUDA_OR_DIE(cudaEventCreate(&e1));
    // cuDNN on each algorithm (-1: our persistent wavefront kernels on CUDA cores, -2: on tensor
    // cores; -3, -4: the layer-after-layer kernels likewise), in each precision asked for; no
    // dropout, so no keys.
    static const int variants[] = {CUDNN_RNN_ALGO_STANDARD, CUDNN_RNN_ALGO_PERSIST_STATIC,
                                   CUDNN_RNN_ALGO_PERSIST_DYNAMIC, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, -1, -2, -3, -4};
    for (int pi = 0; pi < 3; pi++) {
        if (precision_arg >= 0 && pi != precision_arg) continue;
        sk_backend_config settings{}; // zeros: one process, cuDNN's default chunks
        settings.precision = (sk_precision)pi;
        sk_lstm_config cfg = {.backend = &settings, .dnn = dnn, .stream = stream, .layout = &lay, .B = B, .T = T,
                              .E = E, .H = H, .L = L, .training = 1, .dropout = 0.0f, .dropout_keys = NULL,
                              .tensor_cores = SK_TENSOR_CORES_DEFAULT, .family = SK_LSTM_WAVEFRONT}; // the variant: below
        for (size_t m = 0; m < sizeof variants / sizeof variants[0]; m++) {
            char name[48];
            const int tensor_cores = variants[m] == -2 || variants[m] == -4;
            cfg.family = variants[m] <= -3 ? SK_LSTM_LAYERWISE : SK_LSTM_WAVEFRONT;
            if (variants[m] < 0)
                snprintf(name, sizeof name, "%s persistent%s%s", sk_precision_name(settings.precision),
                         cfg.family == SK_LSTM_LAYERWISE ? "-layerwise" : "", tensor_cores ? " tensor cores" : "");
            else snprintf(name, sizeof name, "%s cudnn %s", sk_precision_name(settings.precision),
                          sk_cudnn_algo_name((cudnnRNNAlgo_t)variants[m]));
            sk_lstm *l = NULL;
            const cudnnRNNAlgo_t algo = (cudnnRNNAlgo_t)variants[m];
            const sk_status cs = variants[m] < 0
                                     ? sk_lstm_create_persistent_variant(&cfg, tensor_cores, &l, &err)
                                     : sk_lstm_create_cudnn_algo(&cfg, algo, &l, &err);
            if (cs != SK_OK) {
                printf("%-34s skipped: %s\n", name, err.msg);
                continue;
            }
            // The first pass may still be refused (cuDNN can turn a persistent algorithm down
            // only when it runs): reported and skipped; later failures end the program.
            CUDA_OR_DIE(cudaMemset(dgr, 0, n * sizeof(float)));
            if (l->ops->import_weights(l, dp, &err) != SK_OK ||
                l->ops->forward(l, 1, T, dx_in, dyo, dh0, dc0, dhy, dcy, &err) != SK_OK ||
                l->ops->backward_data(l, ddy, ddx, &err) != SK_OK || l->ops->backward_weights(l, dgr, &err) != SK_OK ||
                cudaStreamSynchronize(stream) != cudaSuccess) {
                printf("%-34s skipped at its first pass: %s\n", name, err.msg);
                sk_lstm_destroy(l);
                CUDA_OR_DIE(cudaDeviceSynchronize());
                continue;
            }
#define STEP_OK(call) DIE_IF((call) != SK_OK, "%s: %s", name, err.msg)
            printf("%-34s max |diff| / max |ref|: y %.2e  hy %.2e  cy %.2e  dx %.2e", name, rel_err(dyo, ref.y, ys),
                   rel_err(dhy, ref.hy, ss), rel_err(dcy, ref.cy, ss), rel_err(ddx, ref.dx, xs));
            for (int k = 0; k < L; k++) {
                sk_layer_offsets o = sk_layer_at(&lay, k);
                size_t nih = (size_t)4 * H * o.in, nhh = (size_t)4 * H * H;
                printf("  dW_ih%d %.2e dW_hh%d %.2e db%d %.2e", k, rel_err(dgr + o.w_ih, ref.grads + o.w_ih, nih), k,
                       rel_err(dgr + o.w_hh, ref.grads + o.w_hh, nhh), k,
                       rel_err(dgr + o.b_ih, ref.grads + o.b_ih, 4 * H));
            }
            printf("\n");
            float ms_f = 0.0f, ms_fb = 0.0f;
            CUDA_OR_DIE(cudaEventRecord(e0, stream));
            for (int i = 0; i < reps; i++) STEP_OK(l->ops->forward(l, 1, T, dx_in, dyo, dh0, dc0, dhy, dcy, &err));
            CUDA_OR_DIE(cudaEventRecord(e1, stream));
            CUDA_OR_DIE(cudaEventSynchronize(e1));
            CUDA_OR_DIE(cudaEventElapsedTime(&ms_f, e0, e1));
            CUDA_OR_DIE(cudaEventRecord(e0, stream));
            for (int i = 0; i < reps; i++) {
                STEP_OK(l->ops->forward(l, 1, T, dx_in, dyo, dh0, dc0, dhy, dcy, &err));
                STEP_OK(l->ops->backward_data(l, ddy, ddx, &err));
                STEP_OK(l->ops->backward_weights(l, dgr, &err));
            }
            CUDA_OR_DIE(cudaEventRecord(e1, stream));
            CUDA_OR_DIE(cudaEventSynchronize(e1));
            CUDA_OR_DIE(cudaEventElapsedTime(&ms_fb, e0, e1));
            printf("%-34s forward %.3f ms, forward+backward %.3f ms per window (%.0f tokens/s)\n", name, ms_f / reps,
                   ms_fb / reps, (double)B * T / (ms_fb / reps * 1e-3));
#undef STEP_OK
            sk_lstm_destroy(l);
        }
    }
    return 0;
}
