// lstm_autotune.cu: --rnn-impl auto for a training run, chosen by measurement, as PyTorch's
// torch.backends.cudnn.benchmark chooses convolution algorithms: which LSTM implementation is
// fastest depends on the GPU, the shape and the precision (bench/results/h200-2026-11-28-2d6bab0:
// at config A the layer-after-layer kernels beat cuDNN by 1.2-1.4x; at B in tf32 they do not
// fit), so no fixed rule is right everywhere.
// defines: sk_lstm_autotune (lstm_impl.h)
//
// Candidates: cuDNN (fp32 and tf32 only), cuDNN's persistent algorithms, and the persistent
// kernels in their three families, each on tensor cores and on CUDA cores where the precision
// allows both (fp32: CUDA cores only; --tensor-cores on or off: that one only). Each candidate
// that the shape fits runs a training step's LSTM work (forward with dropout keys, backward
// data, backward weights at the longest window) once eagerly, then as a captured CUDA graph,
// as the training step replays it; its time is the median of a few replays, timed with
// events. cuDNN goes first: it fits every shape, so a choice exists even when the budget runs
// out. No candidate starts after budget_s; the losers are destroyed as soon as beaten.
//
// The cache: one small text file per key in cache_dir, "lstm-choice.<16 hex>.txt", holding the
// key itself (compared in full, so a hash collision re-measures), the choice and the times. The
// key names the GPU (name, compute capability, SMs), the driver, the CUDA runtime, cuDNN and
// cuBLAS, this module's file (size and modification time: a rebuilt kernel re-measures), the
// cell and shape (B, T, E, H, L, dropout or not; another cell's candidates differ: the persistent
// kernels run the LSTM only), the precision and the tensor-cores request. An option that changes
// a candidate's speed belongs in this key too (cache_key). A file
// that is missing, unreadable or for another key is measured over and rewritten atomically.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cublas_v2.h>

#include "cuda_check.h"
#include "lstm_impl.h"
#include "math_mode.h"

extern "C" {
#include "io/fsutil.h"
}

