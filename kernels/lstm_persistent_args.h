// lstm_persistent_args.h: the arguments of the persistent LSTM kernels (lstm_persistent.h
// describes the buffers), in C without CUDA types, so that tests/emu runs the kernels on the CPU.
// defines: sk_plstm_layer, sk_plstm_args
#ifndef SK_LSTM_PERSISTENT_ARGS_H
#define SK_LSTM_PERSISTENT_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "lstm_persistent_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t w_ih, w_hh, b_ih, b_hh; // float offsets into sk_plstm_args.w
    int in;                        // input width: E for layer 0, else H
} sk_plstm_layer;

typedef struct {
    int B, T, len, E, H, L;
    sk_plstm_plan plan;
    const float *w;               // the LSTM weights (canonical tensors)
    const sk_plstm_layer *layers; // (L,) device
    const float *x;               // (B, len, E)
    float *y;                     // (B, len, H): the top layer's output
    const float *hx, *cx;         // (L, B, H) initial state
    float *hy, *cy;               // (L, B, H) final state; must not alias hx, cx
    float *hh, *xin, *cs, *gates, *dg; // see lstm_persistent.h
    // bf16 operands only (else NULL): bf16 copies of hh, xin and dg in their layouts, written
    // beside them and read instead of them when a block stages its vectors, since every block
    // reads every batch row of them at every chain step (half the bytes of the fp32 ones,
    // which the weight GEMMs read). Bit patterns of __nv_bfloat16.
    uint16_t *hh16, *xin16, *dg16;
    const float *dy;              // (B, len, H), backward only
    int train;                    // store cs and gates; apply dropout
    float p, keep_scale;          // dropout between layers (training only; p = 0: none)
    const uint64_t *keys;         // (L,) device: dropout key of site k, read at run time
    int stream_offset;            // the global stream of b = 0: masks index by it (data-parallel)
} sk_plstm_args;

#ifdef __cplusplus
}
#endif

#endif
