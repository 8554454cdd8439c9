// lstm_persistent_cost.h: the persistent LSTM's cost model, host arithmetic in C: counts per
// chain step of the busiest block of the current kernels (kernels/lstm_persistent_kernels.cuh,
// cut by the plan of kernels/lstm_persistent_plan.h), and the time they predict on an H200
// under the numbers below (docs/PERSISTENT_LSTM_FLOOR.md, "Cost model" and "The H200 run of
// 2026-11-28"). Printed by bench/kernels/plstm_cost.c; tests/emu/test_plstm_emu.cpp holds the
// counts the emulated device can see (barriers, grid syncs, mma, bytes staged) to what the
// kernels do; tests/test_plstm_plan.c holds the predictions to the H200's measured steps.
// defines: sk_plstm_cost, sk_plstm_cost_inner, sk_plstm_cost_forward(_layer), sk_plstm_cost_backward,
//          sk_plstm_cost_finish, sk_plstm_cost_issue_us, sk_plstm_cost_l2_rate, sk_plstm_cost_offchain_ms,
//          sk_plstm_cost_cells, kSkCost* (the H200 numbers and the instruction counts)
//
// Counts are per chain step, for the block holding units [0, U) of the slowest layer, in a step
// where it works:
//   l2_rd/wr   bytes staged (cp.async / __ldcg) and stored through L2 by the block
//   lds        shared-memory load instructions in the inner products (CUDA cores: one weight
//              and kBatchBlock = 4 vector loads per 4 FMA per lane; tensor cores: one
//              ldmatrix.x4 for A and one .x2 for B per mma.sync, kSkCostLdsPerMma, no reuse)
//   fma, mma   FMA warp instructions (CUDA cores) or mma.sync instructions (tensor cores)
//   bar, gsync __syncthreads and grid.sync per chain step
//   rt         dependent global round trips on the chain (staging wait and epilogue per
//              batch chunk; bf16 layer 0's stage_convert: one per batch row); rt_dram those of
//              them that miss L2 (an epilogue reading a buffer larger than the L2)
//   inst_stage, inst  warp instructions one warp issues: staging calls (every warp runs every
//              stage_row call of the block, whatever its share of the copies), and the rest
//              (inner products, epilogue, exchange), counted from the code's structure with the
//              kSkCostInst* numbers below
//   inflight   16-byte loads in flight per thread at a staging wait (what the L2 rate depends on)
// The time: the syncs, the round trips, the staging (its instructions or its bytes at the L2
// rate, whichever is slower: the copies fly while the warps issue the next calls), then the
// rest (its instructions at kSkCostIssueClk each, or the LDS, FMA or mma pipe if slower).
#ifndef SK_LSTM_PERSISTENT_COST_H
#define SK_LSTM_PERSISTENT_COST_H

#include "../../kernels/lstm_persistent_mma.h"
#include "../../kernels/lstm_persistent_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

