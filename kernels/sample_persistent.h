// sample_persistent.h: text generation on the GPU as one persistent kernel: every step of every
// stream (embedding, L LSTM cells, fc, temperature / top-k / top-p and the draw) runs inside one
// cooperative launch, the weights in shared memory throughout, the tokens copied back once.
// defines: sk_sample_args, sk_sample_plan_make, sk_sample_run
// (the plan and the shared-memory carve-up: sample_persistent_plan.h; the kernel body:
// sample_persistent_kernels.cuh)
//
// Step i (i < n) of stream b feeds its input (x[b], then the token it drew at step i-1) and
// draws tokens[b * n + i] with sample_draw.h's arithmetic and the keyed uniform
// sk_sample_uniform(keys[b], position + i): the draw the CPU sampler makes from the same logits.
// A step is L + 1 phases, a grid sync after each: layer k's cells (every block its units, every
// stream), then the draws (block d draws streams d, d + blocks, ...: logits over V, the
// ranking, the pick). Layer k's h at step i goes to hbuf[i % 2][k], which its own next step and
// the layer above read after the sync (the other half holds step i-1's).
// Numerics: the persistent LSTM kernel's (lstm_persistent.cu): fp32 weights and state, fmaf dot
// products in a fixed order (block_dots), expf / tanhf; the CPU sums in other orders, so logits
// agree to fp32 rounding, and a draw agrees unless its uniform falls within that rounding of a
// boundary between two candidates (or two candidates' logits tie within it). Each stream's
// arithmetic is that of a batch of one, bit for bit, whatever B and the staging.
#ifndef SK_SAMPLE_PERSISTENT_H
#define SK_SAMPLE_PERSISTENT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "lstm_persistent_args.h" // sk_plstm_layer: a layer's tensors in the canonical buffer
#include "sample_persistent_plan.h"
#include "shakespeare/sample_draw.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int B, V, E, H, L;
    sk_sample_plan plan;
    const float *w;               // the parameters, canonical layout (model.h)
    const sk_plstm_layer *layers; // (L,) device
    size_t off_emb, off_fcw, off_fcb; // floats into w
    const float *hx, *cx;         // (L, B, H) the state before step 0
    float *hy, *cy;               // (L, B, H) the state after step n-1; must not alias hx, cx
    float *hbuf;                  // (2, L, B, H) the exchange of h between blocks
    const int32_t *x;             // (B,) the first inputs, ids in [0, V)
    int n;                        // steps, >= 1
    int64_t position;             // the draw position of step 0
    const uint64_t *keys;         // (B,) sk_sample_key of each stream's seed
    sk_sample_opts opts;
    int32_t *tokens;              // (B, n) the draws
    float *logits;                // (B, V) the logits of step n-1's draws
} sk_sample_args;

// The plan for device `device` (plan->supported = 0 with a reason when the shape does not fit
// or the device cannot launch it cooperatively). Host only.
cudaError_t sk_sample_plan_make(sk_sample_plan *plan, int device, int B, int V, int E, int H, int L);

// One cooperative launch of plan.blocks blocks over n steps.
cudaError_t sk_sample_run(const sk_sample_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
