// backend.h: one interface, two backends (CPU reference, CUDA), as their callers see it. The
// trainer, the sampler and the tests drive a backend only through these calls and never know
// which one it is; a backend implements them by filling the table of src/backend/backend_impl.h.
// defines: sk_backend_config, sk_backend_shape, sk_backend_config_make, sk_backend, sk_backend_create, sk_backend_free,
//          sk_backend_error, sk_backend_fail, sk_backend_step, sk_backend_create_cpu, sk_backend_create_cuda, sk_backend_cuda_memory,
//          sk_backend_name, sk_backend_cfg, sk_backend_layout, sk_backend_notice,
//          sk_backend_device, sk_backend_device_uuid, sk_backend_set_params, sk_backend_get_params, sk_backend_get_grads,
//          sk_backend_set_optimizer_state, sk_backend_get_optimizer_state, sk_backend_set_state,
//          sk_backend_get_state, sk_backend_state_floats, sk_backend_forward, sk_backend_get_logits, sk_backend_backward,
//          sk_backend_grad_buffer, sk_backend_grad_norm, sk_backend_update, sk_backend_has_sampler,
//          sk_backend_sample,
//          sk_backend_memory, sk_backend_memory_of, sk_backend_cpu_bytes, sk_host_memory_available,
//          sk_cuda_available, sk_cuda_device_count, sk_cuda_describe, sk_device_parse, sk_rnn_impl,
//          SK_RNN_IMPLS, sk_rnn_impl_parse, sk_rnn_impl_name, sk_rnn_impl_words, sk_cuda_graph_words,
//          sk_tensor_cores_words, sk_precision_words, sk_tensor_cores_parse, sk_tensor_cores_name,
//          sk_cuda_graph, sk_cuda_graph_parse, sk_cuda_graph_name, sk_step_stats, sk_grad_reduce,
//          sk_train_step_args, sk_backend_train_step, sk_backend_read_stats, sk_precision, sk_precision_parse,
//          sk_precision_name
//
// A backend owns, in its own memory: the parameters, their gradients, the optimizer's slots (all
// in the canonical layout of model.h, or a private one it converts on copy), the carried
// state (S, L, B, H) of the cell's S state tensors (cell.h), and every activation buffer for windows of up to T steps.
// Everything is allocated at creation; nothing is allocated per step.
//
// Errors: an op that fails returns its status and leaves one line in b->err naming what
// failed and why (for CUDA: the failing call, the library's error string, file:line);
// sk_backend_error(b) reads it for the caller's own message.
//
// Tensor layouts at this interface: x, y (B, len) stream-major token ids; logits
// (B, len, V); the state (S, L, B, H). All host pointers, except the gradient buffer, which is
// the backend's own memory (host or device) so that it can be all-reduced in place.
//
// A training step has one entry point, sk_backend_train_step: forward -> backward ->
// [the reduce hook: data-parallel ranks sum the loss and the gradient buffer] -> gradient norm
// -> clip scale -> the optimizer's update. Its statistics (loss, norm, the first non-finite step) come back
// through sk_backend_read_stats, only when the caller asks: a backend with a deferred step
// (CUDA) enqueues the whole step, with the clip scale and the non-finite
// test formed where the gradients are, and may replay it as one CUDA graph; every other
// step (the CPU backend, and any step with a reduce hook, which needs the loss on the host)
// runs the eager sequence of the calls below, which completes before the call returns.
#ifndef SHAKESPEARE_BACKEND_H
#define SHAKESPEARE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/model.h"
#include "shakespeare/optim.h"
#include "shakespeare/sample_draw.h"
#include "shakespeare/status.h"
#include "shakespeare/words.h"

