// lstm_layerwise_cost.h: the cost model of the layer-after-layer kernels as built
// (lstm_layerwise_kernels.cuh with one grid.sync per step, lstm_layerwise_cluster_kernels.cuh
// with one cluster barrier per step), counted as lstm_persistent_cost.h counts the wavefront
// kernels and timed under its H100 numbers and those below. Printed by kernels/dev/plstm_cost.c;
// tests/test_plstm_plan.c holds the plans to it, tests/emu/test_layerwise_emu.cpp the counts the
// emulated device sees (barriers, grid and cluster syncs, mma, bytes staged).
// defines: sk_plstm_lw_cost_forward, sk_plstm_lw_cost_backward, sk_plstm_lw_chain_ms,
//          kSkCostDsmemBytesPerNsPerSM
//
// Per chain step of a block (Bb batch rows x U units):
//   grid.sync forward   stages its group's h_{t-1} (Bb x H operands) after the grid.sync, reads
//                       the projection (Bb x 4U fp32), writes gates, c, h and the next layer's
//                       input; inner products over 4U rows of H; two dependent round trips
//                       (the staging's wait, the epilogue's loads)
//   grid.sync backward  stages dg(t+1) (Bb x 4H operands), reads gates, c, c_prev and the upper
//                       gradient (Bb x U each), writes dg; inner products over U rows of 4H
//   cluster forward     inner products over 4U rows of H from shared memory (no staging: peers
//                       pushed h), pushes its Bb x U slice of h to the slices - 1 peers (DSMEM),
//                       one cluster barrier; the projection was prefetched during the previous
//                       step (off the chain: it has a whole step to land)
//   cluster backward    inner products over H rows of its own 4U gates, pushes Bb x U fp32
//                       partial sums to each peer, one cluster barrier, adds the slices' partials
//                       (shared loads); gates, c, c_prev and the upper gradient prefetched
// Tensor cores: mma_dots loads fragments with ldmatrix, kSkCostLdsPerMma a mma (lstm_persistent_cost.h).
#ifndef SK_LSTM_LAYERWISE_COST_H
#define SK_LSTM_LAYERWISE_COST_H

#include "lstm_layerwise_plan.h"
#include "lstm_persistent_rebuild_cost.h" // kSkCostClusterSyncUs

#ifdef __cplusplus
extern "C" {
#endif

// Distributed shared memory stores per SM, 16-byte and coalesced: an assumption, not measured
// here (Luo et al. 2024, "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture",
// arXiv 2402.13499: the SM-to-SM network near 3.3 TB/s in all, over 132 SMs). sync_bench's
// "DSMEM push" line measures it (scripts/probe_persistent.sh).
static const double kSkCostDsmemBytesPerNsPerSM = 25.0;

// The inner products' counts: nrows weight rows of K against nb staged rows.
static inline void sk_plstm_lw_cost_dots(sk_plstm_cost *c, const sk_plstm_lw_plan *p, int nrows, int nb, int K) {
    sk_plstm_cost_inner(c, p->mma, p->operand_bytes, nrows, 1, nb, K);
}

// A cluster step's time: the barrier, the pushes, __syncthreads and the inner products; the
// prefetch (a round trip and its bytes, issued a whole step ahead) only where it takes longer
// than all of that.
static inline void sk_plstm_lw_cost_finish_cluster(sk_plstm_cost *c, double pushed) {
    double alu = c->lds / kSkCostLdsPerClk;
    if (c->fma / kSkCostFmaPerClk > alu) alu = c->fma / kSkCostFmaPerClk;
    if (c->mma * kSkCostMmaClk > alu) alu = c->mma * kSkCostMmaClk;
    const double alu_us = alu / kSkCostClockGHz / 1e3;
    const double pre_us = kSkCostL2RoundTripUs + c->l2_rd / kSkCostL2BytesPerNsPerSM / 1e3;
    c->dsmem = pushed, c->csync = 1;
    c->us = kSkCostClusterSyncUs + pushed / kSkCostDsmemBytesPerNsPerSM / 1e3 + c->bar * kSkCostBarUs + alu_us;
    if (pre_us > c->us) c->us = pre_us;
}

static inline sk_plstm_cost sk_plstm_lw_cost_forward(const sk_plstm_lw_plan *p, int H) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double Bb = p->Bb, U = p->U, s = p->operand_bytes;
    sk_plstm_lw_cost_dots(&c, p, 4 * p->U, p->Bb, H);
    c.l2_wr = Bb * U * (4 * 4 + 4 + 4 + 4); // gates, c, h, the next layer's input
    if (p->cluster) {
        c.l2_rd = Bb * 4 * U * 4; // the projection, prefetched
        c.bar += 2;
        sk_plstm_lw_cost_finish_cluster(&c, Bb * U * s * (p->slices - 1));
        return c;
    }
    c.l2_rd = Bb * H * s + Bb * 4 * U * 4;
    c.l2_wr += s == 2 ? Bb * U * 2 : 0; // h's bf16 copy
    c.bar += 2, c.gsync = 1, c.rt = 2;
    sk_plstm_cost_finish(&c);
    return c;
}

static inline sk_plstm_cost sk_plstm_lw_cost_backward(const sk_plstm_lw_plan *p, int H) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double Bb = p->Bb, U = p->U, s = p->operand_bytes;
    c.l2_wr = Bb * U * 4 * 4; // dg
    if (p->cluster) {
        sk_plstm_lw_cost_dots(&c, p, H, p->Bb, 4 * p->U);
        c.l2_rd = Bb * U * 7 * 4;                  // gates, c, c_prev, the upper gradient, prefetched
        c.lds += Bb * U * p->slices / 32.0;         // the received partials, added
        c.bar += 2;
        sk_plstm_lw_cost_finish_cluster(&c, Bb * (H - U) * 4.0);
        return c;
    }
    sk_plstm_lw_cost_dots(&c, p, p->U, p->Bb, 4 * H);
    c.l2_rd = Bb * 4 * H * s + Bb * U * (4 * 4 + 4 + 4 + 4);
    c.l2_wr += s == 2 ? Bb * U * 4 * 2 : 0; // dg's bf16 copy
    c.bar += 2, c.gsync = 1, c.rt = 2;
    sk_plstm_cost_finish(&c);
    return c;
}

// Both chains of a training step: L * T steps each way (the GEMMs off the chain not counted).
static inline double sk_plstm_lw_chain_ms(const sk_plstm_lw_plan *p, int H, int L, int T) {
    return (sk_plstm_lw_cost_forward(p, H).us + sk_plstm_lw_cost_backward(p, H).us) * L * T / 1e3;
}

#ifdef __cplusplus
}
#endif

#endif
