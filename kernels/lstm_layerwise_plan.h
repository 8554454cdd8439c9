// lstm_layerwise_plan.h: how the layer-after-layer persistent LSTM kernels (lstm_layerwise.h)
// tile their grid and lay out shared memory, as host arithmetic in C, checked without a GPU
// (tests/test_plstm_plan.c); the kernels carve their shared memory with the same function.
// defines: sk_plstm_lw_plan, sk_plstm_lw_plan_shape, sk_plstm_lw_smem, sk_plstm_lw_smem_carve
//
// One launch runs one layer over the window on every block. The recurrence is independent
// across batch rows, so the grid is tiles: the batch in `groups` groups of at most Bb rows,
// each group's H units in slices of U, one block per (group, slice): blocks = groups *
// ceil(H / U) <= SMs. A block stages only its group's rows of h_{t-1} (forward) or of the gate
// gradients dg(t+1) (backward) once per step: one batch pass, Bb rows, not the whole batch.
// Shared memory per block (floats; operands s bytes: 4 for fp32, 2 for bf16):
//   forward   W_hh rows 4U x H (s), biases 4U x 2, c Bb x U, staged h Bb x H (s), pre Bb x 4U
//   backward  W_hh columns U x 4H (s), dc Bb x U, staged dg Bb x 4H (s), acc Bb x U
#ifndef SK_LSTM_LAYERWISE_PLAN_H
#define SK_LSTM_LAYERWISE_PLAN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lstm_persistent_plan.h" // SK_HOST_DEVICE, SK_PLSTM_THREADS: the wavefront kernels' plan

#ifdef __cplusplus
extern "C" {
#endif

#define SK_PLSTM_LW_MAX_BB 8 // batch rows per tile: one mma n-tile, for the tensor-core step to come

typedef struct {
    int supported; // 0: why_not says why
    char why_not[200];
    int Bb, groups; // batch rows per group (the last group may hold fewer), groups
    int U, slices;  // units per block, blocks per group (ceil(H / U))
    int blocks;     // groups * slices
    int operand_bytes; // 4 (fp32) or 2 (bf16)
    size_t smem_fwd, smem_bwd;
} sk_plstm_lw_plan;

// Byte offsets of a block's regions (16-byte aligned), forward or backward.
typedef struct {
    size_t w, bias, state, vec, acc, total;
} sk_plstm_lw_smem;

static inline SK_HOST_DEVICE size_t sk_plstm_lw_align(size_t n) { return (n + 15) & ~(size_t)15; }

static inline SK_HOST_DEVICE sk_plstm_lw_smem sk_plstm_lw_smem_carve(int U, int Bb, int H, int s, int backward) {
    const size_t f = sizeof(float), u = (size_t)U, bb = (size_t)Bb, h = (size_t)H;
    sk_plstm_lw_smem l;
    l.w = 0;
    l.bias = sk_plstm_lw_align(4 * u * h * (size_t)s); // forward [4U][H], backward [U][4H]: the same count
    l.state = l.bias + (backward ? 0 : sk_plstm_lw_align(4 * u * 2 * f));
    l.vec = l.state + sk_plstm_lw_align(bb * u * f);
    l.acc = l.vec + sk_plstm_lw_align(bb * (backward ? 4 * h : h) * (size_t)s);
    l.total = l.acc + sk_plstm_lw_align(bb * (backward ? u : 4 * u) * f);
    return l;
}

// Fills plan for B rows of width H on a device of `sms` SMs with `optin` bytes of shared memory
// per block, operands of s bytes: 1 when it fits (the co-residency check is the caller's).
static inline int sk_plstm_lw_plan_shape(sk_plstm_lw_plan *plan, int sms, int optin, int B, int H, int s) {
    memset(plan, 0, sizeof *plan);
    if (sms < 1 || B < 1 || H < 1) {
        snprintf(plan->why_not, sizeof plan->why_not, "no shape to plan (B %d, H %d, %d SMs)", B, H, sms);
        return 0;
    }
    int groups = (B + SK_PLSTM_LW_MAX_BB - 1) / SK_PLSTM_LW_MAX_BB;
    if (groups > sms) groups = sms;
    const int Bb = (B + groups - 1) / groups;
    groups = (B + Bb - 1) / Bb;
    const int per_group = sms / groups; // blocks a group may have
    const int U = (H + per_group - 1) / per_group;
    const size_t fwd = sk_plstm_lw_smem_carve(U, Bb, H, s, 0).total, bwd = sk_plstm_lw_smem_carve(U, Bb, H, s, 1).total;
    if (fwd > (size_t)optin || bwd > (size_t)optin) {
        snprintf(plan->why_not, sizeof plan->why_not,
                 "a tile of %d units by %d batch rows needs %zu KiB of shared memory with %s operands, more than the "
                 "%d KiB a block gets",
                 U, Bb, (fwd > bwd ? fwd : bwd) >> 10, s == 2 ? "bf16" : "fp32", optin >> 10);
        return 0;
    }
    plan->Bb = Bb, plan->groups = groups, plan->U = U, plan->slices = (H + U - 1) / U;
    plan->blocks = groups * plan->slices, plan->operand_bytes = s;
    plan->smem_fwd = fwd, plan->smem_bwd = bwd;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif
