// lstm_impl.h: the seam between the CUDA backend and its LSTM stack. An implementation
// (cuDNN in lstm_impl_cudnn.cu, the persistent kernels in lstm_impl_persistent.cu) fills one
// small table of operations; the backend drives the L-layer LSTM only through it (private
// to src/cuda/).
// defines: sk_lstm_config, sk_lstm, sk_lstm_ops, sk_lstm_impl, sk_lstm_impl_of, sk_lstm_impl_TAG (one
//          per row of SK_RNN_IMPLS), sk_lstm_create, sk_lstm_destroy,
//          sk_lstm_create_cudnn, sk_lstm_create_cudnn_algo, sk_cudnn_algo_name,
//          sk_lstm_create_cudnn_wavefront,
//          sk_lstm_create_persistent, sk_lstm_create_persistent_variant, sk_lstm_persistent_fits,
//          sk_lstm_choice, sk_lstm_family, sk_lstm_io, sk_lstm_tune_opts, sk_lstm_autotune
//
// Semantics every implementation keeps (those of the CPU backend, backend_cpu.c):
//   - weights enter and leave as fp32 in every precision (cfg.backend->precision);
//   - data tensors are device pointers, batch-major (stream-major): x (B, len, E),
//     y (B, len, H); states h, c are (L, B, H);
//   - weights enter and leave in the canonical layout of model.h (the LSTM tensors of the
//     whole parameter buffer); what an implementation keeps internally is its own affair;
//   - a training forward with dropout p > 0 multiplies the output of layer k < L-1 by the
//     mask of site k, keyed by cfg.dropout_keys[k] as it stands on the device when the
//     work runs (hash.h's sk_dropout_key(seed, step, k), written there by the backend; index (b*len + t)*H + j, b the global
//     stream cfg.backend->stream_offset + b, so that data-parallel ranks draw one process's masks), and the
//     backward applies the same mask to the gradient, so that the CPU and every GPU
//     implementation drop the same elements and a resumed run is bit-identical;
//   - backward is truncated BPTT: no gradient enters through hy, cy or leaves through hx, cx;
//   - forward, backward_data and backward_weights only enqueue work on cfg.stream (no host
//     synchronization, no allocation), so that the backend can capture a training step into
//     a CUDA graph; whatever host-side setup a window length needs is done by prepare.
#ifndef SK_LSTM_IMPL_H
#define SK_LSTM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

extern "C" {
#include "shakespeare/backend.h"
#include "shakespeare/model.h"
#include "shakespeare/status.h"
}

typedef struct {
    // borrowed, for the implementation's life: the backend's settings (precision, stream_offset:
    // the global stream of b = 0 for data-parallel masks, cudnn_chunk_steps, ...), read where used,
    // so that a new setting reaches an implementation without a field here
    const sk_backend_config *backend;
    cudnnHandle_t dnn;             // borrowed (used by the cuDNN implementation)
    cudaStream_t stream;           // borrowed: every operation is enqueued here
    const sk_param_layout *layout; // borrowed, read at creation only
    int B, T, E, H, L;             // T: the longest window
    int training;                  // 0: inference only (no backward buffers)
    float dropout;                 // between layers, training forwards only
    const uint64_t *dropout_keys;  // borrowed, device (L,): site k's key, rewritten every step
    // the variant being created: the persistent kernels' inner products (others ignore it); starts
    // as the backend's plstm_tensor_cores, auto's measurement sets each candidate's
    sk_tensor_cores tensor_cores;
    int family;                    // sk_lstm_family: which persistent kernels (set by their registry rows)
} sk_lstm_config;

// The persistent implementation's kernels (kernels/lstm_persistent.h, kernels/lstm_layerwise.h).
typedef enum {
    SK_LSTM_WAVEFRONT = 0, // all layers in one launch, a wavefront over (layer, step)
    SK_LSTM_LAYERWISE = 1, // layer after layer, one grid.sync a step
    SK_LSTM_CLUSTER = 2,   // layer after layer, one thread-block cluster a batch group
} sk_lstm_family;

