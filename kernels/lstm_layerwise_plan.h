// lstm_layerwise_plan.h: how the layer-after-layer persistent LSTM kernels (lstm_layerwise.h)
// tile their grid and lay out shared memory, as host arithmetic in C, checked without a GPU
// (tests/test_plstm_plan.c); the kernels carve their shared memory with the same function.
// defines: sk_plstm_lw_plan, sk_plstm_lw_plan_shape, sk_plstm_lw_smem, sk_plstm_lw_smem_carve,
//          SK_PLSTM_LW_MAX_BB
//
// One launch runs one layer over the window on every block. The recurrence is independent
// across batch rows, so the grid is tiles: the batch in `groups` groups of at most Bb rows,
// each group's H units in slices of U, one block per (group, slice): blocks = groups *
// ceil(H / U) <= SMs. A block stages only its group's rows of h_{t-1} (forward) or of the gate
// gradients dg(t+1) (backward) once per step: one batch pass, Bb rows, not the whole batch.
// Shared memory per block (floats; sk_plstm_lw_smem_carve):
//   forward   W_hh rows 4U x H, biases 4U x 2, c Bb x U, staged h Bb x H, pre Bb x 4U
//   backward  W_hh columns U x 4H, dc Bb x U, staged dg Bb x 4H, acc Bb x U
// (on tensor cores rows and strides rounded up, and mma_dots' scratch).
#ifndef SK_LSTM_LAYERWISE_PLAN_H
#define SK_LSTM_LAYERWISE_PLAN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "lstm_persistent_plan.h" // SK_HOST_DEVICE, SK_PLSTM_THREADS: the wavefront kernels' plan

#ifdef __cplusplus
extern "C" {
#endif

#define SK_PLSTM_LW_MAX_BB 8 // batch rows per tile: one mma n-tile

typedef struct {
    int supported; // 0: why_not says why
    char why_not[200];
    int mma;        // 1: the inner products on tensor cores (mma.sync: bf16 m16n8k16, TF32 m16n8k8); 0: CUDA cores
    int operand_bytes; // 4: fp32 operands (TF32 on tensor cores); 2: bf16 (weights, staged h and dg)
    int Bb, groups; // batch rows per group (the last group may hold fewer), groups
    int U, slices;  // units per block, blocks per group (ceil(H / U))
    int blocks;     // groups * slices
    // Held and staged rows: forward 4U weight rows of H, backward U of 4H, staged rows Bb; on
    // tensor cores rounded up (weight rows to 16, staged rows to 8, K to the instruction's 8 or
    // 16 plus a pad of 16 bytes: every row stride 4 mod 8 words and a multiple of 16 bytes, as
    // lstm_persistent_plan.h pads them), the padding zero.
    int kf, gs;           // row strides (operands): forward (>= H), backward (>= 4H)
    int wrows, wunits, bbr; // weight rows (forward), weight rows (backward), staged rows
    size_t smem_fwd, smem_bwd;
} sk_plstm_lw_plan;

// Byte offsets of a block's regions (16-byte aligned), forward or backward.
typedef struct {
    size_t w, bias, state, vec, acc, scratch, total;
} sk_plstm_lw_smem;

static inline SK_HOST_DEVICE size_t sk_plstm_lw_align(size_t n) { return (n + 15) & ~(size_t)15; }

// Forward: w [wrows][kf] operands, biases [4U][2], c [Bb][U], vec [bbr][kf] operands, pre
// [Bb][4U]; backward: w [wunits][gs] operands, dc [Bb][U], vec [bbr][gs] operands, acc [Bb][U]
// (the rest fp32); then, on tensor cores, the partial-sum scratch of mma_dots
// (SK_PLSTM_MMA_SCRATCH_BYTES).
static inline SK_HOST_DEVICE sk_plstm_lw_smem sk_plstm_lw_smem_carve(const sk_plstm_lw_plan *p, int backward) {
    const size_t f = sizeof(float), u = (size_t)p->U, bb = (size_t)p->Bb, s = (size_t)p->operand_bytes;
    const size_t row = (size_t)(backward ? p->gs : p->kf), held = (size_t)(backward ? p->wunits : p->wrows);
    sk_plstm_lw_smem l;
    l.w = 0;
    l.bias = sk_plstm_lw_align(held * row * s);
    l.state = l.bias + (backward ? 0 : sk_plstm_lw_align(4 * u * 2 * f));
    l.vec = l.state + sk_plstm_lw_align(bb * u * f);
    l.acc = l.vec + sk_plstm_lw_align((size_t)p->bbr * row * s);
    l.scratch = l.acc + sk_plstm_lw_align(bb * (backward ? u : 4 * u) * f);
    l.total = l.scratch + (p->mma ? SK_PLSTM_MMA_SCRATCH_BYTES : 0);
    return l;
}

// Fills plan for B rows of width H on a device of `sms` SMs with `optin` bytes of shared memory
// per block, operands of s bytes (4: fp32, 2: bf16) on CUDA cores or (mma) tensor cores: 1 when
// it fits (the co-residency check is the caller's).
static inline int sk_plstm_lw_plan_shape(sk_plstm_lw_plan *plan, int sms, int optin, int B, int H, int mma, int s) {
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
    plan->mma = mma, plan->operand_bytes = s, plan->Bb = Bb, plan->groups = groups, plan->U = U;
    plan->slices = (H + U - 1) / U, plan->blocks = groups * plan->slices;
    const size_t kstep = s == 2 ? 16 : 8, pad = 16 / (size_t)s; // the mma's K; 16 bytes of operands
    plan->kf = mma ? (int)(sk_plstm_round_up((size_t)H, kstep) + pad) : H;
    plan->gs = mma ? (int)(sk_plstm_round_up((size_t)4 * H, kstep) + pad) : 4 * H;
    plan->wrows = mma ? (int)sk_plstm_round_up((size_t)4 * U, 16) : 4 * U;
    plan->wunits = mma ? (int)sk_plstm_round_up((size_t)U, 16) : U;
    plan->bbr = mma ? (int)sk_plstm_round_up((size_t)Bb, 8) : Bb;
    const size_t fwd = sk_plstm_lw_smem_carve(plan, 0).total, bwd = sk_plstm_lw_smem_carve(plan, 1).total;
    if (fwd > (size_t)optin || bwd > (size_t)optin) {
        snprintf(plan->why_not, sizeof plan->why_not,
                 "a tile of %d units by %d batch rows needs %zu KiB of shared memory with %s operands%s, more than "
                 "the %d KiB a block gets",
                 U, Bb, (fwd > bwd ? fwd : bwd) >> 10, s == 2 ? "bf16" : "fp32", mma ? " on tensor cores" : "",
                 optin >> 10);
        return 0;
    }
    plan->smem_fwd = fwd, plan->smem_bwd = bwd;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif
