// lstm_impl_cudnn_wavefront.cu: the cuDNN implementation of the LSTM seam (lstm_impl.h) for
// a training backend with dropout between layers (p > 0, L > 1).
// defines: sk_lstm_create_cudnn_wavefront
//
// cuDNN's own dropout draws from a generator state seeded once and never saved, so the
// project's keyed masks (hash.h; site k after layer k; the CPU backend's, which keeps
// CPU/GPU parity and bit-exact resume) run between L one-layer cuDNN networks. Called layer
// after layer, those networks form a chain of L*len dependent steps where cuDNN's L-layer
// network overlaps its layers (a diagonal wavefront: len + L - 1 steps), which made
// dropout cost more than half of a step (config B on an H100: 18.9 ms against PyTorch's
// 8.4 ms, bench/results/h100-2026-11-27-a63cbcc). So the window is cut into C chunks of d
// steps, and chunk j of layer k runs as soon as chunk j of layer k-1 and chunk j-1 of
// layer k are done, each layer on its own stream (a "lane" with its own cuDNN handle,
// workspace and per-chunk reserve space): the chain is (C + L - 1) chunks of d steps.
// Backward runs the same wavefront in reverse, the state gradient crossing chunk borders
// through dhx -> dhy; the weight gradients of a layer add up its chunks in order
// (CUDNN_WGRAD_MODE_ADD), so results are reproducible run to run.
//
// Data inside is sequence-major, (len, B, width), so that a chunk is one contiguous slice:
// x and dy are swapped in at the start, y and dx out at the end (kernels.h). Each call forks
// the lanes off cfg.stream and joins them back (events), so callers, and a CUDA graph
// capture of cfg.stream, see one stream. d is the divisor of len nearest kChunkSteps within
// [kChunkSteps/2, 2*kChunkSteps], or len (one chunk: layer after layer) if none;
// cfg.backend->cudnn_chunk_steps overrides kChunkSteps for benchmarks (N > 0: about N steps; -1: whole windows).
// A persistent cuDNN algorithm takes whole windows: its kernels must not share the GPU.
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "cudnn_rnn.h"
#include "kernels.h"
#include "lstm_impl.h"
#include "math_mode.h"

