// stack_cpu.h: the seam between the CPU backend and its recurrent stack, shaped like the CUDA
// backend's lstm_impl.h: an implementation fills one small table of operations over the whole
// L-layer stack and window, and the backend (backend_cpu.c: embedding, fc, loss, optimizer)
// drives the stack only through it (private to src/cpu/).
// defines: sk_cpu_stack_config, sk_cpu_stack, sk_cpu_stack_ops, sk_cpu_stack_create_reference,
//          sk_cpu_stack_bytes, sk_cpu_stack_destroy, sk_cpu_stack_dropout, sk_cpu_stack_drop_weights,
//          sk_cpu_stack_create_onednn, sk_cpu_stack_onednn_bytes
//
// Semantics every implementation keeps (the reference's, stack_cpu.c):
//   - rows are time-major, r = t*B + b; weights are read in the canonical layout of model.h
//     through the named views (sk_param_tensors), gradients written there;
//   - the carried state is `state`, (S, L, B, H) for the cell's S states (cell.h: h first):
//     forward starts from it and leaves the window's final state in it;
//   - a training forward with dropout p > 0 multiplies the output of every layer k by the
//     mask of site k (hash.h's sk_dropout_key(seed, step, k), index (b*len + t)*H + j, b the
//     global stream stream_offset + b), and with weight drop uses each W_hh times its mask
//     (sk_weight_drop_factor of site SK_WEIGHT_DROP_SITE + k), so that every backend and every
//     split of the batch over ranks draws the same masks; backward applies the same masks;
//   - backward is truncated BPTT: no gradient leaves through the initial state.
#ifndef SK_STACK_CPU_H
#define SK_STACK_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "shakespeare/model.h"
#include "shakespeare/status.h"

typedef struct {
    const sk_cell *cell;   // borrowed (cell.h's table)
    int V, E, H, L, B, T;  // T: the longest window
    int threads;           // threads of the products and spans of streams in the recurrence
    int training;          // 0: inference only (no backward buffers)
    float dropout;         // p between layers and after the last, training forwards only
    float weight_drop;     // on W_hh, training forwards only
    uint64_t seed;         // the run's seed: the masks' keys derive from it and the step
    int stream_offset;     // the global stream of b = 0 (data-parallel; 0: one process)
    int bf16_weights;      // inference only (the reference): W_ih and W_hh read as bf16 copies, rounded
                           // once from the parameters (matvec_bf16.h); fp32 sums, gates and state
} sk_cpu_stack_config;

typedef struct sk_cpu_stack sk_cpu_stack;

typedef struct {
    const char *name; // "reference"
    // The stack over len (1 <= len <= T) steps from the carried state. A training forward (train)
    // reads emb (len*B, E), the embedded inputs, and keeps what backward needs; an inference one
    // reads the token ids x (len*B) (the reference looks layer 0's input side up per token) and,
    // with infer_step (len 1, sampling), forms every product batch-invariantly (matvec_cpu.h).
    // *top: (len*B, H), what fc reads (dropped out in training), valid until the next call.
    sk_status (*forward)(sk_cpu_stack *s, const sk_param_tensors *w, int len, int train, int infer_step, int64_t step,
                         const int32_t *x, const float *emb, const float **top, sk_error *err);
    // After a training forward: from dtop (len*B, H), the gradient w.r.t. *top, writes
    // (overwrites) the stack's tensors of g and points *demb at dL/d emb (len*B, E).
    sk_status (*backward)(sk_cpu_stack *s, const sk_param_tensors *w, const sk_param_tensors *g, const float *dtop,
                          const float **demb, sk_error *err);
    // The parameters changed (set_params, an optimizer step): forget what was derived from them.
    void (*params_changed)(sk_cpu_stack *s);
    void (*destroy)(sk_cpu_stack *s);
} sk_cpu_stack_ops;

struct sk_cpu_stack {
    const sk_cpu_stack_ops *ops;
    sk_cpu_stack_config cfg;
    float *state; // (S, L, B, H) carried state, owned: state s of layer k at (s*L + k)*B*H
    void *impl;
};

// The reference implementation (stack_cpu.c): fp32, any cell (cells_cpu.h).
sk_status sk_cpu_stack_create_reference(const sk_cpu_stack_config *cfg, sk_cpu_stack **out, sk_error *err);
// What the reference allocates for cfg, in bytes; *activations (may be NULL): the part that
// grows with the window's rows (T x B).
size_t sk_cpu_stack_bytes(const sk_cpu_stack_config *cfg, size_t *activations);
// Safe on NULL.
void sk_cpu_stack_destroy(sk_cpu_stack *s);

// The masks of the semantics above, for every implementation (stack_cpu.c): out = h * mask at
// dropout site `site` over (len*B, H) rows, mask written; out = W_hh of layer k (or its
// gradient) times the weight-drop factors of step `step` (out == w_hh allowed).
void sk_cpu_stack_dropout(const sk_cpu_stack_config *cfg, int64_t step, int site, int len, const float *h, float *mask,
                          float *out);
void sk_cpu_stack_drop_weights(const sk_cpu_stack_config *cfg, int64_t step, int k, const float *w_hh, float *out);

// oneDNN's LSTM primitive as the stack (stack_onednn.c over lstm_onednn.h): the LSTM cell only,
// fp32 (bf16 = 0) or bf16 (bf16 = 1: W_ih, W_hh and the layers' inputs and outputs rounded to
// bf16, fp32 accumulation, cell state and gradients). An inference step (len 1, sampling) runs
// the reference in fp32 on the same carried state. SK_ERR_ARG for another cell, a build without
// oneDNN, or bf16 where sk_onednn_bf16_check fails.
sk_status sk_cpu_stack_create_onednn(const sk_cpu_stack_config *cfg, int bf16, sk_cpu_stack **out, sk_error *err);
// What sk_cpu_stack_create_onednn allocates, in bytes (oneDNN's own buffers estimated);
// *activations as for sk_cpu_stack_bytes.
size_t sk_cpu_stack_onednn_bytes(const sk_cpu_stack_config *cfg, int bf16, size_t *activations);

#endif
