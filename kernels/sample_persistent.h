// sample_persistent.h: text generation on the GPU as one persistent kernel: every step of every
// stream (embedding, L LSTM cells, fc, temperature / top-k / top-p and the draw) runs inside one
// cooperative launch, the weights in shared memory throughout, the tokens copied back once.
// defines: sk_sample_plan_make, sk_sample_run
// (the arguments: sample_persistent_args.h; the plan and the shared-memory carve-up:
// sample_persistent_plan.h; the kernel body: sample_persistent_kernels.cuh)
//
// Step i (i < n) of stream b feeds its input (x[b], then the token it drew at step i-1) and
// draws tokens[b * n + i] with sample_draw.h's arithmetic and the keyed uniform
// sk_sample_uniform(keys[b], position + i): the draw the CPU sampler makes from the same logits.
// A step is L + 1 phases: layer k's cells (every block its units, every stream), then the draws
// (logits over V, the ranking, the pick; at B = 1 every block draws the one stream, the same
// token in each, so none waits for another's; else block d draws streams d, d + blocks, ...).
// No grid sync: layer k's h at step i goes to hll[i % 2][k] as words that carry the step's tag
// (sample_persistent_kernels.cuh's ll_word), and each block waits for exactly the words it reads
// (the layer above, its own next step, the draws), one round trip through L2 per hand-off; the
// tokens go the same way when blocks draw their own streams. The embedding and fc stay in shared
// memory where they fit (sample_persistent_plan.h). The cooperative launch keeps every block
// resident, which the waits need.
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

#include "sample_persistent_args.h"

#ifdef __cplusplus
extern "C" {
#endif


// The plan for device `device` (plan->supported = 0 with a reason when the shape does not fit
// or the device cannot launch it cooperatively). Host only.
cudaError_t sk_sample_plan_make(sk_sample_plan *plan, int device, int B, int V, int E, int H, int L);

// One cooperative launch of plan.blocks blocks over n steps.
cudaError_t sk_sample_run(const sk_sample_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
