// lstm_layerwise_cost.h: the cost model of the layer-after-layer kernels (lstm_layerwise_kernels.cuh
// with one grid.sync per step, lstm_layerwise_cluster_kernels.cuh with one cluster barrier per step),
// counted as lstm_persistent_cost.h counts the wavefront kernels and timed under its H200 numbers and
// those below. Printed by bench/kernels/plstm_cost.c; tests/test_plstm_plan.c holds the predictions to
// the H200's measured steps, tests/emu/test_layerwise_emu.cpp the counts the emulated device sees
// (barriers, grid and cluster syncs, mma, bytes staged).
// defines: sk_plstm_lw_issue, sk_plstm_lw_cost_forward, sk_plstm_lw_cost_backward,
//          sk_plstm_lw_resident_clusters, sk_plstm_lw_waves, sk_plstm_lw_chain_ms, sk_plstm_lw_step_ms,
//          kSkCostDsmem{FixedUs,BytesPerNs}, kSkCostInstPush{Item,Slot}, kSkCostInstPrefetchSlot
//
// Per chain step of a block (Bb batch rows x U units), one warp's instructions and the exchange:
//   grid.sync forward   stages its group's h_{t-1} (Bb stage_row calls of H operands) after the
//                       grid.sync, inner products over 4U rows of H, the epilogue reads the
//                       projection from global memory: two dependent round trips
//   grid.sync backward  stages dg(t+1) (Bb calls of 4H), inner products over U rows of 4H, the
//                       epilogue reads gates, c, c_prev and the upper gradient: two round trips
//   cluster forward     inner products over 4U rows of H from shared memory, the epilogue, the push
//                       of its Bb x U slice of h to the slices - 1 peers, one cluster barrier; the
//                       next step's projection prefetched (Bb x 4 rows of U floats)
//   cluster backward    inner products over H rows of its own 4U gates, the push of Bb x U fp32
//                       partial sums to each peer, one barrier, the slices' partials added in the
//                       epilogue; gates, c, c_prev and the upper gradient prefetched (Bb x 7 rows)
// The cluster kernels' prefetch and push are counted two ways (sk_plstm_lw_issue): every warp
// running one stage_row call per prefetched row and every thread working out each pushed item's
// peer, row and offset with integer divisions (the kernels the H200 measured at 2d6bab0), or every
// thread issuing its precomputed copies and pushes.
// Tensor cores: mma_dots loads fragments with ldmatrix, kSkCostLdsPerMma a mma (lstm_persistent_cost.h).
#ifndef SK_LSTM_LAYERWISE_COST_H
#define SK_LSTM_LAYERWISE_COST_H

#include "../../kernels/lstm_layerwise_plan.h"
#include "lstm_persistent_cost.h"