// The H200 numbers (bench/results/h200-2026-11-28-2d6bab0/, the files named; PERSISTENT_LSTM_FLOOR.md,
// "The H200 run of 2026-11-28", says what each decided). The H100 measured grid.sync 1.11 us and the
// L2 re-read 12.1 B/ns (bench/results/h100-2026-11-27-a63cbcc/probe-persistent.txt): within 15% of these.
static const double kSkCostClockGHz = 1.98;          // SM clock under load (probe/ncu-persistent.txt: 1.94-1.98 GHz)
static const double kSkCostGridSyncUs = 0.98;        // cooperative grid.sync, 128 blocks x 256 threads (probe/probe-persistent.txt)
// A dependent global load through L2, issue to use: not measured alone; taken as sync_bench's flag
// hand-off (probe-persistent.txt: 0.568 us, a store on one SM seen by a load on another through L2),
// the nearest measured figure (the first model assumed 0.35 from the H100's ~260-cycle L2 hit).
static const double kSkCostL2RoundTripUs = 0.57;
// A dependent load that misses L2 (HBM3e latency plus the queue of a block's scattered 4-byte loads):
// assumed, not measured; taken where the buffer an epilogue reads over the window is larger than the
// L2 (50 MiB on the H100 and H200, the datasheets).
static const double kSkCostDramRoundTripUs = 1.0, kSkCostL2Bytes = 50.0 * 1024 * 1024;
static const double kSkCostL2BytesPerNsPerSM = 13.6; // L2 re-read per block, one 16-byte load in flight a thread (probe-persistent.txt)
static const double kSkCostL2x8BytesPerNsPerSM = 29.7; // the same with 8 loads in flight a thread (probe-persistent.txt)
static const double kSkCostLdsPerClk = 1.0;        // shared-memory instructions per clock per SM
static const double kSkCostFmaPerClk = 4.0;        // FMA warp instructions per clock per SM (128 lanes)
static const double kSkCostMmaClk = 2.0;           // clocks per mma.sync per SM (bf16 m16n8k16, TF32 m16n8k8)
static const double kSkCostLdsPerMma = 2.0;        // ldmatrix instructions per mma.sync in mma_dots (A x4, B x2)
static const double kSkCostBarUs = 0.02;           // one __syncthreads of 8 warps (~35 clk)
static const int kSkCostSMs = 132, kSkCostOptin = 227 * 1024;
// Instruction issue at 8 warps a SM (2 a scheduler): one warp instruction every 7 cycles of a warp
// (probe/ncu-persistent.txt: "Warp Cycles Per Issued Instruction" 7.03 for the cluster forward at B,
// 5.28 and 6.84 for the wavefront at A; with two warps a scheduler the latencies are not hidden).
static const double kSkCostIssueClk = 7.0;
// Warp instructions of the kernels' pieces, read off the SASS of commit 2d6bab0 (nvcc 13.0, sm_90,
// lstm_layerwise.cu; PERSISTENT_LSTM_FLOOR.md, "Instruction counts"), per warp:
static const double kSkCostInstStageRow = 50;  // one stage_row call (about 80 inlined; a warp runs 40-60)
static const double kSkCostInstConvert = 40;   // one stage_convert call of a row of at most 4 x 256 floats
static const double kSkCostInstCellFwd = 200;  // one forward cell of a thread (index math, 4 gates, expf/tanhf, stores)
static const double kSkCostInstCellBwd = 220;  // one backward cell (the gradient from above, gates, c, 4 dg stores)
static const double kSkCostInstMmaKBf16 = 4;   // one K step of a tile: ldmatrix x4 + x2, mma, address
static const double kSkCostInstMmaKTf32 = 10;  // the same with the six cvt.rna.tf32 of the fragments
static const double kSkCostInstMmaTile = 30;   // a tile's set-up and its 4 results stored
static const double kSkCostInstMmaSum = 20;    // one element of the split's reduction (sk_plstm_mma_part_sum)
static const double kSkCostInstDotIter = 11;   // one block_dots iteration: 5 LDS, 4 FMA, the loop
static const double kSkCostInstDotRow = 40;    // one block_dots row group's 4 warp_sum trees and stores
// Off the chain (sk_plstm_cost_offchain_ms): cuBLAS GEMMs and the rest of the step. Strict fp32:
// 33 TFLOP/s, derived at A from lstm_bench (the LSTM with its weight GEMMs, 4.815 ms) less the
// wavefront kernels in ncu (4.61 ms) for 6.7 GFLOP; TF32 (also under --precision bf16) and bf16:
// assumed for these shapes, not measured (the rebuild's plans use both). The rest of the step
// (embedding, fc, softmax, Adam, memsets): step_bench less lstm_bench, 0.16 ms at A (3,200
// tokens, fp32) and 0.27 ms at B (8,192 tokens, bf16), a line through the two.
static const double kSkCostGemmTflopsFp32 = 33, kSkCostGemmTflopsTf32 = 250, kSkCostGemmTflopsBf16 = 400;
static const double kSkCostRestMs = 0.091, kSkCostRestNsPerToken = 21.6;