namespace {

// Each registry row gives at most two candidates (one per inner product), so this bound holds
// for any registry: a new row needs no edit here.
constexpr int kMaxCandidates = 2 * SK_RNN_IMPL_COUNT;
constexpr int kTimedReplays = 5; // the median of these is a candidate's time
constexpr const char *kCacheMagic = "shakespeare lstm choice 1";

struct candidate {
    sk_rnn_choice choice;
    double ms;           // median time of one training step's LSTM work; < 0: not measured
    char why[96];        // why it did not run ("" when measured)
};

double now_s() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// "persistent-layerwise (tensor cores)", "cudnn".
void choice_text(sk_rnn_choice c, char *buf, size_t n) {
    snprintf(buf, n, "%s%s", sk_rnn_impl_name(c.impl),
             c.tensor_cores == SK_TENSOR_CORES_ON    ? " (tensor cores)"
             : c.tensor_cores == SK_TENSOR_CORES_OFF ? " (CUDA cores)"
                                                     : "");
}

// The registry's candidates in its order (cuDNN, the first, fits every shape it takes), each
// with variants once per inner product: fp32 is strict fp32, CUDA cores only; otherwise both,
// unless --tensor-cores names one. One that does not fit (its descriptor's fits, or its creation
// refusing) shows in the report as such.
int list_candidates(const sk_lstm_config *cfg, sk_tensor_cores request, candidate *out) {
    sk_tensor_cores tcs[2] = {SK_TENSOR_CORES_ON, SK_TENSOR_CORES_OFF};
    int ntc = 2; // <= 2, which kMaxCandidates counts on
    if (cfg->backend->precision == SK_PRECISION_FP32) tcs[0] = SK_TENSOR_CORES_OFF, ntc = 1;
    else if (request != SK_TENSOR_CORES_DEFAULT) tcs[0] = request, ntc = 1;
    int n = 0;
    for (int rank = 1; rank <= SK_RNN_IMPL_COUNT; rank++) // the descriptors' measurement order
        for (int id = 0; id < SK_RNN_IMPL_COUNT; id++) {
            const sk_lstm_impl *d = sk_lstm_impl_of((sk_rnn_impl)id);
            if (d->candidate != rank) continue;
            if (!d->variants) {
                out[n++] = {{d->id, SK_TENSOR_CORES_DEFAULT}, -1.0, ""};
                continue;
            }
            for (int i = 0; i < ntc; i++) out[n++] = {{d->id, tcs[i]}, -1.0, ""};
        }
    return n;
}

// Creates choice c: SK_ERR_ARG, without creating anything, where its descriptor says it does not fit.
sk_status create_choice(const sk_lstm_config *cfg, sk_rnn_choice c, sk_lstm **out, sk_error *err) {
    *out = NULL;
    sk_lstm_config cc = *cfg;
    cc.tensor_cores = c.tensor_cores;
    const sk_lstm_impl *d = sk_lstm_impl_of(c.impl);
    int fits = 1;
    char why[256] = "";
    if (d && d->fits) SK_TRY(d->fits(&cc, &fits, why, sizeof why, err));
    if (!fits) return sk_fail(err, SK_ERR_ARG, "rnn-impl %s does not fit: %s", sk_rnn_impl_name(c.impl), why);
    return sk_lstm_create(c.impl, &cc, out, NULL, 0, err);
}

// One training step's LSTM work on io at the longest window.
sk_status enqueue_step(sk_lstm *l, const sk_lstm_io *io, sk_error *err) {
    SK_TRY(l->ops->forward(l, 1, l->cfg.T, io->x, io->y, io->hx, io->cx, io->hy, io->cy, err));
    SK_TRY(l->ops->backward_data(l, io->dy, io->dx, err));
    return l->ops->backward_weights(l, io->grads, err);
}

int compare_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// The median time of one replay of l's captured training step (eagerly timed where the capture
// fails), over as many replays (at most kTimedReplays, at least 1) as fit in left_s after the
// first, eager step, which makes every lazy setup happen outside the timing.
sk_status time_step(sk_lstm *l, const sk_lstm_io *io, double left_s, double *ms, sk_error *err) {
    cudaStream_t s = l->cfg.stream;
    const double t0 = now_s();
    SK_TRY(l->ops->import_weights(l, io->params, err));
    if (l->ops->prepare) SK_TRY(l->ops->prepare(l, l->cfg.T, err));
    SK_TRY(enqueue_step(l, io, err));
    CUDA_CHECK(cudaStreamSynchronize(s));
    const double eager_s = now_s() - t0;
    int replays = eager_s > 0 ? (int)(left_s / eager_s) - 1 : kTimedReplays;
    replays = replays < 1 ? 1 : replays > kTimedReplays ? kTimedReplays : replays;
    cudaGraphExec_t exec = NULL;
    cudaGraph_t graph = NULL;
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    sk_error inner;
    const sk_status captured = enqueue_step(l, io, &inner);
    const cudaError_t ended = cudaStreamEndCapture(s, &graph);
    if (captured == SK_OK && ended == cudaSuccess && graph &&
        cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch) != cudaSuccess)
        exec = NULL;
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError(); // a failed capture times eagerly instead
    cudaEvent_t ev[kTimedReplays + 1];
    for (int i = 0; i <= replays; i++) CUDA_CHECK(cudaEventCreate(&ev[i]));
    sk_status st = SK_OK;
    // Event i is recorded after replay i; replay 0 is the untimed warm-up of the graph.
    for (int i = 0; i <= replays && st == SK_OK; i++) {
        if (exec) st = cudaGraphLaunch(exec, s) == cudaSuccess ? SK_OK : sk_fail(err, SK_ERR_DEVICE, "a replay failed");
        else st = enqueue_step(l, io, err);
        if (st == SK_OK && cudaEventRecord(ev[i], s) != cudaSuccess) st = sk_fail(err, SK_ERR_DEVICE, "cudaEventRecord failed");
    }
    if (st == SK_OK && cudaStreamSynchronize(s) != cudaSuccess)
        st = sk_fail(err, SK_ERR_DEVICE, "the measured steps failed: %s", cudaGetErrorString(cudaGetLastError()));
    float t[kTimedReplays];
    for (int i = 0; i < replays && st == SK_OK; i++)
        if (cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]) != cudaSuccess)
            st = sk_fail(err, SK_ERR_DEVICE, "cudaEventElapsedTime failed");
    for (int i = 0; i <= replays; i++) cudaEventDestroy(ev[i]);
    if (exec) cudaGraphExecDestroy(exec);
    if (st != SK_OK) return st;
    qsort(t, (size_t)replays, sizeof t[0], compare_float);
    *ms = t[replays / 2];
    return SK_OK;
}

// The cache key (see the top of the file), one line.
sk_status cache_key(const sk_lstm_config *cfg, sk_tensor_cores request, char *key, size_t n, sk_error *err) {
    int dev = 0, driver = 0, runtime = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    Dl_info self;
    struct stat so;
    memset(&so, 0, sizeof so);
    if (dladdr((void *)&sk_lstm_autotune, &self) && self.dli_fname) (void)stat(self.dli_fname, &so);
    snprintf(key, n,
             "gpu=%s cc=%d.%d sms=%d driver=%d runtime=%d cudnn=%zu cublas=%d module=%lld.%lld.%09ld "
             "cell=%s B=%d T=%d E=%d H=%d L=%d dropout=%d precision=%s tensor-cores=%s",
             p.name, p.major, p.minor, p.multiProcessorCount, driver, runtime, cudnnGetVersion(), CUBLAS_VERSION,
             (long long)so.st_size, (long long)so.st_mtim.tv_sec, so.st_mtim.tv_nsec,
             sk_model_cell(&cfg->layout->cfg)->name, cfg->B, cfg->T, cfg->E, cfg->H,
             cfg->L, cfg->dropout > 0.0f, sk_precision_name(cfg->backend->precision), sk_tensor_cores_name(request));
    return SK_OK;
}

// The file of key in dir: "lstm-choice.<FNV-1a of the key>.txt".
char *cache_path(const char *dir, const char *key) {
    uint64_t h = 14695981039346656037ull;
    for (const char *p = key; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    char name[64];
    snprintf(name, sizeof name, "lstm-choice.%016llx.txt", (unsigned long long)h);
    return sk_path_join(dir, name);
}

// The cached choice for key, or 0 (no file, another key, or unreadable).
int cache_read(const char *path, const char *key, sk_rnn_choice *c) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024], impl[64] = "", tc[16] = "";
    int ok = fgets(line, sizeof line, f) && strncmp(line, kCacheMagic, strlen(kCacheMagic)) == 0 &&
             fgets(line, sizeof line, f) && strncmp(line, "key: ", 5) == 0 &&
             strcspn(line + 5, "\n") == strlen(key) && strncmp(line + 5, key, strlen(key)) == 0 &&
             fgets(line, sizeof line, f) && sscanf(line, "choice: %63s tensor-cores=%15s", impl, tc) == 2;
    fclose(f);
    if (!ok) return 0;
    // By name, as written: the words of backend.h's tables.
    sk_error unused;
    *c = {.impl = SK_RNN_AUTO, .tensor_cores = SK_TENSOR_CORES_DEFAULT};
    return sk_rnn_impl_parse(impl, &c->impl, &unused) == SK_OK && c->impl != SK_RNN_AUTO &&
           sk_tensor_cores_parse(tc, &c->tensor_cores, &unused) == SK_OK;
}

sk_status cache_write(const char *dir, const char *path, const char *key, sk_rnn_choice c, const char *times,
                      sk_error *err) {
    SK_TRY(sk_mkdir_p(dir, "the LSTM choice cache", err));
    char text[2048];
    const int n = snprintf(text, sizeof text, "%s\nkey: %s\nchoice: %s tensor-cores=%s\ntimes: %s\n", kCacheMagic,
                           key, sk_rnn_impl_name(c.impl), sk_tensor_cores_name(c.tensor_cores), times);
    sk_atomic_file af;
    SK_TRY(sk_atomic_open(&af, path, err));
    sk_status st = sk_atomic_write(&af, text, (size_t)n, err);
    if (st == SK_OK) return sk_atomic_commit(&af, err);
    sk_atomic_abort(&af);
    return st;
}

// Times every candidate (within the budget), keeping the fastest in *best.
sk_status measure(const sk_lstm_config *cfg, const sk_lstm_io *io, double budget_s, candidate *cand, int n,
                  sk_lstm **best, int *best_i, sk_error *err) {
    const double start = now_s();
    *best = NULL, *best_i = -1;
    for (int i = 0; i < n; i++) {
        candidate *c = &cand[i];
        if (*best && now_s() - start > budget_s) {
            snprintf(c->why, sizeof c->why, "not measured");
            continue;
        }
        sk_lstm *l = NULL;
        sk_error why;
        sk_status st = create_choice(cfg, c->choice, &l, &why);
        // Each candidate's share of what is left of the budget, for its replays.
        if (st == SK_OK) st = time_step(l, io, (budget_s - (now_s() - start)) / (n - i), &c->ms, &why);
        if (st != SK_OK) {
            sk_lstm_destroy(l);
            (void)cudaGetLastError();
            if (st != SK_ERR_ARG && st != SK_ERR_DEVICE && st != SK_ERR_NOMEM) return sk_fail(err, st, "%s", why.msg);
            snprintf(c->why, sizeof c->why, "%.90s", st == SK_ERR_ARG ? "does not fit" : why.msg);
            c->ms = -1.0;
            continue;
        }
        if (!*best || c->ms < cand[*best_i].ms) {
            sk_lstm_destroy(*best);
            *best = l, *best_i = i;
        } else {
            sk_lstm_destroy(l);
        }
    }
    if (!*best) return sk_fail(err, SK_ERR_ARG, "no LSTM implementation fits this model: %s", cand[0].why);
    return SK_OK;
}