#ifdef __cplusplus
extern "C" {
#endif

// The push to the 15 peers of a cluster of 16 with its cluster barrier, as sync_bench measured it on
// the H200 (probe/probe-persistent.txt, "DSMEM push": 512 B a peer 1.167 us, 1 KiB 1.708 us): a line
// through the two, 0.626 us fixed (the barrier measured alone 0.24 us) and 14.2 B/ns a block beyond.
static const double kSkCostDsmemFixedUs = 0.626, kSkCostDsmemBytesPerNs = 14.2;
// One warp's instructions (lstm_persistent_cost.h's kSkCostInst*): one pushed item with its peer, row
// and offset from three integer divisions and map_shared_rank (2d6bab0's SASS); with them precomputed,
// a 16-byte store (about 7 in the SASS of lw_forward_cluster_kernel<bf16, mma> as built); one
// precomputed prefetch copy (about 20: the step's 64-bit address, the cp.async).
static const double kSkCostInstPushItem = 70, kSkCostInstPushSlot = 8, kSkCostInstPrefetchSlot = 20;

typedef enum {
    SK_PLSTM_LW_PER_ROW = 0,    // prefetch: one stage_row call per row by every warp; push: indices per item
    SK_PLSTM_LW_PER_THREAD = 1, // prefetch and push: each thread's copies precomputed before the loop
} sk_plstm_lw_issue;

// The inner products' counts: nrows weight rows of K against nb staged rows.
static inline void sk_plstm_lw_cost_dots(sk_plstm_cost *c, const sk_plstm_lw_plan *p, int nrows, int nb, int K) {
    sk_plstm_cost_inner(c, p->mma, p->operand_bytes, nrows, 1, nb, K);
}

// The cluster kernels' prefetch of `rows` rows of U floats and push of `items` stores, one warp's share.
static inline void sk_plstm_lw_cost_issue(sk_plstm_cost *c, const sk_plstm_lw_plan *p, sk_plstm_lw_issue how,
                                          double rows, double items) {
    const double copies = rows * ((p->U * 4 + 15) / 16);
    c->inst += how == SK_PLSTM_LW_PER_ROW ? rows * kSkCostInstStageRow
                                          : sk_plstm_cost_cells(copies, kSkCostInstPrefetchSlot);
    c->inst += sk_plstm_cost_cells(items, how == SK_PLSTM_LW_PER_ROW ? kSkCostInstPushItem : kSkCostInstPushSlot);
}

// A cluster step's time: the push with its barrier, __syncthreads and the instructions; the
// prefetch (a round trip and its bytes, issued a step ahead) only where it takes longer.
static inline void sk_plstm_lw_cost_finish_cluster(sk_plstm_cost *c, double pushed) {
    const double pre_us = kSkCostL2RoundTripUs + c->l2_rd / kSkCostL2BytesPerNsPerSM / 1e3;
    c->dsmem = pushed, c->csync = 1;
    c->us = kSkCostDsmemFixedUs + pushed / kSkCostDsmemBytesPerNs / 1e3 + c->bar * kSkCostBarUs +
            sk_plstm_cost_alu_us(c);
    if (pre_us > c->us) c->us = pre_us;
}

// T: the window, whose projection (forward) or gates and c (backward) the grid.sync kernels'
// epilogue reads from global memory, from HBM where they are larger than the L2.
static inline sk_plstm_cost sk_plstm_lw_cost_forward(const sk_plstm_lw_plan *p, int H, int T, sk_plstm_lw_issue how) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double Bb = p->Bb, U = p->U, s = p->operand_bytes;
    sk_plstm_lw_cost_dots(&c, p, 4 * p->U, p->Bb, H);
    c.inst += sk_plstm_cost_cells(Bb * U, kSkCostInstCellFwd);
    c.l2_wr = Bb * U * (4 * 4 + 4 + 4 + 4); // gates, c, h, the next layer's input
    if (p->cluster) {
        const int unit = (p->U * p->operand_bytes) % 16 == 0 ? 16 : 4;
        c.l2_rd = Bb * 4 * U * 4; // the projection, prefetched
        c.bar += 2;
        sk_plstm_lw_cost_issue(&c, p, how, Bb * 4, (double)p->slices * Bb * ((p->U * p->operand_bytes + unit - 1) / unit));
        sk_plstm_lw_cost_finish_cluster(&c, Bb * U * s * (p->slices - 1));
        return c;
    }
    c.l2_rd = Bb * H * s + Bb * 4 * U * 4;
    c.l2_wr += s == 2 ? Bb * U * 2 : 0; // h's bf16 copy
    c.inst_stage = Bb * kSkCostInstStageRow, c.inflight = Bb * H * s / 16 / SK_PLSTM_THREADS;
    c.bar += 2, c.gsync = 1, c.rt = 2;
    c.rt_dram = (double)p->groups * Bb * T * 4 * H * 4 > kSkCostL2Bytes; // the projection
    sk_plstm_cost_finish(&c);
    return c;
}