// The CUDA backend's LSTM implementations, one row each: the registry from which the enumeration,
// its count, the words of --rnn-impl (parse, name, --help, records) derive here, and the CUDA
// side's table of descriptors (src/cuda/lstm_impl_select.cu: each row's TAG names the
// descriptor sk_lstm_impl_TAG that the implementation's own file defines, with its fits and
// create). A new implementation is its own files plus one row here.
//   auto: for a training backend with rnn_autotune set, the fastest of those that fit, timed at
//         creation (src/cuda/lstm_autotune.cu); otherwise cuDNN (persistent in bf16, which cuDNN
//         lacks);
//   cudnn-persist: cuDNN on the first of its persistent algorithms that accepts the shape
//         (refused with cuDNN's reasons when none does);
//   persistent: kernels/lstm_persistent.h; persistent-layerwise, persistent-cluster:
//         kernels/lstm_layerwise.h (clusters: compute capability 9.0 and later).
// The CPU backend has a single implementation and accepts only auto.
// X(ID, TAG, WORD, HELP):
#define SK_RNN_IMPLS(X)                                                                                 \
    X(SK_RNN_AUTO, auto, "auto",                                                                        \
      "the fastest that fits, measured at the start of a training\n"                                    \
      "run and cached (a resume keeps the checkpoint's); sampling:\n"                                   \
      "cudnn, in bf16 the persistent kernels")                                                          \
    X(SK_RNN_CUDNN, cudnn, "cudnn", "cuDNN's RNN API")                                                  \
    X(SK_RNN_PERSISTENT, persistent, "persistent", "our persistent kernels, wavefront over layers")      \
    X(SK_RNN_CUDNN_PERSIST, cudnn_persist, "cudnn-persist", "cuDNN's persistent algorithms")            \
    X(SK_RNN_PERSISTENT_LAYERWISE, persistent_layerwise, "persistent-layerwise",                        \
      "our persistent kernels, layer after layer")                                                      \
    X(SK_RNN_PERSISTENT_CLUSTER, persistent_cluster, "persistent-cluster",                              \
      "layer after layer, thread-block clusters")

#define SK_RNN_IMPL_ENUM_ROW(id, tag, word, help) id,
typedef enum { SK_RNN_IMPLS(SK_RNN_IMPL_ENUM_ROW) SK_RNN_IMPL_COUNT } sk_rnn_impl;
#undef SK_RNN_IMPL_ENUM_ROW

// --cuda-graph: whether the CUDA backend replays train_step as a captured CUDA graph.
//   on:   capture, and fail with the reason if a capture fails (for benchmarks and tests);
//   try:  capture; if a capture fails, say why in one notice (read_stats' notice) and run
//         that step and every later one eagerly;
//   auto: try where graphs are known to work (kGraphValidated in src/cuda/backend_cuda.cu:
//         true: the graph tests pass on an H100), else off;
//   off:  eager.
// Graph and eager steps enqueue the same work. The CPU backend accepts all but on.
typedef enum { SK_GRAPH_AUTO = 0, SK_GRAPH_ON = 1, SK_GRAPH_OFF = 2, SK_GRAPH_TRY = 3 } sk_cuda_graph;

// The arithmetic of the CUDA backend (--precision). In every precision the parameters,
// their gradients and the optimizer's slots stay fp32 in the canonical layout (the master copy,
// which checkpoints hold); lower-precision copies of the weights are derived from it.
//   fp32: strict fp32 everywhere (FMA, no TF32 tensor cores): the CPU reference's numerics.
//   tf32: TF32 tensor cores allowed for fp32 GEMMs (cuBLAS) and in cuDNN's RNN (10-bit mantissa
//         operands, fp32 accumulation).
//   bf16: the LSTM recurrence with bf16 operands (weights, h, gate gradients), fp32
//         accumulation and an fp32 cell state (the persistent kernel; the other GEMMs as tf32).
// The CPU backend computes in fp32, and in bf16 where it has bf16 dot products and oneDNN
// (src/cpu/lstm_onednn.h: the LSTM stack; the other products stay fp32).
// SK_PRECISION_AUTO: each backend's default, resolved at creation (the created backend's
// cfg.precision holds the result): tf32 on CUDA, which is PyTorch's default for cuDNN's RNNs
// (torch.backends.cudnn.allow_tf32 defaults to True, so nn.LSTM uses TF32 on Ampere and
// later), and fp32 on the CPU. A zeroed config asks for strict fp32.
typedef enum { SK_PRECISION_FP32 = 0, SK_PRECISION_TF32 = 1, SK_PRECISION_BF16 = 2, SK_PRECISION_AUTO = 3 } sk_precision;