typedef struct { // per chain step; us: the predicted time
    double l2_rd, l2_wr, lds, fma, mma, bar, gsync, rt, us;
    double dsmem, csync; // bytes stored into other blocks' shared memory, cluster exchanges (lstm_layerwise_cost.h)
    double inst_stage, inst, inflight; // one warp's instructions (staging, the rest), loads in flight a thread
    double rt_dram;                    // of rt, the round trips that miss L2
} sk_plstm_cost;

// Microseconds for n warp instructions of one warp at kSkCostIssueClk each.
static inline double sk_plstm_cost_issue_us(double n) { return n * kSkCostIssueClk / kSkCostClockGHz / 1e3; }

// A block's L2 re-read rate with n 16-byte loads in flight a thread: the measured 1 and 8, linear
// between them (an assumption), 8's beyond.
static inline double sk_plstm_cost_l2_rate(double n) {
    if (n <= 1) return kSkCostL2BytesPerNsPerSM;
    if (n >= 8) return kSkCostL2x8BytesPerNsPerSM;
    return kSkCostL2BytesPerNsPerSM + (kSkCostL2x8BytesPerNsPerSM - kSkCostL2BytesPerNsPerSM) * (n - 1) / 7;
}

// The rest's time: its instructions, or the slowest of the LDS, FMA and mma pipes.
static inline double sk_plstm_cost_alu_us(const sk_plstm_cost *c) {
    double alu = c->lds / kSkCostLdsPerClk;
    if (c->fma / kSkCostFmaPerClk > alu) alu = c->fma / kSkCostFmaPerClk;
    if (c->mma * kSkCostMmaClk > alu) alu = c->mma * kSkCostMmaClk;
    const double issue = sk_plstm_cost_issue_us(c->inst), pipes = alu / kSkCostClockGHz / 1e3;
    return issue > pipes ? issue : pipes;
}

// The staging's time: its instructions or its bytes, whichever is slower.
static inline double sk_plstm_cost_stage_us(const sk_plstm_cost *c, double staged) {
    const double issue = sk_plstm_cost_issue_us(c->inst_stage), bytes = staged / sk_plstm_cost_l2_rate(c->inflight) / 1e3;
    return issue > bytes ? issue : bytes;
}

static inline void sk_plstm_cost_finish(sk_plstm_cost *c) {
    c->us = c->gsync * kSkCostGridSyncUs + c->bar * kSkCostBarUs + (c->rt - c->rt_dram) * kSkCostL2RoundTripUs +
            c->rt_dram * kSkCostDramRoundTripUs + sk_plstm_cost_stage_us(c, c->l2_rd) + sk_plstm_cost_alu_us(c);
}

// One warp's instructions for a batch chunk's cells (cells over the block's threads).
static inline double sk_plstm_cost_cells(double cells, double per_cell) {
    return ((size_t)cells + SK_PLSTM_THREADS - 1) / SK_PLSTM_THREADS * per_cell;
}