typedef struct sk_lstm sk_lstm;

// An implementation as the registry holds it: one descriptor per row of backend.h's
// SK_RNN_IMPLS (its word and help), defined as sk_lstm_impl_TAG in the implementation's own
// file. sk_lstm_create and rnn_impl auto's candidates (lstm_autotune.cu) read only these.
typedef struct sk_lstm_impl {
    sk_rnn_impl id;  // its row of SK_RNN_IMPLS
    int candidate;   // 0: rnn_impl auto's measurement skips it; N in 1..SK_RNN_IMPL_COUNT: it times it,
                     // in ascending N (the likeliest winners first: a budget that runs out has timed them)
    int variants;    // 1: its inner products are a choice (cfg->tensor_cores ON or OFF), each a candidate;
                     // 0: it ignores cfg->tensor_cores and runs as SK_TENSOR_CORES_DEFAULT
    // Whether it can run cfg (its shape, precision and inner products), asked without creating
    // anything: *fits 1, or 0 and a reason in why. NULL: only creation can tell (refusing with
    // SK_ERR_ARG and the reason).
    sk_status (*fits)(const sk_lstm_config *cfg, int *fits, char *why, size_t why_size, sk_error *err);
    // Creates it for cfg (the contract of sk_lstm_create); *notice (may be NULL) gets one line or "".
    sk_status (*create)(const sk_lstm_config *cfg, sk_lstm **out, char *notice, size_t notice_size, sk_error *err);
} sk_lstm_impl;

#define SK_LSTM_IMPL_DECLARE(id, tag, word, help) extern const sk_lstm_impl sk_lstm_impl_##tag;
SK_RNN_IMPLS(SK_LSTM_IMPL_DECLARE)
#undef SK_LSTM_IMPL_DECLARE

// The descriptor of row `which` of SK_RNN_IMPLS; NULL outside it.
const sk_lstm_impl *sk_lstm_impl_of(sk_rnn_impl which);

typedef struct {
    const char *name; // "cudnn", "cudnn-persist", "persistent", for messages only (the choice is desc's)
    // Canonical parameters (the whole buffer; only the LSTM tensors are read) -> the
    // implementation's weights. Needed after every change of the parameters.
    sk_status (*import_weights)(sk_lstm *l, const float *params, sk_error *err);
    // The implementation's weights -> the LSTM tensors of params (other tensors untouched).
    sk_status (*export_weights)(sk_lstm *l, float *params, sk_error *err);
    // x (B, len, E) -> y (B, len, H), from hx, cx to hy, cy (L, B, H); 1 <= len <= T. train
    // (training builds only) applies dropout (cfg.dropout_keys) and keeps what backward needs.
    sk_status (*forward)(sk_lstm *l, int train, int len, const float *x, float *y, const float *hx,
                         const float *cx, float *hy, float *cy, sk_error *err);
    // After a training forward whose x, y, hx, cx are still unchanged: dx (B, len, E) from
    // dy (B, len, H). Then backward_weights writes (overwrites) the LSTM tensors of grads
    // (canonical layout). Always in this order, once each per training forward.
    sk_status (*backward_data)(sk_lstm *l, const float *dy, float *dx, sk_error *err);
    sk_status (*backward_weights)(sk_lstm *l, float *grads, sk_error *err);
    void (*destroy)(sk_lstm *l);
    // Optional (NULL: nothing to do): makes the device-side setup of window length len
    // current (cuDNN: the sequence lengths it reads from device memory), outside any graph
    // capture, before a captured step of that length is replayed. forward does it too.
    sk_status (*prepare)(sk_lstm *l, int len, sk_error *err);
} sk_lstm_ops;

struct sk_lstm {
    const sk_lstm_ops *ops;
    sk_lstm_config cfg;
    void *impl;
    const sk_lstm_impl *desc; // the registry's row it was created from (set by sk_lstm_create)
};

