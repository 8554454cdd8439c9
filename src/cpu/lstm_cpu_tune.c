// lstm_cpu_tune.c: the CPU's LSTM implementations timed and chosen (lstm_cpu_tune.h).
#include "lstm_cpu_tune.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layer_cpu.h"
#include "lstm_onednn.h"
#include "parallel.h"
#include "recurrent_gemm.h"
#include "shakespeare/rng.h"

#define CACHE_FILE "cpu-lstm-choice.txt"

const char *sk_cpu_lstm_kind_name(sk_cpu_lstm_kind k) {
    return k == SK_CPU_LSTM_XSMM_FP32     ? "xsmm-fp32"
           : k == SK_CPU_LSTM_ONEDNN_FP32 ? "onednn-fp32"
           : k == SK_CPU_LSTM_ONEDNN_BF16 ? "onednn-bf16"
                                          : "unknown";
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Everything one timed window reads and writes, for any kind: the canonical weights and
// gradients of L layers, the window's input, the states, each layer's outputs, lstm_cpu.c's
// per-layer buffers and the gradients between layers.
typedef struct {
    const sk_cpu_lstm_shape *s;
    float *mem;             // one allocation, carved below
    sk_layer_tensors w[16], g[16];
    float *x, *h0, *c0, *hT, *cT, *dtop, *dx, *y[16];
    float *hbuf[16], *cbuf[16], *gates[16], *tanh_c[16], *w_hh_t, *dgates, *dh, *dc, *dy;
} bench_bufs;

static int bufs_init(bench_bufs *b, const sk_cpu_lstm_shape *s) {
    const size_t B = (size_t)s->B, T = (size_t)s->T, E = (size_t)s->E, H = (size_t)s->H, L = (size_t)s->L;
    const size_t wide = H > E ? H : E, rows = T * B;
    size_t per_layer = 2 * (4 * H * wide + 4 * H * H + 8 * H) + rows * H + 2 * (rows + B) * H + rows * 5 * H;
    size_t n = L * per_layer + rows * E + 4 * L * B * H + 2 * rows * wide + 4 * H * H + rows * 4 * H + 3 * B * H +
               rows * wide;
    memset(b, 0, sizeof *b);
    b->s = s;
    if (L > 16 || !(b->mem = calloc(n, sizeof(float)))) return 0;
    float *p = b->mem;
#define TAKE(ptr, count) (ptr = p, p += (count))
    sk_rng r;
    sk_rng_seed(&r, 1);
    for (size_t k = 0; k < L; k++) {
        const size_t in = k ? H : E;
        TAKE(b->w[k].w_ih, 4 * H * in), TAKE(b->w[k].w_hh, 4 * H * H), TAKE(b->w[k].b_ih, 4 * H), TAKE(b->w[k].b_hh, 4 * H);
        TAKE(b->g[k].w_ih, 4 * H * in), TAKE(b->g[k].w_hh, 4 * H * H), TAKE(b->g[k].b_ih, 4 * H), TAKE(b->g[k].b_hh, 4 * H);
        TAKE(b->hbuf[k], (rows + B) * H), TAKE(b->cbuf[k], (rows + B) * H), TAKE(b->gates[k], rows * 4 * H);
        TAKE(b->tanh_c[k], rows * H);
        b->y[k] = b->hbuf[k] + B * H; // oneDNN's outputs land where lstm_cpu.c's do
    }
    TAKE(b->x, rows * E), TAKE(b->h0, L * B * H), TAKE(b->c0, L * B * H), TAKE(b->hT, L * B * H), TAKE(b->cT, L * B * H);
    TAKE(b->dtop, rows * wide), TAKE(b->dx, rows * wide), TAKE(b->w_hh_t, 4 * H * H), TAKE(b->dgates, rows * 4 * H);
    TAKE(b->dh, B * H), TAKE(b->dc, 2 * B * H), TAKE(b->dy, rows * wide);
#undef TAKE
    for (float *q = b->mem; q < p; q++) *q = 0.1f * (2.0f * sk_rng_uniform(&r) - 1.0f);
    return 1;
}

// One forward and backward window through lstm_cpu.c's layers, stacked as backend_cpu.c does.
static void xsmm_window(bench_bufs *b) {
    const sk_cpu_lstm_shape *s = b->s;
    const size_t BH = (size_t)s->B * s->H, rows = (size_t)s->T * s->B;
    sk_layer_cpu layer[16];
    const float *in = b->x;
    for (int k = 0; k < s->L; k++) {
        layer[k] = sk_layer_cpu_make(SK_CELL_LSTM, s->B, s->H, k ? s->H : s->E, s->threads, b->w[k].w_ih,
                                     b->w[k].w_hh, b->w[k].b_ih, b->w[k].b_hh);
        layer[k].w_hh_t = b->w_hh_t;
        memcpy(b->hbuf[k], b->h0 + k * BH, sizeof(float) * BH);
        memcpy(b->cbuf[k], b->c0 + k * BH, sizeof(float) * BH);
        float *const st[2] = {b->hbuf[k], b->cbuf[k]};
        sk_layer_cpu_forward(&layer[k], s->T, in, b->gates[k], b->tanh_c[k], st);
        in = b->hbuf[k] + BH;
    }
    memcpy(b->dy, b->dtop, sizeof(float) * rows * s->H);
    for (int k = s->L - 1; k >= 0; k--) {
        const sk_layer_cpu_grads g = {.w_ih = b->g[k].w_ih, .w_hh = b->g[k].w_hh, .b_ih = b->g[k].b_ih,
                                      .b_hh = b->g[k].b_hh};
        float *const st[2] = {b->hbuf[k], b->cbuf[k]};
        const sk_layer_cpu_scratch sc = {.dgates = b->dgates, .dh = b->dh, .dcarry = b->dc};
        sk_layer_cpu_backward(&layer[k], s->T, k ? b->hbuf[k - 1] + BH : b->x, b->gates[k], b->tanh_c[k], st, b->dy,
                              &sc, &g, b->dx);
        float *t = b->dy;
        b->dy = b->dx, b->dx = t;
    }
}

static sk_status time_windows(sk_cpu_lstm_kind k, bench_bufs *b, int reps, double *ms, sk_error *err) {
    const sk_cpu_lstm_shape *s = b->s;
    sk_lstm_onednn *dnn = NULL;
    if (k != SK_CPU_LSTM_XSMM_FP32) {
        const sk_lstm_onednn_config c = {.B = s->B, .T = s->T, .E = s->E, .H = s->H, .L = s->L,
                                         .bf16 = k == SK_CPU_LSTM_ONEDNN_BF16, .threads = s->threads};
        sk_status st = sk_lstm_onednn_create(&c, &dnn, err);
        if (st != SK_OK) return st;
    }
    double t[64];
    if (reps > 63) reps = 63;
    sk_status st = SK_OK;
    for (int i = 0; i <= reps && st == SK_OK; i++) { // i = 0: the untimed warm-up
        const double t0 = now_ms();
        if (!dnn) {
            xsmm_window(b);
        } else if (!sk_lstm_onednn_forward(dnn, s->T, b->x, b->w, b->h0, b->c0, b->hT, b->cT, b->y, NULL, err)) {
            st = SK_ERR_DEVICE;
        } else {
            memcpy(b->dy, b->dtop, sizeof(float) * s->T * s->B * s->H);
            st = sk_lstm_onednn_backward(dnn, b->dy, b->w, b->g, b->dx, NULL, err);
        }
        t[i] = now_ms() - t0;
    }
    sk_lstm_onednn_free(dnn);
    if (st != SK_OK) return st;
    qsort(t + 1, (size_t)reps, sizeof(double), cmp_double);
    *ms = t[1 + reps / 2];
    return SK_OK;
}

sk_status sk_cpu_lstm_time(sk_cpu_lstm_kind k, const sk_cpu_lstm_shape *s, int reps, double *ms, sk_error *err) {
    if (s->B < 1 || s->T < 1 || s->E < 1 || s->H < 1 || s->L < 1 || s->L > 16 || s->threads < 1 || reps < 1)
        return sk_fail(err, SK_ERR_ARG, "cannot time an LSTM of B=%d T=%d E=%d H=%d L=%d on %d threads", s->B, s->T,
                       s->E, s->H, s->L, s->threads);
    bench_bufs b;
    if (!bufs_init(&b, s)) return sk_fail(err, SK_ERR_NOMEM, "out of memory timing the CPU's LSTM");
    openblas_set_num_threads(1); // as the backend runs it (parallel.h)
    sk_recur_init();
    sk_status st = time_windows(k, &b, reps, ms, err);
    free(b.mem);
    return st;
}

// The cache's key for s and candidates: the CPU, the threads, the shape, what is compared and
// what oneDNN dispatches to (ONEDNN_MAX_CPU_ISA changes it).
static void cache_key(const sk_cpu_lstm_shape *s, unsigned candidates, char *key, size_t n) {
    char cpu[128] = "unknown", why[8], line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0 || !strchr(line, ':')) continue;
        snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
        cpu[strcspn(cpu, "\n")] = '\0';
        for (char *c = cpu; *c; c++) *c = *c == ' ' ? '_' : *c;
        break;
    }
    if (f) fclose(f);
    snprintf(key, n, "cpu=%s threads=%d B=%d T=%d E=%d H=%d L=%d candidates=%u bf16=%d", cpu, s->threads, s->B, s->T,
             s->E, s->H, s->L, candidates, sk_onednn_bf16_check(why, sizeof why));
}

// The cached line for key in path: 1 with *out and ms filled, else 0.
static int cache_read(const char *path, const char *key, sk_cpu_lstm_kind *out, double ms[SK_CPU_LSTM_KINDS]) {
    FILE *f = fopen(path, "r");
    char line[1024], name[32];
    int found = 0;
    const size_t kn = strlen(key);
    while (f && !found && fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kn) != 0 || strncmp(line + kn, " choice=", 8) != 0) continue;
        double t[SK_CPU_LSTM_KINDS];
        if (sscanf(line + kn, " choice=%31s ms=%lf,%lf,%lf", name, &t[0], &t[1], &t[2]) != 4) continue;
        for (int k = 0; k < SK_CPU_LSTM_KINDS && !found; k++)
            if (strcmp(name, sk_cpu_lstm_kind_name((sk_cpu_lstm_kind)k)) == 0) {
                *out = (sk_cpu_lstm_kind)k, found = 1;
                memcpy(ms, t, sizeof t);
            }
    }
    if (f) fclose(f);
    return found;
}

// Appends key's line (one write on an O_APPEND file: concurrent runs' lines do not interleave).
static sk_status cache_append(const char *path, const char *key, sk_cpu_lstm_kind k,
                              const double ms[SK_CPU_LSTM_KINDS], sk_error *err) {
    char line[1024];
    const int n = snprintf(line, sizeof line, "%s choice=%s ms=%.3f,%.3f,%.3f\n", key, sk_cpu_lstm_kind_name(k), ms[0],
                           ms[1], ms[2]);
    const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0666);
    const int ok = fd >= 0 && n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) == n;
    if (fd >= 0) close(fd);
    return ok ? SK_OK : sk_fail(err, SK_ERR_IO, "cannot append the CPU LSTM's choice to %s", path);
}

sk_status sk_cpu_lstm_choose(const sk_cpu_lstm_shape *s, unsigned candidates, const char *cache_dir, int reps,
                             sk_cpu_lstm_kind *out, double ms[SK_CPU_LSTM_KINDS], int *cached, sk_error *err) {
    char key[512], path[4096];
    cache_key(s, candidates, key, sizeof key);
    if (cache_dir) snprintf(path, sizeof path, "%s/%s", cache_dir, CACHE_FILE);
    *cached = cache_dir && cache_read(path, key, out, ms);
    if (*cached) return SK_OK;
    int best = -1;
    for (int k = 0; k < SK_CPU_LSTM_KINDS; k++) {
        ms[k] = 0.0;
        if (!(candidates & (1u << k))) continue;
        sk_error skip;
        if (sk_cpu_lstm_time((sk_cpu_lstm_kind)k, s, reps, &ms[k], &skip) != SK_OK) { // cannot run here
            ms[k] = 0.0;
            continue;
        }
        if (best < 0 || ms[k] < ms[best]) best = k;
    }
    if (best < 0) return sk_fail(err, SK_ERR_ARG, "none of the CPU LSTM implementations asked for (mask %u) runs here",
                                 candidates);
    *out = (sk_cpu_lstm_kind)best;
    return cache_dir ? cache_append(path, key, *out, ms, err) : SK_OK;
}
