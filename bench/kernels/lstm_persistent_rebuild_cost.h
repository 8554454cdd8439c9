// lstm_persistent_rebuild_cost.h: the plan and cost model of the persistent LSTM's rebuild
// (docs/PERSISTENT_LSTM_FLOOR.md, "The rebuild's design"), host arithmetic
// in C under the H200 numbers of lstm_persistent_cost.h plus those below. Printed by
// bench/kernels/plstm_cost.c; tests/test_plstm_plan.c holds the design to it.
// defines: sk_plstm_exchange, sk_plstm_rebuild, sk_plstm_rebuild_plan, sk_plstm_rebuild_best,
//          sk_plstm_exchange_name, kSkCost{ClusterSync,Flag}Us
//
// The design: the input projections x W_ih^T + b_ih + b_hh (forward) and dx, dW_ih, dW_hh
// (backward) are batched tensor-core GEMMs off the chain, so the recurrence holds only W_hh:
//   layerwise  every layer in turn on all blocks (L*T chain steps per direction; layer k+1's
//              projection is one GEMM over layer k's whole output, between the launches);
//   wavefront  layers side by side (T+L-1 steps), sms/L blocks per layer, each block holding its
//              W_hh slice and its layer's W_ih slice to project the layer below in the chain.
// A block owns a tile of Bb batch rows (a batch group) x U hidden units; the H/U blocks of a
// group exchange h (forward) or dg (backward) among themselves only (batch rows are independent
// in the recurrence), once per chain step: a grid.sync, release/acquire flags per producer, or
// a cluster barrier when the group is one thread-block cluster (at most 16 blocks on sm_90).
// Per chain step a block stages its group's Bb rows of h (H wide) or dg (4H wide) in the
// operand precision through L2 (one batch pass, no chunks), runs mma.sync over its W_hh slice
// (held in shared memory for the window: read from global memory once per window), pipelined
// with the staging in K chunks (time: the larger of the two), then its epilogue (the bias is in
// the projection, added once by the GEMM's input). Shared memory per block, operands of s bytes,
// rows rounded to the mma tiles (16 weight rows, 8 batch rows) and strides padded as in
// lstm_persistent_plan.h:
//   forward  4U rows x Kf (W_hh, + W_ih for wavefront) + Bb x Kf staged + Bb x 4U fp32 acc + Bb x U fp32 c
//   backward U units x G (W_hh^T, + W_ih_{k+1}^T for wavefront) + Bb x min(G, 2 chunks) staged
//            + Bb x U fp32 acc and dc
#ifndef SK_LSTM_PERSISTENT_REBUILD_COST_H
#define SK_LSTM_PERSISTENT_REBUILD_COST_H

#include "lstm_persistent_cost.h"

#ifdef __cplusplus
extern "C" {
#endif

// Numbers added to lstm_persistent_cost.h's, measured by sync_bench on the H200
// (bench/results/h200-2026-11-28-2d6bab0/probe/probe-persistent.txt: its "cluster.sync (16)" and
// "flag hand-off" lines; the H100 had measured 0.699 and 0.649 us). The plans below price the staging
// and the mma at the pipes' rates, without lstm_persistent_cost.h's instruction-issue term: they are
// the design's lower bounds (the kernels built from them: lstm_layerwise_cost.h).
static const double kSkCostClusterSyncUs = 0.24; // cluster barrier, 16 blocks
static const double kSkCostFlagUs = 0.57;        // release/acquire flag hand-off, producer to consumer

// Backward staging runs as a ring of two chunks of this many K columns (the 4H-long dg rows do
// not fit beside the slice in TF32 at B); the forward's H-long rows are staged whole.
enum { kSkRebuildChunk = 512 };

typedef enum { SK_PLSTM_XCHG_GRID = 0, SK_PLSTM_XCHG_FLAGS = 1, SK_PLSTM_XCHG_CLUSTER = 2 } sk_plstm_exchange;

static inline const char *sk_plstm_exchange_name(sk_plstm_exchange x) {
    return x == SK_PLSTM_XCHG_GRID ? "grid.sync" : x == SK_PLSTM_XCHG_FLAGS ? "flags" : "cluster";
}

typedef struct {
    int ok;              // 0: no tile fits (why_not)
    char why_not[160];
    int layerwise;       // 1: layer after layer; 0: wavefront
    sk_plstm_exchange xchg;
    int Bb, U, per_group, groups, blocks; // tile: Bb batch rows x U units; per_group = ceil(H/U) blocks
    size_t smem_fwd, smem_bwd;           // bytes per block
    double w_window_bytes; // weight bytes a block reads from global memory per window (once, at launch)
    double w_step_bytes;   // weight bytes a block reads from global memory per chain step (0: held)
    sk_plstm_cost fwd, bwd; // per chain step, busiest block (gsync: exchanges per step, of kind xchg)
    double steps;          // chain steps per direction
    double chain_ms, gemm_ms, total_ms; // per training step: both chains, the GEMMs off the chain, sum
} sk_plstm_rebuild;

static inline double sk_plstm_xchg_us(sk_plstm_exchange x) {
    if (x == SK_PLSTM_XCHG_GRID) return kSkCostGridSyncUs;
    return x == SK_PLSTM_XCHG_FLAGS ? kSkCostFlagUs : kSkCostClusterSyncUs;
}

// One chain step of a block: stage `stage` bytes, run `mma` instructions pipelined with it,
// one exchange, one dependent round trip (the staging after the exchange), two __syncthreads.
static inline void sk_plstm_rebuild_step(sk_plstm_cost *c, sk_plstm_exchange x, double stage, double mma,
                                         double rd, double wr) {
    memset(c, 0, sizeof *c);
    c->l2_rd = stage + rd, c->l2_wr = wr, c->mma = mma, c->lds = kSkCostLdsPerMma * mma;
    c->bar = 2, c->gsync = 1, c->rt = 1;
    const double stage_us = (stage + rd) / kSkCostL2BytesPerNsPerSM / 1e3;
    double alu = c->lds / kSkCostLdsPerClk;
    if (mma * kSkCostMmaClk > alu) alu = mma * kSkCostMmaClk;
    const double alu_us = alu / kSkCostClockGHz / 1e3;
    c->us = sk_plstm_xchg_us(x) + kSkCostL2RoundTripUs + (stage_us > alu_us ? stage_us : alu_us) + 2 * kSkCostBarUs;
}

// The plan for tile (Bb, per_group) with tensor-core operands (SK_PLSTM_BF16_MMA or
// SK_PLSTM_TF32_MMA) on `sms` SMs with `optin` bytes of shared memory per block.
static inline sk_plstm_rebuild sk_plstm_rebuild_plan(int B, int E, int H, int L, int T, sk_plstm_operands op,
                                                     sk_plstm_exchange x, int layerwise, int Bb, int per_group,
                                                     int sms, int optin) {
    sk_plstm_rebuild r;
    memset(&r, 0, sizeof r);
    r.layerwise = layerwise, r.xchg = x, r.Bb = Bb;
    const int half = op == SK_PLSTM_BF16_MMA;
    const size_t s = half ? 2 : 4, kstep = half ? 16 : 8, pad = 16 / s;
    const int U = (H + per_group - 1) / per_group;
    r.U = U, r.per_group = (H + U - 1) / U, r.groups = (B + Bb - 1) / Bb;
    r.blocks = r.per_group * r.groups * (layerwise ? 1 : L);
    const int Bbr = (int)sk_plstm_round_up((size_t)Bb, 8), rows = (int)sk_plstm_round_up(4 * (size_t)U, 16);
    const int units = (int)sk_plstm_round_up((size_t)U, 16);
    const int in = layerwise ? 0 : (E > H ? E : H); // wavefront: the W_ih slice beside W_hh
    const size_t Kf = sk_plstm_round_up((size_t)(in + H), kstep) + pad;
    const size_t G = sk_plstm_round_up((size_t)4 * H * (layerwise ? 1 : 2), kstep) + pad;
    r.smem_fwd = rows * Kf * s + Bbr * Kf * s + (size_t)Bbr * 4 * U * 4 + (size_t)Bb * U * 4;
    const size_t ring = G < 2 * kSkRebuildChunk ? G : 2 * kSkRebuildChunk; // staged K columns in flight
    r.smem_bwd = units * G * s + Bbr * ring * s + (size_t)Bbr * U * 4 * 2;
    if (x == SK_PLSTM_XCHG_CLUSTER && r.per_group > 16) {
        snprintf(r.why_not, sizeof r.why_not, "a batch group of %d blocks is more than a cluster's 16", r.per_group);
        return r;
    }
    if (r.blocks > sms || r.smem_fwd > (size_t)optin || r.smem_bwd > (size_t)optin) {
        snprintf(r.why_not, sizeof r.why_not, "%d blocks of %zu/%zu bytes need more than %d SMs of %d bytes",
                 r.blocks, r.smem_fwd, r.smem_bwd, sms, optin);
        return r;
    }
    r.ok = 1;
    r.w_window_bytes = (double)(4 * (size_t)U * (in + H)) * 4; // fp32 weights, converted once at launch
    r.w_step_bytes = 0;
    const double mf = (double)(rows / 16) * (Bbr / 8) * ((in + H + kstep - 1) / kstep);
    const double mb = (double)(units / 16) * (Bbr / 8) * ((4 * (size_t)H * (layerwise ? 1 : 2) + kstep - 1) / kstep);
    // Forward epilogue: reads the projection (fp32, 4U per row; prefetched before the exchange,
    // so off the chain's round trip), writes h (fp32 + operand copy), c and the 4 gates.
    const double wav_in = layerwise ? 0 : (double)Bb * in * s; // wavefront: the layer below's h
    sk_plstm_rebuild_step(&r.fwd, x, (double)Bb * H * s + wav_in, mf, (double)Bb * 4 * U * 4,
                          (double)Bb * U * (4 + s + 4 + 16));
    // Backward epilogue: reads gates, c, c_prev and dh from above (fp32), writes dg (fp32 + copy).
    sk_plstm_rebuild_step(&r.bwd, x, (double)Bb * 4 * H * s * (layerwise ? 1 : 2), mb, (double)Bb * U * 28,
                          (double)Bb * 4 * U * (4 + s));
    r.steps = layerwise ? (double)L * T : (double)T + L - 1;
    r.chain_ms = (r.fwd.us + r.bwd.us) * r.steps / 1e3;
    // Off the chain, N = B*T rows: projection, dx and dW_ih over the inputs the GEMMs see (layerwise:
    // every layer's; wavefront: layer 0's, the others' dW_ih only), dW_hh of every layer.
    const double N = (double)B * T, H4 = 4.0 * H, sum_in = (double)E + (L - 1.0) * H;
    const double flop = 2 * N * H4 * (layerwise ? 3 * sum_in : 2 * (double)E + sum_in) + 2 * N * H4 * H * L;
    r.gemm_ms = flop / ((half ? kSkCostGemmTflopsBf16 : kSkCostGemmTflopsTf32) * 1e12) * 1e3;
    r.total_ms = r.chain_ms + r.gemm_ms;
    return r;
}

// The fastest tile for an exchange and layer order: Bb over multiples of 8 (or B when B < 8),
// per_group over 1..H; ok = 0 when none fits.
static inline sk_plstm_rebuild sk_plstm_rebuild_best(int B, int E, int H, int L, int T, sk_plstm_operands op,
                                                     sk_plstm_exchange x, int layerwise, int sms, int optin) {
    sk_plstm_rebuild best;
    memset(&best, 0, sizeof best);
    snprintf(best.why_not, sizeof best.why_not, "no tile fits %d SMs of %d bytes", sms, optin);
    for (int Bb = B < 8 ? B : 8; Bb <= B + 7; Bb += 8) {
        for (int g = 1; g <= H; g++) {
            const sk_plstm_rebuild r = sk_plstm_rebuild_plan(B, E, H, L, T, op, x, layerwise, Bb, g, sms, optin);
            if (r.ok && r.per_group == g && (!best.ok || r.total_ms < best.total_ms)) best = r;
        }
        if (Bb >= B) break;
    }
    return best;
}

#ifdef __cplusplus
}
#endif

#endif