// Creates the implementation `which` asks for, through its descriptor (auto: cuDNN, or the
// persistent kernels in bf16, which cuDNN lacks; lstm_autotune.cu measures instead), and sets
// (*out)->desc to the descriptor of what was created. *notice (may be NULL) gets one line when
// cudnn-persist names its algorithm, else "". SK_ERR_ARG when the named one does not support
// the configuration or is not built.
sk_status sk_lstm_create(sk_rnn_impl which, const sk_lstm_config *cfg, sk_lstm **out, char *notice,
                         size_t notice_size, sk_error *err);
// What l runs, read from its descriptor: its implementation and, where that has variants,
// their inner products.
sk_rnn_choice sk_lstm_choice(const sk_lstm *l);
// Safe on NULL.
void sk_lstm_destroy(sk_lstm *l);

// The implementations. create_persistent refuses (SK_ERR_ARG, with the reason) a shape
// the kernel does not fit; persistent_fits asks the same question without creating.
sk_status sk_lstm_create_cudnn(const sk_lstm_config *cfg, sk_lstm **out, sk_error *err);
// The cuDNN implementation on one of cuDNN's RNN algorithms (create_cudnn: STANDARD). A
// persistent one (PERSIST_STATIC, _DYNAMIC, _STATIC_SMALL_H) that cuDNN does not accept for
// the shape is refused (SK_ERR_ARG) with cuDNN's reason.
sk_status sk_lstm_create_cudnn_algo(const sk_lstm_config *cfg, cudnnRNNAlgo_t algo, sk_lstm **out, sk_error *err);
const char *sk_cudnn_algo_name(cudnnRNNAlgo_t algo);
// The cuDNN implementation for a training stack with dropout between layers (create_cudnn_algo
// takes it then): one-layer networks overlapped in time chunks (lstm_impl_cudnn_wavefront.cu).
sk_status sk_lstm_create_cudnn_wavefront(const sk_lstm_config *cfg, cudnnRNNAlgo_t algo, sk_lstm **out,
                                         sk_error *err);
sk_status sk_lstm_create_persistent(const sk_lstm_config *cfg, sk_lstm **out, sk_error *err);
// The same with the inner product chosen: tensor_cores = 1 (tf32 and bf16) runs mma.sync, 0
// the CUDA cores (create_persistent takes the validated default).
sk_status sk_lstm_create_persistent_variant(const sk_lstm_config *cfg, int tensor_cores, sk_lstm **out,
                                            sk_error *err);
sk_status sk_lstm_persistent_fits(const sk_lstm_config *cfg, int *fits, char *why, size_t why_size, sk_error *err);
// Device buffers a measurement runs an implementation on (lstm_autotune.cu), sized for the
// config's longest window: contents are overwritten.
typedef struct {
    const float *params; // the canonical parameter buffer
    float *grads;        // its gradient buffer
    float *x, *dx;       // (B, T, E)
    float *y, *dy;       // (B, T, H)
    float *hx, *cx, *hy, *cy; // (L, B, H)
} sk_lstm_io;

typedef struct {
    const char *cache_dir;   // where choices are cached (NULL: measure every time, cache nothing)
    double budget_s;         // no candidate starts after this many seconds of measuring
    sk_tensor_cores request; // --tensor-cores: DEFAULT lets both inner products compete
} sk_lstm_tune_opts;

// rnn_impl auto for a training stack: every implementation and inner product that fits cfg
// (in cfg's precision), each timed over a few captured training steps (forward, backward data
// and weights at the longest window) on io, the fastest kept in *out and named in *chosen. A
// cached choice for the same key is taken without measuring. *report gets one line: the
// choice, each candidate's time or why it did not run, and where the choice came from.
sk_status sk_lstm_autotune(const sk_lstm_config *cfg, const sk_lstm_tune_opts *o, const sk_lstm_io *io,
                           sk_lstm **out, sk_rnn_choice *chosen, char *report, size_t report_size, sk_error *err);

#endif