static inline sk_plstm_cost sk_plstm_lw_cost_backward(const sk_plstm_lw_plan *p, int H, int T, sk_plstm_lw_issue how) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double Bb = p->Bb, U = p->U, s = p->operand_bytes;
    c.l2_wr = Bb * U * 4 * 4; // dg
    if (p->cluster) {
        sk_plstm_lw_cost_dots(&c, p, H, p->Bb, 4 * p->U);
        c.inst += sk_plstm_cost_cells(Bb * U, kSkCostInstCellBwd + 3.0 * p->slices); // + the slices' partials
        c.l2_rd = Bb * U * 7 * 4;                  // gates, c, c_prev, the upper gradient, prefetched
        c.lds += Bb * U * p->slices / 32.0;         // the received partials, added
        c.bar += 2;
        sk_plstm_lw_cost_issue(&c, p, how, Bb * 7, (double)p->slices * Bb * ((p->U * 4 + 15) / 16));
        sk_plstm_lw_cost_finish_cluster(&c, Bb * (H - U) * 4.0);
        return c;
    }
    sk_plstm_lw_cost_dots(&c, p, p->U, p->Bb, 4 * H);
    c.inst += sk_plstm_cost_cells(Bb * U, kSkCostInstCellBwd);
    c.l2_rd = Bb * 4 * H * s + Bb * U * (4 * 4 + 4 + 4 + 4);
    c.l2_wr += s == 2 ? Bb * U * 4 * 2 : 0; // dg's bf16 copy
    c.inst_stage = Bb * kSkCostInstStageRow, c.inflight = Bb * 4 * H * s / 16 / SK_PLSTM_THREADS;
    c.bar += 2, c.gsync = 1, c.rt = 2;
    c.rt_dram = (double)p->groups * Bb * T * 5 * H * 4 > kSkCostL2Bytes; // gates and c
    sk_plstm_cost_finish(&c);
    return c;
}

// Clusters of `cluster` blocks of 256 threads resident at once on an H200 with `smem` bytes of
// shared memory a block: cudaOccupancyMaxActiveClusters at one block a SM
// (bench/results/h200-2026-11-28-2d6bab0/layerwise/cluster-occupancy.txt: clusters of 2, 4, 8, 16:
// 66, 30, 15, 7; a cluster's blocks share one GPC) times the blocks a SM holds (228 KiB a SM, 1 KiB
// of it reserved a block, at most 8 blocks of 256 threads). That file's counts at 50-102 KiB are
// these or up to 4 more (4 and 8 blocks at 50 KiB: 124 and 62 against 120 and 60).
static inline int sk_plstm_lw_resident_clusters(int cluster, size_t smem) {
    const int one = cluster <= 2 ? 66 : cluster <= 4 ? 30 : cluster <= 8 ? 15 : 7;
    size_t per_sm = (size_t)228 * 1024 / (smem + 1024);
    if (per_sm > 8) per_sm = 8;
    return one * (int)per_sm;
}

// Launches in turn to run every batch group of a layer's launch (forward or backward): 1 with the
// grid.sync (every block resident), ceil(groups / resident clusters) with clusters.
static inline int sk_plstm_lw_waves(const sk_plstm_lw_plan *p, int backward) {
    if (!p->cluster) return 1;
    const int resident = sk_plstm_lw_resident_clusters(p->cluster, backward ? p->smem_bwd : p->smem_fwd);
    return resident < 1 ? p->groups : (p->groups + resident - 1) / resident;
}

// Both chains of a training step: L * T steps each way, each launch in its waves.
static inline double sk_plstm_lw_chain_ms(const sk_plstm_lw_plan *p, int H, int L, int T, sk_plstm_lw_issue how) {
    const double f = sk_plstm_lw_cost_forward(p, H, T, how).us * sk_plstm_lw_waves(p, 0);
    const double b = sk_plstm_lw_cost_backward(p, H, T, how).us * sk_plstm_lw_waves(p, 1);
    return (f + b) * L * T / 1e3;
}

// The whole training step (dropout 0): the chain, the GEMMs off it (strict fp32 with fp32 operands
// on CUDA cores, else TF32) and the rest (lstm_persistent_cost.h).
static inline double sk_plstm_lw_step_ms(const sk_plstm_lw_plan *p, int B, int E, int H, int L, int T,
                                         sk_plstm_lw_issue how) {
    const int strict = !p->mma && p->operand_bytes == 4;
    return sk_plstm_lw_chain_ms(p, H, L, T, how) + sk_plstm_cost_offchain_ms(B, E, H, L, T, strict, 1);
}

#ifdef __cplusplus
}
#endif

#endif
