// sample_persistent_args.h: the arguments of the sampling kernel (sample_persistent.h says what
// it computes), in C without CUDA types, so that tests/emu runs the kernel on the CPU.
// defines: sk_sample_args
#ifndef SK_SAMPLE_PERSISTENT_ARGS_H
#define SK_SAMPLE_PERSISTENT_ARGS_H

#include <stddef.h>
#include <stdint.h>

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
    // The hand-offs between blocks, words of a value and the tag of the step that wrote it
    // (sample_persistent_kernels.cuh's ll_word), zeroed before every launch:
    uint64_t *hll;                // (2, L, B, H) h of layer k at step i in half i % 2
    uint64_t *tokll;              // (B,) each stream's last token (not read when plan.draw_all)
    const int32_t *x;             // (B,) the first inputs, ids in [0, V)
    int n;                        // steps, >= 1
    int64_t position;             // the draw position of step 0
    const uint64_t *keys;         // (B,) sk_sample_key of each stream's seed
    sk_sample_opts opts;
    int32_t *tokens;              // (B, n) the draws
    float *logits;                // (B, V) the logits of step n-1's draws
} sk_sample_args;

#ifdef __cplusplus
}
#endif

#endif
