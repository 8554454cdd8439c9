// lstm_layerwise.h: the persistent LSTM kernels rebuilt over W_hh alone, one layer per launch
// (issue 33, the rebuild's steps 1 and 2: kernels/PERSISTENT_LSTM_FLOOR.md, "The rebuild's
// design"), fp32 operands on CUDA cores.
// defines: sk_plstm_lw_args, sk_plstm_lw_plan_make, sk_plstm_lw_forward, sk_plstm_lw_backward
// (the tiles and the shared-memory carve-up: lstm_layerwise_plan.h; the kernel bodies:
// lstm_layerwise_kernels.cuh)
//
// What moved off the chain: layer k's input projection x_k W_ih_k^T for the whole window is
// one GEMM before its forward launch (xproj), and the gradient reaching layer k from the layer
// above, dg_{k+1} W_ih_{k+1}, one GEMM before its backward launch (dxin): the recurrence holds
// W_hh alone, in shared memory for the window. Block (group g, slice n) owns units
// [nU, nU + U) for batch rows [g Bb, g Bb + Bb) and stages only those rows' h_{t-1} (forward)
// or dg(t+1) (backward) at each step; one grid.sync per step orders the steps (len per launch).
// Everything else is the wavefront kernels' (lstm_persistent.h): the buffers and their layouts
// (hh, xin, cs, gates, dg, row stride len+1), keyed dropout between layers (applied to h when
// it is stored as the next layer's input, and to dxin when it is read), the fp32 cell state,
// and sums in a fixed order (block_dots), so results are bitwise reproducible run to run.
#ifndef SK_LSTM_LAYERWISE_H
#define SK_LSTM_LAYERWISE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "lstm_layerwise_plan.h"
#include "lstm_persistent_args.h" // sk_plstm_layer

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int B, T, len, H, L;
    int k;                        // the layer this launch runs
    sk_plstm_lw_plan plan;
    const float *w;               // the LSTM weights (canonical tensors)
    const sk_plstm_layer *layers; // (L,) device
    // Forward: x_k W_ih_k^T (no bias), row b * xrows + t of 4H floats: xrows = len for layer 0
    // (the embedding's rows), len + 1 above (xin's).
    const float *xproj;
    int xrows;
    const float *hx, *cx;         // (L, B, H) initial state
    float *hy, *cy;               // (L, B, H) final state
    float *hh, *xin, *cs, *gates, *dg; // lstm_persistent.h's layouts
    float *y;                     // (B, len, H): the top layer's output
    const float *dy;              // backward, top layer: (B, len, H)
    const float *dxin;            // backward, below the top: (B, len + 1, H) dg_{k+1} W_ih_{k+1}, unmasked
    int train;                    // store cs and gates; apply dropout
    float p, keep_scale;          // dropout between layers (training only; p = 0: none)
    const uint64_t *keys;         // (L,) device: dropout key of site k
    int stream_offset;            // the global stream of b = 0
} sk_plstm_lw_args;

// Tiles the grid for device `device` (plan->supported = 0 with a reason when a tile does not
// fit or the blocks cannot all be resident). Host only.
cudaError_t sk_plstm_lw_plan_make(sk_plstm_lw_plan *plan, int device, int B, int H);

// Layer a->k forward over len steps; with a->train it keeps cs and gates for backward.
cudaError_t sk_plstm_lw_forward(const sk_plstm_lw_args *a, cudaStream_t stream);
// Layer a->k backward data: its gate gradients dg (row (b, len) of its slab zero beforehand).
cudaError_t sk_plstm_lw_backward(const sk_plstm_lw_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
