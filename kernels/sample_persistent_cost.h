// sample_persistent_cost.h: the cost model of the sampling kernel (sample_persistent_kernels.cuh),
// counted as lstm_persistent_cost.h counts the LSTM kernels and timed under its H100 numbers:
// the time of one step (one character of every stream) on the busiest block, block 0, which
// also draws. Printed by kernels/dev/plstm_cost.c; tests/test_sample_plan.c holds config A to
// issue 35's 100,000 characters/s at batch 1.
// defines: sk_sample_cost_step, sk_sample_cost_draw_us
//
// Per step, per stream group of sb streams:
//   layer k   stage [input | h_{t-1}] (layer 0: the token first, then its embedding row: two
//             dependent round trips; above: one), block_dots over 4U rows of in_k + H, the cell;
//             two __syncthreads, one grid.sync per layer
//   draws     per stream block 0 draws: stage h (one round trip), block_dots over V rows of H
//             (fc), the bias, the draw (sample_draw.h: a block-wide argmax, then one thread's
//             sums in double over up to 3V candidates); about six __syncthreads; one grid.sync
//             (none after the last step, ignored here)
#ifndef SK_SAMPLE_PERSISTENT_COST_H
#define SK_SAMPLE_PERSISTENT_COST_H

#include "lstm_persistent_cost.h"
#include "sample_persistent_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

// One thread's dependent double adds of the draw (total, nucleus, scan: up to 3V), about 8
// clocks each, plus the block-wide argmax and the weights: an estimate, not a measurement.
static inline double sk_sample_cost_draw_us(int V) { return (3.0 * V * 8 + 400) / kSkCostClockGHz / 1e3; }

// The predicted time of one step of the plan's launch (every stream one character).
static inline double sk_sample_cost_step(const sk_sample_plan *p, int B, int V, int E, int H, int L) {
    double us = 0.0;
    for (int k = 0; k < L; k++) {
        const int in = k == 0 ? E : H;
        sk_plstm_cost c;
        memset(&c, 0, sizeof c);
        for (int b0 = 0; b0 < B; b0 += p->sb) {
            const int nb = B - b0 < p->sb ? B - b0 : p->sb;
            c.l2_rd += (double)nb * (in + H) * 4;
            const double iters = (double)((nb + 3) / 4) * 4 * p->U * ((in + H + 31) / 32);
            c.fma += 4 * iters, c.lds += 5 * iters;
            c.bar += 2, c.rt += k == 0 ? 2 : 1;
        }
        c.gsync = 1;
        sk_plstm_cost_finish(&c);
        us += c.us;
    }
    sk_plstm_cost d;
    memset(&d, 0, sizeof d);
    const int draws = (B + p->blocks - 1) / p->blocks; // block 0's streams
    const double iters = (double)V * ((H + 31) / 32);
    d.l2_rd = (double)draws * H * 4, d.fma = 4 * iters * draws, d.lds = 5 * iters * draws;
    d.bar = 6.0 * draws, d.rt = draws, d.gsync = 1;
    sk_plstm_cost_finish(&d);
    return us + d.us + draws * sk_sample_cost_draw_us(V);
}

#ifdef __cplusplus
}
#endif

#endif
