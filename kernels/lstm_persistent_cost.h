// lstm_persistent_cost.h: the persistent LSTM's cost model, host arithmetic in C: counts per
// chain step of the busiest block of the current kernels (kernels/lstm_persistent_kernels.cuh,
// cut by the plan of kernels/lstm_persistent_plan.h), and the time they predict on an H100
// under the numbers below (kernels/PERSISTENT_LSTM_FLOOR.md, "Cost model"). Printed by
// kernels/dev/plstm_cost.c; tests/emu/test_plstm_emu.cpp holds the counts the emulated device
// can see (barriers, grid syncs, mma, bytes staged) to what the kernels do.
// defines: sk_plstm_cost, sk_plstm_cost_inner, sk_plstm_cost_forward(_layer), sk_plstm_cost_backward, kSkCost* (the H100 numbers)
//
// Counts are warp instructions (an SM issues warp instructions), per chain step, for the
// block holding units [0, U) of the slowest layer, in a step where it works:
//   l2_rd/wr   bytes staged (cp.async / __ldcg) and stored through L2 by the block
//   lds        shared-memory load instructions in the inner products (CUDA cores: one weight
//              and kBatchBlock = 4 vector loads per 4 FMA per lane; tensor cores: one
//              ldmatrix.x4 for A and one .x2 for B per mma.sync, kSkCostLdsPerMma, no reuse)
//   fma, mma   FMA warp instructions (CUDA cores) or mma.sync instructions (tensor cores)
//   bar, gsync __syncthreads and grid.sync per chain step
//   rt         dependent global round trips on the chain (staging wait and epilogue per
//              batch chunk; bf16 layer 0's stage_convert: one per batch row)
#ifndef SK_LSTM_PERSISTENT_COST_H
#define SK_LSTM_PERSISTENT_COST_H

#include "lstm_persistent_mma.h"
#include "lstm_persistent_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

// H100 SXM numbers (sources in PERSISTENT_LSTM_FLOOR.md, "Cost model"). grid.sync and the L2
// re-read rate are measured (sync_bench on an H100, bench/results/h100-2026-11-27-a63cbcc/
// probe-persistent.txt: 1.109 us; 128 blocks re-reading 64 KiB, 1543 GB/s in all); with them
// the model comes within 10-30% of the measured kernels (floor notes, "The probes measured").
static const double kSkCostClockGHz = 1.755;         // sustained SM clock under load
static const double kSkCostGridSyncUs = 1.11;        // cooperative grid.sync, 128 blocks x 256 threads (measured)
static const double kSkCostL2RoundTripUs = 0.35;     // dependent L2 load incl. issue + wait (~600 clk)
static const double kSkCostL2BytesPerNsPerSM = 12.1; // L2 re-read per block (measured; the datasheet's share: 40)
static const double kSkCostLdsPerClk = 1.0;        // shared-memory instructions per clock per SM
static const double kSkCostFmaPerClk = 4.0;        // FMA warp instructions per clock per SM (128 lanes)
static const double kSkCostMmaClk = 2.0;           // clocks per mma.sync per SM (bf16 m16n8k16, TF32 m16n8k8)
static const double kSkCostLdsPerMma = 2.0;        // ldmatrix instructions per mma.sync in mma_dots (A x4, B x2)
static const double kSkCostBarUs = 0.02;           // one __syncthreads of 8 warps (~35 clk)
static const int kSkCostSMs = 132, kSkCostOptin = 227 * 1024;

typedef struct { // per chain step; us: the predicted time
    double l2_rd, l2_wr, lds, fma, mma, bar, gsync, rt, us;
    double dsmem, csync; // bytes stored into other blocks' shared memory, cluster barriers (lstm_layerwise_cost.h)
} sk_plstm_cost;

static inline void sk_plstm_cost_finish(sk_plstm_cost *c) {
    const double clk_ns = 1.0 / kSkCostClockGHz;
    double alu = c->lds / kSkCostLdsPerClk;
    if (c->fma / kSkCostFmaPerClk > alu) alu = c->fma / kSkCostFmaPerClk;
    if (c->mma * kSkCostMmaClk > alu) alu = c->mma * kSkCostMmaClk;
    c->us = c->gsync * kSkCostGridSyncUs + c->bar * kSkCostBarUs + c->rt * kSkCostL2RoundTripUs +
            c->l2_rd / kSkCostL2BytesPerNsPerSM / 1e3 + alu * clk_ns / 1e3;
}