// The persistent LSTM kernel's inner products in tf32 and bf16 (--rnn-impl persistent, or
// auto where it takes that kernel; --tensor-cores): DEFAULT the kernel's default (tensor cores,
// src/cuda/lstm_impl_persistent.cu), ON tensor cores (mma.sync), OFF CUDA cores. Tests and
// workbenches set it to run both paths. fp32 never uses tensor cores (ON is refused there);
// other LSTM implementations ignore it.
typedef enum { SK_TENSOR_CORES_DEFAULT = 0, SK_TENSOR_CORES_ON = 1, SK_TENSOR_CORES_OFF = 2 } sk_tensor_cores;

// An LSTM implementation as it runs: what rnn_impl auto settled on (measured or by rule), with
// the persistent kernels' inner products (ON or OFF; DEFAULT for the others). A checkpoint
// records it so that a resume runs the same arithmetic (bit-exact resume).
typedef struct {
    sk_rnn_impl impl;
    sk_tensor_cores tensor_cores;
} sk_rnn_choice;

typedef struct {
    sk_model_config model;
    int batch_size;   // B
    int seq_len;      // T, the longest window a forward accepts
    int training;     // 0: inference only (no backward buffers, no optimizer state)
    int threads;      // CPU threads for BLAS and pointwise loops (0: library default)
    int device_index; // CUDA device ordinal
    uint64_t seed;    // dropout masks are a pure function of (seed, step, site, index)
    sk_rnn_impl rnn_impl;
    sk_precision precision; // fp32 (0) unless set
    // Data-parallel training: this backend holds streams [stream_offset, stream_offset +
    // batch_size) of a global batch of global_batch streams (0: batch_size, one process).
    // Dropout masks are indexed by the global stream, and backward's gradient is that of
    // the mean over global_batch * len rows, so the ranks' gradients sum to one process's.
    int stream_offset;
    int global_batch;
    sk_cuda_graph cuda_graph;
    sk_tensor_cores plstm_tensor_cores;
    // rnn_impl auto on CUDA, training backends only: with rnn_autotune, time every
    // implementation and inner product that fits for a few steps and take the fastest (at most
    // about 2 s), caching the choice in rnn_tune_dir (NULL: no cache) keyed by the GPU, its
    // driver and libraries, this build, the shape and precision. (A resumed run names the
    // choice its checkpoint records instead; the backend's cfg then holds what runs.)
    int rnn_autotune;
    const char *rnn_tune_dir;
    // Benchmarks' knobs (CUDA). The cuDNN wavefront's time chunks: 0 its default length, N > 0
    // about N steps, -1 whole windows (src/cuda/lstm_impl_cudnn_wavefront.cu). no_fused_sampler:
    // an inference backend samples with a forward per character instead of its fused kernel.
    int cudnn_chunk_steps;
    int no_fused_sampler;
    // Training: the optimizer whose state slots the backend allocates (optim.h's table), and the
    // only kind its update takes.
    sk_optim_kind optimizer;
} sk_backend_config;

// What a backend config takes from the run rather than from the options: the model, this rank's
// share of the batch, the window, and whether it trains.
typedef struct {
    sk_model_config model;
    int batch_size, seq_len, training;
    uint64_t seed;
    int stream_offset, global_batch; // 0, 0: one process
} sk_backend_shape;

// The one converter from a program's options to a backend's config: the settings as the options
// hold them (an sk_backend_config embedded in the options struct, its table rows pointing into
// it), with the run's shape for this rank. A new backend setting is then one option row plus the
// backend code that reads it.
sk_backend_config sk_backend_config_make(const sk_backend_config *settings, const sk_backend_shape *shape);

typedef enum { SK_MODE_EVAL = 0, SK_MODE_TRAIN = 1 } sk_mode;

// What read_stats hands back about the deferred steps since the last read.
typedef struct {
    double loss_sum;  // the last step's sum over B*len of -log p(y)
    double grad_norm; // the last step's gradient norm before clipping
    // The first step whose mean loss (step_math.h's sk_mean_loss) or gradient norm was not
    // finite, as its 1-based optimizer step; 0: none. That step and every later one left
    // the parameters and the optimizer's slots untouched.
    int64_t bad_step;
    int bad_is_norm;             // 0: its mean loss was not finite; 1: its loss was, its norm not
    double bad_loss_sum, bad_norm; // that step's values (bad_norm: 0 when its loss already failed on the CPU)
    int64_t graph_launches; // CUDA: train_step calls launched as a captured CUDA graph since creation (0 elsewhere)
    int64_t forward_graph_launches; // CUDA: evaluation and sampling forwards launched as a graph, likewise
    char notice[SK_ERROR_MSG_MAX]; // one line for the user about these steps (--cuda-graph try's fallback), or ""
    // 1 (CUDA): train_step only enqueued the steps, which ran on the device later, so the
    // host's time in each call is not that step's cost; 0 (CPU): each call did its step.
    int asynchronous;
} sk_step_stats;

// A backend as its creator hands it out: opaque (its definition, with its table of operations,
// is the implementers': src/backend/backend_impl.h); callers read it through the sk_backend_* calls.
typedef struct sk_backend sk_backend;

// Data-parallel training's hook between backward and the gradient norm. fn is called once per
// step on every rank, also when this rank's forward or backward failed (st), so that the
// ranks agree on a failure before anyone waits in a collective. It sums *loss_sum and the
// gradient buffer (n floats, device memory when on_device) over ranks in place, and returns
// st agreed over ranks (its own failure with its message in err).
typedef struct {
    sk_status (*fn)(void *ctx, sk_status st, double *loss_sum, float *grads, size_t n, int on_device, sk_error *err);
    void *ctx;
} sk_grad_reduce;

// One training step: forward over (x, y) (B, len), keyed for dropout by `step`, backward,
// [reduce], gradient norm, clip scale and the optimizer's update at optimizer step opt_step (1-based).
typedef struct {
    const int32_t *x, *y; // (B, len) this backend's streams
    int len;
    int64_t step;
    int64_t opt_step;
    const sk_optim_hparams *optim;
    float lr;
    const sk_grad_reduce *reduce; // NULL: one process
} sk_train_step_args;

// The operations, each the backend's op of the same name (b->ops). Every one returns its status
// and, on failure, leaves its message in b->err (sk_backend_error).
// The backend's name: "cpu" or "cuda".
const char *sk_backend_name(const sk_backend *b);
// What the backend was created with, and what it resolved: precision, and (CUDA) rnn_impl and
// plstm_tensor_cores as they run (auto resolved: an sk_rnn_choice). Lives as long as b.
const sk_backend_config *sk_backend_cfg(const sk_backend *b);
// The parameter layout of cfg's model, owned by b.
const sk_param_layout *sk_backend_layout(const sk_backend *b);
// Lines for the user from creation ('\n' between them: auto's measurements, an implementation
// fallback), or "".
const char *sk_backend_notice(const sk_backend *b);
// Where it runs, for messages: "cpu", or "cuda:1 (NVIDIA H100 80GB HBM3)".
const char *sk_backend_device(const sk_backend *b);
// A GPU's UUID as nvidia-smi prints it ("GPU-" and 8-4-4-4-12 hex digits), which tells whether
// two processes share a GPU; "" on the CPU.
const char *sk_backend_device_uuid(const sk_backend *b);
// Parameters, gradients and the optimizer's state slots, (total,) floats each in the canonical layout.
sk_status sk_backend_set_params(sk_backend *b, const float *params);
sk_status sk_backend_get_params(sk_backend *b, float *params);
sk_status sk_backend_get_grads(sk_backend *b, float *grads);
// Slot `slot` of cfg.optimizer's state (optim.h: sk_optim_of(kind)->slot_names[slot]; Adam's 0
// is m, 1 is v); SK_ERR_ARG for a slot the optimizer lacks or an inference-only backend.
sk_status sk_backend_set_optimizer_state(sk_backend *b, int slot, const float *x);
sk_status sk_backend_get_optimizer_state(sk_backend *b, int slot, float *x);
// The carried state, (S, L, B, H): the cell's S state tensors (cell.h: h first, then an LSTM's
// c), each (L, B, H); sk_backend_state_floats(b) floats. NULL resets it to zeros.
sk_status sk_backend_set_state(sk_backend *b, const float *state);
sk_status sk_backend_get_state(sk_backend *b, float *state);
size_t sk_backend_state_floats(const sk_backend *b);
// Runs the model over window x (B, len), 1 <= len <= T, from the carried state, and
// leaves the final state carried. With y, *loss_sum = sum over B*len of -log p(y).
// SK_MODE_TRAIN applies dropout with masks keyed by step and keeps what backward needs.
sk_status sk_backend_forward(sk_backend *b, const int32_t *x, const int32_t *y, int len, sk_mode mode, int64_t step,
                             double *loss_sum);
// Logits (B, len, V) of the last forward.
sk_status sk_backend_get_logits(sk_backend *b, float *logits);
// Gradients of the MEAN loss of the last SK_MODE_TRAIN forward (overwrites, no
// accumulation). Truncated BPTT: nothing flows into the carried initial state.
sk_status sk_backend_backward(sk_backend *b);
// The gradient buffer that backward fills: (total,) floats, canonical layout,
// contiguous, valid for the backend's life; *on_device = 1 when it is device memory.
sk_status sk_backend_grad_buffer(sk_backend *b, float **grads, int *on_device);
// L2 norm of the gradient buffer, accumulated in double in a fixed order (deterministic).
sk_status sk_backend_grad_norm(sk_backend *b, double *norm);
// h->kind's update (optim.h's sk_optim_update) at optimizer step `step` (1-based) with the
// gradient multiplied by clip_scale first; SK_ERR_ARG when h->kind is not cfg.optimizer.
sk_status sk_backend_update(sk_backend *b, const sk_optim_hparams *h, float lr, float clip_scale, int64_t step);
// 1 when the backend has a fused sampler (sk_backend_sample); else sampling runs a forward and
// get_logits per token and draws on the host (sk_generate_batch).
int sk_backend_has_sampler(const sk_backend *b);
// The fused sampler, where sk_backend_has_sampler. From the carried state, feeds x (B,), then draws n >= 1 tokens per stream
// into out (B, n) stream-major, feeding each but the last: the draw of stream s at step i takes
// sk_sample_uniform(keys[s], position + i) through sample_draw.h's arithmetic. Leaves carried the
// state after the last token fed (x, then out[s][0..n-2]), and get_logits returns the logits
// (B, 1, V) of the last draw.
sk_status sk_backend_sample(sk_backend *b, const int32_t *x, int n, const sk_sample_opts *o, const uint64_t *keys,
                            int64_t position, int32_t *out);

// device: "auto", "cpu", "cuda" or "cuda:N". auto picks CUDA when a usable GPU is present;
// *notice (may be NULL) gets what to tell the user, "" or lines separated by '\n': that auto
// fell back to the CPU, and the created backend's own notice (b->notice).
sk_status sk_backend_create(const sk_backend_config *cfg, const char *device, sk_backend **out,
                            char *notice, size_t notice_size, sk_error *err);
