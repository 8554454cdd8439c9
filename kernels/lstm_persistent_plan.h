// lstm_persistent_plan.h: how the persistent LSTM's grid is cut and its shared memory laid out
// (the plan of lstm_persistent.h), as pure host arithmetic in C, so that it is checked without
// a GPU (tests/test_plstm_plan.c); sk_plstm_plan_make adds the device's numbers and the
// occupancy check.
// defines: sk_plstm_operands, sk_plstm_plan, sk_plstm_plan_shape, SK_PLSTM_THREADS,
//          SK_PLSTM_BATCH_BLOCK, SK_PLSTM_MMA_SCRATCH_BYTES, sk_plstm_operand_bytes,
//          sk_plstm_uses_mma, sk_plstm_smem_layout, sk_plstm_smem_carve (the last four host
//          and device)
//
// Shared memory per block (s = 4 bytes per operand for fp32 and TF32, 2 for bf16; Kf =
// kstride, G = gstride; U units; bc staged batch rows; X = SK_PLSTM_MMA_SCRATCH_BYTES on
// tensor cores, else 0):
//   forward  wrows_fwd*Kf*s (weights) + B*U*4 (c) + X + bc*(Kf*s + 4U*4) (vectors, pre-activations)
//   backward wunits_bwd*2*G*s (weights) + B*U*4 (dc) + X + bc*(2*G*s + 2U*4)
// Tensor cores: K rounded up to the instruction's (16 for bf16, 8 for TF32) plus a pad that
// makes every row stride (forward Kf, backward G: each 4H-long half is a row of its own
// there) 4 mod 8 32-bit words and a multiple of 16 bytes: the 8 rows a fragment load
// touches fall in distinct banks, and every staged row starts 16-byte aligned, so that it
// stages with 16-byte cp.async copies. Weight rows (forward) and units (backward) rounded
// up to 16 and staged rows to multiples of 8, all padding zero. CUDA cores: Kf even (bf16
// pairs), G = 4H, nothing rounded.
#ifndef SK_LSTM_PERSISTENT_PLAN_H
#define SK_LSTM_PERSISTENT_PLAN_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifndef SK_HOST_DEVICE
#ifdef __CUDACC__
#define SK_HOST_DEVICE __host__ __device__
#else
#define SK_HOST_DEVICE
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SK_PLSTM_THREADS 256
#define SK_PLSTM_BATCH_BLOCK 4 // batch rows per warp in the dot products (register blocking)
// Tensor cores: where warps that share a tile's K leave their partial sums for the block to
// add in a fixed order (lstm_persistent_mma.h): one 16 x 8 fp32 tile per warp.
#define SK_PLSTM_MMA_SCRATCH_BYTES ((SK_PLSTM_THREADS / 32) * 16 * 8 * 4)

// The operands and inner product of the in-kernel dot products: fp32 or bf16 on CUDA cores,
// or on tensor cores (fp32 accumulation; compute capability >= 8.0) bf16 (mma.sync
// m16n8k16) or fp32 rounded to TF32 (mma.sync m16n8k8).
typedef enum {
    SK_PLSTM_FP32 = 0,
    SK_PLSTM_BF16 = 1,
    SK_PLSTM_BF16_MMA = 2,
    SK_PLSTM_TF32_MMA = 3,
} sk_plstm_operands;

// How the grid is cut, from the shape and the device (sk_plstm_plan_make).
typedef struct {
    int supported;     // 0: why_not says why
    char why_not[200];
    sk_plstm_operands operands;
    int kstride;       // row stride of the forward weight slice and staged vectors (see above)
    int gstride;       // backward: 4H-long halves of slice and staged rows are G apart (see above)
    int wrows_fwd;     // forward weight rows held: 4U, or rounded up to 16 (tensor cores)
    int wunits_bwd;    // backward units held: U, or rounded up to 16 (tensor cores)
    int U;             // hidden units per block
    int blocks;        // L * ceil(H / U), all co-resident
    int bc_fwd, bc_bwd; // batch rows staged in shared memory at once (multiples of 8 on tensor cores)
    size_t smem_fwd, smem_bwd; // dynamic shared memory bytes per block
} sk_plstm_plan;

static inline size_t sk_plstm_round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

// Bytes per operand in shared memory: 2 for bf16, 4 for fp32 (also TF32: rounded on load).
static inline SK_HOST_DEVICE size_t sk_plstm_operand_bytes(sk_plstm_operands o) {
    return o == SK_PLSTM_BF16 || o == SK_PLSTM_BF16_MMA ? 2 : 4;
}
// 1: the inner products run on tensor cores.
static inline SK_HOST_DEVICE int sk_plstm_uses_mma(sk_plstm_operands o) {
    return o == SK_PLSTM_BF16_MMA || o == SK_PLSTM_TF32_MMA;
}

// The kernels' carve-up of a block's dynamic shared memory, byte offsets from its start
// (the weights at 0); the kernels take their buffers from here, the test checks it against
// the plan's budget (end == smem_fwd, smem_bwd) and the alignment each buffer needs:
//   forward  w [wrows_fwd][kstride] operands, vec [bc_fwd][kstride] operands,
//            acc [bc_fwd][4U] fp32 (pre-activations), state [B][U] fp32 (c)
//   backward w [wunits_bwd][2][gstride] operands, vec [bc_bwd][2][gstride] operands
//            (tensor cores: the halves apart, w [2][wunits_bwd][gstride] and
//            vec [2][bc_bwd][gstride], so that each half is a row with the plan's stride),
//            acc [bc_bwd][2U] fp32, state [B][U] fp32 (dc)
//   then, on tensor cores, scratch: SK_PLSTM_MMA_SCRATCH_BYTES (fp32 partial sums).
typedef struct {
    size_t vec, acc, state, scratch, end;
} sk_plstm_smem_layout;

static inline SK_HOST_DEVICE sk_plstm_smem_layout sk_plstm_smem_carve(const sk_plstm_plan *p, int B, int backward) {
    const size_t s = sk_plstm_operand_bytes(p->operands), U = (size_t)p->U;
    const size_t row = backward ? 2 * (size_t)p->gstride : (size_t)p->kstride; // operands per held or staged row
    const size_t held = (size_t)(backward ? p->wunits_bwd : p->wrows_fwd), bc = (size_t)(backward ? p->bc_bwd : p->bc_fwd);
    sk_plstm_smem_layout l;
    l.vec = held * row * s;
    l.acc = l.vec + bc * row * s;
    l.state = l.acc + bc * (backward ? 2 : 4) * U * sizeof(float);
    l.scratch = l.state + (size_t)B * U * sizeof(float);
    l.end = l.scratch + (sk_plstm_uses_mma(p->operands) ? SK_PLSTM_MMA_SCRATCH_BYTES : 0);
    return l;
}

// Fills plan for a device of `sms` SMs, `optin` bytes of shared memory per block and compute
// capability `cc_major`: 1 when the shape fits (the occupancy check is the caller's), else 0
// with plan->why_not saying why. plan->supported stays 0 either way.
static inline int sk_plstm_plan_shape(sk_plstm_plan *plan, int sms, int optin, int cc_major, int B, int E, int H,
                                      int L, sk_plstm_operands operands) {
    memset(plan, 0, sizeof *plan);
    plan->operands = operands;
    const int mma = sk_plstm_uses_mma(operands);
    const int half = operands == SK_PLSTM_BF16 || operands == SK_PLSTM_BF16_MMA; // 2-byte operands
    if (mma && cc_major < 8) {
        snprintf(plan->why_not, sizeof plan->why_not, "tensor cores need compute capability 8.0 or later");
        return 0;
    }
    const int per_layer = sms / L;
    if (per_layer < 1) {
        snprintf(plan->why_not, sizeof plan->why_not, "%d layers need more than the device's %d SMs", L, sms);
        return 0;
    }
    const size_t U = (size_t)(H + per_layer - 1) / per_layer;
    const size_t s = half ? 2 : 4, f = sizeof(float), cap = (size_t)optin;
    const size_t kstep = half ? 16 : 8, ralign = mma ? 16 : 1, balign = mma ? 8 : 1;
    const size_t Kmax = (size_t)(E > H ? E : H) + H;
    // Tensor cores: a multiple of the K step plus 16 bytes, i.e. 16 mod 32 bytes (4 mod 8 words).
    const size_t pad = 16 / s;
    const size_t Kf = mma ? sk_plstm_round_up(Kmax, kstep) + pad : sk_plstm_round_up(Kmax, 2);
    const size_t G = mma ? sk_plstm_round_up((size_t)4 * H, kstep) + pad : (size_t)4 * H;
    const size_t wrows = sk_plstm_round_up(4 * U, ralign), wunits = sk_plstm_round_up(U, ralign);
    const size_t scratch = mma ? SK_PLSTM_MMA_SCRATCH_BYTES : 0;
    const size_t fix_f = wrows * Kf * s + (size_t)B * U * f + scratch, row_f = Kf * s + 4 * U * f;
    const size_t fix_b = wunits * 2 * G * s + (size_t)B * U * f + scratch, row_b = 2 * G * s + 2 * U * f;
    const size_t need_f = fix_f + balign * row_f, need_b = fix_b + balign * row_b;
    if (need_f > cap || need_b > cap) {
        snprintf(plan->why_not, sizeof plan->why_not,
                 "a slice of %zu units per block needs %zu KiB of shared memory with %s operands, more than the %d "
                 "KiB a block gets%s", U, (need_f > need_b ? need_f : need_b) >> 10, half ? "bf16" : "fp32",
                 optin >> 10, half ? "" : " (bf16 operands, --precision bf16, halve the weights)");
        return 0;
    }
    // Batch rows per chunk: as many as fit, at most B (tensor cores: multiples of 8, at most
    // B rounded up to 8; rows past B are staged but never used).
    const size_t bmax = sk_plstm_round_up((size_t)B, balign);
    size_t bf = (cap - fix_f) / row_f / balign * balign, bb = (cap - fix_b) / row_b / balign * balign;
    if (bf > bmax) bf = bmax;
    if (bb > bmax) bb = bmax;
    plan->U = (int)U;
    plan->kstride = (int)Kf;
    plan->gstride = (int)G;
    plan->wrows_fwd = (int)wrows;
    plan->wunits_bwd = (int)wunits;
    plan->blocks = L * (int)((H + U - 1) / U);
    plan->bc_fwd = (int)bf, plan->bc_bwd = (int)bb;
    plan->smem_fwd = fix_f + bf * row_f;
    plan->smem_bwd = fix_b + bb * row_b;
    return 1;
}

#ifdef __cplusplus
}
#endif

#endif