// The inner products of one batch chunk of nb rows: nrows weight rows of length K, in R slices
// (mma_dots or block_dots; on tensor cores when mma, with operands of s bytes).
static inline void sk_plstm_cost_inner(sk_plstm_cost *c, int mma, int s, int nrows, int R, int nb, int K) {
    if (mma) {
        const int kstep = s == 2 ? 16 : 8;
        const int tiles = R * sk_plstm_mma_tiles(nrows / R, nb), ksteps = (K + kstep - 1) / kstep;
        c->mma += (double)tiles * ksteps;
        c->lds += kSkCostLdsPerMma * tiles * ksteps;
        if (sk_plstm_mma_split(tiles, ksteps, SK_PLSTM_THREADS / 32) > 1) c->bar += 1;
    } else {
        const double iters = (double)((nb + 3) / 4) * nrows * ((K + 31) / 32);
        c->fma += 4 * iters;
        c->lds += 5 * iters;
    }
}
static inline void sk_plstm_cost_dots(sk_plstm_cost *c, const sk_plstm_plan *p, int nrows, int R, int nb, int K) {
    sk_plstm_cost_inner(c, sk_plstm_uses_mma(p->operands), (int)sk_plstm_operand_bytes(p->operands), nrows, R, nb, K);
}

// One forward chain step of the block holding units [0, U) of a layer whose input is `in` wide.
static inline sk_plstm_cost sk_plstm_cost_forward_layer(const sk_plstm_plan *p, int B, int in, int H, int layer0) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double s = (double)sk_plstm_operand_bytes(p->operands), U = p->U;
    const int K = in + H, half = s == 2;
    for (int b0 = 0; b0 < B; b0 += p->bc_fwd) {
        const int nb = B - b0 < p->bc_fwd ? B - b0 : p->bc_fwd;
        c.l2_rd += (double)nb * K * s + 8 * U * 4; // [x | h] rows, both biases (L1 invalid after grid.sync)
        c.l2_wr += (double)nb * U * (4 * 4 + 4 + 2 * (4 + (half ? 2 : 0))); // gates, c, h and next input
        sk_plstm_cost_dots(&c, p, 4 * p->U, 1, nb, K);
        c.bar += 3;
        c.rt += 2;
    }
    // bf16 operands: layer 0's fp32 x is converted row by row (stage_convert), a round trip each.
    if (half && layer0) c.rt += B;
    c.gsync = 1;
    sk_plstm_cost_finish(&c);
    return c;
}

// One forward chain step of the slowest block: layer 0's (input E) or a layer above's (input H).
static inline sk_plstm_cost sk_plstm_cost_forward(const sk_plstm_plan *p, int B, int E, int H, int L) {
    const sk_plstm_cost c0 = sk_plstm_cost_forward_layer(p, B, E, H, 1);
    if (L == 1) return c0;
    const sk_plstm_cost c1 = sk_plstm_cost_forward_layer(p, B, H, H, 0);
    return c1.us > c0.us ? c1 : c0;
}

static inline sk_plstm_cost sk_plstm_cost_backward(const sk_plstm_plan *p, int B, int H, int L) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double s = (double)sk_plstm_operand_bytes(p->operands), U = p->U;
    const int R = L > 1 ? 2 : 1, half = s == 2;
    for (int b0 = 0; b0 < B; b0 += p->bc_bwd) {
        const int nb = B - b0 < p->bc_bwd ? B - b0 : p->bc_bwd;
        c.l2_rd += (double)nb * R * 4 * H * s + (double)nb * U * (4 * 4 + 4 + 4); // dg rows; gates, c, c_prev
        c.l2_wr += (double)nb * U * 4 * (4 + (half ? 2 : 0));                     // dg
        sk_plstm_cost_dots(&c, p, R * p->U, R, nb, 4 * H);
        c.bar += 3;
        c.rt += 2;
    }
    c.gsync = 1;
    sk_plstm_cost_finish(&c);
    return c;
}

#ifdef __cplusplus
}
#endif

#endif