sk_status sk_backend_create_cpu(const sk_backend_config *cfg, sk_backend **out, sk_error *err);
// The memory a backend for cfg would take on the device sk_backend_create(cfg, device) picks, and
// what that device has for it now, so that a caller can refuse a run that cannot fit before
// anything is allocated (a window of a million steps takes tens of GB).
typedef struct {
    int on_cuda;        // 1: the device is a GPU; 0: the CPU
    size_t need;        // bytes of every buffer the backend allocates; 0: no estimate for this device
    size_t activations; // of need, the bytes that grow with batch_size x seq_len: what a training
                        // window keeps for backprop through time, its logits and their gradients
    size_t available;   // bytes the device has for it now; 0: not known
} sk_backend_memory;
// The CPU's estimate is sk_backend_cpu_bytes against sk_host_memory_available; a GPU's is
// sk_backend_cuda_memory's.
void sk_backend_memory_of(const sk_backend_config *cfg, const char *device, sk_backend_memory *m);
// The CUDA backend's estimate for cfg on GPU cfg->device_index (its buffers, the cuBLAS
// workspace and the LSTM implementation's weights and window, from the shapes alone) against
// the GPU's free memory (cudaMemGetInfo). need stays 0 where CUDA support is not built in.
void sk_backend_cuda_memory(const sk_backend_config *cfg, sk_backend_memory *m);
// The bytes sk_backend_create_cpu allocates for cfg (its parameters, gradients and optimizer slots
// when training, the activations and scratch of a window of seq_len steps for batch_size streams);
// *activations (may be NULL) as in sk_backend_memory. 0 for a configuration it refuses.
size_t sk_backend_cpu_bytes(const sk_backend_config *cfg, size_t *activations);
// The memory this process can still take: the system's MemAvailable (/proc/meminfo), or less
// where a cgroup's memory.max leaves less room; 0 when not known.
size_t sk_host_memory_available(void);
// SK_ERR_DEVICE when CUDA support is not built in or no usable GPU exists.
sk_status sk_backend_create_cuda(const sk_backend_config *cfg, sk_backend **out, sk_error *err);
// How many CUDA devices this process sees (0 without CUDA support or a driver); creates no
// context on any of them.
int sk_cuda_device_count(void);
// The CUDA part of --version's backends line (build_info.h): "cuda (CUDA runtime 13.0, cuDNN
// 9.10.2, NCCL 2.28.3)", or "cuda not built in". Needs no device.
void sk_cuda_describe(char *buf, size_t n);
// 1 when CUDA support is built in and device `index` is usable; else 0 and a reason. Probing
// creates the device's context and leaves it the calling thread's current device.
int sk_cuda_available(int index, char *reason, size_t reason_size);
// Parses "auto", "cpu", "cuda", "cuda:N"; SK_ERR_ARG otherwise.
sk_status sk_device_parse(const char *device, int *is_auto, int *is_cuda, int *index, sk_error *err);
// Each choice's words (words.h), one table each in backend.c: the parsers below, the names (for
// messages, records and caches; "unknown" for a value outside the table) and the CLI's --help
// derive from them.
extern const sk_words sk_rnn_impl_words, sk_cuda_graph_words, sk_tensor_cores_words, sk_precision_words;
// --cuda-graph: auto, on, off, try.
sk_status sk_cuda_graph_parse(const char *s, sk_cuda_graph *out, sk_error *err);
const char *sk_cuda_graph_name(sk_cuda_graph g);
// --tensor-cores: auto, on, off (SK_TENSOR_CORES_DEFAULT, _ON, _OFF).
sk_status sk_tensor_cores_parse(const char *s, sk_tensor_cores *out, sk_error *err);
const char *sk_tensor_cores_name(sk_tensor_cores t);
// --rnn-impl: the words of SK_RNN_IMPLS, in its order.
sk_status sk_rnn_impl_parse(const char *s, sk_rnn_impl *out, sk_error *err);
const char *sk_rnn_impl_name(sk_rnn_impl r);
// --precision: fp32, tf32, bf16, auto. Every parser returns SK_ERR_ARG naming the words on a
// word outside its table, leaving *out untouched.
sk_status sk_precision_parse(const char *s, sk_precision *out, sk_error *err);
const char *sk_precision_name(sk_precision p);
// The message of b's last failed op, e.g. "cudnnRNNForward failed: CUDNN_STATUS_BAD_PARAM
// at cudnn_rnn.cu:311"; "no message" when the op left none (never NULL).
const char *sk_backend_error(const sk_backend *b);
// For callers of a failed op: fills err with "the NAME backend failed WHAT: MESSAGE", WHAT
// formatted from fmt and MESSAGE being sk_backend_error(b), and returns st.
sk_status sk_backend_fail(sk_error *err, sk_status st, const sk_backend *b, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
// The training step (sk_train_step_args; its order above). Returns SK_OK also for a step
// whose mean loss or gradient norm was not finite: it is recorded for read_stats, and it and
// every later step until then leave parameters and moments untouched. Otherwise err gets the
// whole message ("the NAME backend failed at step N: ...", or the reduce hook's own).
sk_status sk_backend_train_step(sk_backend *b, const sk_train_step_args *a, sk_error *err);
// The statistics of the steps since the last read (waiting for enqueued ones); forgets the
// record of a bad step. Errors of enqueued work surface here, with their message in err.
sk_status sk_backend_read_stats(sk_backend *b, sk_step_stats *stats, sk_error *err);
// grad_norm, the clip scale (optim.h's sk_clip_scale) and update at optimizer step `step`
// (1-based): the end of the eager step. *grad_norm gets the norm before clipping. A
// non-finite norm returns SK_ERR_NUMERIC (message in b->err) and leaves parameters and
// moments untouched.
sk_status sk_backend_step(sk_backend *b, const sk_optim_hparams *h, float lr, int64_t step, double *grad_norm);
// Safe on NULL.
void sk_backend_free(sk_backend *b);

#endif