// "persistent-layerwise (tensor cores) 2.310 ms, cudnn 3.020 ms; does not fit: ...; not measured
// (over the 2 s budget): ...; failed: NAME (why)".
void times_text(const candidate *cand, int n, double budget_s, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = '\0';
    char name[64];
    for (int i = 0; i < n && at < size; i++) {
        if (cand[i].ms < 0) continue;
        choice_text(cand[i].choice, name, sizeof name);
        at += (size_t)snprintf(buf + at, size - at, "%s%s %.3f ms", at ? ", " : "", name, cand[i].ms);
    }
    for (int kind = 0; kind < 3; kind++) { // does not fit; over the budget; failed
        int listed = 0;
        for (int i = 0; i < n && at < size; i++) {
            if (cand[i].ms >= 0) continue;
            const int k = strcmp(cand[i].why, "does not fit") == 0 ? 0 : strncmp(cand[i].why, "not measured", 12) == 0 ? 1 : 2;
            if (k != kind) continue;
            choice_text(cand[i].choice, name, sizeof name);
            if (!listed++)
                at += (size_t)snprintf(buf + at, size - at, kind == 0   ? "; does not fit: "
                                                             : kind == 1 ? "; not measured (over the %.0f s budget): "
                                                                         : "; failed: ", budget_s);
            else at += (size_t)snprintf(buf + at, size - at, ", ");
            if (at < size) at += (size_t)snprintf(buf + at, size - at, kind == 2 ? "%s (%.60s)" : "%s", name, cand[i].why);
        }
    }
}

} // namespace

sk_status sk_lstm_autotune(const sk_lstm_config *cfg, const sk_lstm_tune_opts *o, const sk_lstm_io *io,
                           sk_lstm **out, sk_rnn_choice *chosen, char *report, size_t report_size, sk_error *err) {
    *out = NULL;
    char name[64];
    char key[768], *path = NULL;
    SK_TRY(cache_key(cfg, o->request, key, sizeof key, err));
    if (o->cache_dir && !(path = cache_path(o->cache_dir, key)))
        return sk_fail(err, SK_ERR_NOMEM, "out of memory for the LSTM choice cache's path");
    sk_rnn_choice cached;
    if (path && cache_read(path, key, &cached) && create_choice(cfg, cached, out, err) == SK_OK) {
        *chosen = cached;
        choice_text(*chosen, name, sizeof name);
        snprintf(report, report_size, "rnn-impl auto: %s, measured fastest before (%s)", name, path);
        free(path);
        return SK_OK;
    }
    (void)cudaGetLastError();
    candidate cand[kMaxCandidates];
    const int n = list_candidates(cfg, o->request, cand);
    int best_i = -1;
    const double start = now_s();
    sk_status st = measure(cfg, io, o->budget_s, cand, n, out, &best_i, err);
    if (st != SK_OK) {
        free(path);
        return st;
    }
    *chosen = cand[best_i].choice;
    char times[1024];
    times_text(cand, n, o->budget_s, times, sizeof times);
    choice_text(*chosen, name, sizeof name);
    char saved[SK_ERROR_MSG_MAX] = "";
    if (path) {
        sk_error why;
        if (cache_write(o->cache_dir, path, key, *chosen, times, &why) == SK_OK)
            snprintf(saved, sizeof saved, "; cached in %s", path);
        else
            snprintf(saved, sizeof saved, "; not cached: %.200s", why.msg);
    }
    int measured = 0;
    for (int i = 0; i < n; i++) measured += cand[i].ms >= 0;
    // Two lines: the choice, then the times of a training step's LSTM work.
    snprintf(report, report_size, "rnn-impl auto: %s, the fastest of %d measured in %.1f s%.300s\n"
             "rnn-impl auto: per training step's LSTM: %s", name, measured, now_s() - start, saved, times);
    free(path);
    return SK_OK;
}
