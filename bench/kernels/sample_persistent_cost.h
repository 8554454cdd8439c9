// sample_persistent_cost.h: the cost model of the sampling kernel (sample_persistent_kernels.cuh),
// counted as lstm_persistent_cost.h counts the LSTM kernels and timed under its H200 numbers: the
// time of one step (one character of every stream) on the busiest block, block 0, which also
// draws. Printed by bench/kernels/plstm_cost.c; tests/test_sample_plan.c holds config A to the H200's
// measured characters/s (bench/results/h200-2026-11-28-2d6bab0/probe/sample-gpu.txt).
// defines: sk_sample_cost_step, sk_sample_cost_draw_us
//
// Per step, per stream group of sb streams:
//   layer k   stage [input | h_{t-1}] (two stage_row calls a stream; layer 0: the token first, then
//             its embedding row: two dependent round trips; above: one), block_dots over 4U rows of
//             in_k + H, the cell; two __syncthreads, one grid.sync per layer
//   draws     per stream block 0 draws: stage h (one round trip), block_dots over V rows of H
//             (fc), the bias from global memory (a round trip), the draw (sample_draw.h: a
//             block-wide argmax, then one thread's sums in double over up to 3V candidates); about
//             six __syncthreads; one grid.sync (none after the last step, ignored here)
#ifndef SK_SAMPLE_PERSISTENT_COST_H
#define SK_SAMPLE_PERSISTENT_COST_H

#include "lstm_persistent_cost.h"
#include "../../kernels/sample_persistent_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

// One thread's dependent double adds of the draw (total and scan without top-k and top-p: 2V),
// about 8 clocks each, plus about 400 for the weights: an estimate, not a measurement.
static inline double sk_sample_cost_draw_us(int V) { return (2.0 * V * 8 + 400) / kSkCostClockGHz / 1e3; }

// One warp's instructions of the draw's argmax: its loop, 5 shuffles of the candidates' ranking, the
// warps' results reduced by one thread (an estimate from block_draw's structure).
static const double kSkCostInstArgmax = 300;

// The predicted time of one step of the plan's launch (every stream one character).
static inline double sk_sample_cost_step(const sk_sample_plan *p, int B, int V, int E, int H, int L) {
    double us = 0.0;
    for (int k = 0; k < L; k++) {
        const int in = k == 0 ? E : H;
        for (int b0 = 0; b0 < B; b0 += p->sb) {
            const int nb = B - b0 < p->sb ? B - b0 : p->sb;
            sk_plstm_cost c;
            memset(&c, 0, sizeof c);
            c.l2_rd = (double)nb * (in + H) * 4;
            c.inflight = c.l2_rd / 16 / SK_PLSTM_THREADS;
            c.inst_stage = 2.0 * nb * kSkCostInstStageRow;
            sk_plstm_cost_inner(&c, 0, 4, 4 * p->U, 1, nb, in + H);
            c.inst += sk_plstm_cost_cells((double)nb * p->U, kSkCostInstCellFwd);
            c.bar = 2, c.rt = k == 0 ? 2 : 1;
            sk_plstm_cost_finish(&c);
            us += c.us;
        }
        us += kSkCostGridSyncUs;
    }
    const int draws = (B + p->blocks - 1) / p->blocks; // block 0's streams
    for (int d = 0; d < draws; d++) {
        sk_plstm_cost c;
        memset(&c, 0, sizeof c);
        c.l2_rd = (double)H * 4, c.inflight = c.l2_rd / 16 / SK_PLSTM_THREADS;
        c.inst_stage = kSkCostInstStageRow;
        sk_plstm_cost_inner(&c, 0, 4, V, 1, 1, H);
        c.inst += kSkCostInstArgmax;
        c.bar = 6, c.rt = 2;
        sk_plstm_cost_finish(&c);
        us += c.us + sk_sample_cost_draw_us(V);
    }
    return us + kSkCostGridSyncUs;
}

#ifdef __cplusplus
}
#endif

#endif
