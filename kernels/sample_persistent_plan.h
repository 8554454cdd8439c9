// sample_persistent_plan.h: how the sampling kernel (sample_persistent.h) cuts its grid and lays
// out its shared memory, as host arithmetic in C, so that it is checked without a GPU; the
// kernel carves its shared memory with the same function.
// defines: sk_sample_plan, sk_sample_plan_shape, sk_sample_smem_layout, sk_sample_smem_carve
//
// Block n owns hidden units [n*U, n*U + U) of every layer (U = ceil(H / SMs): one block per SM
// at most) and keeps their 4 gate rows of [W_ih | W_hh] for every layer in shared memory for
// the whole launch, in fp32. Shared memory per block (floats unless said; K_0 = E + H, K_k = 2H,
// Kmax = max(E, H) + H; sb streams staged at once):
//   weights  sum_k 4U * K_k
//   biases   L * 4U * 2           (b_ih, b_hh)
//   c        L * B * U            (the carried cell state of the block's units)
//   vectors  sb * Kmax            ([input | h_{t-1}] per staged stream; the draw stages h here)
//   pre      sb * 4U              (gate pre-activations)
//   resident V * E + V * H + V    (the embedding, fc's weight and bias, copied once a launch,
//                                  when they fit beside everything else at the largest sb; else
//                                  none, and the kernel reads them from global memory)
//   draw     3 * V (logits, weights, ranked ids), V doubles (the weights' running sums),
//            B words (the streams' tokens, when every block draws every stream), 2 * 32 words
#ifndef SK_SAMPLE_PERSISTENT_PLAN_H
#define SK_SAMPLE_PERSISTENT_PLAN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lstm_persistent_plan.h" // SK_HOST_DEVICE

#ifdef __cplusplus
extern "C" {
#endif

#define SK_SAMPLE_THREADS 256 // the LSTM kernels' block (lstm_persistent_plan.h): block_dots assumes it
#define SK_SAMPLE_MAX_SB 32    // streams staged at once, at most

typedef struct {
    int supported; // 0: why_not says why
    char why_not[200];
    int blocks;    // ceil(H / U)
    int U;         // hidden units per block
    int sb;        // streams staged at once
    int resident;  // 1: the embedding and fc in shared memory
    int draw_all;  // 1: every block draws every stream (B = 1: no block waits for another's token)
    size_t smem;   // dynamic shared memory per block, bytes
} sk_sample_plan;

// Byte offsets of the regions above (16-byte aligned); emb, fcw, fcb: the resident region's
// parts (empty without it).
typedef struct {
    size_t w, bias, c, vec, pre, emb, fcw, fcb, logits, weights, ranked, sums, tokens, reduce, total;
} sk_sample_smem_layout;

static inline SK_HOST_DEVICE size_t sk_sample_align16(size_t n) { return (n + 15) & ~(size_t)15; }

static inline SK_HOST_DEVICE sk_sample_smem_layout sk_sample_smem_carve(int U, int sb, int B, int V, int E, int H,
                                                                         int L, int resident) {
    const size_t f = sizeof(float), Kmax = (size_t)(E > H ? E : H) + H, r = resident ? 1 : 0;
    const size_t wfloats = (size_t)4 * U * ((size_t)E + H) + (size_t)(L - 1) * 4 * U * 2 * H;
    sk_sample_smem_layout l;
    l.w = 0;
    l.bias = l.w + sk_sample_align16(wfloats * f);
    l.c = l.bias + sk_sample_align16((size_t)L * 4 * U * 2 * f);
    l.vec = l.c + sk_sample_align16((size_t)L * B * U * f);
    l.pre = l.vec + sk_sample_align16((size_t)sb * Kmax * f);
    l.emb = l.pre + sk_sample_align16((size_t)sb * 4 * U * f);
    l.fcw = l.emb + sk_sample_align16(r * V * E * f);
    l.fcb = l.fcw + sk_sample_align16(r * V * H * f);
    l.logits = l.fcb + sk_sample_align16(r * V * f);
    l.weights = l.logits + sk_sample_align16((size_t)V * f);
    l.ranked = l.weights + sk_sample_align16((size_t)V * f);
    l.sums = l.ranked + sk_sample_align16((size_t)V * 4);
    l.tokens = l.sums + sk_sample_align16((size_t)V * sizeof(double));
    l.reduce = l.tokens + sk_sample_align16((size_t)B * 4);
    l.total = l.reduce + 2 * 32 * 4;
    return l;
}

// Cuts the grid for a device of `sms` SMs with `optin` bytes of shared memory per block;
// returns plan->supported (0 with why_not when the weights or the state do not fit).
static inline int sk_sample_plan_shape(sk_sample_plan *plan, int sms, int optin, int B, int V, int E, int H, int L) {
    memset(plan, 0, sizeof *plan);
    if (sms < 1 || B < 1 || V < 1 || E < 1 || H < 1 || L < 1) {
        snprintf(plan->why_not, sizeof plan->why_not, "no shape to plan (B %d, V %d, E %d, H %d, L %d, %d SMs)", B, V,
                 E, H, L, sms);
        return 0;
    }
    const int U = (H + sms - 1) / sms, sb_max = B < SK_SAMPLE_MAX_SB ? B : SK_SAMPLE_MAX_SB;
    // Resident when that fits at the largest sb; else the largest sb without it.
    int resident = sk_sample_smem_carve(U, sb_max, B, V, E, H, L, 1).total <= (size_t)optin, sb = sb_max;
    while (!resident && sb > 1 && sk_sample_smem_carve(U, sb, B, V, E, H, L, 0).total > (size_t)optin) sb--;
    const size_t need = sk_sample_smem_carve(U, sb, B, V, E, H, L, resident).total;
    if (need > (size_t)optin) {
        snprintf(plan->why_not, sizeof plan->why_not,
                 "a block's share of the LSTM weights and state (%d units of %d layers, batch %d) needs %zu KiB of "
                 "shared memory, over the device's %d KiB",
                 U, L, B, need >> 10, optin >> 10);
        return 0;
    }
    plan->supported = 1;
    plan->U = U, plan->sb = sb, plan->blocks = (H + U - 1) / U, plan->smem = need;
    plan->resident = resident, plan->draw_all = B == 1;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif
