// lstm_persistent.h: the persistent wavefront LSTM kernels (lstm_persistent.cu), with fp32 or
// bf16 operands (fp32 accumulation, fp32 cell state, fp32 weights in global memory).
// defines: sk_plstm_plan_make, sk_plstm_forward, sk_plstm_backward
// (the kernels' arguments: lstm_persistent_args.h; the plan, its operands and its shared-memory
// arithmetic: lstm_persistent_plan.h; the kernel bodies: lstm_persistent_kernels.cuh)
//
// One cooperative grid holds the whole L-layer stack: block n owns hidden units
// [j0, j0 + U) of layer k = n / ceil(H/U) and keeps their weight rows (forward: the 4 gate
// rows of [W_ih | W_hh]; backward: the 4H-long columns j of W_hh_k and W_ih_{k+1}) in
// shared memory for the whole window. Layers advance as a wavefront: at chain step s
// layer k handles time t = s - k (backward: t = len-1 - (s - (L-1-k))), so one grid-wide
// synchronization per chain step orders everything: len + L - 1 syncs per direction.
// Dot products run in a fixed order (lane-strided partial sums, then a fixed shuffle
// tree), each warp carrying SK_PLSTM_BATCH_BLOCK batch rows so that every weight it reads
// from shared memory serves that many rows: results are bitwise reproducible run to run.
// Operands (sk_plstm_operands): fp32, or bf16 (--precision bf16): the weight slices in shared
// memory are bf16 copies made at launch from the fp32 weights (half the footprint), and the
// staged vectors ([x | h_{t-1}] forward, the gate gradients backward) are rounded to bf16;
// products and sums stay fp32, as do c, h and every buffer in global memory. Dropout between
// layers uses hash.h's masks (site k keyed by keys[k], sk_dropout_key(seed, step, k) read from
// device memory when the kernel runs, index ((stream_offset + b)*len + t)*H + j),
// the CPU's.
//
// Buffers (device, floats). Per-layer sequences use a row stride of len+1 so that one
// GEMM per weight gradient pairs every gate gradient with its input row (the backward
// weight GEMMs run in cuBLAS, outside these kernels; see src/cuda/lstm_impl_persistent.cu):
//   hh    (L, B, T+1, H): row (b, 0) = hx, row (b, t+1) = h_k(t)
//   xin   (L, B, T+1, H): row (b, t) = input of layer k >= 1 at t (dropped h_{k-1}(t)); slab 0 unused
//   cs    (L, B, T, H):   c_k(t)            (training forwards)
//   gates (L, B, T, 4H):  i, f, g, o after their activations, gate-major (g*H + j)
//   dg    (L, B, T+1, 4H): gate pre-activation gradients; row (b, len) must be zero
//   hh16, xin16, dg16: with bf16 operands, bf16 copies of hh, xin and dg (same layouts),
//         which blocks stage from (every block reads every batch row of them at every chain
//         step: half the bytes); the fp32 buffers stay for the weight GEMMs
// (slab k starts at k * B*(T+1)*width, resp. k * B*T*width; rows inside a slab are
// b*(len+1) + t, resp. b*len + t.)
#ifndef SK_LSTM_PERSISTENT_H
#define SK_LSTM_PERSISTENT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "lstm_persistent_args.h"

#ifdef __cplusplus
extern "C" {
#endif

// Cuts the grid for device `device`; plan->supported = 0 with a reason when the shape does
// not fit (weights of a layer slice plus one staged batch row over the shared memory of a
// block, more blocks than can be co-resident, no cooperative launch). Shared memory per block:
// lstm_persistent_plan.h (its header comment and sk_plstm_smem_carve). Host only.
cudaError_t sk_plstm_plan_make(sk_plstm_plan *plan, int device, int B, int E, int H, int L,
                               sk_plstm_operands operands);

// Forward over len steps (cooperative launch of plan.blocks blocks).
cudaError_t sk_plstm_forward(const sk_plstm_args *a, cudaStream_t stream);
// Backward data over the window of the last training forward: dg for every layer (row
// (b, len) of each slab must be zero beforehand). dx of layer 0 and the weight gradients
// are GEMMs over dg, left to the caller.
cudaError_t sk_plstm_backward(const sk_plstm_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