namespace {

constexpr int kChunkSteps = 16; // a chunk's steps: long enough that a call's fixed cost stays small
constexpr size_t kAlign = 256;  // reserve slices start on cudaMalloc's alignment

typedef struct {
    sk_cudnn_lstm net; // the model's layer k as a one-layer network on this lane
    cudaStream_t stream;
    cudnnHandle_t dnn; // bound to stream
    cudaEvent_t *ready; // (max_chunks,) forward: chunk j of the (dropped) output is ready; backward: of dx
    cudaEvent_t done;   // this lane's work of the current call
    void *work;         // net.work_cap bytes
    char *reserve;      // chunk j's reserve space at j * slot
    size_t slot;        // at the current chunk length
    float *out;         // (T, B, H) the layer's output
    float *dropped;     // (T, B, H) out after site k's mask: the input of layer k+1 (k < L-1)
    float *dx;          // (T, B, in) the gradient of the layer's input (after site k-1's mask, k > 0)
    float *h, *c;       // (max_chunks - 1, B, H) the state at each chunk border
    float *dh[2], *dc[2]; // (B, H) the state gradient at a chunk border, ping-pong
} lane;

typedef struct {
    int want;       // chunk length asked for (0: whole windows)
    int max_chunks; // over every window length 1..T
    lane *lanes;    // (L,)
    cudaEvent_t fork;
    float *x_sm;  // (T, B, E) the input, sequence-major
    float *dy_sm; // (T, B, H) the top layer's output gradient, sequence-major
    int d, C;     // the current window: C chunks of d steps
    int phase;    // 0: none; 1: a training forward ran; 2: backward_data ran too
    int len;
    const float *hx, *cx;
} wavefront;

wavefront *wf_of(sk_lstm *l) { return (wavefront *)l->impl; }

int chunk_steps(int len, int want) {
    int best = len;
    if (want > 0)
        for (int d = (want + 1) / 2; d <= 2 * want && d < len; d++)
            if (len % d == 0 && (best == len || abs(d - want) < abs(best - want))) best = d;
    return best;
}

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

sk_status fork_lanes(sk_lstm *l, sk_error *err) {
    wavefront *w = wf_of(l);
    CUDA_CHECK(cudaEventRecord(w->fork, l->cfg.stream));
    for (int k = 0; k < l->cfg.L; k++) CUDA_CHECK(cudaStreamWaitEvent(w->lanes[k].stream, w->fork, 0));
    return SK_OK;
}

sk_status join_lanes(sk_lstm *l, sk_error *err) {
    wavefront *w = wf_of(l);
    for (int k = 0; k < l->cfg.L; k++) {
        CUDA_CHECK(cudaEventRecord(w->lanes[k].done, w->lanes[k].stream));
        CUDA_CHECK(cudaStreamWaitEvent(l->cfg.stream, w->lanes[k].done, 0));
    }
    return SK_OK;
}

sk_status wf_prepare(sk_lstm *l, int len, sk_error *err) {
    wavefront *w = wf_of(l);
    const int d = chunk_steps(len, w->want);
    if (d == w->d && len / d == w->C) return SK_OK;
    w->d = w->C = 0; // until every lane describes d
    // set_len uploads the lengths on each lane: ordered after the work already queued.
    SK_TRY(fork_lanes(l, err));
    for (int k = 0; k < l->cfg.L; k++) {
        lane *ln = &w->lanes[k];
        SK_TRY(sk_cudnn_lstm_set_len(&ln->net, d, err));
        ln->slot = align_up(ln->net.reserve_at[d]);
    }
    SK_TRY(join_lanes(l, err));
    w->d = d, w->C = len / d;
    return SK_OK;
}

sk_status wf_import(sk_lstm *l, const float *params, sk_error *err) {
    SK_TRY(fork_lanes(l, err));
    for (int k = 0; k < l->cfg.L; k++) SK_TRY(sk_cudnn_lstm_pack(&wf_of(l)->lanes[k].net, params, err));
    return join_lanes(l, err);
}

sk_status wf_export(sk_lstm *l, float *params, sk_error *err) {
    SK_TRY(fork_lanes(l, err));
    for (int k = 0; k < l->cfg.L; k++) SK_TRY(sk_cudnn_lstm_unpack(&wf_of(l)->lanes[k].net, params, err));
    return join_lanes(l, err);
}

// The state at the start of chunk j of layer k: the caller's (window_start, (L, B, H)) for
// chunk 0, else the lane's border after chunk j-1 (borders, (max_chunks - 1, B, H)).
const float *chunk_state(const sk_lstm_config *c, const float *window_start, const float *borders, int k, int j) {
    const size_t hs = (size_t)c->B * c->H;
    return j == 0 ? window_start + k * hs : borders + (size_t)(j - 1) * hs;
}

// Chunk j's slice of the lane's reserve space.
char *reserve_of(const lane *ln, int j) { return ln->reserve + (size_t)j * ln->slot; }

// Site `site`'s keyed mask on chunk j of a sequence-major (len, B, H) tensor: out = in * mask.
sk_status mask_chunk(const sk_lstm *l, const lane *ln, float *out, const float *in, int j, int site, sk_error *err) {
    const wavefront *w = (const wavefront *)l->impl;
    const sk_lstm_config *c = &l->cfg;
    const uint64_t first = (uint64_t)c->backend->stream_offset * (uint64_t)w->len * (uint64_t)c->H;
    CUDA_CHECK(sk_cuda_dropout_seq_major(out, in, j * w->d, w->d, c->B, w->len, c->H, first, &c->dropout_keys[site],
                                         c->dropout, 1.0f / (1.0f - c->dropout), ln->stream));
    return SK_OK;
}

// Chunk j of layer k forward: input from layer k-1's chunk j (or the swapped-in x), state
// from chunk j-1; its output through site k's mask for layer k+1.
sk_status forward_chunk(sk_lstm *l, int train, int k, int j, const float *hx, const float *cx, float *hy, float *cy,
                        sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    lane *ln = &w->lanes[k];
    const size_t hs = (size_t)c->B * c->H, rows = (size_t)j * w->d * c->B;
    const float *in;
    if (k == 0) {
        in = w->x_sm + rows * c->E;
    } else {
        CUDA_CHECK(cudaStreamWaitEvent(ln->stream, w->lanes[k - 1].ready[j], 0));
        in = (train ? w->lanes[k - 1].dropped : w->lanes[k - 1].out) + rows * c->H;
    }
    float *o = ln->out + rows * c->H;
    const float *h0 = chunk_state(c, hx, ln->h, k, j), *c0 = chunk_state(c, cx, ln->c, k, j);
    float *h1 = j == w->C - 1 ? hy + k * hs : ln->h + (size_t)j * hs;
    float *c1 = j == w->C - 1 ? cy + k * hs : ln->c + (size_t)j * hs;
    SK_TRY(sk_cudnn_lstm_forward_at(&ln->net, train, reserve_of(ln, j), in, o, h0, c0, h1, c1, err));
    if (k == c->L - 1) return SK_OK;
    if (train) SK_TRY(mask_chunk(l, ln, ln->dropped + rows * c->H, o, j, k, err));
    CUDA_CHECK(cudaEventRecord(ln->ready[j], ln->stream));
    return SK_OK;
}

sk_status wf_forward(sk_lstm *l, int train, int len, const float *x, float *y, const float *hx, const float *cx,
                     float *hy, float *cy, sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (len < 1 || len > c->T) return sk_fail(err, SK_ERR_ARG, "window of %d steps outside [1, %d]", len, c->T);
    w->phase = 0; // until this forward has gone through
    SK_TRY(wf_prepare(l, len, err));
    w->len = len;
    SK_TRY(fork_lanes(l, err));
    CUDA_CHECK(sk_cuda_swap_major(w->x_sm, x, c->B, len, c->E, w->lanes[0].stream));
    // Issued diagonal by diagonal (s = j + k), so every wait names an event already recorded.
    for (int s = 0; s < w->C + c->L - 1; s++)
        for (int k = 0; k < c->L; k++)
            if (s - k >= 0 && s - k < w->C) SK_TRY(forward_chunk(l, train, k, s - k, hx, cx, hy, cy, err));
    lane *top = &w->lanes[c->L - 1];
    CUDA_CHECK(sk_cuda_swap_major(y, top->out, len, c->B, c->H, top->stream));
    SK_TRY(join_lanes(l, err));
    if (train) w->phase = 1, w->hx = hx, w->cx = cx;
    return SK_OK;
}

// Chunk j of layer k backward: dy from layer k+1's chunk j (or the swapped-in dy), the
// state gradient from chunk j+1 (none beyond the window: truncated BPTT) and to chunk j-1;
// its dx through site k-1's mask for layer k-1.
sk_status backward_chunk(sk_lstm *l, int k, int j, sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    lane *ln = &w->lanes[k];
    const size_t rows = (size_t)j * w->d * c->B;
    const float *dy;
    if (k == c->L - 1) {
        dy = w->dy_sm + rows * c->H;
    } else {
        CUDA_CHECK(cudaStreamWaitEvent(ln->stream, w->lanes[k + 1].ready[j], 0));
        dy = w->lanes[k + 1].dx + rows * c->H;
    }
    const int in = k == 0 ? c->E : c->H;
    float *dx = ln->dx + rows * in;
    const float *h0 = chunk_state(c, w->hx, ln->h, k, j), *c0 = chunk_state(c, w->cx, ln->c, k, j);
    const float *dhy = j == w->C - 1 ? NULL : ln->dh[(j + 1) % 2], *dcy = j == w->C - 1 ? NULL : ln->dc[(j + 1) % 2];
    float *dhx = j == 0 ? NULL : ln->dh[j % 2], *dcx = j == 0 ? NULL : ln->dc[j % 2];
    SK_TRY(sk_cudnn_lstm_backward_data_at(&ln->net, reserve_of(ln, j), ln->out + rows * c->H, dy, dx, h0, c0, dhy, dcy,
                                          dhx, dcx, err));
    if (k == 0) return SK_OK;
    SK_TRY(mask_chunk(l, ln, dx, dx, j, k - 1, err));
    CUDA_CHECK(cudaEventRecord(ln->ready[j], ln->stream));
    return SK_OK;
}

sk_status wf_backward_data(sk_lstm *l, const float *dy, float *dx, sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (w->phase != 1) return sk_fail(err, SK_ERR_ARG, "LSTM backward without a training forward before it");
    SK_TRY(fork_lanes(l, err));
    CUDA_CHECK(sk_cuda_swap_major(w->dy_sm, dy, c->B, w->len, c->H, w->lanes[c->L - 1].stream));
    // The forward's diagonals in reverse: chunk C-1 of the top layer first.
    for (int s = 0; s < w->C + c->L - 1; s++)
        for (int k = c->L - 1; k >= 0; k--) {
            const int j = w->C - 1 - (s - (c->L - 1 - k));
            if (j >= 0 && j < w->C) SK_TRY(backward_chunk(l, k, j, err));
        }
    CUDA_CHECK(sk_cuda_swap_major(dx, w->lanes[0].dx, w->len, c->B, c->E, w->lanes[0].stream));
    SK_TRY(join_lanes(l, err));
    w->phase = 2;
    return SK_OK;
}

sk_status wf_backward_weights(sk_lstm *l, float *grads, sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    if (w->phase != 2) return sk_fail(err, SK_ERR_ARG, "LSTM weight gradients before the data gradients");
    SK_TRY(fork_lanes(l, err));
    for (int k = 0; k < c->L; k++) {
        lane *ln = &w->lanes[k];
        const int in = k == 0 ? c->E : c->H;
        const float *x = k == 0 ? w->x_sm : w->lanes[k - 1].dropped;
        SK_TRY(sk_cudnn_lstm_zero_weight_grads(&ln->net, err));
        for (int j = 0; j < w->C; j++) {
            const size_t rows = (size_t)j * w->d * c->B;
            SK_TRY(sk_cudnn_lstm_add_weight_grads(&ln->net, reserve_of(ln, j), x + rows * in, ln->out + rows * c->H,
                                                  chunk_state(c, w->hx, ln->h, k, j), err));
        }
        SK_TRY(sk_cudnn_lstm_unpack_weight_grads(&ln->net, grads, err));
    }
    SK_TRY(join_lanes(l, err));
    w->phase = 0; // once per training forward
    return SK_OK;
}

void wf_destroy(sk_lstm *l) {
    if (!l) return;
    wavefront *w = wf_of(l);
    if (w) {
        for (int k = 0; k < l->cfg.L && w->lanes; k++) {
            lane *ln = &w->lanes[k];
            sk_cudnn_lstm_free(&ln->net);
            for (int j = 0; j < w->max_chunks && ln->ready; j++)
                if (ln->ready[j]) cudaEventDestroy(ln->ready[j]);
            free(ln->ready);
            if (ln->done) cudaEventDestroy(ln->done);
            if (ln->dnn) cudnnDestroy(ln->dnn);
            if (ln->stream) cudaStreamDestroy(ln->stream);
            void *bufs[] = {ln->work, ln->reserve, ln->out, ln->dropped, ln->dx, ln->h, ln->c,
                            ln->dh[0], ln->dh[1], ln->dc[0], ln->dc[1]};
            for (void *b : bufs) cudaFree(b);
        }
        free(w->lanes);
        if (w->fork) cudaEventDestroy(w->fork);
        cudaFree(w->x_sm);
        cudaFree(w->dy_sm);
        (void)cudaGetLastError();
        free(w);
    }
    free(l);
}

sk_status dev_alloc(void *p, size_t bytes, sk_error *err) {
    CUDA_CHECK(cudaMalloc((void **)p, bytes ? bytes : 1));
    return SK_OK;
}

// The largest reserve pool any window length 1..T needs: C chunks of the slot at d.
size_t reserve_pool(const sk_cudnn_lstm *net, int T, int want) {
    size_t most = net->reserve_cap;
    for (int len = 1; len <= T; len++) {
        const int d = chunk_steps(len, want);
        const size_t need = (size_t)(len / d) * align_up(net->reserve_at[d]);
        if (need > most) most = need;
    }
    return most;
}

sk_status lane_init(sk_lstm *l, int k, cudnnRNNAlgo_t algo, sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    lane *ln = &w->lanes[k];
    CUDA_CHECK(cudaStreamCreateWithFlags(&ln->stream, cudaStreamNonBlocking));
    CUDNN_CHECK(cudnnCreate(&ln->dnn));
    CUDNN_CHECK(cudnnSetStream(ln->dnn, ln->stream));
    CUDA_CHECK(cudaEventCreateWithFlags(&ln->done, cudaEventDisableTiming));
    ln->ready = (cudaEvent_t *)calloc((size_t)w->max_chunks, sizeof *ln->ready);
    if (!ln->ready) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the LSTM lanes' events");
    for (int j = 0; j < w->max_chunks; j++) CUDA_CHECK(cudaEventCreateWithFlags(&ln->ready[j], cudaEventDisableTiming));
    SK_TRY(sk_cudnn_lstm_init(&ln->net, ln->dnn, ln->stream, c->layout, k, 1, c->B, c->T, 1, algo,
                              sk_cudnn_rnn_math(c->backend->precision), 1, 1, err));
    SK_TRY(dev_alloc(&ln->work, ln->net.work_cap, err));
    SK_TRY(dev_alloc(&ln->reserve, reserve_pool(&ln->net, c->T, w->want), err));
    ln->net.work = ln->work;
    ln->net.reserve = ln->reserve;
    const size_t slab = (size_t)c->T * c->B * c->H, hs = (size_t)c->B * c->H;
    SK_TRY(dev_alloc(&ln->out, slab * sizeof(float), err));
    if (k < c->L - 1) SK_TRY(dev_alloc(&ln->dropped, slab * sizeof(float), err));
    SK_TRY(dev_alloc(&ln->dx, (size_t)c->T * c->B * (k == 0 ? c->E : c->H) * sizeof(float), err));
    SK_TRY(dev_alloc(&ln->h, (size_t)(w->max_chunks - 1) * hs * sizeof(float), err));
    SK_TRY(dev_alloc(&ln->c, (size_t)(w->max_chunks - 1) * hs * sizeof(float), err));
    for (int i = 0; i < 2; i++) {
        SK_TRY(dev_alloc(&ln->dh[i], hs * sizeof(float), err));
        SK_TRY(dev_alloc(&ln->dc[i], hs * sizeof(float), err));
    }
    // A persistent algorithm is tried on every call before it is taken (cudnn_rnn.h).
    if (algo != CUDNN_RNN_ALGO_STANDARD) SK_TRY(sk_cudnn_lstm_trial(&ln->net, err));
    return SK_OK;
}

sk_status wf_init(sk_lstm *l, cudnnRNNAlgo_t algo, sk_error *err) {
    wavefront *w = wf_of(l);
    const sk_lstm_config *c = &l->cfg;
    const int asked = c->backend->cudnn_chunk_steps;
    w->want = algo != CUDNN_RNN_ALGO_STANDARD || asked < 0 ? 0 : asked > 0 ? asked : kChunkSteps;
    w->max_chunks = 1;
    for (int len = 1; len <= c->T; len++)
        if (len / chunk_steps(len, w->want) > w->max_chunks) w->max_chunks = len / chunk_steps(len, w->want);
    w->lanes = (lane *)calloc((size_t)c->L, sizeof *w->lanes);
    if (!w->lanes) return sk_fail(err, SK_ERR_NOMEM, "out of memory for the LSTM lanes");
    CUDA_CHECK(cudaEventCreateWithFlags(&w->fork, cudaEventDisableTiming));
    for (int k = 0; k < c->L; k++) SK_TRY(lane_init(l, k, algo, err));
    SK_TRY(dev_alloc(&w->x_sm, (size_t)c->T * c->B * c->E * sizeof(float), err));
    SK_TRY(dev_alloc(&w->dy_sm, (size_t)c->T * c->B * c->H * sizeof(float), err));
    return wf_prepare(l, c->T, err);
}

const sk_lstm_ops wavefront_ops = {
    "cudnn", wf_import, wf_export, wf_forward, wf_backward_data, wf_backward_weights, wf_destroy, wf_prepare,
};
const sk_lstm_ops wavefront_persist_ops = {
    "cudnn-persist", wf_import, wf_export, wf_forward, wf_backward_data, wf_backward_weights, wf_destroy, wf_prepare,
};

} // namespace

sk_status sk_lstm_create_cudnn_wavefront(const sk_lstm_config *cfg, cudnnRNNAlgo_t algo, sk_lstm **out,
                                         sk_error *err) {
    *out = NULL;
    sk_lstm *l = (sk_lstm *)calloc(1, sizeof *l);
    wavefront *w = (wavefront *)calloc(1, sizeof *w);
    if (!l || !w) {
        free(l);
        free(w);
        return sk_fail(err, SK_ERR_NOMEM, "out of memory creating the cuDNN LSTM");
    }
    l->ops = algo == CUDNN_RNN_ALGO_STANDARD ? &wavefront_ops : &wavefront_persist_ops;
    l->cfg = *cfg;
    l->impl = w;
    sk_status st = wf_init(l, algo, err);
    if (st != SK_OK) {
        wf_destroy(l);
        return st;
    }
    *out = l;
    return SK_OK;
}
