// lstm_layerwise_args.h: the arguments of the layer-after-layer persistent LSTM kernels
// (lstm_layerwise.h says what they compute), in C without CUDA types, so that tests/emu runs
// the kernels on the CPU.
// defines: sk_plstm_lw_args
#ifndef SK_LSTM_LAYERWISE_ARGS_H
#define SK_LSTM_LAYERWISE_ARGS_H

#include <stddef.h>
#include <stdint.h>

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
    // bf16 operands with grid.sync only (else NULL; clusters exchange through shared memory):
    // bf16 copies of hh and dg in their layouts, written beside them and staged instead of them
    // (half the bytes; the fp32 ones feed the GEMMs).
    uint16_t *hh16, *dg16;
    float *y;                     // (B, len, H): the top layer's output
    const float *dy;              // backward, top layer: (B, len, H)
    const float *dxin;            // backward, below the top: (B, len + 1, H) dg_{k+1} W_ih_{k+1}, unmasked
    int train;                    // store cs and gates; apply dropout
    float p, keep_scale;          // dropout between layers (training only; p = 0: none)
    const uint64_t *keys;         // (L,) device: dropout key of site k
    int stream_offset;            // the global stream of b = 0
} sk_plstm_lw_args;

#ifdef __cplusplus
}
#endif

#endif