// The inner products of one batch chunk of nb rows: nrows weight rows of length K, in R slices
// (mma_dots or block_dots; on tensor cores when mma, with operands of s bytes).
static inline void sk_plstm_cost_inner(sk_plstm_cost *c, int mma, int s, int nrows, int R, int nb, int K) {
    const int warps = SK_PLSTM_THREADS / 32;
    if (mma) {
        const int kstep = s == 2 ? 16 : 8;
        const int tiles = R * sk_plstm_mma_tiles(nrows / R, nb), ksteps = (K + kstep - 1) / kstep;
        const int split = sk_plstm_mma_split(tiles, ksteps, warps), items = (tiles * split + warps - 1) / warps;
        c->mma += (double)tiles * ksteps;
        c->lds += kSkCostLdsPerMma * tiles * ksteps;
        c->inst += items * ((ksteps + split - 1) / split * (s == 2 ? kSkCostInstMmaKBf16 : kSkCostInstMmaKTf32) +
                            kSkCostInstMmaTile);
        if (split > 1) {
            c->bar += 1;
            c->inst += sk_plstm_cost_cells(tiles * 128.0, kSkCostInstMmaSum);
        }
    } else {
        const int groups = (nb + 3) / 4, rows_per_warp = (groups * nrows + warps - 1) / warps;
        const double iters = (double)groups * nrows * ((K + 31) / 32);
        c->fma += 4 * iters;
        c->lds += 5 * iters;
        c->inst += rows_per_warp * (((K + 31) / 32) * kSkCostInstDotIter + kSkCostInstDotRow);
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
        // Per staged row the input and h(t-1) (bf16 layer 0: x converted by stage_convert).
        c.inst_stage += nb * (kSkCostInstStageRow + (half && layer0 ? kSkCostInstConvert : kSkCostInstStageRow));
        c.inst += sk_plstm_cost_cells((double)nb * p->U, kSkCostInstCellFwd);
        if (b0 == 0) c.inflight = (double)nb * K * s / 16 / SK_PLSTM_THREADS;
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

// T: the window, whose gates and c the epilogue reads (from HBM where they are larger than the L2).
static inline sk_plstm_cost sk_plstm_cost_backward(const sk_plstm_plan *p, int B, int H, int L, int T) {
    sk_plstm_cost c;
    memset(&c, 0, sizeof c);
    const double s = (double)sk_plstm_operand_bytes(p->operands), U = p->U;
    const int R = L > 1 ? 2 : 1, half = s == 2;
    for (int b0 = 0; b0 < B; b0 += p->bc_bwd) {
        const int nb = B - b0 < p->bc_bwd ? B - b0 : p->bc_bwd;
        c.l2_rd += (double)nb * R * 4 * H * s + (double)nb * U * (4 * 4 + 4 + 4); // dg rows; gates, c, c_prev
        c.l2_wr += (double)nb * U * 4 * (4 + (half ? 2 : 0));                     // dg
        sk_plstm_cost_dots(&c, p, R * p->U, R, nb, 4 * H);
        c.inst_stage += (double)nb * R * kSkCostInstStageRow;
        c.inst += sk_plstm_cost_cells((double)nb * p->U, kSkCostInstCellBwd);
        if (b0 == 0) c.inflight = (double)nb * R * 4 * H * s / 16 / SK_PLSTM_THREADS;
        c.bar += 3;
        c.rt += 2;
        c.rt_dram += (double)B * T * 5 * H * 4 > kSkCostL2Bytes; // the epilogue's gates and c
    }
    c.gsync = 1;
    sk_plstm_cost_finish(&c);
    return c;
}

// Milliseconds of a training step off the persistent kernels' chain: the cuBLAS GEMMs over the
// window's N = B T rows (strict fp32 at kSkCostGemmTflopsFp32, else TF32 at the rebuild's rate) and
// the rest of the step. The wavefront's GEMMs: dW_ih and dW_hh of every layer, dx of layer 0; the
// layer-after-layer kernels' add every layer's input projection and the gradient from the layer
// above (its dx), which the wavefront computes in the chain.
static inline double sk_plstm_cost_offchain_ms(int B, int E, int H, int L, int T, int strict_fp32, int layerwise) {
    const double N = (double)B * T, H4 = 4.0 * H, sum_in = (double)E + (L - 1.0) * H;
    const double flop = 2 * N * H4 * ((layerwise ? 3 * sum_in : sum_in + E) + (double)H * L);
    const double tflops = strict_fp32 ? kSkCostGemmTflopsFp32 : kSkCostGemmTflopsTf32;
    return flop / (tflops * 1e12) * 1e3 + kSkCostRestMs + N * kSkCostRestNsPerToken / 1e6;
}

#ifdef __cplusplus
}
#endif

#endif
