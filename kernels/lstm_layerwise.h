// lstm_layerwise.h: the persistent LSTM kernels over W_hh alone, one layer per launch
// (docs/PERSISTENT_LSTM_FLOOR.md, "The rebuild's design" and after):
// fp32 or bf16 operands, on CUDA cores or tensor cores, exchanging through grid.sync or
// thread-block clusters.
// defines: sk_plstm_lw_plan_make, sk_plstm_lw_forward, sk_plstm_lw_backward
// (the arguments: lstm_layerwise_args.h; the tiles and the shared-memory carve-up:
// lstm_layerwise_plan.h; the kernel bodies: lstm_layerwise_kernels.cuh (grid.sync) and
// lstm_layerwise_cluster_kernels.cuh (clusters))
//
// What moved off the chain: layer k's input projection x_k W_ih_k^T for the whole window is
// one GEMM before its forward launch (xproj), and the gradient reaching layer k from the layer
// above, dg_{k+1} W_ih_{k+1}, one GEMM before its backward launch (dxin): the recurrence holds
// W_hh alone, in shared memory for the window. Block (group g, slice n) owns units
// [nU, nU + U) for batch rows [g Bb, g Bb + Bb); each step it exchanges its slice of h
// (forward) or of the gate gradients (backward) with its group's blocks only: through global
// memory and one grid.sync, or through its cluster's shared memory and one cluster barrier.
// Everything else is the wavefront kernels' (lstm_persistent.h): the buffers and their layouts
// (hh, xin, cs, gates, dg, row stride len+1), keyed dropout between layers (applied to h when
// it is stored as the next layer's input, and to dxin when it is read), the fp32 cell state,
// and sums in a fixed order, so results are bitwise reproducible run to run.
#ifndef SK_LSTM_LAYERWISE_H
#define SK_LSTM_LAYERWISE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "lstm_layerwise_args.h"

#ifdef __cplusplus
extern "C" {
#endif


// Tiles the grid for device `device`, operands of s bytes (4: fp32, 2: bf16), the inner
// products on tensor cores when mma, exchanging through grid.sync (cluster 0) or thread-block
// clusters (cluster 1; lstm_layerwise_cluster_kernels.cuh: clusters of 16 blocks, else of 8, as
// many as there are batch groups resident at once) (plan->supported = 0 with a reason when a tile
// does not fit, the blocks cannot all be resident (grid.sync) or the clusters (clusters), tensor
// cores below compute capability 8.0, clusters below 9.0). Host only.
cudaError_t sk_plstm_lw_plan_make(sk_plstm_lw_plan *plan, int device, int B, int H, int mma, int s, int cluster);

// Layer a->k forward over len steps; with a->train it keeps cs and gates for backward.
cudaError_t sk_plstm_lw_forward(const sk_plstm_lw_args *a, cudaStream_t stream);
// Layer a->k backward data: its gate gradients dg (row (b, len) of its slab zero beforehand).
cudaError_t sk_plstm_lw_backward(const sk_plstm_lw_args *a, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
